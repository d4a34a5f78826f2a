/**
 * Multi-host connection URLs (src/stores/postgres/postgres-url.ts, postgres-multihost.ts), without
 * a server: parsing, refusals and the host choice of the multi-host client over a scripted driver.
 *
 * Invariants: a single-host URL reaches node-postgres exactly as given; a bad URL or an unknown
 * target_session_attrs is refused with INVALID_OPTION naming the option, and no error carries
 * the password; hosts are tried in order and a connection to a server without the asked-for
 * attributes is closed; when no host fits, the error names each host's reason within the timeout.
 */
import { describe, expect, it } from "vitest";
import type { WritError } from "../../src/core/errors.js";
import { postgresStore } from "../../src/stores/postgres/index.js";
import { passwordOf, toWritError } from "../../src/stores/postgres/postgres-errors.js";
import { multiHostClient } from "../../src/stores/postgres/postgres-multihost.js";
import { parsePgUrl } from "../../src/stores/postgres/postgres-url.js";
import type { PgClientConfig, PgQuery, PgResult } from "../../src/stores/postgres/postgres-driver.js";

const SECRET = "pw-n3ver-shown";

function refusal(f: () => unknown): WritError {
  try {
    f();
  } catch (e) {
    return e as WritError;
  }
  throw new Error("expected a refusal");
}

describe("parsePgUrl", () => {
  it("takes several hosts apart, defaults the port, keeps other parameters and drops target_session_attrs", () => {
    const t = parsePgUrl(`postgres://writ:${SECRET}@db1:5433,db2,[::1]:6000/app?sslmode=disable&target_session_attrs=read-write`);
    expect(t.multi).toBe(true);
    expect(t.attrs).toBe("read-write");
    expect(t.hosts).toEqual([
      { host: "db1", port: 5433 },
      { host: "db2", port: 5432 },
      { host: "::1", port: 6000 },
    ]);
    expect(t.hostUrls).toEqual([`postgres://writ:${SECRET}@db1:5433/app?sslmode=disable`, `postgres://writ:${SECRET}@db2:5432/app?sslmode=disable`, `postgres://writ:${SECRET}@[::1]:6000/app?sslmode=disable`]);
    expect(t.url).toBe(t.hostUrls[0]);
  });

  it("hands a single-host URL over exactly as given", () => {
    for (const url of ["postgres://u:p@h:5432/db?sslmode=require", "postgresql://u@/db?host=/var/run/postgresql", "postgres://u@h/db?target_session_attrs=any"]) {
      const t = parsePgUrl(url);
      expect(t.multi).toBe(false);
      expect(t.url).toBe(url);
    }
  });

  // libpq reads an empty host after the user as "the socket directory in ?host=", and so does
  // node-postgres; such a URL is accepted (the WHATWG parser alone refuses it).
  it("accepts a Unix socket directory given as ?host= after an empty host", () => {
    for (const url of ["postgresql://user@/db?host=/var/run/postgresql", `postgres://u:${SECRET}@/db?host=%2Ftmp`, "postgresql:///db?host=/tmp&user=u"]) {
      expect(() => postgresStore({ url })).not.toThrow();
    }
    // Sessions are chosen and checked among TCP hosts: with target_session_attrs a socket
    // directory is refused by name rather than reached over TCP on localhost.
    const withAttrs = refusal(() => postgresStore({ url: `postgresql://u:${SECRET}@/db?host=/tmp&target_session_attrs=read-write` }));
    expect(withAttrs).toMatchObject({ code: "INVALID_OPTION", details: { option: "url" } });
    expect(withAttrs.message).toContain("Unix socket directory");
    expect(withAttrs.message).not.toContain(SECRET);
    const bad = refusal(() => postgresStore({ url: `postgres://u:${SECRET}@:99999/db` }));
    expect(bad.code).toBe("INVALID_OPTION");
    expect(bad.message).not.toContain(SECRET);
  });

  it("checks the attributes of a single host when asked to", () => {
    const t = parsePgUrl("postgres://u@h:7000/db?target_session_attrs=primary");
    expect(t).toMatchObject({ multi: true, attrs: "primary", hosts: [{ host: "h", port: 7000 }] });
  });
});

describe("postgresStore refuses bad multi-host URLs", () => {
  const cases: Array<[string, string]> = [
    [`postgres://u:${SECRET}@h1,h2/db?target_session_attrs=read_write`, "target_session_attrs"],
    [`postgres://u:${SECRET}@h1/db?target_session_attrs=master`, "target_session_attrs"],
    [`postgres://u:${SECRET}@h1,h2/db?target_session_attrs=any&target_session_attrs=primary`, "target_session_attrs"],
    [`postgres://u:${SECRET}@h1:99999,h2/db`, "url"],
    [`postgres://u:${SECRET}@h1:x,h2/db`, "url"],
    [`postgres://u:${SECRET}@h1,,h2/db`, "url"],
    [`postgres://u:${SECRET}@h1,h2:5432:1/db`, "url"],
  ];
  for (const [url, option] of cases) {
    it(`${url.replace(SECRET, "***")} → INVALID_OPTION naming ${option}, without the password`, () => {
      const e = refusal(() => postgresStore({ url }));
      expect(e.code).toBe("INVALID_OPTION");
      expect(e.details).toMatchObject({ option });
      expect(e.message).toContain(option);
      expect(e.message).not.toContain(SECRET);
      expect(JSON.stringify(e.details)).not.toContain(SECRET);
    });
  }

  it("a driver without Client cannot serve a multi-host URL", () => {
    const e = refusal(() => postgresStore({ url: "postgres://u@h1,h2/db", pg: { Pool: class {} as never } }));
    expect(e.code).toBe("INVALID_OPTION");
    expect(e.details).toMatchObject({ option: "pg" });
  });

  it("the password of a multi-host URL is blanked out of driver errors", () => {
    const url = `postgres://u:${SECRET}@h1,h2/db`;
    expect(passwordOf(url)).toEqual([SECRET]);
    const e = toWritError(new Error(`auth failed for ${SECRET} at ${url}`), passwordOf(url));
    expect(e.message).not.toContain(SECRET);
  });
});

/** What each scripted host does: refuse, or accept as a server in that state. */
type Behaviour = "refuse" | "hang" | "primary" | "standby" | "read-only";

/** A scripted `pg.Client`: connects to `host:port` from its connection string, or from host/port set before connect(). */
function scriptedDriver(hosts: Record<string, Behaviour>) {
  const log: string[] = [];
  class Client {
    host: string;
    port: number;
    connectionParameters: { host?: string; port?: number } = {};
    readonly config: PgClientConfig;
    #where = "";
    constructor(config: PgClientConfig) {
      this.config = config;
      const u = new URL(config.connectionString);
      this.host = u.hostname;
      this.port = Number(u.port);
    }
    on(): this {
      return this;
    }
    async connect(): Promise<void> {
      this.#where = `${this.host}:${this.port}`;
      const b = hosts[this.#where];
      log.push(`connect ${this.#where}`);
      if (b === "hang") {
        // Packets swallowed: the attempt ends at its own connection timeout.
        await new Promise((r) => setTimeout(r, this.config.connectionTimeoutMillis));
        log.push(`timeout ${this.#where} after ${this.config.connectionTimeoutMillis} ms`);
        throw new Error("timeout expired");
      }
      if (b === undefined || b === "refuse") throw new Error(`connect ECONNREFUSED ${this.#where}`);
    }
    async query<R>(q: PgQuery): Promise<PgResult<R>> {
      const b = hosts[this.#where];
      if (!q.text.includes("pg_is_in_recovery")) throw new Error("unexpected query");
      const row = { in_recovery: b === "standby", read_only: b === "primary" ? "off" : "on" };
      return { rows: [row as R], rowCount: 1, command: "SELECT" };
    }
    async end(): Promise<void> {
      log.push(`end ${this.#where}`);
    }
  }
  return { Client, log };
}

const config = (url: string): PgClientConfig => ({ connectionString: url, connectionTimeoutMillis: 1000, application_name: "t" });

describe("multiHostClient", () => {
  it("read-write: skips a refusing host and closes the connection to a standby; settles on the primary", async () => {
    const { Client, log } = scriptedDriver({ "a:1": "refuse", "b:2": "standby", "c:3": "primary" });
    const t = parsePgUrl("postgres://u@a:1,b:2,c:3/db?target_session_attrs=read-write");
    const C = multiHostClient(Client, t, 1000);
    const c = new C(config(t.url));
    await c.connect();
    expect((c as unknown as { host: string; port: number }).host).toBe("c");
    expect(log).toEqual(["connect a:1", "end a:1", "connect b:2", "end b:2", "connect c:3", "end c:3", "connect c:3"]);
  });

  it("prefer-standby: a standby first, any server when there is none", async () => {
    const both = scriptedDriver({ "a:1": "primary", "b:2": "standby" });
    const t = parsePgUrl("postgres://u@a:1,b:2/db?target_session_attrs=prefer-standby");
    const c1 = new (multiHostClient(both.Client, t, 1000))(config(t.url));
    await c1.connect();
    expect((c1 as unknown as { host: string }).host).toBe("b");
    const none = scriptedDriver({ "a:1": "primary", "b:2": "refuse" });
    const c2 = new (multiHostClient(none.Client, t, 1000))(config(t.url));
    await c2.connect();
    expect((c2 as unknown as { host: string }).host).toBe("a");
  });

  it("a host that swallows packets gets a share of the timeout, not all of it: the next host is still tried", async () => {
    const { Client, log } = scriptedDriver({ "a:1": "hang", "b:2": "primary" });
    const t = parsePgUrl("postgres://u@a:1,b:2/db?target_session_attrs=read-write");
    const c = new (multiHostClient(Client, t, 400))(config(t.url));
    await c.connect();
    expect((c as unknown as { host: string }).host).toBe("b");
    expect(log.filter((l) => !l.startsWith("timeout"))).toEqual(["connect a:1", "end a:1", "connect b:2", "end b:2", "connect b:2"]);
    // Its share: half of the 400 ms for the first of two hosts (a millisecond may pass before it is computed).
    const share = Number(/^timeout a:1 after (\d+) ms$/.exec(log[1] ?? "")?.[1]);
    expect(share).toBeGreaterThan(150);
    expect(share).toBeLessThanOrEqual(200);
  });

  it("no host fits: the error names each host's reason; the callback form reports it", async () => {
    const { Client } = scriptedDriver({ "a:1": "refuse", "b:2": "read-only" });
    const t = parsePgUrl(`postgres://u:${SECRET}@a:1,b:2/db?target_session_attrs=read-write`);
    const c = new (multiHostClient(Client, t, 1000))(config(t.url));
    const err = await new Promise<Error | undefined>((resolve) => void c.connect(resolve));
    expect(err?.message).toMatch(/no host accepted a read-write session within 1000 ms \(a:1: connect ECONNREFUSED a:1; b:2: read-only\)/);
    expect(err?.message).not.toContain(SECRET);
  });
});
