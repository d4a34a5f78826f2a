/**
 * `writ_jsonb_lenient` (migration 23, docs/stores.md, "Documents that hold NUL"), the function every
 * read of a field out of a document an outside party fills goes through on PostgreSQL.
 *
 * Invariants:
 * - for any document JSON.stringify writes, the keys read through it (top level and nested, as
 *   the claim reads `request.authorityRef`) equal the keys JSON.parse reads, whatever other values
 *   hold: NUL, unpaired surrogates, backslashes before the text `u0000`, quotes, emoji;
 * - every value reads exactly, except NUL and unpaired surrogates, which read as "?" (an escaped
 *   backslash before the text `u0000` is a backslash, not an escape), through it and through
 *   `writ_doc_text` (migration 24);
 * - for documents whose text holds no such character, every value reads as the plain cast reads it;
 * - it answers the same whatever the session's `standard_conforming_strings` (its body is parsed
 *   under the caller's settings), and NULL for NULL.
 */
import fc from "fast-check";
import pg from "pg";
import { expect, it } from "vitest";
import { fcRun } from "../helpers/seed.js";
import { clientPerFile } from "../helpers/pg-client.js";
import { pgServerOrNull } from "../helpers/pg.js";

const server = await pgServerOrNull();
let c: pg.Client;
clientPerFile(server, (client) => (c = client));

/** Strings with the characters that trouble PostgreSQL's JSON operators, among ordinary ones. */
const awkward = fc.array(fc.constantFrom("\u0000", "\ud800", "\udc00", "\\", "\\u0000", "u0000", '"', "\ud83d\ude00", "é", "a", " ", "\\\\"), { maxLength: 12 }).map((parts) => parts.join(""));
const id = fc.stringMatching(/^[A-Za-z0-9_-]{1,20}$/);
const doc = fc.record({
  tenantId: id,
  other: awkward,
  request: fc.record({ params: fc.dictionary(fc.stringMatching(/^[a-z]{1,6}$/), awkward, { maxKeys: 4 }), authorityRef: id, note: awkward }),
  list: fc.array(awkward, { maxLength: 3 }),
  approvalId: fc.option(id, { nil: undefined }),
});

it.skipIf(server === null)("keys read through it equal JSON.parse's, whatever other values hold", async () => {
  await fc.assert(
    fc.asyncProperty(doc, async (d) => {
      const text = JSON.stringify(d);
      const { rows } = await c.query<{ t: string; a: string; p: string | null }>(
        "SELECT writ_jsonb_lenient($1::json)->>'tenantId' AS t, writ_jsonb_lenient($1::json)->'request'->>'authorityRef' AS a, writ_jsonb_lenient($1::json)->>'approvalId' AS p",
        [text],
      );
      expect(rows[0]).toEqual({ t: d.tenantId, a: d.request.authorityRef, p: d.approvalId ?? null });
    }),
    fcRun("postgres-lenient", "keys", 200),
  );
});

/** What a lenient read answers for `s`: NUL and unpaired surrogates read as "?", the rest as it is. */
function readLeniently(s: string): string {
  let out = "";
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && s.charCodeAt(i + 1) >= 0xdc00 && s.charCodeAt(i + 1) <= 0xdfff;
    if (pair) {
      out += s.slice(i, i + 2);
      i++;
    } else out += c === 0 || (c >= 0xd800 && c <= 0xdfff) ? "?" : s[i]!;
  }
  return out;
}

it.skipIf(server === null)("values read through it and through writ_doc_text: such characters as ?, every other character exact", async () => {
  await fc.assert(
    fc.asyncProperty(awkward, awkward, async (v, other) => {
      const text = JSON.stringify({ other, nested: { v } });
      const { rows } = await c.query<{ l: string; t: string }>("SELECT writ_jsonb_lenient($1::json)->'nested'->>'v' AS l, writ_doc_text($1::json, '{nested,v}') AS t", [text]);
      expect(rows[0]).toEqual({ l: readLeniently(v), t: readLeniently(v) });
    }),
    fcRun("postgres-lenient", "values", 200),
  );
});

it.skipIf(server === null)("a document without such characters reads as the plain cast reads it", async () => {
  const plain = fc.record({ a: fc.string(), b: fc.array(fc.oneof(fc.integer(), fc.string(), fc.boolean())), c: fc.dictionary(fc.string(), fc.string(), { maxKeys: 3 }) });
  await fc.assert(
    fc.asyncProperty(plain, async (d) => {
      const text = JSON.stringify(d);
      fc.pre(!/\\u0000|\\ud[89a-f]/i.test(text));
      const { rows } = await c.query<{ same: boolean }>("SELECT writ_jsonb_lenient($1::json) = $1::json::jsonb AS same", [text]);
      expect(rows[0]!.same).toBe(true);
    }),
    fcRun("postgres-lenient", "plain", 100),
  );
});

it.skipIf(server === null)("answers the same with standard_conforming_strings off, and NULL for NULL", async () => {
  const text = JSON.stringify({ tenantId: "t-1", note: "a\u0000b\\u0000\ud800", request: { authorityRef: "auth-1" } });
  const read = async (): Promise<unknown> => (await c.query("SELECT writ_jsonb_lenient($1::json)->'request'->>'authorityRef' AS a, writ_jsonb_lenient(NULL) AS n", [text])).rows[0];
  const on = await read();
  await c.query("SET standard_conforming_strings = off");
  try {
    expect(await read()).toEqual(on);
  } finally {
    await c.query("SET standard_conforming_strings = on");
  }
  expect(on).toEqual({ a: "auth-1", n: null });
});
