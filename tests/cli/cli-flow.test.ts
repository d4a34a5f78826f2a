/**
 * The real `writ` binary through a whole operator flow on one SQLite workspace: authorities,
 * submit (flags and file), worker --once, get, ls, an approval, a reconciliation, API keys, and the
 * journal (verify, export, a tampered entry detected with exit 1).
 */
import Database from "better-sqlite3";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { json, workspace, writ } from "./helpers.js";
import { generateSigningKey } from "../../src/index.js";

interface Inv {
  invocationId: string;
  status: string;
  approvalId?: string;
  reasons?: string[];
  result?: unknown;
}

let ws: ReturnType<typeof workspace>;
const ids: Record<string, string> = {};
beforeAll(() => {
  ws = workspace();
});
afterAll(() => ws.cleanup());

const AS_BOT = ["--actor", "agent:support-bot", "--authority", "support-bot"];

describe("writ CLI end to end", () => {
  it("submits requests, runs them with worker --once, and shows them with get and ls", async () => {
    const auth = await writ(ws.dir, ["authorities", "create", "support-bot", "--principal", "agent:support-bot", "--action", "payments.*", "--action", "messages.*", "--as", "user:alice", "--json"]);
    expect(auth.code).toBe(0);
    expect(json<{ authority: { status: string; actions: string[] } }>(auth).authority).toMatchObject({ status: "active", actions: ["payments.*", "messages.*"] });

    writeFileSync(
      join(ws.dir, "large.json"),
      JSON.stringify({ action: "payments.refund", actor: { type: "agent", id: "support-bot" }, authorityRef: "support-bot", params: { paymentId: "pay_2", amount: 25000, currency: "EUR" }, idempotencyKey: "refund-2" }),
    );
    const [small, large, lost, denied, invalid] = await Promise.all([
      writ(ws.dir, ["submit", "--action", "payments.refund", ...AS_BOT, "--params", '{"paymentId":"pay_1","amount":1200,"currency":"EUR"}', "--idempotency-key", "refund-1", "--json"]),
      writ(ws.dir, ["submit", "--file", "large.json", "--json"]),
      writ(ws.dir, ["submit", "--action", "messages.send", ...AS_BOT, "--params", '{"to":"lost-reply@example.com","body":"hi"}', "--idempotency-key", "msg-1", "--json"]),
      writ(ws.dir, ["submit", "--action", "payments.refund", ...AS_BOT, "--params", '{"paymentId":"pay_3","amount":900000,"currency":"EUR"}', "--idempotency-key", "refund-3", "--json"]),
      writ(ws.dir, ["submit", "--action", "payments.refund", ...AS_BOT, "--params", '{"paymentId":"pay_4","amount":-5,"currency":"EUR"}']),
    ]);
    for (const [name, r] of Object.entries({ small, large, lost, denied })) {
      expect(r.code, `${name}: ${r.stderr}`).toBe(0);
      const out = json<{ invocation: Inv; replayed: boolean }>(r);
      expect(out.invocation.status).toBe("queued");
      expect(out.replayed).toBe(false);
      ids[name] = out.invocation.invocationId;
    }
    // Params that fail the action's schema: a usage error, nothing stored.
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain("invalid params for payments.refund");

    // The same key and request again: a replay of the same invocation.
    const again = json<{ invocation: Inv; replayed: boolean }>(await writ(ws.dir, ["submit", "--file", "large.json", "--json"]));
    expect(again).toMatchObject({ replayed: true, invocation: { invocationId: ids.large } });

    const run = await writ(ws.dir, ["worker", "--once", "--json"]);
    expect(run.code).toBe(0);
    expect(json<{ processed: number; results: Record<string, number> }>(run)).toEqual({
      processed: 4,
      results: { succeeded: 1, awaiting_approval: 1, reconciliation_required: 1, denied: 1 },
    });

    const [got, human, succeeded, all, otherScope, missing] = await Promise.all([
      writ(ws.dir, ["get", ids.small!, "--json"]),
      writ(ws.dir, ["get", ids.denied!]),
      writ(ws.dir, ["ls", "--status", "succeeded", "--json"]),
      writ(ws.dir, ["ls", "-q"]),
      writ(ws.dir, ["ls", "--tenant", "someone-else", "--json"]),
      writ(ws.dir, ["get", "inv_nope"]),
    ]);
    expect(got.code).toBe(0);
    const detail = json<{ invocation: Inv; steps: Array<{ status: string; externalRef?: string }> }>(got);
    expect(detail.invocation.status).toBe("succeeded");
    expect(detail.steps).toEqual([expect.objectContaining({ status: "succeeded", externalRef: "re_1" })]);
    expect(human.stdout).toMatch(/status:\s+denied/);
    expect(human.stdout).toContain("refund-too-large");
    expect(json<{ items: Inv[] }>(succeeded).items.map((i) => i.invocationId)).toEqual([ids.small]);
    expect(all.stdout.trim().split("\n").sort()).toEqual([ids.small, ids.large, ids.lost, ids.denied].sort());
    expect(json<{ items: Inv[] }>(otherScope).items).toEqual([]);
    // The REASON column of an invocation awaiting approval names the policy that asked for it.
    const waiting = await writ(ws.dir, ["ls", "--status", "awaiting_approval"]);
    expect(waiting.stdout).toContain(ids.large);
    expect(waiting.stdout).toContain("refund-large");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("no invocation inv_nope in acme/prod");
  });

  it("approves the large refund; the next worker run executes it", async () => {
    const pending = await writ(ws.dir, ["approvals", "ls", "-q"]);
    const approvalId = pending.stdout.trim();
    expect(approvalId).toMatch(/^apr_/);
    const [self, ok] = await Promise.all([
      // The requesting actor never approves its own request.
      writ(ws.dir, ["approvals", "approve", approvalId, "--as", "agent:support-bot"]),
      writ(ws.dir, ["approvals", "approve", approvalId, "--as", "user:alice", "--note", "customer called", "--json"]),
    ]);
    expect(self.code).toBe(1);
    expect(self.stderr).toContain("cannot approve or deny its own request");
    expect(ok.code).toBe(0);
    expect(json<{ approval: { status: string }; invocation: Inv }>(ok)).toMatchObject({ approval: { status: "approved" }, invocation: { invocationId: ids.large, status: "queued" } });
    // --log-json: structured pino lines on stderr, one per transition among them.
    const run = await writ(ws.dir, ["worker", "--once", "--log-json"]);
    expect(run.stdout).toContain("processed 1: 1 succeeded");
    const lines = run.stderr
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { name?: string; msg?: string; status?: string; invocationId?: string });
    expect(lines.every((l) => l.name === "writ")).toBe(true);
    expect(lines).toContainEqual(expect.objectContaining({ msg: "writ event", invocationId: ids.large, status: "succeeded" }));
  });

  it("resolves the ambiguous message as succeeded with the provider's reference", async () => {
    const open = json<{ items: Array<{ reconciliationId: string; invocationId: string; reasonCode: string }> }>(await writ(ws.dir, ["reconcile", "ls", "--json"]));
    expect(open.items).toEqual([expect.objectContaining({ invocationId: ids.lost, reasonCode: "OUTCOME_AMBIGUOUS" })]);
    const effects = readFileSync(join(ws.dir, ".writ", "provider.jsonl"), "utf8");
    expect(effects).toContain('"ref":"msg_1"');
    const rid = open.items[0]!.reconciliationId;
    // Its step started (the provider may have acted): too late to cancel, and nothing changes.
    const [late, lateJson] = await Promise.all([writ(ws.dir, ["cancel", ids.lost!, "--as", "user:alice"]), writ(ws.dir, ["cancel", ids.lost!, "--as", "user:alice", "--json"])]);
    expect(late.code).toBe(1);
    expect(late.stderr).toContain("can be cancelled");
    expect(lateJson.stdout + lateJson.stderr).toContain("STEPS_STARTED");
    const noNote = await writ(ws.dir, ["reconcile", "resolve", rid, "--outcome", "succeeded"]);
    expect(noNote.code).toBe(2);
    expect(noNote.stderr).toContain("needs --note");
    const r = await writ(ws.dir, ["reconcile", "resolve", rid, "--outcome", "succeeded", "--external-ref", "msg_1", "--note", "gateway log shows msg_1 delivered", "--as", "user:alice", "--json"]);
    expect(r.code).toBe(0);
    expect(json<{ invocation: Inv }>(r).invocation).toMatchObject({ invocationId: ids.lost, status: "succeeded", result: { externalRef: "msg_1" } });
    const twice = await writ(ws.dir, ["reconcile", "resolve", rid, "--outcome", "failed", "--note", "again"]);
    expect(twice.code).toBe(1);
    expect(twice.stderr).toContain("already resolved");
  });

  it("lists early completions (results withheld); a bad limit is a usage error", async () => {
    const empty = await writ(ws.dir, ["completions", "early", "--json"]);
    expect(empty.code).toBe(0);
    expect(json<{ items: unknown[] }>(empty).items).toEqual([]);
    const doc = { tenantId: "acme", spaceId: "prod", completionId: "cmp_cli_early", connector: "demo-messages", externalRef: "msg_unmatched", outcome: "success", result: { secret: "s3cr3t" }, contentDigest: "d", disposition: "early", receivedAt: 5, rev: 1 };
    const db = new Database(join(ws.dir, ".writ", "writ.db"));
    try {
      db.prepare("INSERT INTO completions (tenant_id, space_id, connector, completion_id, external_ref, received_at, doc, rev) VALUES ('acme', 'prod', 'demo-messages', 'cmp_cli_early', 'msg_unmatched', 5, ?, 1)").run(JSON.stringify(doc));
    } finally {
      db.close();
    }
    const [listed, quiet, bad] = await Promise.all([writ(ws.dir, ["completions", "early", "--json"]), writ(ws.dir, ["completions", "early", "-q"]), writ(ws.dir, ["completions", "early", "--limit", "0"])]);
    expect(json<{ items: Array<{ completionId: string; disposition: string }> }>(listed).items).toEqual([expect.objectContaining({ completionId: "cmp_cli_early", disposition: "early" })]);
    expect(listed.stdout).not.toContain("s3cr3t");
    expect(quiet.stdout.trim()).toBe("cmp_cli_early");
    expect(bad.code).toBe(2);
  });

  it("creates, lists and revokes API keys; the key is printed once and never listed", async () => {
    const [created, badRole] = await Promise.all([writ(ws.dir, ["api-keys", "create", "--name", "ci", "--role", "submit", "--json"]), writ(ws.dir, ["api-keys", "create", "--role", "root"])]);
    expect(created.code).toBe(0);
    const { key, record } = json<{ key: string; record: { keyId: string; roles: string[] } }>(created);
    expect(key).toMatch(/^writ_[A-Za-z0-9]+_[A-Za-z0-9_-]+$/);
    expect(record.roles).toEqual(["submit"]);
    expect(badRole.code).toBe(2);
    const ls = await writ(ws.dir, ["api-keys", "ls"]);
    expect(ls.stdout).toContain(record.keyId);
    // The secret is everything after "writ_<keyId>_" (it may itself contain "_").
    const secret = key.slice(`writ_${record.keyId}_`.length);
    expect(secret.length).toBeGreaterThanOrEqual(20);
    expect(ls.stdout).not.toContain(secret);
    const revoked = await writ(ws.dir, ["api-keys", "revoke", record.keyId, "--json"]);
    expect(json<{ revokedAt: number }>(revoked).revokedAt).toEqual(expect.any(Number));
  });

  // Invariant: a key's principal and delegation list are set from the CLI, listed, and journaled in the tenant journal.
  it("creates a key bound to a principal and sets its delegation list", async () => {
    const created = await writ(ws.dir, ["api-keys", "create", "--name", "bot", "--role", "submit", "--principal", "agent:support-bot", "--acts-for", "agent:helper", "--json"]);
    expect(created.code, created.stderr).toBe(0);
    const { record } = json<{ record: { keyId: string; principal: unknown; actsFor: unknown } }>(created);
    expect(record).toMatchObject({ principal: { type: "agent", id: "support-bot" }, actsFor: [{ type: "agent", id: "helper" }] });
    const badPrincipal = await writ(ws.dir, ["api-keys", "create", "--role", "submit", "--principal", "robot:x"]);
    expect(badPrincipal.code).toBe(2);
    const delegated = await writ(ws.dir, ["api-keys", "delegate", record.keyId, "--acts-for", "agent:a", "--acts-for", "agent:b", "--as", "user:root", "--json"]);
    expect(delegated.code, delegated.stderr).toBe(0);
    expect(json<{ actsFor: unknown }>(delegated).actsFor).toEqual([{ type: "agent", id: "a" }, { type: "agent", id: "b" }]);
    const neither = await writ(ws.dir, ["api-keys", "delegate", record.keyId]);
    expect(neither.code).toBe(2);
    const ls = await writ(ws.dir, ["api-keys", "ls"]);
    expect(ls.stdout).toContain("agent:support-bot");
    expect(ls.stdout).toContain("agent:a,agent:b");
    const journal = await writ(ws.dir, ["journal", "ls", "--space", "~tenant", "--json"]);
    expect(journal.stdout).toContain("api_key.delegation_set");
  });

  it("verifies, checkpoints and exports the journal; a tampered entry fails verify with exit 1", async () => {
    const cp = await writ(ws.dir, ["journal", "checkpoint"]);
    expect(cp.stdout).toMatch(/signed checkpoint of acme\/prod at seq \d+/);
    const ok = await writ(ws.dir, ["journal", "verify", "--json"]);
    expect(ok.code).toBe(0);
    const v = json<{ ok: boolean; entries: number; checkpoints: number }>(ok);
    expect(v).toMatchObject({ ok: true, checkpoints: 1 });
    expect(v.entries).toBeGreaterThan(10);

    const exported = await writ(ws.dir, ["journal", "export", "--out", "journal.jsonl"]);
    expect(exported.code).toBe(0);
    const lines = readFileSync(join(ws.dir, "journal.jsonl"), "utf8").trim().split("\n");
    // A header line (with the signed checkpoint and its key), then the entries.
    expect(lines).toHaveLength(v.entries + 1);
    const header = JSON.parse(lines[0]!) as { format: string; kind: string; fromSeq: number; throughSeq: number; entries: number; checkpoints: Array<{ seq: number }>; keys: Array<{ kid: string }> };
    expect(header).toMatchObject({ format: "writ-journal/1", kind: "export", fromSeq: 1, throughSeq: v.entries, entries: v.entries });
    expect(header.checkpoints.map((c) => c.seq)).toEqual([v.entries]);
    expect(header.keys).toHaveLength(1);
    const entries = lines.slice(1).map((l) => JSON.parse(l) as { seq: number; type: string; hash: string });
    expect(entries.map((e) => e.seq)).toEqual(entries.map((_, i) => i + 1));
    expect(entries[0]!.type).toBe("authority.created");
    const [stdout, offline] = await Promise.all([writ(ws.dir, ["journal", "export", "--from-seq", "2", "--out", "-"]), writ(ws.dir, ["journal", "verify", "--file", "journal.jsonl", "--json"])]);
    expect(stdout.stdout.trim().split("\n")).toHaveLength(v.entries);
    expect(json<{ ok: boolean; checkpoints: number; keysFromArchive: string[] }>(offline)).toMatchObject({ ok: true, checkpoints: 1, keysFromArchive: [header.keys[0]!.kid] });
    // Against keys the auditor trusts (--keys): the right one holds and nothing is said to come from
    // the file; another key in its place makes the file's own checkpoint a problem.
    writeFileSync(join(ws.dir, "trusted.json"), JSON.stringify({ keys: header.keys }));
    const other = generateSigningKey({ kid: header.keys[0]!.kid });
    writeFileSync(join(ws.dir, "other.json"), JSON.stringify([other.publicJwk]));
    writeFileSync(join(ws.dir, "no-kid.json"), JSON.stringify({ kty: "OKP" }));
    const [pinned, wrong, noKid, plain] = await Promise.all([
      writ(ws.dir, ["journal", "verify", "--file", "journal.jsonl", "--keys", "trusted.json", "--json"]),
      writ(ws.dir, ["journal", "verify", "--file", "journal.jsonl", "--keys", "other.json", "--json"]),
      writ(ws.dir, ["journal", "verify", "--file", "journal.jsonl", "--keys", "no-kid.json"]),
      writ(ws.dir, ["journal", "verify", "--file", "journal.jsonl"]),
    ]);
    expect(pinned.code).toBe(0);
    expect(json<Record<string, unknown>>(pinned).keysFromArchive).toBeUndefined();
    expect(wrong.code).toBe(1);
    expect(json<{ problems: Array<{ kind: string }> }>(wrong).problems.map((p) => p.kind)).toEqual(["checkpoint_signature"]);
    expect(noKid.code).toBe(2);
    expect(noKid.stderr).toContain("has no kid");
    expect(plain.stdout).toContain("the file carries itself");
    // --keys means only those for the witness check too: a witness holding the file's checkpoint,
    // signed by the key the file carries, is not vouched for by that key when the auditor named others.
    writeFileSync(join(ws.dir, "auditor.json"), JSON.stringify([generateSigningKey({ kid: "auditor" }).publicJwk]));
    writeFileSync(join(ws.dir, "witness.jsonl"), `${JSON.stringify(header.checkpoints[0])}\n`);
    const [fileKeys, auditorKeys] = await Promise.all([
      writ(ws.dir, ["journal", "verify", "--file", "journal.jsonl", "--witness", "witness.jsonl", "--json"]),
      writ(ws.dir, ["journal", "verify", "--file", "journal.jsonl", "--keys", "auditor.json", "--witness", "witness.jsonl", "--json"]),
    ]);
    expect(json<{ ok: boolean; problems: Array<{ kind: string }> }>(fileKeys)).toMatchObject({ ok: true, problems: [] });
    expect(json<{ problems: Array<{ kind: string }> }>(auditorKeys).problems.map((p) => p.kind)).toEqual(["checkpoint_signature", "witness_invalid"]);
    // A cut tail is seen offline: against the header, and against the signed checkpoint even when
    // the header is rewritten to match the cut file.
    writeFileSync(join(ws.dir, "cut.jsonl"), lines.slice(0, -2).join("\n") + "\n");
    const last = entries[entries.length - 3]!;
    writeFileSync(join(ws.dir, "cut-forged.jsonl"), [JSON.stringify({ ...header, throughSeq: last.seq, entries: v.entries - 2, headHash: last.hash }), ...lines.slice(1, -2)].join("\n") + "\n");
    const [cut, forged] = await Promise.all([writ(ws.dir, ["journal", "verify", "--file", "cut.jsonl", "--json"]), writ(ws.dir, ["journal", "verify", "--file", "cut-forged.jsonl", "--json"])]);
    expect(cut.code).toBe(1);
    expect(json<{ problems: Array<{ kind: string }> }>(cut).problems.map((p) => p.kind)).toEqual(["truncated", "truncated"]);
    expect(forged.code).toBe(1);
    expect(json<{ problems: Array<{ kind: string; seq: number }> }>(forged).problems).toEqual([expect.objectContaining({ kind: "truncated", seq: v.entries })]);

    // Tamper with one stored entry: the amount of the first refund.
    const db = new Database(join(ws.dir, ".writ", "writ.db"));
    try {
      const row = db.prepare("SELECT seq, doc FROM journal WHERE type = 'invocation.submitted' AND doc LIKE '%\"amount\":1200,%'").get() as { seq: number; doc: string };
      expect(row.seq).toBeGreaterThan(1);
      db.prepare("UPDATE journal SET doc = ? WHERE seq = ?").run(row.doc.replace('"amount":1200', '"amount":120'), row.seq);
    } finally {
      db.close();
    }
    // An exported file edited by hand fails the offline check the same way.
    const victim = lines.findIndex((l) => l.includes('"actionVersion":"1"'));
    writeFileSync(join(ws.dir, "edited.jsonl"), lines.map((l, i) => (i === victim ? l.replace('"actionVersion":"1"', '"actionVersion":"2"') : l)).join("\n") + "\n");
    const [broken, brokenJson, editedFile] = await Promise.all([
      writ(ws.dir, ["journal", "verify"]),
      writ(ws.dir, ["journal", "verify", "--json"]),
      writ(ws.dir, ["journal", "verify", "--file", "edited.jsonl"]),
    ]);
    expect(broken.code).toBe(1);
    expect(broken.stdout).toContain("BROKEN");
    expect(broken.stdout).toContain("hash_mismatch");
    expect(brokenJson.code).toBe(1);
    const report = json<{ ok: boolean; problems: Array<{ kind: string }> }>(brokenJson);
    expect(report.ok).toBe(false);
    expect(report.problems.map((p) => p.kind)).toContain("hash_mismatch");
    expect(editedFile.code).toBe(1);
  });
});
