/**
 * The batch statement's array arguments as PostgreSQL array literals (migration 25, `batchArgs`,
 * `writ_batch_2` / `writ_call_2`; docs/stores.md, "Batches").
 *
 * Invariants:
 * - an array `batchArgs` encodes reads back, through the JSON of the batch statement and the cast
 *   `writ_call_2` applies, as exactly the array it was: text elements of any storable text (quotes,
 *   backslashes, braces, commas, spaces, the word NULL, the empty string, emoji), null elements
 *   as NULL, JSON documents with their exact text (escapes of NUL included), integers as bigint up
 *   to the type's limits; an absent array stays NULL;
 * - `writ_batch_2` answers a batch of calls as `writ_batch` does (the same members, the same
 *   answers, a refused member failing alone), and `writ_batch` still takes the previous version's
 *   JSON arrays after the migration (a rolling upgrade's older processes keep working);
 * - a value `batchArgs` cannot encode is refused in Node, naming the argument, before any statement.
 */
import fc from "fast-check";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { storable } from "../../src/core/text.js";
import { BATCH_RUNNER, SEAL_IF_HEAD_FN, batchArgs, type PgFunction } from "../../src/stores/postgres/postgres-calls.js";
import { fcRun } from "../helpers/seed.js";
import { freshClient, pgServerOrNull } from "../helpers/pg.js";

const server = await pgServerOrNull();
let fresh: Awaited<ReturnType<typeof freshClient>> | undefined;
let c: pg.Client;

beforeAll(async () => {
  if (server === null) return;
  fresh = await freshClient();
  c = fresh.client;
});

afterAll(() => fresh?.close());

/** A function of three array parameters, for reading `batchArgs`' output back as `writ_call_2` casts it. */
const THREE: PgFunction = { fn: "three", casts: ["text[]", "json[]", "bigint[]"], returns: "json" };
const READ_BACK = "SELECT ($1::jsonb->>0)::text[] AS t, ($1::jsonb->>1)::json[]::text[] AS j, ($1::jsonb->>2)::bigint[]::text[] AS b";

/** Text that troubles an array literal or JSON, among ordinary characters. */
const piece = fc.constantFrom('"', "\\", "{", "}", ",", " ", "\t", "\n", "NULL", "null", "'", "é", "\ud83d\ude00", "a", "\\u0000", "");
const text = fc.oneof(fc.array(piece, { maxLength: 8 }).map((p) => p.join("")), fc.string({ unit: "binary", maxLength: 12 }).filter(storable));
const json = fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v) ?? "null");
const awkwardDoc = fc.record({ a: text, nul: fc.constantFrom("a\u0000b", "\u0000", "x") }).map((d) => JSON.stringify(d));
const int = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });

describe.skipIf(server === null)("batch arrays as literals", () => {
  it("every array reads back exactly as it was sent", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.option(text, { nil: null }), { maxLength: 6 }),
        fc.array(fc.option(fc.oneof(json, awkwardDoc), { nil: null }), { maxLength: 4 }),
        fc.array(fc.oneof(int, int.map(String), fc.integer().map(Number)), { maxLength: 5 }),
        async (texts, docs, nums) => {
          const payload = JSON.stringify(batchArgs(THREE, [texts, docs, nums]), (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v));
          const { rows } = await c.query<{ t: (string | null)[]; j: (string | null)[]; b: string[] }>(READ_BACK, [payload]);
          expect(rows[0]!.t).toEqual(texts);
          expect(rows[0]!.j).toEqual(docs);
          expect(rows[0]!.b).toEqual(nums.map(String));
        },
      ),
      fcRun("postgres-batch-literal", "round trip", 150),
    );
  });

  it("an absent array stays NULL; an empty one is empty; other arguments pass as they are", async () => {
    const f: PgFunction = { fn: "f", casts: ["text", "text[]", "json", "bigint[]"], returns: "json" };
    expect(batchArgs(f, ["a", null, '{"x":1}', []])).toEqual(["a", null, '{"x":1}', "{}"]);
    const { rows } = await c.query<{ n: boolean; e: number }>("SELECT ($1::jsonb->>0)::text[] IS NULL AS n, cardinality(($1::jsonb->>1)::bigint[]) AS e", [JSON.stringify([null, "{}"])]);
    expect(rows[0]).toEqual({ n: true, e: 0 });
  });

  it("refuses what it cannot encode, naming the argument", () => {
    expect(() => batchArgs(THREE, ["a", [], []])).toThrow(/three: argument 1 \(text\[\]\) is not an array/);
    expect(() => batchArgs(THREE, [[{ a: 1 }], [], []])).toThrow(/holds a object/);
    expect(() => batchArgs(THREE, [[], [], [Number.NaN]])).toThrow(/holds a number/);
  });

  it("writ_batch_2 answers as writ_batch; writ_batch still takes JSON arrays", async () => {
    // One unsealed entry; a seal of it at the right head answers 1, one at a wrong head 0, and an
    // unknown function fails alone between them.
    const seal = (head: number): unknown[] => ["t", "s", 7, head, ["e1"], [head + 1], ['h"\\{'], ['{"id":"e1","note":"a\\"b"}']];
    const runOnce = async (sql: string, payload: string): Promise<{ out: unknown[]; chain: unknown[] }> => {
      await c.query("TRUNCATE writ_journal, writ_journal_chain, writ_journal_pending");
      await c.query(`SELECT writ_put_unsealed('t', 's', ARRAY['e1'], ARRAY['x'], ARRAY[1]::bigint[], ARRAY['{"id":"e1"}'::json])`);
      const out = (await c.query<{ out: unknown[] }>(sql, [payload])).rows[0]!.out;
      const chain = (await c.query("SELECT seq, id, hash FROM writ_journal_chain WHERE tenant_id = 't' AND space_id = 's'")).rows;
      return { out, chain };
    };
    const calls = [seal(0), seal(5)];
    const before = await runOnce("SELECT writ_batch($1::jsonb) AS out", JSON.stringify([["writ_seal_if_head", calls[0]], ["nope", []], ["writ_seal_if_head", calls[1]]]));
    const after = await runOnce(
      `SELECT ${BATCH_RUNNER}($1::jsonb) AS out`,
      JSON.stringify([["writ_seal_if_head", batchArgs(SEAL_IF_HEAD_FN, calls[0]!)], ["nope", []], ["writ_seal_if_head", batchArgs(SEAL_IF_HEAD_FN, calls[1]!)]]),
    );
    expect(before.out[0]).toEqual({ ok: 1 });
    expect(before.out[1]).toMatchObject({ state: "22023" });
    expect(before.out[2]).toEqual({ ok: 0 });
    expect(before.chain).toEqual([{ seq: "1", id: "e1", hash: 'h"\\{' }]);
    expect(after.out[0]).toEqual(before.out[0]);
    expect(after.out[1]).toMatchObject({ state: "22023", message: "writ_call_2: nope is not a batchable function" });
    expect(after.out[2]).toEqual(before.out[2]);
    expect(after.chain).toEqual(before.chain);
  });
});
