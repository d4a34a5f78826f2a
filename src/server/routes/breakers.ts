/** Circuit breakers: a space's breakers as the store holds them (docs/host.md, "Circuit breakers"). */
import type { ServerContext } from "../context.js";
import { defineRoute, type Route } from "../registry.js";
import { BreakerList, SpacePath } from "../schemas.js";

export function breakerRoutes(s: ServerContext): Route[] {
  const { host } = s.runtime;
  return [
    defineRoute({
      method: "get",
      path: "/v1/spaces/{spaceId}/breakers",
      operationId: "listBreakers",
      tag: "breakers",
      summary: "List the space's circuit breakers",
      description: "One per (connector, operation) that has recorded a failure; shared by every worker on the store. A breaker not listed is closed.",
      access: { kind: "key", roles: ["operate"] },
      params: SpacePath,
      responses: { 200: { description: "breakers", schema: BreakerList } },
      async handle({ caller }) {
        return { status: 200, body: { items: await host.breakers(caller.scope) } };
      },
    }),
  ];
}
