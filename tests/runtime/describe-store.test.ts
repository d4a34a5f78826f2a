/**
 * `describeStore` (what `writ doctor` and the CLI print for where the store is) on PostgreSQL URLs.
 *
 * Invariants: a single-host URL reads as host, port and database; a multi-host URL names every
 * host in the order they are tried, the database and target_session_attrs; no description ever
 * holds the user name or the password (even one with an encoded "@", or a URL too malformed to
 * take apart).
 */
import { describe, expect, it } from "vitest";
import { defineConfig } from "../../src/config/define-config.js";
import { describeStore } from "../../src/runtime/store-from-config.js";

const SECRET = "s3cr%40et-pw";

function described(url: string): string {
  return describeStore(defineConfig({ store: { kind: "postgres", url }, actions: [], connectors: [], policy: { cedar: { policies: "" } } }), "/srv");
}

describe("describeStore on PostgreSQL URLs", () => {
  it("names the host, port and database of a single-host URL", () => {
    expect(described(`postgres://writ:${SECRET}@db.internal:5433/writ?sslmode=require`)).toBe("the PostgreSQL database db.internal:5433/writ");
  });

  it("names every host of a multi-host URL in order, the database and target_session_attrs", () => {
    const d = described(`postgresql://writ:${SECRET}@pg-a:5432,pg-b:5433,[fd00::7]:5434/orders?target_session_attrs=read-write&connect_timeout=3`);
    expect(d).toBe("the PostgreSQL database orders on 3 hosts, tried in order: pg-a:5432, pg-b:5433, [fd00::7]:5434 (target_session_attrs=read-write)");
  });

  it("says so when a multi-host URL names no database", () => {
    expect(described("postgres://h1,h2")).toBe("the PostgreSQL database (the user's default) on 2 hosts, tried in order: h1, h2");
  });

  it("never shows the user or the password, even for a malformed URL", () => {
    for (const url of [
      `postgres://writ:${SECRET}@h1:5432,h2:5432/writ`,
      `postgres://writ:${SECRET}@h1:5432/writ`,
      `postgres://writ:${SECRET}@h1:5432,,h2/writ`,
      `postgres://writ:${SECRET}@h1:5432/writ#frag`,
    ]) {
      const d = described(url);
      expect(d).not.toContain("s3cr");
      expect(d).not.toContain("writ:");
    }
    expect(described(`postgres://writ:${SECRET}@h1:5432,,h2/writ`)).toBe("the PostgreSQL database of store.url");
  });
});
