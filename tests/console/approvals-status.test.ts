/**
 * The approval inbox renders from data alone (no server, no browser). Invariant: an approval whose
 * status this console does not know (a status added to the model later, such as one closed when
 * its invocation is cancelled) renders in words, in neutral grey, with when it ended, without an
 * expiry or a vote form, and under the "all" tab; it never breaks the page.
 */
import { describe, expect, it } from "vitest";
import type { ConsoleData, ShownEntry } from "../../src/console/data.js";
import { resolveConsoleOptions } from "../../src/console/options.js";
import { approvalsBody } from "../../src/console/pages/approvals.js";
import { viewerOf } from "../../src/console/viewer.js";
import type { ApiKeyRecord, Approval, Invocation } from "../../src/core/types.js";

const NOW = Date.parse("2026-12-01T12:00:00Z");

const key = { keyId: "k1", tenantId: "acme", spaces: ["prod"], roles: ["approve"], hash: "sha256:x", name: "bob", createdAt: NOW } as ApiKeyRecord;
const viewer = viewerOf("s1", { keyId: "k1", csrf: "t", createdAt: NOW, expiresAt: NOW + 1e6, lastSeenAt: NOW }, key, resolveConsoleOptions({ spaces: ["prod"] }));

function approval(status: string): Approval {
  return { tenantId: "acme", spaceId: "prod", approvalId: `apr_${status}`, requestDigest: "sha256:d", invocationId: `inv_${status}`, requestedBy: { type: "agent", id: "bot" }, approverRoles: ["approve"], quorum: 1, votes: [], status: status as Approval["status"], expiresAt: NOW + 86_400_000, createdAt: NOW - 60_000, updatedAt: NOW - 30_000 };
}

function dataOf(approvals: Approval[], journal: ShownEntry[]): ConsoleData {
  const inv = (id: string) => ({ invocationId: id, request: { action: "payments.refund", actionVersion: "1", params: { amount: 9000 } } }) as unknown as Invocation;
  return {
    approvals: async (_s, status) => approvals.filter((a) => status === undefined || a.status === status),
    invocation: async (_s, id) => inv(id),
    journalBackwards: async (_s, keep) => {
      for (const e of journal) if (keep(e) === "stop") break;
      return { entries: [], truncated: false };
    },
  } as Partial<ConsoleData> as ConsoleData;
}

describe("approval statuses the console does not know", () => {
  it("renders an unknown status in words, with when and by whom it ended, no expiry and no vote form", async () => {
    const closed = { ...approval("withdrawn"), approvalId: "apr_closed" };
    const entry = (type: string, at: number, data: ShownEntry["data"]): ShownEntry => ({ tenantId: "acme", spaceId: "prod", id: `${type}:${at}`, type, at, refs: { approvalId: closed.approvalId }, data });
    const ended = entry("approval.withdrawn", NOW - 30_000, { by: { type: "user", id: "sam" }, note: "invocation cancelled" });
    const opened = entry("approval.opened", NOW - 60_000, { reasons: ["refund-large"] });
    const { body, count } = await approvalsBody(dataOf([closed, approval("pending")], [ended, opened]), viewer, { status: "all" }, NOW);
    const html = body.toString();
    expect(count).toBe(2);
    const card = html.slice(html.indexOf('data-approval="apr_closed"'), html.indexOf('data-approval="apr_pending"'));
    expect(card).toContain('<span class="badge neutral">withdrawn</span>');
    expect(card).toMatch(/<dd data-testid="decided">Withdrawn by <strong>user:sam<\/strong> <time[^>]*>2026-12-01 11:59:30 UTC<\/time> — “invocation cancelled”<\/dd>/);
    expect(card).not.toMatch(/expires/i);
    expect(card).not.toContain("<form");
    expect(html.slice(html.indexOf('data-approval="apr_pending"'))).toContain("<form");
  });

  it("offers a tab per known status and all, and shows an unknown status asked for by URL as pending", async () => {
    const { body } = await approvalsBody(dataOf([approval("withdrawn")], []), viewer, { status: "withdrawn" }, NOW);
    const html = body.toString();
    expect(html).toContain('aria-label="Approvals (pending)"');
    for (const s of ["pending", "approved", "denied", "expired", "revoked", "closed", "all"]) expect(html).toContain(`>${s}</a></li>`);
  });

  // Invariant: an approval closed because its invocation was cancelled says so, with who cancelled
  // and when, and offers neither an expiry nor a vote (docs/approvals.md, Closed approvals).
  it("renders a closed approval with the cancel that closed it", async () => {
    const closed: Approval = { ...approval("closed"), closed: { invocationStatus: "cancelled", by: { type: "user", id: "sam" }, at: NOW - 30_000 } };
    const { body } = await approvalsBody(dataOf([closed], []), viewer, { status: "all" }, NOW);
    const html = body.toString();
    expect(html).toMatch(/<dd data-testid="decided">Closed: the invocation was cancelled by <strong>user:sam<\/strong> <time[^>]*>2026-12-01 11:59:30 UTC<\/time> <span class="muted">\(no vote is taken on it\)<\/span><\/dd>/);
    expect(html).not.toMatch(/expires/i);
    expect(html).not.toContain("<form");
  });
});
