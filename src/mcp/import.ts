/**
 * Config import of an upstream MCP server's tools as Writ actions: each tool becomes an action
 * whose params schema is the tool's input schema (validated with JSON Schema 2020-12) and whose one
 * step calls the tool through the `mcp` connector (docs/mcp.md, "Importing an upstream server").
 */
import { Ajv2020 } from "ajv/dist/2020.js";
import { defineAction, type ActionDefinition } from "../core/action.js";
import { WritError } from "../core/errors.js";
import type { StandardSchemaV1 } from "../core/standard-schema.js";
import type { McpConnector } from "./connector.js";

export interface ImportMcpToolsOptions {
  /** Prefix of the action ids, e.g. `files.` (action id = prefix + tool name). @defaultValue `${connector.id}.` */
  prefix?: string;
  /** Version of the imported actions. @defaultValue "1" */
  version?: string;
  /** Only these upstream tools. @defaultValue every tool the upstream lists */
  tools?: string[];
  /** Per tool: an override of what the upstream's annotations say (idempotent, readOnly, destructive, description). */
  overrides?: Record<string, Partial<Pick<ActionDefinition<unknown>, "idempotent" | "readOnly" | "destructive" | "description" | "sensitive" | "completion">>>;
}

const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });

/**
 * A Standard Schema over a JSON Schema: validates with ajv and gives the same JSON Schema back
 * through the Standard JSON Schema interface (so Writ's MCP server shows the upstream's schema).
 */
export function jsonSchemaParams(schema: object): StandardSchemaV1<unknown, { [k: string]: unknown }> & { "~standard": { jsonSchema: { input: () => object } } } {
  const { $schema: _dialect, ...body } = schema as { $schema?: unknown };
  let validate: ReturnType<typeof ajv.compile>;
  try {
    validate = ajv.compile(body);
  } catch (e) {
    throw new WritError("INVALID_OPTION", `the input schema cannot be compiled: ${(e as Error).message}`);
  }
  return {
    "~standard": {
      version: 1,
      vendor: "writ-json-schema",
      validate(value: unknown) {
        if (validate(value)) return { value: value as { [k: string]: unknown } };
        return {
          issues: (validate.errors ?? []).map((er) => ({
            message: `${er.message ?? "invalid"}${er.params && "additionalProperty" in er.params ? ` (${String(er.params.additionalProperty)})` : ""}`,
            path: er.instancePath.split("/").filter((p) => p.length > 0),
          })),
        };
      },
      jsonSchema: { input: () => schema },
    },
  };
}

function actionIdOf(prefix: string, tool: string): string {
  return `${prefix}${tool}`.replace(/[^A-Za-z0-9_.:-]/g, "_").slice(0, 128);
}

/** Lists the upstream's tools and defines one action per tool (adding each tool as a connector operation). */
export async function importMcpTools(connector: McpConnector, options: ImportMcpToolsOptions = {}): Promise<ActionDefinition<{ [k: string]: unknown }>[]> {
  const prefix = options.prefix ?? `${connector.id}.`;
  const version = options.version ?? "1";
  const all = await connector.listTools();
  const wanted = options.tools ? new Set(options.tools) : null;
  if (wanted) {
    const missing = [...wanted].filter((n) => !all.some((t) => t.name === n));
    if (missing.length > 0) throw new WritError("INVALID_OPTION", `importMcpTools ${connector.id}: the upstream has no tool ${missing.join(", ")}`);
  }
  const out: ActionDefinition<{ [k: string]: unknown }>[] = [];
  for (const t of all) {
    if (wanted && !wanted.has(t.name)) continue;
    connector.addTool(t.name);
    const a = t.annotations ?? {};
    const o = options.overrides?.[t.name] ?? {};
    const readOnly = o.readOnly ?? a.readOnlyHint === true;
    const def: ActionDefinition<{ [k: string]: unknown }> = {
      id: actionIdOf(prefix, t.name),
      version,
      params: jsonSchemaParams(t.inputSchema),
      // Only what the upstream declares idempotent is retried with the same step key.
      idempotent: o.idempotent ?? a.idempotentHint === true,
      steps: [{ name: "call", connector: connector.id, operation: t.name }],
      readOnly,
      ...(readOnly ? {} : { destructive: o.destructive ?? a.destructiveHint ?? true }),
      openWorld: a.openWorldHint ?? true,
      ...(t.title ?? a.title ? { title: (t.title ?? a.title)!.slice(0, 200) } : {}),
      description: (o.description ?? t.description ?? `The ${t.name} tool of the upstream MCP server ${connector.id}.`).slice(0, 4000),
      ...(o.sensitive ? { sensitive: o.sensitive } : {}),
      ...(o.completion ? { completion: o.completion } : {}),
    };
    out.push(defineAction(def));
  }
  return out;
}
