/**
 * SQLite migrations: from an empty file, re-run, refusal of an unknown newer schema, and two
 * processes migrating the same file at the same moment.
 */
import Database from "better-sqlite3";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { SQLITE_MIGRATIONS, SQLITE_SCHEMA_VERSION, sqliteStore } from "../../src/stores/sqlite/index.js";
import { TempDbs } from "./fixtures/sqlite-helpers.js";

const dbs = new TempDbs();
afterEach(() => dbs.cleanup());

const CHILD = fileURLToPath(new URL("./fixtures/sqlite-migrate-child.ts", import.meta.url));

const TABLES = [
  "api_keys",
  "approvals",
  "attempts",
  "authorities",
  "breakers",
  "completions",
  "consumed_decisions",
  "deliveries",
  "idempotency",
  "invocations",
  "journal",
  "journal_archive_state",
  "journal_checkpoints",
  "notify_cursors",
  "notify_deliveries",
  "notify_subscriptions",
  "policy_versions",
  "reconciliations",
  "steps",
  "writ_migrations",
];

function inspect(path: string): { tables: string[]; migrations: { version: number; name: string; applied_at: number }[] } {
  const db = new Database(path, { readonly: true });
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all() as string[];
    const migrations = db.prepare("SELECT version, name, applied_at FROM writ_migrations ORDER BY version").all() as {
      version: number;
      name: string;
      applied_at: number;
    }[];
    return { tables, migrations };
  } finally {
    db.close();
  }
}

interface ChildRun {
  ready: Promise<void>;
  go(): void;
  done: Promise<{ code: number | null; lines: string[]; stderr: string }>;
}

function runChild(path: string): ChildRun {
  const child = spawn(process.execPath, ["--import", "tsx", CHILD, path], { stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  let markReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
    if (stdout.includes("ready\n")) markReady();
  });
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<{ code: number | null; lines: string[]; stderr: string }>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, lines: stdout.split("\n").filter((l) => l !== "" && l !== "ready"), stderr }));
  });
  return { ready, go: () => child.stdin.write("go\n"), done };
}

describe("sqlite migrations", () => {
  it("builds the whole schema on an empty file and records each migration", async () => {
    const path = dbs.path();
    const store = dbs.track(sqliteStore({ path }));
    expect(await store.schemaVersion()).toBe(0);
    await store.migrate();
    expect(await store.schemaVersion()).toBe(SQLITE_SCHEMA_VERSION);
    const { tables, migrations } = inspect(path);
    expect(tables).toEqual(TABLES);
    expect(migrations.map((m) => [m.version, m.name])).toEqual(SQLITE_MIGRATIONS.map((m) => [m.version, m.name]));
  });

  it("is idempotent: migrating again, from the same or another store, changes nothing", async () => {
    const path = dbs.path();
    const first = dbs.track(sqliteStore({ path }));
    await first.migrate();
    await first.migrate();
    const before = inspect(path);
    const second = dbs.track(sqliteStore({ path }));
    await second.migrate();
    expect(inspect(path)).toEqual(before);
    expect(await second.schemaVersion()).toBe(SQLITE_SCHEMA_VERSION);
  });

  it("refuses a database migrated by a newer build", async () => {
    const path = dbs.path();
    const first = sqliteStore({ path });
    await first.migrate();
    await first.close();
    const side = new Database(path);
    side.prepare("INSERT INTO writ_migrations (version, name, applied_at) VALUES (?, ?, ?)").run(SQLITE_SCHEMA_VERSION + 1, "from_the_future", 1);
    side.close();
    const store = dbs.track(sqliteStore({ path }));
    await expect(store.migrate()).rejects.toMatchObject({ code: "INVALID_STATE" });
    await expect(store.transact(async () => 1)).rejects.toMatchObject({ code: "INVALID_STATE" });
  });

  it("lets two processes migrate the same new file at once: both succeed, the schema is applied once", async () => {
    const path = dbs.path();
    const children = [runChild(path), runChild(path)];
    await Promise.all(children.map((c) => c.ready));
    for (const c of children) c.go();
    const results = await Promise.all(children.map((c) => c.done));
    for (const r of results) {
      // One comparison, so that a failure shows the child's exit code, output and stderr together.
      expect(r).toEqual({ code: 0, lines: [JSON.stringify({ version: SQLITE_SCHEMA_VERSION })], stderr: "" });
    }
    const { tables, migrations } = inspect(path);
    expect(tables).toEqual(TABLES);
    expect(migrations.map((m) => m.version)).toEqual(SQLITE_MIGRATIONS.map((m) => m.version));
    const store = dbs.track(sqliteStore({ path }));
    expect(await store.schemaVersion()).toBe(SQLITE_SCHEMA_VERSION);
  });
});
