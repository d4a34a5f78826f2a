/**
 * Schemas: the accepted forms (Cedar text, JSON text, JSON object), and the declarations the engine
 * relies on, checked at construction so a schema that cannot work fails there, not on every request.
 */
import { parseJsonStrict } from "../core/canonical.js";
import { WritError, errorMessage } from "../core/errors.js";
import { fmtError, fmtParseError, invalid } from "./cedar-diagnostics.js";
import { schemaToJson, type SchemaJson } from "./cedar-wasm.js";

export interface NormalSchema {
  /** What cedar-wasm is given. */
  cedar: string | SchemaJson<string>;
  /** What the policyRef hashes: the text, or the parsed JSON schema. */
  hashed: string | SchemaJson<string>;
}

/** The schema as cedar-wasm takes it (JSON text parsed) and as the policyRef hashes it. */
export function normalSchema(schema: unknown): NormalSchema | null {
  if (schema === undefined || schema === null) return null;
  if (typeof schema === "string") {
    if (schema.trimStart().startsWith("{")) {
      let parsed: unknown;
      try {
        parsed = parseJsonStrict(schema, 256);
      } catch (e) {
        throw new WritError("INVALID_OPTION", `cedar policy: schema is not valid JSON: ${errorMessage(e)}`, { cause: e });
      }
      return { cedar: parsed as SchemaJson<string>, hashed: parsed as SchemaJson<string> };
    }
    return { cedar: schema, hashed: schema };
  }
  if (typeof schema === "object" && !Array.isArray(schema)) return { cedar: schema as SchemaJson<string>, hashed: schema as SchemaJson<string> };
  throw new WritError("INVALID_OPTION", "cedar policy: schema must be Cedar schema text, JSON schema text or a JSON schema object");
}

/** The engine passes `Writ::Space` (child of `Writ::Tenant`) as resource: the schema must declare both. */
export function checkSchemaDeclarations(schema: string | SchemaJson<string>): void {
  const json = schemaToJson(schema);
  if (json.type === "failure") invalid("schema does not parse", json.errors.map((e) => (typeof schema === "string" ? fmtParseError(e, schema) : fmtError(e))));
  const ns = json.json["Writ"];
  const types = ns?.entityTypes ?? {};
  const problems: string[] = [];
  if (!ns) problems.push('no namespace Writ: declare the entity types and actions inside "namespace Writ { … }"');
  else {
    if (!Object.hasOwn(types, "Tenant")) problems.push('namespace Writ must declare "entity Tenant;"');
    const space = types["Space"];
    const parents = space && "memberOfTypes" in space ? (space.memberOfTypes ?? []) : [];
    if (!space || !parents.some((p) => p === "Tenant" || p === "Writ::Tenant")) problems.push('namespace Writ must declare "entity Space in [Tenant];" (the resource is the request\'s space, child of its tenant)');
    for (const [name, action] of Object.entries(ns.actions ?? {})) checkActionContext(name, action, ns.commonTypes ?? {}, problems);
  }
  if (problems.length > 0) invalid("schema", problems);
}

type SchemaNs = NonNullable<SchemaJson<string>[string]>;

/**
 * Every requestable action (one that applies to some resource) must take `Writ::Space` and declare
 * the context the engine passes: `params`, `authority?` (optional) and `approval`. Context types
 * named through a common type of the namespace are resolved; others are left to request validation.
 */
function checkActionContext(name: string, action: SchemaNs["actions"][string], commonTypes: NonNullable<SchemaNs["commonTypes"]>, problems: string[]): void {
  const applies = action.appliesTo;
  if (!applies || applies.resourceTypes.length === 0) return;
  const where = `action ${JSON.stringify(name)}`;
  if (!applies.resourceTypes.some((t) => t === "Space" || t === "Writ::Space")) problems.push(`${where}: resource must include Space (the engine passes the request's space)`);
  let ctx: unknown = applies.context;
  for (let hops = 0; hops < 8 && ctx && typeof ctx === "object"; hops++) {
    const t = ctx as { type?: string; name?: string };
    const ref = t.type === "EntityOrCommon" ? t.name : t.type;
    if (ref === undefined || ref === "Record") break;
    const local = ref.startsWith("Writ::") ? ref.slice("Writ::".length) : ref;
    if (!Object.hasOwn(commonTypes, local)) return; // not resolvable here: request validation decides
    ctx = commonTypes[local];
  }
  const attrs = (ctx as { type?: string; attributes?: Record<string, { required?: boolean }> } | undefined)?.attributes;
  if (!attrs) {
    problems.push(`${where}: context must be a record declaring params, authority? and approval`);
    return;
  }
  const missing: string[] = [];
  if (!attrs.params || attrs.params.required === false) missing.push("params");
  if (!attrs.approval || attrs.approval.required === false) missing.push("approval");
  if (!attrs.authority || attrs.authority.required !== false) missing.push("authority? (optional: absent when the request has no authority)");
  if (missing.length > 0) problems.push(`${where}: context must declare ${missing.join(", ")}`);
}

