/**
 * The route registry: each route is declared ONCE — method, path, access, request schemas
 * (path, query, body), response schemas, summary — and that one declaration both drives the
 * validation at the edge ({@link mountRoutes}) and produces the OpenAPI document
 * ({@link openApiDocument}). No second, hand-kept copy of either exists.
 */
import { isDeepStrictEqual } from "node:util";
import type { Context, Hono } from "hono";
import { z } from "zod";
import type { ApiKeyRecord, ApiRole } from "../core/types.js";
import { authorize, authorizeTenant, type Caller } from "./auth.js";
import { decodeUtf8, isJsonContentType, parseJsonBody, readBody } from "./body.js";
import { ApiError, STATUS_OF } from "./errors.js";
import { ErrorBody, schemaRegistry } from "./schemas.js";

/** Who may call a route. */
export type Access =
  /** No credentials (health, metrics, JWKS, the document itself). */
  | { kind: "public" }
  /** A signed Standard Webhooks delivery: the signature authenticates, no API key. */
  | { kind: "webhook" }
  /**
   * An API key holding one of `roles` in the path's space; with `tenant`, a route about the whole
   * tenant (no space in its path): the key must cover every space (`*`) and hold one of `roles`.
   */
  | { kind: "key"; roles: readonly ApiRole[]; tenant?: boolean };

/** Per-request values the app keeps on the Hono context. */
export interface AppEnv {
  Variables: {
    requestId: string;
    /** The route template that answered (metrics and logs); unset for unknown paths. */
    route: string;
  };
}

export interface ResponseSpec {
  description: string;
  /** A named schema (registered in {@link schemaRegistry}); absent for non-JSON answers. */
  schema?: z.ZodType;
  /** @defaultValue "application/json" when `schema` is set */
  contentType?: string;
  /**
   * A JSON Lines answer (`contentType` without `schema`): the named schemas of its lines, the first
   * line's and then every other's, listed in the document with the body typed as a string.
   */
  lines?: { first: z.ZodType; then: z.ZodType };
}

/** What a handler receives: validated input and, on keyed routes, the authorised caller. */
export interface Call<P, Q, B, A extends Access> {
  c: Context<AppEnv>;
  params: P;
  query: Q;
  body: B;
  /** The body as received (webhook routes verify signatures over these exact characters). */
  rawBody: string;
  caller: A extends { kind: "key" } ? Caller : null;
}

/** A JSON answer; a handler may also return a `Response` (streams, text). */
export interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export interface RouteSpec<P, Q, B, A extends Access> {
  method: "get" | "post" | "patch" | "delete";
  /** OpenAPI template, e.g. `/v1/spaces/{spaceId}/invocations`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  access: A;
  params?: z.ZodType<P>;
  query?: z.ZodType<Q>;
  /** A JSON body, validated. */
  body?: z.ZodType<B>;
  /** With `body`: an empty body is read as `{}`. @defaultValue false */
  bodyOptional?: boolean;
  /** The body is handed over unparsed (`rawBody`); `schema` only documents it. */
  rawBody?: { schema: z.ZodType; contentType: string };
  responses: { [status: number]: ResponseSpec };
  handle(call: Call<P, Q, B, A>): Promise<Reply | Response>;
}

/** A declared route, its input types erased. */
export type Route = RouteSpec<unknown, unknown, unknown, Access>;

/** Declares a route; the handler's input types follow from the schemas. */
export function defineRoute<P = Record<string, never>, Q = Record<string, never>, B = undefined, A extends Access = Access>(spec: RouteSpec<P, Q, B, A>): Route {
  return spec;
}

/** `/v1/spaces/{spaceId}` -> `/v1/spaces/:spaceId` */
export function honoPath(path: string): string {
  return path.replace(/\{([A-Za-z0-9_]+)\}/g, ":$1");
}

export interface MountOptions {
  bodyLimitBytes: number;
  maxJsonDepth: number;
  /** Check every JSON answer against its declared response schema (tests). */
  checkResponses: boolean;
  authenticate(header: string | undefined): Promise<ApiKeyRecord>;
  /** Turns any thrown value into the error answer (one place for all error answers). */
  fail(c: Context<AppEnv>, err: unknown): Response;
}

interface Issue {
  path: string;
  message: string;
}

function validate<T>(schema: z.ZodType<T>, value: unknown, where: "path" | "query" | "body"): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issues: Issue[] = r.error.issues.slice(0, 20).map((i) => ({ path: [where, ...i.path.map(String)].join("."), message: i.message }));
  const shown = issues
    .slice(0, 3)
    .map((i) => `${i.path}: ${i.message}`)
    .join("; ");
  throw new ApiError("VALIDATION_FAILED", `invalid ${where}: ${shown}${issues.length > 3 ? "; ..." : ""}`, { issues });
}

const EMPTY: Record<string, never> = {};

/** The query as one value per name; a name given twice is refused (which one counts would be a guess). */
function queryOf(c: Context<AppEnv>): Record<string, string> {
  const all = c.req.queries();
  const out: Record<string, string> = {};
  for (const [name, values] of Object.entries(all)) {
    if (values.length > 1) throw new ApiError("VALIDATION_FAILED", `invalid query: query.${name}: is given more than once`, { issues: [{ path: `query.${name}`, message: "is given more than once" }] });
    out[name] = values[0]!;
  }
  return out;
}

async function readJson(c: Context<AppEnv>, route: Route, o: MountOptions): Promise<{ body: unknown; raw: string }> {
  const bytes = await readBody(c.req.raw, o.bodyLimitBytes);
  const raw = decodeUtf8(bytes);
  if (route.rawBody) return { body: undefined, raw };
  if (!route.body) return { body: undefined, raw: "" };
  if (raw.trim().length === 0) {
    if (route.bodyOptional) return { body: validate(route.body, {}, "body"), raw };
    throw new ApiError("VALIDATION_FAILED", "a JSON body is required");
  }
  if (!isJsonContentType(c.req.header("content-type"))) throw new ApiError("UNSUPPORTED_MEDIA_TYPE", "the body must be sent as Content-Type: application/json");
  return { body: validate(route.body, parseJsonBody(raw, o.maxJsonDepth), "body"), raw };
}

/** The answer as its declaration documents it: the status is listed, the body fits, no field is undeclared. */
function checkReply(route: Route, reply: Reply): void {
  const spec = route.responses[reply.status];
  if (!spec) throw new Error(`${route.operationId} answered ${reply.status}, which its declaration does not list`);
  if (!spec.schema) return;
  const sent: unknown = JSON.parse(JSON.stringify(reply.body));
  const r = spec.schema.safeParse(sent);
  if (!r.success) throw new Error(`${route.operationId} answered ${reply.status} with a body its schema refuses: ${z.prettifyError(r.error)}`);
  if (!isDeepStrictEqual(r.data, sent)) throw new Error(`${route.operationId} answered ${reply.status} with fields its schema does not declare`);
}

/** Answers that already carry their `x-request-id` (the request middleware leaves them alone). */
const stamped = new WeakSet<Response>();

/** True when `res` was made by {@link jsonResponse} and carries its request id. */
export function hasRequestId(res: Response): boolean {
  return stamped.has(res);
}

/**
 * A JSON answer with its headers as one plain object (request id included): on Node the adapter
 * writes such an answer straight to the socket, without building a `Headers` object, which
 * `c.json` and a header set afterwards would (the submit route's hot path, docs/http-api.md).
 */
export function jsonResponse(c: Context<AppEnv>, status: number, body: unknown, headers?: Record<string, string>): Response {
  const requestId = c.get("requestId") as string | undefined;
  const all: Record<string, string> = { "content-type": "application/json", ...headers };
  if (requestId !== undefined) all["x-request-id"] = requestId;
  const res = new Response(JSON.stringify(body), { status, headers: all });
  if (requestId !== undefined) stamped.add(res);
  return res;
}

/** Registers every route on `app`, and a 405 answer for the other methods of each path. */
export function mountRoutes(app: Hono<AppEnv>, routes: readonly Route[], o: MountOptions): void {
  const methods = new Map<string, Set<string>>();
  for (const route of routes) {
    if (route.access.kind === "key" && !route.access.tenant && !route.path.includes("{spaceId}")) throw new Error(`${route.operationId}: keyed routes live under a space`);
    if (route.access.kind === "key" && route.access.tenant && route.path.includes("{spaceId}")) throw new Error(`${route.operationId}: tenant routes have no space in their path`);
    const set = methods.get(route.path) ?? new Set<string>();
    set.add(route.method.toUpperCase());
    methods.set(route.path, set);
    app.on(route.method.toUpperCase(), honoPath(route.path), async (c) => {
      c.set("route", route.path);
      try {
        let caller: Caller | null = null;
        const key = route.access.kind === "key" ? await o.authenticate(c.req.header("authorization")) : null;
        const params = route.params ? validate(route.params, c.req.param(), "path") : EMPTY;
        if (key && route.access.kind === "key") caller = route.access.tenant ? authorizeTenant(key, route.access.roles) : authorize(key, (params as { spaceId: string }).spaceId, route.access.roles);
        const query = route.query ? validate(route.query, queryOf(c), "query") : EMPTY;
        const { body, raw } = route.method === "post" || route.method === "patch" ? await readJson(c, route, o) : { body: undefined, raw: "" };
        const reply = await route.handle({ c, params, query, body, rawBody: raw, caller });
        if (reply instanceof Response) return reply;
        if (o.checkResponses) checkReply(route, reply);
        return jsonResponse(c, reply.status, reply.body, reply.headers);
      } catch (e) {
        return o.fail(c, e);
      }
    });
  }
  for (const [path, allowed] of methods) {
    const allow = [...allowed, ...(allowed.has("GET") ? ["HEAD"] : [])].sort().join(", ");
    app.all(honoPath(path), (c) => {
      c.set("route", path);
      return o.fail(c, new ApiError("METHOD_NOT_ALLOWED", `${c.req.method} is not allowed here; allowed: ${allow}`, undefined, { allow }));
    });
  }
}

// OpenAPI ---------------------------------------------------------------------------------------

type JsonSchema = Record<string, unknown>;

const REF = (id: string): string => `#/components/schemas/${id}`;

function refTo(schema: z.ZodType): JsonSchema {
  const meta = schemaRegistry.get(schema);
  if (!meta) throw new Error("every body and answer schema must be named in schemaRegistry");
  return { $ref: REF(meta.id) };
}

function strip(s: JsonSchema): JsonSchema {
  const { $schema: _s, $id: _i, ...rest } = s;
  return rest;
}

function parameters(schema: z.ZodType | undefined, where: "path" | "query"): JsonSchema[] {
  if (!schema) return [];
  const js = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as { properties?: Record<string, JsonSchema>; required?: string[] };
  return Object.entries(js.properties ?? {}).map(([name, s]) => {
    const { description, ...rest } = s;
    const p: JsonSchema = { name, in: where, required: where === "path" || (js.required ?? []).includes(name), schema: rest };
    if (typeof description === "string") p.description = description;
    return p;
  });
}

const ERROR_DESCRIPTIONS: Partial<Record<number, string>> = {
  400: "bad input (VALIDATION_FAILED, MALFORMED_JSON, ...)",
  401: "missing or invalid credentials (UNAUTHORIZED)",
  403: "the API key lacks the role or the space (FORBIDDEN)",
  404: "not found in the caller's scope (NOT_FOUND)",
  409: "conflicts with the current state",
  413: "body larger than the limit (PAYLOAD_TOO_LARGE)",
  415: "body is not application/json (UNSUPPORTED_MEDIA_TYPE)",
  429: "the API key is over its rate limit (RATE_LIMITED); retry after Retry-After seconds",
  500: "internal error (INTERNAL), details only in the server log",
  503: "the store is unavailable",
};

/** Which error statuses a route can answer, from its declaration. */
function errorStatuses(r: Route): number[] {
  const s = new Set<number>([500, 503]);
  if (r.params || r.query || r.body || r.rawBody) s.add(400);
  if (r.access.kind === "key") [401, 403, 404, 429].forEach((x) => s.add(x));
  if (r.access.kind === "webhook") s.add(401);
  if (r.body || r.rawBody) s.add(413);
  if (r.body) s.add(415);
  return [...s].filter((x) => !(x in r.responses));
}

function operation(r: Route): JsonSchema {
  const responses: Record<string, JsonSchema> = {};
  for (const [status, spec] of Object.entries(r.responses)) {
    const res: JsonSchema = { description: spec.description };
    if (spec.schema) res.content = { [spec.contentType ?? "application/json"]: { schema: refTo(spec.schema) } };
    else if (spec.contentType) {
      const lines = spec.lines && { contentSchema: { type: "array", prefixItems: [refTo(spec.lines.first)], items: refTo(spec.lines.then) } };
      res.content = { [spec.contentType]: { schema: { type: "string", ...lines } } };
    }
    responses[status] = res;
  }
  for (const status of errorStatuses(r)) responses[String(status)] = { $ref: `#/components/responses/Error${status}` };
  const op: JsonSchema = {
    operationId: r.operationId,
    summary: r.summary,
    tags: [r.tag],
    parameters: [...parameters(r.params, "path"), ...parameters(r.query, "query")],
    responses,
  };
  if (r.description) op.description = r.description;
  if (r.body) op.requestBody = { required: !r.bodyOptional, content: { "application/json": { schema: refTo(r.body) } } };
  if (r.rawBody) op.requestBody = { required: true, content: { [r.rawBody.contentType]: { schema: refTo(r.rawBody.schema) } } };
  if (r.access.kind === "key") {
    op.security = [{ apiKey: [] }];
    op["x-writ-roles"] = [...r.access.roles];
    if (r.access.tenant) op["x-writ-tenant"] = true;
  } else if (r.access.kind === "webhook") {
    op.security = [{ webhookSignature: [] }];
    op.parameters = [
      ...(op.parameters as JsonSchema[]),
      ...["webhook-id", "webhook-timestamp", "webhook-signature"].map((name) => ({ name, in: "header", required: true, schema: { type: "string" } })),
    ];
  } else {
    op.security = [];
  }
  return op;
}

/** The document's `info`: what Redocly's recommended rules ask for, a license included. */
export interface OpenApiInfo {
  title: string;
  version: string;
  description?: string;
  license?: { name: string; identifier?: string; url?: string };
}

/**
 * The OpenAPI 3.1 document of `routes`, with every named schema under `components.schemas` and the
 * error answers the operations use under `components.responses`. Its one server is relative ("/"):
 * the document describes the server that serves it, on whatever address and port that listens.
 */
export function openApiDocument(routes: readonly Route[], info: OpenApiInfo): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  const used = new Set<number>();
  for (const r of routes) {
    (paths[r.path] ??= {})[r.method] = operation(r);
    for (const status of errorStatuses(r)) used.add(status);
  }
  const all = z.toJSONSchema(schemaRegistry, { uri: REF, unrepresentable: "any" }) as { schemas: Record<string, JsonSchema> };
  const schemas: Record<string, JsonSchema> = {};
  for (const [id, s] of Object.entries(all.schemas)) schemas[id] = strip(s);
  return {
    openapi: "3.1.0",
    info,
    servers: [{ url: "/", description: "the Writ server that serves this document (writ serve; default http://127.0.0.1:8787)" }],
    jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
    paths,
    components: {
      schemas,
      responses: Object.fromEntries(
        Object.entries(ERROR_DESCRIPTIONS)
          .filter(([status]) => used.has(Number(status)))
          .map(([status, description]) => [`Error${status}`, { description, content: { "application/json": { schema: refTo(ErrorBody) } } }]),
      ),
      securitySchemes: {
        apiKey: { type: "http", scheme: "bearer", bearerFormat: "writ_<keyId>_<secret>", description: "An API key of one tenant; its roles decide what it may do." },
        webhookSignature: { type: "apiKey", in: "header", name: "webhook-signature", description: "Standard Webhooks: HMAC-SHA256 over `webhook-id.webhook-timestamp.body` with the connector's secret." },
      },
    },
    "x-writ-error-codes": { ...STATUS_OF },
  };
}
