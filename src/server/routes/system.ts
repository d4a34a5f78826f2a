/** Unauthenticated system routes: health, Prometheus metrics, the JWKS, the OpenAPI document. */
import { errorMessage } from "../../core/errors.js";
import type { ServerContext } from "../context.js";
import { ApiError } from "../errors.js";
import { defineRoute, type Route } from "../registry.js";
import { Health, Jwks } from "../schemas.js";

const HEALTH_SCOPE = { tenantId: "_health", spaceId: "_health" };

async function within<T>(ms: number, p: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export function systemRoutes(s: ServerContext, openapi: () => unknown): Route[] {
  const { store, keyring } = s.runtime;
  return [
    defineRoute({
      method: "get",
      path: "/healthz",
      operationId: "health",
      tag: "system",
      summary: "Health: the store answers a read",
      access: { kind: "public" },
      responses: { 200: { description: "healthy", schema: Health } },
      async handle({ c }) {
        try {
          await within(s.healthTimeoutMs, store.transact((tx) => tx.journalHead(HEALTH_SCOPE)));
        } catch (e) {
          s.log.warn({ requestId: c.get("requestId"), err: errorMessage(e) }, "health check: store unreachable");
          throw new ApiError("SERVICE_UNAVAILABLE", "store unreachable");
        }
        return { status: 200, body: { status: "ok", store: store.kind } };
      },
    }),
    defineRoute({
      method: "get",
      path: "/metrics",
      operationId: "metrics",
      tag: "system",
      summary: "Prometheus metrics (text exposition 0.0.4)",
      description: "HTTP requests by route template and status, durations, host events, invocation transitions and circuit breaker state changes. Labels carry no tenant data.",
      access: { kind: "public" },
      responses: { 200: { description: "metrics", contentType: "text/plain; version=0.0.4" } },
      async handle({ c }) {
        return c.body(s.metrics.render(), 200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" });
      },
    }),
    defineRoute({
      method: "get",
      path: "/.well-known/jwks.json",
      operationId: "jwks",
      tag: "system",
      summary: "Keys that verify decisions (JWKS)",
      access: { kind: "public" },
      responses: { 200: { description: "the JWKS", schema: Jwks } },
      async handle() {
        return { status: 200, body: keyring.jwks(), headers: { "cache-control": "max-age=300" } };
      },
    }),
    defineRoute({
      method: "get",
      path: "/openapi.json",
      operationId: "openapi",
      tag: "system",
      summary: "This document (OpenAPI 3.1)",
      access: { kind: "public" },
      responses: { 200: { description: "the OpenAPI document", contentType: "application/json" } },
      async handle() {
        return { status: 200, body: openapi() };
      },
    }),
  ];
}
