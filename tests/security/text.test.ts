/**
 * Text that can lie (docs/security.md), at every edge. Invariants:
 * - library (host.submit, boundary.execute) on every store: each refused character class (C0, C1,
 *   DEL, bidi override, zero-width, lone surrogate) in each id field (tenant and space ids, action,
 *   version, authority, idempotency key, actor id) is refused and nothing is stored; a lone
 *   surrogate in a params string or key is refused (not I-JSON);
 * - HTTP: the same in the body and in path ids is a 400 and stores nothing;
 * - CLI: a refused flag value is exit 2; everything the CLI prints is escaped (no raw control,
 *   bidi or zero-width character reaches the terminal), and JSON output still parses to the same
 *   value.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WritError } from "../../src/core/errors.js";
import type { Store } from "../../src/core/store.js";
import fc from "fast-check";
import { escapeForTerminal, storable, storableText, unsafeIdClass } from "../../src/core/text.js";
import { fcRun } from "../helpers/seed.js";
import { Printer } from "../../src/cli/output.js";
import { allStoreFactories } from "../helpers/stores.js";
import { journalOf } from "./helpers.js";
import { grantAuthority, makeHostBench } from "../host/fixture.js";
import { makeBench } from "../boundary/fixture.js";
import { call, refund, startRig, type Rig } from "../server/fixture.js";

export const CLASSES: Array<[string, string]> = [
  ["C0 (ESC)", "\u001b[2J"],
  ["C0 (NUL)", "\u0000"],
  ["DEL", "\u007f"],
  ["C1 (CSI)", "\u009b"],
  ["bidi override", "\u202e"],
  ["bidi isolate", "\u2066"],
  ["zero-width space", "\u200b"],
  ["zero-width joiner", "\u200d"],
  ["BOM", "\ufeff"],
  ["lone high surrogate", "\ud800"],
  ["lone low surrogate", "\udc00"],
];
const FIELDS = ["tenantId", "spaceId", "action", "actionVersion", "authorityRef", "idempotencyKey", "actor.id"] as const;
/** Any raw character a terminal could act on or that hides text. */
// eslint-disable-next-line no-control-regex -- detecting them is the point
const RAW_UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function withField(req: Record<string, unknown>, field: (typeof FIELDS)[number], bad: string): Record<string, unknown> {
  if (field === "actor.id") return { ...req, actor: { type: "agent", id: `bot${bad}` } };
  return { ...req, [field]: `${String(req[field])}${bad}` };
}

describe("character classes", () => {
  it("each class is recognised, and escaping removes every raw one", () => {
    for (const [, bad] of CLASSES) {
      expect(unsafeIdClass(`a${bad}b`)).not.toBeNull();
      expect(escapeForTerminal(`a${bad}b`)).not.toMatch(RAW_UNSAFE);
    }
    expect(unsafeIdClass("plain-id_1.2:3 with space and ünïcode 😀")).toBeNull();
  });
});

for (const factory of allStoreFactories()) {
  describe(`refused characters at the library edge on ${factory.name}`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ store, cleanup } = await factory.make());
    });
    afterAll(async () => cleanup());

    it("host.submit refuses every class in every id field and stores nothing", async () => {
      const b = makeHostBench(store);
      await grantAuthority(b);
      for (const field of FIELDS) {
        for (const [what, bad] of CLASSES) {
          const req = withField(b.request() as unknown as Record<string, unknown>, field, bad);
          await expect(b.host.submit(req), `${field} with ${what}`).rejects.toSatisfy((e: unknown) => e instanceof WritError && e.code === "VALIDATION_FAILED");
        }
      }
      for (const params of [{ n: 1, s: "x\ud800" }, { n: 1, ["k\udfff"]: 1 }]) {
        await expect(b.host.submit(b.request({ params: params as never }))).rejects.toSatisfy((e: unknown) => e instanceof WritError && e.code === "VALIDATION_FAILED");
      }
      expect(await b.host.list(b.scope)).toEqual([]);
      expect(await journalOf(store, b.scope)).toEqual([]);
    });

    it("boundary.execute refuses them as REQUEST_MALFORMED and calls nothing", async () => {
      const b = makeBench(store, { fromStore: true });
      await b.syncStanding();
      for (const field of FIELDS) {
        for (const [, bad] of CLASSES) {
          const good = b.request();
          const a = await b.execute(withField(good as unknown as Record<string, unknown>, field, bad), b.decision(good));
          expect(a.reasonCode).toBe("REQUEST_MALFORMED");
        }
      }
      const lone = b.request({ params: { paymentId: "p\ud800", amount: 1 } });
      expect((await b.execute(lone, "x.y.z")).reasonCode).toBe("REQUEST_MALFORMED");
      expect(b.calls).toHaveLength(0);
    });
  });
}

// Invariant: storableText replaces exactly NUL and the surrogates that are not half of a pair
// with U+FFFD, keeps everything else (pairs included) and its length; storable says whether it
// changes anything; its answer is always storable.
describe("text every store keeps", () => {
  const reference = (s: string): string => [...s].map((ch) => (ch === "\u0000" || (ch.length === 1 && ch >= "\ud800" && ch <= "\udfff") ? "\ufffd" : ch)).join("");
  it("storableText replaces NUL and lone surrogates only; storable agrees", () => {
    const piece = fc.constantFrom("\u0000", "\ud800", "\udbff", "\udc00", "\udfff", "\ud83d\ude00", "a", "é", "\ufffd", "\\u0000");
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }).map((p) => p.join("")), (s) => {
        const out = storableText(s);
        expect(out).toBe(reference(s));
        expect(out.length).toBe(s.length);
        expect(storable(s)).toBe(out === s);
        expect(storable(out)).toBe(true);
      }),
      fcRun("text", "storableText", 500),
    );
    expect(storableText("ok\u0000" + "x".repeat(3) + "\ud83d")).toBe("ok\ufffdxxx\ufffd");
  });
});

describe("refused characters over HTTP", () => {
  let rig: Rig;
  beforeAll(async () => {
    rig = await startRig();
  });
  afterAll(async () => rig.close());

  it("a body or path id holding any class is a 400 and stores nothing", async () => {
    const count = async () => (await call(rig, "GET", "/v1/spaces/prod/invocations?limit=500", { key: "acme.operate" })).json.items.length as number;
    const before = await count();
    for (const field of ["action", "authorityRef", "idempotencyKey", "actor.id"] as const) {
      for (const [what, bad] of CLASSES) {
        const body = withField(refund(1), field, bad);
        // JSON.stringify writes lone surrogates as \\u escapes: the server parses them back.
        const r = await call(rig, "POST", "/v1/spaces/prod/invocations", { key: "acme.submit", raw: JSON.stringify(body), headers: { "content-type": "application/json" } });
        expect(r.status, `${field} with ${what}: ${r.text}`).toBe(400);
      }
    }
    const lone = await call(rig, "POST", "/v1/spaces/prod/invocations", { key: "acme.submit", raw: JSON.stringify({ ...refund(1), params: { amount: 1, currency: "E\ud800" } }), headers: { "content-type": "application/json" } });
    expect(lone.status).toBe(400);
    for (const [what, bad] of CLASSES) {
      const r = await call(rig, "GET", `/v1/spaces/prod/invocations/inv${encodeURIComponent(bad.replace(/[\ud800-\udfff]/g, "\u202e"))}`, { key: "acme.operate" });
      expect(r.status, `path with ${what}`).toBe(400);
    }
    expect(await count()).toBe(before);
  });
});

describe("the CLI escapes what it prints", () => {
  it("lines, notes, tables, records and JSON carry no raw unsafe character", () => {
    let out = "";
    let err = "";
    const io = { stdout: { write: (t: string) => (out += t) }, stderr: { write: (t: string) => (err += t) }, stdoutIsTTY: false };
    const hostile = CLASSES.map(([, c]) => `x${c}`).join("|");
    const human = new Printer(io, false);
    human.line(`key ${hostile}`);
    human.note(`note ${hostile}`);
    human.table([{ k: hostile }], [{ header: "k", value: (r) => r.k }]);
    human.record([["k", hostile]]);
    expect(out).not.toMatch(RAW_UNSAFE);
    expect(err).not.toMatch(RAW_UNSAFE);
    out = "";
    new Printer(io, true).result({ k: hostile }, () => undefined);
    expect(out).not.toMatch(RAW_UNSAFE);
    expect((JSON.parse(out) as { k: string }).k).toBe(hostile);
  });
});
