/**
 * The batch statement's array arguments as PostgreSQL array literals (migration 25, `batchArgs`,
 * `writ_batch_2` / `writ_call_2`; docs/stores.md, "Batches").
 *
 * Invariants:
 * - an array `batchArgs` encodes reads back, through the JSON of the batch statement and the very
 *   expression `writ_call_2` casts it with (`argFromLiteral`), as exactly the array it was: text
 *   elements of any storable text (quotes, backslashes, braces, commas, spaces, the word NULL, the
 *   empty string, emoji), JSON documents with their exact text (escapes of NUL included), integers
 *   as bigint up to the type's limits; an absent array stays NULL, whatever `array_nulls` says;
 * - `writ_batch_2` answers a batch of calls as `writ_batch` does (the same members, the same
 *   answers, a refused member failing alone), and `writ_batch` still takes the previous version's
 *   JSON arrays after the migration (a rolling upgrade's older processes keep working);
 * - a value `batchArgs` has no literal for (a null element, an object, NaN, a scalar where an array
 *   belongs) is refused in Node, naming the function and the argument;
 * - every text element is the same literal whichever way it is written (`JSON.stringify` for text
 *   without control characters or surrogates, else quotes and backslashes escaped one by one): the
 *   short way is taken only where both agree (no server needed).
 */
import fc from "fast-check";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { storable } from "../../src/core/text.js";
import { BATCH_RUNNER, SEAL_IF_HEAD_FN, argFromLiteral, batchArgs, type PgFunction } from "../../src/stores/postgres/postgres-calls.js";
import { fcRun } from "../helpers/seed.js";
import { clientPerFile } from "../helpers/pg-client.js";
import { pgServerOrNull } from "../helpers/pg.js";

const server = await pgServerOrNull();
let c: pg.Client;
clientPerFile(server, (client) => (c = client));

/** A function of three array parameters, for reading `batchArgs`' output back as `writ_call_2` casts it. */
const THREE: PgFunction = { fn: "three", casts: ["text[]", "json[]", "bigint[]"], returns: "json" };
/** The arguments read back with `writ_call_2`'s own expressions (`a` is the call's arguments). */
const READ_BACK = `SELECT ${argFromLiteral("text[]", 0)} AS t, ${argFromLiteral("json[]", 1)}::text[] AS j, ${argFromLiteral("bigint[]", 2)}::text[] AS b FROM (SELECT $1::jsonb AS a) x`;

/** Text that troubles an array literal or JSON, among ordinary characters. */
const piece = fc.constantFrom('"', "\\", "{", "}", ",", " ", "\t", "\n", "NULL", "null", "'", "é", "\ud83d\ude00", "a", "\\u0000", "");
const text = fc.oneof(fc.array(piece, { maxLength: 8 }).map((p) => p.join("")), fc.string({ unit: "binary", maxLength: 12 }).filter(storable));
const json = fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v) ?? "null");
const awkwardDoc = fc.record({ a: text, nul: fc.constantFrom("a\u0000b", "\u0000", "x") }).map((d) => JSON.stringify(d));
const int = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });

/** An element written the long way: quotes and backslashes escaped one by one. */
const slow = (t: string): string => `"${t.replace(/["\\]/g, "\\$&")}"`;

describe("batch array elements", () => {
  it("are the same literal whichever way they are written", () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(text, json, awkwardDoc, fc.string({ unit: "binary", maxLength: 40 })), { maxLength: 6 }), (texts) => {
        expect(batchArgs(THREE, [texts, null, null])[0]).toBe(`{${texts.map(slow).join(",")}}`);
      }),
      fcRun("postgres-batch-literal", "element text", 500),
    );
  });

  it("are the same literal for every UTF-16 code unit, and for characters outside the basic plane", () => {
    const texts: string[] = [];
    for (let c = 0; c <= 0xffff; c++) texts.push(`a${String.fromCharCode(c)}"\\b`);
    texts.push("\ud83d\ude00", "x\u{10ffff}y", "\u2028\u2029\u007f");
    for (let i = 0; i < texts.length; i += 4096) {
      const chunk = texts.slice(i, i + 4096);
      expect(batchArgs(THREE, [chunk, null, null])[0]).toBe(`{${chunk.map(slow).join(",")}}`);
    }
  });
});

describe.skipIf(server === null)("batch arrays as literals", () => {
  it("every array reads back exactly as it was sent", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(text, { maxLength: 6 }),
        fc.array(fc.oneof(json, awkwardDoc), { maxLength: 4 }),
        fc.array(fc.oneof(int, int.map(String), fc.integer().map(Number)), { maxLength: 5 }),
        async (texts, docs, nums) => {
          const payload = JSON.stringify(batchArgs(THREE, [texts, docs, nums]));
          const { rows } = await c.query<{ t: string[]; j: string[]; b: string[] }>(READ_BACK, [payload]);
          expect(rows[0]!.t).toEqual(texts);
          expect(rows[0]!.j).toEqual(docs);
          expect(rows[0]!.b).toEqual(nums.map(String));
        },
      ),
      fcRun("postgres-batch-literal", "round trip", 150),
    );
  });

  it("an absent array stays NULL, also where array_nulls is off; an empty one is empty; other arguments pass as they are", async () => {
    const f: PgFunction = { fn: "f", casts: ["text", "text[]", "json", "bigint[]", "text[]"], returns: "json" };
    const args = batchArgs(f, ["a", null, '{"x":1}', [], ["NULL", "null"]]);
    expect(args).toEqual(["a", null, '{"x":1}', "{}", '{"NULL","null"}']);
    const read = `SELECT ${argFromLiteral("text[]", 1)} IS NULL AS n, cardinality(${argFromLiteral("bigint[]", 3)}) AS e, ${argFromLiteral("text[]", 4)} AS w FROM (SELECT $1::jsonb AS a) x`;
    for (const nulls of ["on", "off"]) {
      await c.query(`SET array_nulls = ${nulls}`);
      const { rows } = await c.query<{ n: boolean; e: number; w: string[] }>(read, [JSON.stringify(args)]);
      expect(rows[0]).toEqual({ n: true, e: 0, w: ["NULL", "null"] });
    }
    await c.query("RESET array_nulls");
  });

  it("refuses what it has no literal for, naming the function and the argument", () => {
    expect(() => batchArgs(THREE, ["a", [], []])).toThrow("three: argument 1 (text[]) is not an array");
    expect(() => batchArgs(THREE, [["a", null], [], []])).toThrow("three: argument 1 (text[]) holds null, which a batch does not send");
    expect(() => batchArgs(THREE, [[], [{ a: 1 }], []])).toThrow("three: argument 2 (json[]) holds a object");
    expect(() => batchArgs(THREE, [[], [], [Number.NaN]])).toThrow("three: argument 3 (bigint[]) holds a number");
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
    expect(before.out).toHaveLength(3);
    expect(after.out).toHaveLength(3);
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
