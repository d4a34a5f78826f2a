/**
 * Response conformance: an answer checked against the OpenAPI document the server serves — its
 * status is declared for that operation, its media type is the declared one, and its body is valid
 * against the declared schema (Ajv, JSON Schema 2020-12, on the document's own
 * `components.schemas`). `call` in fixture.ts runs this on every answer, so every test that goes
 * through it checks the document against the server. The check is independent of the server's own
 * `checkResponses` (zod): it reads only the published document.
 */
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";

interface Operation {
  operationId: string;
  responses: Record<string, { $ref?: string; content?: Record<string, { schema?: Record<string, unknown> }> }>;
}

export interface OpenApiDoc {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown>; responses: Record<string, { content?: Record<string, { schema?: Record<string, unknown> }> }> };
}

/** What an answer was; `json` is undefined when the body is not JSON. */
export interface Observed {
  method: string;
  /** The request path, query included. */
  path: string;
  status: number;
  contentType: string | null;
  json: unknown;
  text: string;
}

/** Paths outside the API document: the console's pages and the MCP endpoint have their own contracts. */
const OUTSIDE = [/^\/console(\/|$)/, /^\/mcp(\/|$)/];

const DOC_ID = "writ-openapi";

export interface Conformance {
  /** The operation an answer belongs to, or null when the document has none for it. */
  operation(method: string, path: string): { template: string; op: Operation } | null;
  /** Every way `answer` departs from the document (empty when it conforms). */
  problems(answer: Observed): string[];
}

export function conformance(doc: OpenApiDoc): Conformance {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  ajv.addSchema({ ...doc, $id: DOC_ID });
  const validators = new Map<string, ValidateFunction>();
  const validator = (ref: string): ValidateFunction => {
    let v = validators.get(ref);
    if (!v) {
      v = ajv.compile({ $ref: `${DOC_ID}${ref}` });
      validators.set(ref, v);
    }
    return v;
  };
  // Templates with more literal segments win (`/journal/export` before `/journal/{x}`).
  const templates = Object.keys(doc.paths)
    .map((template) => ({ template, re: new RegExp("^" + template.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^/}]+\}/g, "[^/]+") + "$"), literal: template.split("/").filter((s) => s && !s.startsWith("{")).length }))
    .sort((a, b) => b.literal - a.literal);

  const operation = (method: string, path: string): { template: string; op: Operation } | null => {
    const pathname = path.split("?")[0]!;
    const m = method.toLowerCase() === "head" ? "get" : method.toLowerCase();
    for (const t of templates) {
      if (!t.re.test(pathname)) continue;
      const op = doc.paths[t.template]![m];
      return op ? { template: t.template, op } : null;
    }
    return null;
  };

  const checkBody = (where: string, schema: Record<string, unknown> | undefined, a: Observed): string[] => {
    if (a.method.toUpperCase() === "HEAD" || schema === undefined) return [];
    if (schema.type === "string") return [];
    if (a.json === undefined) return [`${where}: the body is not JSON: ${a.text.slice(0, 120)}`];
    const ref = typeof schema.$ref === "string" ? schema.$ref : null;
    if (!ref) return [`${where}: the document declares an inline schema, not a named one`];
    const v = validator(ref);
    if (v(a.json)) return [];
    return (v.errors ?? []).map((e) => `${where}: body${e.instancePath} ${e.message ?? "is invalid"}${e.params && Object.keys(e.params).length ? ` ${JSON.stringify(e.params)}` : ""} (schema ${ref})`);
  };

  const errorSchema = doc.components.responses.Error400?.content?.["application/json"]?.schema ?? { $ref: "#/components/schemas/Error" };

  return {
    operation,
    problems(a) {
      const pathname = a.path.split("?")[0]!;
      if (OUTSIDE.some((re) => re.test(pathname))) return [];
      const found = operation(a.method, a.path);
      // No operation (an unknown route, another method): the answer is still the one error shape.
      if (!found) return a.status >= 400 ? checkBody(`${a.method} ${pathname} (no operation)`, errorSchema, a) : [`${a.method} ${pathname}: answered ${a.status} but the document has no such operation`];
      const where = `${found.op.operationId} ${a.status}`;
      let declared = found.op.responses[String(a.status)];
      if (!declared) return [`${found.op.operationId}: answered ${a.status}, which the document does not declare (declared: ${Object.keys(found.op.responses).join(", ")})`];
      if (declared.$ref) declared = doc.components.responses[declared.$ref.split("/").pop()!] ?? {};
      const content = declared.content;
      if (!content) return a.text.length > 0 && a.method.toUpperCase() !== "HEAD" ? [`${where}: the document declares no body, the server sent one`] : [];
      const mediaType = (a.contentType ?? "").split(";")[0]!.trim().toLowerCase();
      const declaredType = Object.keys(content).find((t) => t.split(";")[0]!.trim().toLowerCase() === mediaType);
      if (!declaredType) return [`${where}: content type ${a.contentType ?? "(none)"} is not declared (declared: ${Object.keys(content).join(", ")})`];
      return checkBody(where, content[declaredType]!.schema, a);
    },
  };
}
