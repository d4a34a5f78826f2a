/**
 * The definition fields MCP tools are made from: defineAction checks them at definition time (a
 * clear INVALID_OPTION naming the field), and the input schema falls back to `{ type: "object" }`
 * for a Standard Schema without a JSON Schema, so such an action is still offered and validated.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineAction, type ActionDefinition } from "../../src/core/action.js";
import { inputSchemaOf, jsonSchemaParams, toolNameOf, toolTitleOf } from "../../src/mcp/index.js";

const base = { id: "a.b", version: "1", params: z.object({ n: z.number() }), idempotent: false, steps: [{ name: "s", connector: "c", operation: "o" }] };

describe("defineAction MCP fields", () => {
  it.each([
    [{ title: 5 }, /title must be a string/],
    [{ title: "x".repeat(201) }, /title must be a string of at most 200/],
    [{ description: "x".repeat(4001) }, /description must be a string of at most 4000/],
    [{ readOnly: "yes" }, /readOnly must be true or false/],
    [{ destructive: 1 }, /destructive must be true or false/],
    [{ openWorld: null }, /openWorld must be true or false/],
    [{ readOnly: true, destructive: true }, /both readOnly and destructive/],
  ])("refuses %j", (extra, message) => {
    expect(() => defineAction({ ...base, ...extra } as unknown as ActionDefinition<{ n: number }>)).toThrow(message);
  });

  it("accepts them, all optional", () => {
    expect(defineAction({ ...base, title: "T", description: "D", readOnly: true, openWorld: false }).title).toBe("T");
    expect(defineAction(base).description).toBeUndefined();
  });
});

describe("tool schemas and names", () => {
  it("zod 4 params give their JSON Schema; a Standard Schema without one gives { type: object }", () => {
    expect(inputSchemaOf(defineAction<unknown>(base))).toMatchObject({ type: "object", properties: { n: { type: "number" } }, required: ["n"] });
    const bare = { "~standard": { version: 1 as const, vendor: "x", validate: (v: unknown) => ({ value: v }) } };
    expect(inputSchemaOf(defineAction<unknown>({ ...base, params: bare }))).toMatchObject({ type: "object" });
    // A non-object params schema is not a valid tool input schema: the fallback is used.
    expect(inputSchemaOf(defineAction<unknown>({ ...base, params: z.string() }))).toEqual(expect.objectContaining({ type: "object" }));
  });

  it("JSON Schema params validate and give the schema back", async () => {
    const schema = { $schema: "http://json-schema.org/draft-07/schema#", type: "object", properties: { q: { type: "string", minLength: 2 } }, required: ["q"], additionalProperties: false };
    const p = jsonSchemaParams(schema);
    expect(await p["~standard"].validate({ q: "ok" })).toEqual({ value: { q: "ok" } });
    const bad = (await p["~standard"].validate({ q: "x", extra: 1 })) as { issues: { message: string }[] };
    expect(bad.issues.map((i) => i.message).join(" ")).toMatch(/fewer than 2|additional/);
    expect(p["~standard"].jsonSchema.input()).toBe(schema);
    expect(() => jsonSchemaParams({ type: "object", properties: { a: { type: "nonsense" } } })).toThrow(/cannot be compiled/);
  });

  it("action ids become MCP tool names", () => {
    expect(toolNameOf("payments.refund")).toBe("payments.refund");
    expect(toolNameOf("crm:contact.create")).toBe("crm_contact.create");
  });

  it("every action tool has a title: the action's title, else a one-sentence description, else its id made readable", () => {
    expect(toolTitleOf({ id: "payments.refund", title: "Refund a payment", description: "Refunds an amount." })).toBe("Refund a payment");
    expect(toolTitleOf({ id: "reports.view", description: "Reads a report." })).toBe("Reads a report");
    // A description of several sentences is a description, not a title.
    expect(toolTitleOf({ id: "reports.view", description: "Reads a report. Slow on large ones." })).toBe("Reports view");
    expect(toolTitleOf({ id: "crm:contact.createOrUpdate" })).toBe("Crm contact create or update");
    expect(toolTitleOf({ id: "admin_purge-all" })).toBe("Admin purge all");
  });
});
