/**
 * Witnesses named in the config's `archive.witnesses` (docs/archives.md, Checkpoint witnesses),
 * through the real binary. Invariants: `writ journal archive` publishes the checkpoint it signed to
 * a file witness and an HTTP witness (a server in this test); `writ journal verify --witness` then
 * passes against both; another workspace with the same signing key and another history (rewritten
 * and re-signed) is `witness_mismatch` against each; a witness that refuses leaves the run archiving,
 * says so and exits 1, and the next run shows it the checkpoint it missed.
 */
import { cpSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JournalCheckpoint } from "../../src/index.js";
import { witnessServer } from "../helpers/witness-server.js";
import { json, TEST_CONFIG, workspace, writ } from "./helpers.js";

interface Run {
  segments: Array<{ fromSeq: number; throughSeq: number }>;
  archivedThrough: number;
  headSeq: number;
  witnesses?: { published: number; failed: Array<{ witness: string; error: string }> };
}
interface Verified {
  ok: boolean;
  problems: Array<{ kind: string; witness?: string; seq?: number }>;
}

const witness = witnessServer();
const held = witness.held;
let url: string;
let honest: ReturnType<typeof workspace>;
let rewritten: ReturnType<typeof workspace>;

beforeAll(async () => {
  url = await witness.listen();
  const config = TEST_CONFIG.replace("  worker: { pollMs: 100 },", `  archive: { witnesses: ["witness.jsonl", ${JSON.stringify(url)}] },\n  worker: { pollMs: 100 },`);
  expect(config).toContain("archive: { witnesses");
  honest = workspace({ "writ.config.ts": config });
  rewritten = workspace();
});
afterAll(async () => {
  honest?.cleanup();
  rewritten?.cleanup();
  await witness.close();
});

/** An authority and `n` refunds, run by one worker pass. */
async function activity(dir: string, n: number, from = 1): Promise<void> {
  if (from === 1) expect((await writ(dir, ["authorities", "create", "support-bot", "--principal", "agent:support-bot", "--action", "payments.*", "--as", "user:alice"])).code).toBe(0);
  for (let i = from; i < from + n; i++) {
    const r = await writ(dir, ["submit", "--action", "payments.refund", "--actor", "agent:support-bot", "--authority", "support-bot", "--params", `{"paymentId":"pay_${i}","amount":100,"currency":"EUR"}`, "--idempotency-key", `k-${i}`]);
    expect(r.code, r.stderr).toBe(0);
  }
  expect((await writ(dir, ["worker", "--once"])).code).toBe(0);
}

describe("archive.witnesses in the config", () => {
  it("journal archive publishes to a file and an HTTP witness; verify --witness passes; a rewritten history is witness_mismatch", { timeout: 120_000 }, async () => {
    await activity(honest.dir, 3);
    const first = await writ(honest.dir, ["journal", "archive", "--space", "prod", "--json"]);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    const [run] = json<{ runs: Run[] }>(first).runs;
    expect(run).toMatchObject({ archivedThrough: run!.headSeq, witnesses: { published: 2, failed: [] } });
    const fileHeld = readFileSync(join(honest.dir, "witness.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as JournalCheckpoint);
    expect(fileHeld.map((c) => c.seq)).toEqual([run!.headSeq]);
    expect(held).toEqual(fileHeld);

    const verify = await writ(honest.dir, ["journal", "verify", "--witness", "witness.jsonl", "--witness", url, "--json"]);
    expect(verify.code, verify.stdout).toBe(0);
    expect(json<Verified>(verify)).toMatchObject({ ok: true, problems: [] });

    // The same signing key, another history of the scope, signed: what the witnesses were shown names it.
    mkdirSync(join(rewritten.dir, ".writ"), { recursive: true });
    cpSync(join(honest.dir, ".writ", "keys"), join(rewritten.dir, ".writ", "keys"), { recursive: true });
    await activity(rewritten.dir, 4);
    expect((await writ(rewritten.dir, ["journal", "checkpoint"])).code).toBe(0);
    const caught = await writ(rewritten.dir, ["journal", "verify", "--witness", join(honest.dir, "witness.jsonl"), "--witness", url, "--json"]);
    expect(caught.code).toBe(1);
    expect(json<Verified>(caught).problems.map((p) => [p.kind, p.seq])).toEqual([
      ["witness_mismatch", run!.headSeq],
      ["witness_mismatch", run!.headSeq],
    ]);
  });

  it("a witness that refuses: the run archives, says so and exits 1; the next run shows it what it missed", { timeout: 120_000 }, async () => {
    await activity(honest.dir, 1, 10);
    witness.down = true;
    const refused = await writ(honest.dir, ["journal", "archive", "--space", "prod"]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(/archived 1 segment/);
    expect(refused.stdout).toContain(`witness ${url} did not take it (retried at the next run): witness ${url} answered 503`);
    const head = json<{ runs: Run[] }>(await writ(honest.dir, ["journal", "archive", "--space", "prod", "--json"]));
    // Still down: nothing new archived, the missed checkpoint still not taken.
    expect(head.runs[0]!.witnesses!.failed).toHaveLength(1);
    witness.down = false;
    const again = await writ(honest.dir, ["journal", "archive", "--space", "prod", "--json"]);
    expect(again.code, again.stdout).toBe(0);
    expect(json<{ runs: Run[] }>(again).runs[0]).toMatchObject({ witnesses: { published: 1, failed: [] } });
    expect(held.map((c) => c.seq)).toEqual([held[0]!.seq, head.runs[0]!.headSeq]);
    expect((await writ(honest.dir, ["journal", "verify", "--witness", "witness.jsonl", "--witness", url])).code).toBe(0);
  });
});
