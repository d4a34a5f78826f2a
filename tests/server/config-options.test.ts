/**
 * The config reaches every option `writ serve` has: a server started with no options in code (as
 * `writ serve` starts it) runs with the config's per-key rate limit, body limit, JSON depth, API key
 * cache and timeouts; a bad option is refused at load with an error naming it; `writ doctor`'s
 * settings show the effective values and never a secret.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { effectiveSettings, settingsLines } from "../../src/cli/settings.js";
import { defineConfig, type WritConfig } from "../../src/config/define-config.js";
import { createApiKey } from "../../src/runtime/api-keys.js";
import type { Runtime } from "../../src/runtime/runtime.js";
import { resolveAppOptions } from "../../src/server/app.js";
import { ACME, WEBHOOK_SECRET, actions, call, connectors, policy, serveConfig, type Rig } from "./fixture.js";

const base = (extra: Partial<WritConfig> = {}): WritConfig => ({ actions, connectors, policy, store: { kind: "memory" }, ...extra });

let rig: Rig;
let runtime: Runtime;
beforeAll(async () => {
  const config = defineConfig(base({ server: { rateLimit: { perSecond: 1, burst: 3 }, bodyLimitBytes: 200, maxJsonDepth: 3, apiKeyCacheMs: 0, healthTimeoutMs: 500, headersTimeoutMs: 4000, requestTimeoutMs: 5000 } }));
  rig = await serveConfig(config, async (rt) => {
    const { crypto, random, clock } = rt.host.context.o;
    return { admin: (await createApiKey(rt.store, crypto, random, { tenantId: ACME.tenantId, roles: ["admin"], name: "admin" }, clock.now())).key };
  });
  runtime = rig.runtime;
});
afterAll(async () => {
  await rig?.close();
});

describe("server options from the config", () => {
  it("a server started without options runs with the config's body limit, JSON depth and rate limit", async () => {
    const big = await call(rig, "POST", "/v1/spaces/prod/decisions/preview", { key: "admin", body: { pad: "x".repeat(300) } });
    expect(big.status).toBe(413);
    const deep = await call(rig, "POST", "/v1/spaces/prod/decisions/preview", { key: "admin", raw: '{"a":{"b":{"c":{"d":1}}}}', headers: { "content-type": "application/json" } });
    expect(deep.status).toBe(400);
    expect(deep.json.error.code).toBe("MALFORMED_JSON");
    // 1 request/s after a burst of 3: back-to-back requests meet a 429 within a few (the default,
    // 200/s after 1,000, would not in 50), and its message names the config's rate.
    let limited: Awaited<ReturnType<typeof call>> | undefined;
    for (let i = 0; i < 50 && !limited; i++) {
      const r = await call(rig, "GET", "/v1/spaces/prod/breakers", { key: "admin" });
      if (r.status === 429) limited = r;
    }
    expect(limited?.json.error).toMatchObject({ code: "RATE_LIMITED", message: expect.stringContaining("more than 1 requests per second") });
    expect(limited?.headers.get("retry-after")).toMatch(/^\d+$/);
  });

  it("resolves every server option from the config, an option in code winning", () => {
    expect(resolveAppOptions(runtime)).toMatchObject({ bodyLimitBytes: 200, maxJsonDepth: 3, apiKeyCacheMs: 0, healthTimeoutMs: 500, rateLimit: { perSecond: 1, burst: 3 } });
    expect(resolveAppOptions(runtime, { rateLimit: { perSecond: 7 }, apiKeyCacheMs: 50 })).toMatchObject({ apiKeyCacheMs: 50, rateLimit: { perSecond: 7, burst: 3 } });
    expect(effectiveSettings(runtime.config).server).toEqual({ port: 8787, host: "127.0.0.1", bodyLimitBytes: 200, maxJsonDepth: 3, rateLimit: { perSecond: 1, burst: 3 }, apiKeyCacheMs: 0, healthTimeoutMs: 500, headersTimeoutMs: 4000, requestTimeoutMs: 5000 });
  });

  it("the defaults, when the config sets none", () => {
    expect(effectiveSettings(base()).server).toEqual({ port: 8787, host: "127.0.0.1", bodyLimitBytes: 1048576, maxJsonDepth: 32, rateLimit: { perSecond: 200, burst: 1000 }, apiKeyCacheMs: 1000, healthTimeoutMs: 2000, headersTimeoutMs: 10000, requestTimeoutMs: 30000 });
    expect(effectiveSettings(base()).console).toMatchObject({ enabled: true, trustProxy: false });
    expect(effectiveSettings(base()).mcp).toEqual({ callWaitMs: 20_000, pollMs: 200, maxArgumentsBytes: 65_536, taskPollIntervalMs: 1000, allowedOrigins: [], maxSessions: 100, maxSessionsPerKey: 10, sessionIdleMs: 900_000, bodyLimitBytes: 1_048_576 });
    expect(effectiveSettings(base({ mcp: { callWaitMs: 5000 } })).mcp.callWaitMs).toBe(5000);
  });

  it("a bad option is refused at load, the error naming it as the config spells it", () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ server: { rateLimit: { perSecond: 0 } } }, /server\.rateLimit\.perSecond must be an integer from 1 to 1000000/],
      [{ server: { rateLimit: { brust: 5 } } }, /server\.rateLimit\.brust is not an option/],
      [{ server: { rateLimit: 100 } }, /server\.rateLimit must be an object/],
      [{ server: { apiKeyCacheMs: 120_000 } }, /server\.apiKeyCacheMs must be an integer from 0 to 60000/],
      [{ server: { bodyLimitBytes: "1mb" } }, /server\.bodyLimitBytes must be an integer/],
      [{ server: { maxJsonDepth: 1.5 } }, /server\.maxJsonDepth must be an integer/],
      [{ server: { headersTimeoutMs: 0 } }, /server\.headersTimeoutMs must be an integer/],
      [{ server: { port: 70000 } }, /server\.port must be an integer from 0 to 65535/],
      [{ server: { host: "" } }, /server\.host must be a host name/],
      [{ server: { trustProxy: true } }, /server\.trustProxy is not an option/],
      [{ console: { trustProxy: "yes" } }, /console: trustProxy must be a boolean/],
      [{ mcp: { callWaitMs: -1 } }, /MCP gateway: callWaitMs must be an integer from 0 to 600000/],
      [{ mcp: { maxSessions: 0 } }, /MCP HTTP: maxSessions must be an integer from 1 to 100000/],
      [{ mcp: { allowedOrigins: "https://a.example" } }, /MCP HTTP: allowedOrigins must be a list of origins/],
    ];
    for (const [extra, message] of cases) {
      let err: unknown;
      try {
        defineConfig(base(extra));
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify(extra)).toMatchObject({ code: "INVALID_OPTION", message: expect.stringMatching(message) });
    }
  });
});

describe("writ doctor's settings", () => {
  it("show the effective values and never a secret", () => {
    const config = base({
      store: { kind: "postgres", url: "postgres://writ:hunter2-secret@db.internal:5432/writ?sslpassword=other-secret" },
      completionSecrets: [{ ...ACME, connector: "deployer", secrets: [WEBHOOK_SECRET] }],
      console: { trustProxy: true },
      server: { rateLimit: { perSecond: 50 } },
    });
    const s = effectiveSettings(config);
    const shown = JSON.stringify(s) + settingsLines(s).join("\n");
    expect(shown).not.toContain("hunter2-secret");
    expect(shown).not.toContain("other-secret");
    expect(shown).not.toContain(WEBHOOK_SECRET.slice(6, 20));
    expect(s.store.url).toBe("postgres://writ:***@db.internal:5432/writ?sslpassword=***");
    expect(s.completionSecrets).toBe(1);
    expect(s.console.trustProxy).toBe(true);
    expect(settingsLines(s)).toEqual(expect.arrayContaining([expect.stringMatching(/^server\.rateLimit\.perSecond +50$/), expect.stringMatching(/^server\.rateLimit\.burst +1000$/)]));
  });
});
