/**
 * `writ retention status|prune` with the real binary (docs/cli.md, docs/retention.md). Invariants:
 * an ended invocation past its retention is held while its journal is not archived (status says
 * so, prune deletes nothing); once archived, `prune --dry-run` reports it and deletes nothing,
 * `prune` deletes it, `get` no longer finds it, and `journal verify` still holds; a config whose
 * replay window undercuts the approval horizon is refused with a message naming the option.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sqliteStore } from "../../src/stores/sqlite/index.js";
import { json, TEST_CONFIG, workspace, writ } from "./helpers.js";

const RETAIN_MS = 1500;
const CONFIG = TEST_CONFIG.replace("worker: { pollMs: 100 },", `worker: { pollMs: 100 },
  host: { approvalTtlMs: 1000, retry: { maxDelayMs: 100 }, retention: { invocationsMs: ${RETAIN_MS}, enabled: false } },`);

let ws: ReturnType<typeof workspace>;
beforeAll(async () => {
  ws = workspace({ "writ.config.ts": CONFIG });
  expect((await writ(ws.dir, ["migrate"])).code).toBe(0);
});
afterAll(() => ws?.cleanup());

interface Report {
  pruned: Record<string, number>;
  held: Record<string, number>;
  oldestEndedAt: number | null;
  dryRun: boolean;
}

describe("writ retention", () => {
  it("holds what is not archived, prunes what is, and the journal still verifies", async () => {
    expect((await writ(ws.dir, ["authorities", "create", "bot", "--principal", "agent:bot", "--action", "*"])).code).toBe(0);
    const sub = await writ(ws.dir, ["--json", "submit", "--action", "payments.refund", "--actor", "agent:bot", "--authority", "bot", "--params", '{"paymentId":"p1","amount":100,"currency":"EUR"}', "--idempotency-key", "r-1"]);
    expect(sub.code, sub.stderr).toBe(0);
    const { invocation } = json<{ invocation: { invocationId: string } }>(sub);
    const run = await writ(ws.dir, ["worker", "--once"]);
    expect(run.code, run.stderr).toBe(0);
    await new Promise((r) => setTimeout(r, RETAIN_MS + 100));

    const status = json<Report>(await writ(ws.dir, ["--json", "retention", "status"]));
    expect(status).toMatchObject({ dryRun: true, pruned: { invocations: 0 }, held: { not_archived: 1 } });
    expect(status.oldestEndedAt).toEqual(expect.any(Number));
    const human = await writ(ws.dir, ["retention", "status"]);
    expect(human.stdout).toContain("1 not archived");
    expect(human.stdout).toContain(invocation.invocationId);

    // The archiver's part, as an operator's cron runs it: archive what is sealed (a checkpoint of
    // the head, a segment, the watermark moved); entries archived just now stay in the database.
    const archived = await writ(ws.dir, ["journal", "archive"]);
    expect(archived.code, archived.stdout + archived.stderr).toBe(0);
    const store = sqliteStore({ path: join(ws.dir, ".writ", "writ.db") });
    try {
      const scope = { tenantId: "acme", spaceId: "prod" };
      const [head, through] = await store.transact(async (tx) => [await tx.journalHead(scope), await tx.journalArchivedThrough(scope)] as const);
      expect(through).toBe(head!.seq);
    } finally {
      await store.close();
    }

    const dry = json<Report>(await writ(ws.dir, ["--json", "retention", "prune", "--dry-run"]));
    expect(dry).toMatchObject({ dryRun: true, pruned: { invocations: 1 } });
    expect((await writ(ws.dir, ["get", invocation.invocationId])).code).toBe(0);
    const done = await writ(ws.dir, ["retention", "prune"]);
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toMatch(/invocations\s+1/);
    expect((await writ(ws.dir, ["get", invocation.invocationId])).code).not.toBe(0);
    const verify = await writ(ws.dir, ["journal", "verify"]);
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
    expect(json<Report>(await writ(ws.dir, ["--json", "retention", "status"])).oldestEndedAt).toBeNull();
  }, 60_000);

  it("refuses a replay window shorter than the approval horizon, naming it", async () => {
    const bad = workspace({ "writ.config.ts": TEST_CONFIG.replace("worker: { pollMs: 100 },", "worker: { pollMs: 100 }, host: { retention: { replayWindowMs: 60000 } },") });
    try {
      const r = await writ(bad.dir, ["retention", "status"]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain("retention.replayWindowMs (60000) is shorter than the approval horizon");
    } finally {
      bad.cleanup();
    }
  }, 30_000);
});
