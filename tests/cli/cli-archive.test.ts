/**
 * `writ journal archive` through the real binary on a SQLite workspace (docs/archives.md).
 * Invariants: a run archives the closed journal into <state dir>/archives, prunes the database but
 * keeps the head; `journal verify` checks archives and database as one chain and names a removed
 * segment (exit 1); `journal export` of the pruned journal still verifies offline from its first
 * live entry; a second run with nothing new archives nothing; a checkpoint published to a file
 * witness verifies against it, and a forged witnessed head is named.
 */
import { readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { json, workspace, writ } from "./helpers.js";

let ws: ReturnType<typeof workspace>;
beforeAll(() => {
  ws = workspace();
});
afterAll(() => ws.cleanup());

interface Run {
  scope: { tenantId: string; spaceId: string };
  segments: Array<{ name: string; fromSeq: number; throughSeq: number }>;
  archivedThrough: number;
  headSeq: number;
  pruned: number;
  firstLiveSeq: number | null;
}

describe("writ journal archive", () => {
  it("archives, prunes, verifies across archives and database, and names a missing segment", async () => {
    const auth = await writ(ws.dir, ["authorities", "create", "support-bot", "--principal", "agent:support-bot", "--action", "payments.*", "--as", "user:alice"]);
    expect(auth.code, auth.stderr).toBe(0);
    for (const n of [1, 2, 3]) {
      const r = await writ(ws.dir, ["submit", "--action", "payments.refund", "--actor", "agent:support-bot", "--authority", "support-bot", "--params", `{"paymentId":"pay_${n}","amount":100,"currency":"EUR"}`, "--idempotency-key", `k-${n}`]);
      expect(r.code, r.stderr).toBe(0);
    }
    expect((await writ(ws.dir, ["worker", "--once"])).code).toBe(0);
    const first = await writ(ws.dir, ["journal", "archive", "--space", "prod", "--keep-live-ms", "0", "--json"]);
    expect(first.code, first.stderr).toBe(0);
    const [run] = json<{ runs: Run[] }>(first).runs;
    expect(run!.segments).toHaveLength(1);
    expect(run).toMatchObject({ archivedThrough: run!.headSeq, pruned: run!.headSeq - 1, firstLiveSeq: run!.headSeq });
    const dir = join(ws.dir, ".writ", "archives", run!.scope.tenantId, run!.scope.spaceId);
    expect(readdirSync(dir)).toEqual([run!.segments[0]!.name.split("/").pop()]);

    const verify = await writ(ws.dir, ["journal", "verify", "--json"]);
    expect(verify.code, verify.stdout).toBe(0);
    expect(json<{ ok: boolean; entries: number; archive: { segments: number } }>(verify)).toMatchObject({ ok: true, entries: run!.headSeq, archive: { segments: 1 } });
    const human = await writ(ws.dir, ["journal", "verify"]);
    expect(human.stdout).toMatch(/from 1 archive segment/);

    // The pruned journal exports from its first live entry and verifies offline.
    const exported = await writ(ws.dir, ["journal", "export", "--out", "live.jsonl"]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(json<{ ok: boolean; entries: number }>(await writ(ws.dir, ["journal", "verify", "--file", "live.jsonl", "--json"]))).toMatchObject({ ok: true, entries: 1 });

    const again = await writ(ws.dir, ["journal", "archive", "--space", "prod"]);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/nothing new to archive/);

    // A segment moved away is named.
    const seg = join(dir, readdirSync(dir)[0]!);
    renameSync(seg, `${seg}.away`);
    const broken = await writ(ws.dir, ["journal", "verify", "--json"]);
    expect(broken.code).toBe(1);
    expect(json<{ problems: Array<{ kind: string }> }>(broken).problems.map((p) => p.kind)).toContain("segment_missing");
    renameSync(`${seg}.away`, seg);
    expect((await writ(ws.dir, ["journal", "verify"])).code).toBe(0);

    // A checkpoint published to a file witness; verify checks the chain against what it holds.
    const cp = await writ(ws.dir, ["journal", "checkpoint", "--witness", "witness.jsonl"]);
    expect(cp.code, cp.stderr).toBe(0);
    expect(cp.stdout).toMatch(/published to 1 of 1 witness/);
    const witnessed = await writ(ws.dir, ["journal", "verify", "--witness", "witness.jsonl", "--json"]);
    expect(witnessed.code, witnessed.stdout).toBe(0);
    const line = readFileSync(join(ws.dir, "witness.jsonl"), "utf8");
    writeFileSync(join(ws.dir, "forged.jsonl"), line.replace(/"seq":\d+/, '"seq":999'));
    const forged = await writ(ws.dir, ["journal", "verify", "--witness", "forged.jsonl", "--json"]);
    expect(forged.code).toBe(1);
    expect(json<{ problems: Array<{ kind: string; witness?: string }> }>(forged).problems).toEqual([expect.objectContaining({ kind: "witness_invalid", witness: expect.stringContaining("forged.jsonl") })]);
  });
});
