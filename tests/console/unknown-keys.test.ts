/**
 * The reconciliation queue lists the keys bare boundary executions left unknown (from data alone,
 * no server, no browser). Invariant: on the open tab each such key is shown with its action, key,
 * attempt and the way to settle it, and the page is not "Nothing waiting"; the resolved tab does
 * not list them.
 */
import { expect, it } from "vitest";
import type { ConsoleData } from "../../src/console/data.js";
import { resolveConsoleOptions } from "../../src/console/options.js";
import { reconciliationsBody } from "../../src/console/pages/reconciliations.js";
import { viewerOf } from "../../src/console/viewer.js";
import type { ApiKeyRecord, IdempotencyRecord } from "../../src/core/types.js";

const NOW = Date.parse("2026-12-01T12:00:00Z");
const key = { keyId: "k1", tenantId: "acme", spaces: ["prod"], roles: ["operate"], hash: "sha256:x", name: "olga", createdAt: NOW } as ApiKeyRecord;
const viewer = viewerOf("s1", { keyId: "k1", csrf: "t", createdAt: NOW, expiresAt: NOW + 1e6, lastSeenAt: NOW }, key, resolveConsoleOptions({ spaces: ["prod"] }));
const unknown: IdempotencyRecord = { tenantId: "acme", spaceId: "prod", action: "messages.send", idempotencyKey: "msg-lost-7", requestDigest: "sha256:d", state: "unknown", invocationId: "inv_bare", attemptId: "att_1234", updatedAt: NOW - 60_000 };
const data = { reconciliations: async () => [], unknownKeys: async () => [unknown] } as Partial<ConsoleData> as ConsoleData;

it("lists keys left unknown by bare executions on the open tab, with how to settle them", async () => {
  const open = await reconciliationsBody(data, viewer, {}, NOW);
  const html = open.body.toString();
  expect(open.count).toBe(1);
  expect(html).toContain('data-testid="unknown-keys"');
  expect(html).toContain("messages.send");
  expect(html.replace(/<[^>]+>/g, "")).toContain("msg-lost-7");
  expect(html).toContain("writ reconcile resolve-key");
  expect(html).not.toContain("Nothing waiting");
  const resolved = await reconciliationsBody(data, viewer, { status: "resolved" }, NOW);
  expect(resolved.body.toString()).not.toContain("unknown-keys");
});
