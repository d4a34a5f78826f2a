/**
 * `GET /v1/spaces/{spaceId}/journal/export` writes what `writ journal export` writes
 * (docs/archives.md, Offline verification). Invariants: the body is the shared writer's text byte
 * for byte, a header line (valid per the OpenAPI `JournalExportHeader`) with the range's signed
 * checkpoints and their keys, then the entries; saved to a file it verifies offline with `writ
 * journal verify --file` (the file's own keys named as such; with `--keys`, only those); the same
 * file with its tail cut is `truncated`, and so is one whose header was rewritten to match the cut;
 * a key of one tenant exports only its tenant's scope.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeCheckpoint } from "../../src/core/journal.js";
import { openJournalExport } from "../../src/core/journal-export.js";
import { sealJournalNow } from "../../src/index.js";
import { JournalExportHeader } from "../../src/server/schemas.js";
import { json, writ } from "../cli/helpers.js";
import { ACME, GLOBEX, call, refund, startRig, type Rig } from "./fixture.js";

let rig: Rig;
let dir: string;
beforeAll(async () => {
  rig = await startRig();
  dir = mkdtempSync(join(tmpdir(), "writ-http-export-"));
});
afterAll(async () => {
  await rig?.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Verified {
  ok: boolean;
  entries: number;
  checkpoints: number;
  keysFromArchive?: string[];
  problems: Array<{ kind: string }>;
}

/** Refunds in both tenants, run and sealed; then a checkpoint of each head, and one more refund in acme past it. */
async function seedBothTenants(): Promise<void> {
  for (const key of ["acme.submit", "acme.submit", "globex.submit"]) expect((await call(rig, "POST", "/v1/spaces/prod/invocations", { key, body: refund(10) })).status).toBe(202);
  await rig.work();
  const { store, signingKey, host } = rig.runtime;
  const { crypto, clock } = host.context.o;
  for (const scope of [ACME, GLOBEX]) {
    await sealJournalNow(store, scope, { crypto });
    expect(await store.transact((tx) => writeCheckpoint(tx, crypto, scope, signingKey, clock.now()))).not.toBeNull();
  }
  expect((await call(rig, "POST", "/v1/spaces/prod/invocations", { key: "acme.submit", body: refund(11) })).status).toBe(202);
  await sealJournalNow(store, ACME, { crypto });
}

describe("HTTP journal export", () => {
  it("is the CLI's format: saved to a file it verifies offline, and a cut tail is caught", { timeout: 60_000 }, async () => {
    await seedBothTenants();
    const exp = await call(rig, "GET", "/v1/spaces/prod/journal/export", { key: "acme.operate" });
    expect(exp.status).toBe(200);
    const lines = exp.text.trimEnd().split("\n");
    const header = JournalExportHeader.parse(JSON.parse(lines[0]!));
    const entries = lines.slice(1).map((l) => JSON.parse(l) as { seq: number; tenantId: string });
    expect(header).toMatchObject({ kind: "export", tenantId: "acme", spaceId: "prod", fromSeq: 1, entries: entries.length, throughSeq: entries.at(-1)!.seq });
    expect(Number(exp.headers.get("x-writ-journal-head"))).toBe(header.throughSeq);
    // The checkpoint lies below the head (an entry was sealed past it), with the key that signed it.
    expect(header.checkpoints.length).toBeGreaterThan(0);
    expect(header.checkpoints.every((cp) => cp.seq < header.throughSeq)).toBe(true);
    expect(header.keys.map((k) => k.kid)).toEqual([rig.runtime.signingKey.kid]);

    // The served document names the lines' schemas.
    const doc = (await (await fetch(`${rig.url}/openapi.json`)).json()) as { paths: Record<string, { get: { responses: Record<string, { content: Record<string, { schema: unknown }> }> } }> };
    expect(doc.paths["/v1/spaces/{spaceId}/journal/export"]!.get.responses["200"]!.content["application/x-ndjson"]!.schema).toEqual({
      type: "string",
      contentSchema: { type: "array", prefixItems: [{ $ref: "#/components/schemas/JournalExportHeader" }], items: { $ref: "#/components/schemas/JournalEntry" } },
    });

    // One writer: the CLI's export of the same range is this text byte for byte.
    const { store, keyring } = rig.runtime;
    let cli = "";
    for await (const c of (await openJournalExport(store, keyring, ACME)).chunks()) cli += c.text;
    expect(exp.text).toBe(cli);

    const file = join(dir, "acme.jsonl");
    writeFileSync(file, exp.text);
    const offline = await writ(dir, ["journal", "verify", "--file", file, "--json"]);
    expect(offline.code, offline.stdout + offline.stderr).toBe(0);
    expect(json<Verified>(offline)).toMatchObject({ ok: true, entries: entries.length, checkpoints: header.checkpoints.length, keysFromArchive: [rig.runtime.signingKey.kid] });

    // With keys the auditor holds (not the file's): only those verify, and none is taken from the file.
    const jwks = join(dir, "jwks.json");
    writeFileSync(jwks, JSON.stringify((await call(rig, "GET", "/.well-known/jwks.json")).json));
    const withKeys = json<Verified>(await writ(dir, ["journal", "verify", "--file", file, "--keys", jwks, "--json"]));
    expect(withKeys).toMatchObject({ ok: true, problems: [] });
    expect(withKeys.keysFromArchive).toBeUndefined();

    // The tail cut: fewer entries than the header states.
    const cutFile = join(dir, "cut.jsonl");
    writeFileSync(cutFile, lines.slice(0, -1).join("\n") + "\n");
    const cut = await writ(dir, ["journal", "verify", "--file", cutFile, "--json"]);
    expect(cut.code).toBe(1);
    expect(json<Verified>(cut).problems.map((p) => p.kind)).toContain("truncated");

    // Cut below the signed checkpoint, with the header rewritten to match: the checkpoint still names it.
    const below = header.checkpoints[header.checkpoints.length - 1]!.seq - 1;
    const kept = entries.filter((e) => e.seq <= below);
    const last = JSON.parse(lines[kept.length]!) as { hash: string };
    const forged = { ...header, throughSeq: below, entries: kept.length, headHash: last.hash };
    const forgedFile = join(dir, "forged.jsonl");
    writeFileSync(forgedFile, [JSON.stringify(forged), ...lines.slice(1, 1 + kept.length)].join("\n") + "\n");
    const rewritten = await writ(dir, ["journal", "verify", "--file", forgedFile, "--json"]);
    expect(rewritten.code).toBe(1);
    expect(json<Verified>(rewritten).problems.map((p) => p.kind)).toContain("truncated");
    expect(readFileSync(file, "utf8")).toBe(exp.text);
  });

  it("a tenant's key exports only its tenant's scope", async () => {
    const acme = await call(rig, "GET", "/v1/spaces/prod/journal/export", { key: "acme.operate" });
    const globex = await call(rig, "GET", "/v1/spaces/prod/journal/export", { key: "globex.operate" });
    const parse = (text: string) => text.trimEnd().split("\n").map((l) => JSON.parse(l) as { tenantId: string; seq?: number });
    const [gh, ...ge] = parse(globex.text);
    expect(gh).toMatchObject({ kind: "export", tenantId: "globex", spaceId: "prod", entries: ge.length });
    expect(ge.length).toBeGreaterThan(0);
    expect(ge.every((e) => e.tenantId === "globex")).toBe(true);
    expect(parse(acme.text).every((e) => e.tenantId === "acme")).toBe(true);
    // Its checkpoints are its own.
    expect((gh as unknown as { checkpoints: Array<{ tenantId: string }> }).checkpoints.every((cp) => cp.tenantId === "globex")).toBe(true);
    // fromSeq past the head: the header alone, stating no entries.
    const empty = await call(rig, "GET", "/v1/spaces/prod/journal/export?fromSeq=100000", { key: "globex.operate" });
    expect(parse(empty.text)).toEqual([expect.objectContaining({ kind: "export", tenantId: "globex", fromSeq: 100000, entries: 0 })]);
  });
});
