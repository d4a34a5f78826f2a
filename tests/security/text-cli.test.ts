/**
 * The CLI edge (a real process): an idempotency key or actor holding terminal escape sequences,
 * bidi overrides or zero-width characters is refused with exit 2, nothing is stored, and the error
 * the CLI prints carries no raw control character (the key cannot repaint the operator's screen).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { json, workspace, writ } from "../cli/helpers.js";

// eslint-disable-next-line no-control-regex -- detecting them is the point
const RAW_UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069\u200b-\u200d\ufeff]/;
let ws: ReturnType<typeof workspace>;
beforeAll(() => {
  ws = workspace();
});
afterAll(() => ws.cleanup());

describe("writ submit with lying text", () => {
  it("refuses each class with exit 2 and prints it escaped", async () => {
    const base = ["submit", "--action", "payments.refund", "--authority", "support-bot", "--params", '{"paymentId":"p","amount":1,"currency":"EUR"}'];
    const cases: string[][] = [
      [...base, "--actor", "agent:support-bot", "--idempotency-key", "k\u001b[2J\u001b[31mOWNED"],
      [...base, "--actor", "agent:support-bot", "--idempotency-key", "k\u009b2J"],
      [...base, "--actor", "agent:support-bot", "--idempotency-key", "k\u202eevil"],
      [...base, "--actor", "agent:support-bot", "--idempotency-key", "k\u200bx"],
      [...base, "--actor", "agent:support\u202e-bot", "--idempotency-key", "k-ok"],
    ];
    const results = await Promise.all(cases.map((args) => writ(ws.dir, args)));
    for (const r of results) {
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).not.toMatch(RAW_UNSAFE);
      expect(r.stdout).not.toMatch(RAW_UNSAFE);
      expect(r.stderr).toMatch(/contains a (control character|bidirectional|zero-width)/);
    }
    const ls = await writ(ws.dir, ["ls", "--json"]);
    expect(json<{ items: unknown[] }>(ls).items).toEqual([]);
  });
});
