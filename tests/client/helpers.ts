/**
 * The client against the server rig of tests/server (fixture.ts): a client per key name, whose
 * every answer is checked against the served OpenAPI document (conformance.ts), as `call` does.
 */
import { createClient, type WritClient, type WritClientOptions } from "../../src/client/index.js";
import { conformance, type Conformance, type OpenApiDoc } from "../server/conformance.js";
import type { Rig } from "../server/fixture.js";

const checkers = new WeakMap<Rig, Promise<Conformance>>();

/** A fetch that checks every answer against the rig's document (an answer that departs from it throws) and counts requests. */
export function checkedFetch(rig: Rig, seen: string[] = []): typeof fetch {
  let checker = checkers.get(rig);
  if (!checker) {
    checker = fetch(rig.url + "/openapi.json").then(async (r) => conformance((await r.json()) as OpenApiDoc));
    checkers.set(rig, checker);
  }
  const c = checker;
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const method = init?.method ?? "GET";
    seen.push(`${method} ${url.pathname}${url.search}`);
    const res = await fetch(input, init);
    const text = await res.clone().text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    const problems = (await c).problems({ method, path: url.pathname + url.search, status: res.status, contentType: res.headers.get("content-type"), json, text });
    if (problems.length > 0) throw new Error(`the answer to ${method} ${url.pathname} departs from the OpenAPI document:\n  ${problems.join("\n  ")}`);
    return res;
  };
}

/** A client of the rig acting with key `keyName` (fixture.ts: `acme.submit`, `acme.approve`, ...) in space prod. */
export function clientOf(rig: Rig, keyName: string, o: Partial<WritClientOptions> = {}): WritClient {
  const apiKey = rig.keys[keyName];
  if (apiKey === undefined) throw new Error(`the rig has no key ${keyName}`);
  return createClient({ baseUrl: rig.url, apiKey, space: "prod", fetch: checkedFetch(rig), ...o });
}
