/** docs/policy.md's example is real: its policies and schema build an engine that gives its outcomes table. */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { ActorType, DecisionResult, Json } from "../../src/core/types.js";
import { cedarPolicy } from "../../src/policy/index.js";
import { authorityFor, request } from "./fixture.js";

const doc = readFileSync(new URL("../../docs/policy.md", import.meta.url), "utf8");

function block(marker: string, lang: string): string {
  const m = new RegExp(`<!-- example:${marker} -->\\s*\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``).exec(doc);
  if (!m) throw new Error(`docs/policy.md: no ${marker} block`);
  return m[1]!;
}

interface Outcome {
  line: string;
  actor: { type: ActorType; id: string };
  action: string;
  params: { [k: string]: Json };
  authority: "active" | "suspended" | "none";
  result: DecisionResult;
  reasons: string[];
}

function outcomes(): Outcome[] {
  const start = doc.indexOf("<!-- example:outcomes -->");
  const lines = doc.slice(start).split("\n").slice(1);
  const rows = lines.slice(2, lines.findIndex((l, i) => i > 0 && !l.startsWith("|")));
  return rows.map((line) => {
    const [actor, action, params, authority, result, reasons] = line.split("|").slice(1, -1).map((c) => c.trim());
    const [type, id] = actor!.split(" ");
    return {
      line,
      actor: { type: type as ActorType, id: id! },
      action: action!,
      params: JSON.parse(params!.replace(/^`|`$/g, "")) as { [k: string]: Json },
      authority: authority as Outcome["authority"],
      result: result as DecisionResult,
      reasons: reasons ? reasons.split(",").map((r) => r.trim()) : [],
    };
  });
}

describe("docs/policy.md example", () => {
  const engine = cedarPolicy({
    policies: block("policies", "cedar"),
    schema: block("schema", "cedarschema"),
    entities: [{ uid: { type: "Writ::User", id: "alice" }, attrs: {}, parents: [{ type: "Writ::Role", id: "maintainers" }] }],
  });
  const rows = outcomes();

  it("has an outcomes table", () => {
    expect(rows.length).toBeGreaterThanOrEqual(8);
    expect(engine.prepared.warnings).toEqual([]);
  });

  it.each(rows.map((r) => [r.line, r] as const))("%s", async (_l, r) => {
    const req = request(r.actor, r.action, r.params, { tenantId: "acme", spaceId: "prod" });
    const a = authorityFor(req, r.authority === "none" ? "missing" : r.authority);
    const authority = a && { ...a, actions: ["payments.*", "repo.*"], constraints: { maxAmount: 500000 } };
    const out = await engine.evaluate({ request: req, authority });
    expect(out.result).toBe(r.result);
    expect(out.reasons.filter((x) => engine.prepared.policyIds.includes(x))).toEqual(r.reasons);
  });
});
