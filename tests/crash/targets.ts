/**
 * The durable stores the crash tests kill children on: how a child reaches one, how the test
 * reopens it, and the two raw listings the Store port has no call for (the keys of every consumed
 * decision and every idempotency record; the records themselves are then read through the port).
 */
import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import type { Store } from "../../src/core/store.js";
import type { Scope } from "../../src/core/types.js";
import { postgresStore } from "../../src/stores/postgres/index.js";
import { sqliteStore } from "../../src/stores/sqlite/index.js";
import { freshDatabase } from "../helpers/pg.js";

export interface StoredKeys {
  decisions: Array<Scope & { decisionId: string }>;
  idempotency: Array<Scope & { action: string; idempotencyKey: string }>;
}

export interface CrashTarget {
  readonly name: "sqlite" | "postgres";
  /** What the child needs to open the same store. */
  readonly child: { store: "sqlite" | "postgres"; target: string };
  /** Opens the store in the test process (recovering whatever the killed child left). */
  open(): Promise<Store>;
  /** Primary keys of every consumed decision and idempotency record, in every scope. */
  keys(): Promise<StoredKeys>;
  /** Waits until nothing a killed child started can still change the database. */
  quiesce(run: number): Promise<void>;
  /** Releases what the target holds (not the database itself). */
  close(): Promise<void>;
}

interface KeyRow {
  tenant_id: string;
  space_id: string;
}

function toKeys(decisions: Array<KeyRow & { decision_id: string }>, idem: Array<KeyRow & { action: string; idempotency_key: string }>): StoredKeys {
  return {
    decisions: decisions.map((r) => ({ tenantId: r.tenant_id, spaceId: r.space_id, decisionId: r.decision_id })),
    idempotency: idem.map((r) => ({ tenantId: r.tenant_id, spaceId: r.space_id, action: r.action, idempotencyKey: r.idempotency_key })),
  };
}

/** A SQLite file (WAL, synchronous=FULL, group commit on: the store's defaults, spelled out). */
export function sqliteTarget(path: string): CrashTarget {
  return {
    name: "sqlite",
    child: { store: "sqlite", target: path },
    async open() {
      const store = sqliteStore({ path, synchronous: "FULL", groupCommit: true });
      await store.migrate();
      return store;
    },
    async keys() {
      const db = new Database(path, { readonly: true, fileMustExist: true });
      try {
        return toKeys(
          db.prepare("SELECT tenant_id, space_id, decision_id FROM consumed_decisions").all() as Array<KeyRow & { decision_id: string }>,
          db.prepare("SELECT tenant_id, space_id, action, idempotency_key FROM idempotency").all() as Array<KeyRow & { action: string; idempotency_key: string }>,
        );
      } finally {
        db.close();
      }
    },
    // A dead process holds no SQLite lock: the kernel dropped its file locks when it was reaped.
    quiesce: async () => undefined,
    close: async () => undefined,
  };
}

/** A PostgreSQL database (one per test file, see tests/helpers/pg.ts). */
export function postgresTarget(url: string): CrashTarget {
  const admin = new pg.Client({ connectionString: url });
  admin.on("error", () => undefined);
  const connected = admin.connect();
  return {
    name: "postgres",
    child: { store: "postgres", target: url },
    async open() {
      const store = postgresStore({ url }, { max: 2, applicationName: "writ-crash-check" });
      await store.migrate();
      return store;
    },
    async keys() {
      await connected;
      const d = await admin.query<KeyRow & { decision_id: string }>("SELECT tenant_id, space_id, decision_id FROM writ_consumed_decisions");
      const i = await admin.query<KeyRow & { action: string; idempotency_key: string }>("SELECT tenant_id, space_id, action, idempotency_key FROM writ_idempotency");
      return toKeys(d.rows, i.rows);
    },
    // The server ends a dead client's backends when it sees the socket closed; a backend that had
    // already received COMMIT may still finish it. Wait until none is left, so that the check
    // reads a database nothing changes any more.
    async quiesce(run) {
      await connected;
      const until = Date.now() + 15_000;
      for (;;) {
        const r = await admin.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1", [`writ-crash-${run}`]);
        if (r.rows[0]?.n === 0) return;
        if (Date.now() > until) throw new Error(`backends of killed child ${run} still present after 15 s`);
        await new Promise((res) => setTimeout(res, 20));
      }
    },
    async close() {
      await connected.catch(() => undefined);
      await admin.end().catch(() => undefined);
    },
  };
}

/** Runs `fn` on a SQLite target in a new temp directory, removed afterwards. */
export async function onTempSqlite<T>(fn: (target: CrashTarget) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), "writ-crash-"));
  const target = sqliteTarget(join(dir, "writ.db"));
  try {
    return await fn(target);
  } finally {
    await target.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs `fn` on a PostgreSQL target over a fresh database, dropped afterwards. */
export async function onFreshPostgres<T>(fn: (target: CrashTarget) => Promise<T>): Promise<T> {
  const db = await freshDatabase();
  const target = postgresTarget(db.url);
  try {
    return await fn(target);
  } finally {
    await target.close();
    await db.drop();
  }
}
