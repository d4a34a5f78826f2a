/**
 * A node-postgres `Client` for a multi-host URL (postgres-url.ts): `connect()` tries the hosts in
 * order, each with a probe connection that must accept and have the asked-for session attributes
 * (`pg_is_in_recovery()`, `transaction_read_only`); a probe that lands on the wrong server is
 * closed. The client then connects to the chosen host and checks the attributes once more (a
 * failover may have happened in between). The pool builds its connections with this class, and
 * the wake-up listener its own; a single-host URL never comes here.
 *
 * A `pg.Client` cannot connect twice, hence the probe: a new pooled connection costs two
 * connection setups, and pooled connections live long. All attempts share the connection
 * timeout; each host gets at least an equal share of what is left, so a host that swallows
 * packets cannot use up the time of the hosts after it. See docs/deploying-postgres.md,
 * "Failover and multi-host URLs".
 */
import type { PgClientConfig, PgStandaloneConnection } from "./postgres-driver.js";
import { satisfies, type PgTarget, type TargetSessionAttrs } from "./postgres-url.js";

/** What the class needs of node-postgres' `Client`: connect, query, end, and its `host`/`port` (read at connect). */
interface PgClientInstance extends PgStandaloneConnection {
  removeListener?(event: "error", listener: (err: Error) => void): unknown;
  /** pg-pool calls it with a callback; the listener without. */
  connect(callback?: (err?: Error) => void): Promise<unknown>;
  host?: string;
  port?: number;
  connectionParameters?: { host?: string; port?: number };
  connection?: { stream?: { destroyed?: boolean } };
}
type PgClientClass = new (config: PgClientConfig) => PgClientInstance;

const STATE_SQL = "SELECT pg_is_in_recovery() AS in_recovery, current_setting('transaction_read_only') AS read_only";

interface ServerState {
  inRecovery: boolean;
  readOnly: boolean;
}

async function serverState(c: PgStandaloneConnection): Promise<ServerState> {
  const r = await c.query<{ in_recovery: boolean; read_only: string }>({ text: STATE_SQL });
  const row = r.rows[0];
  return { inRecovery: row?.in_recovery === true, readOnly: row?.read_only === "on" };
}

function describe(s: ServerState): string {
  return s.inRecovery ? "a standby (in recovery)" : s.readOnly ? "read-only" : "a read-write primary";
}

/** The passes over the host list: `prefer-standby` tries for a standby first, then takes any server. */
function passes(attrs: TargetSessionAttrs): TargetSessionAttrs[] {
  return attrs === "prefer-standby" ? ["standby", "any"] : [attrs];
}

/**
 * The `Client` class for `target` (whose `multi` is true), on the driver's `Client`. `timeoutMs`
 * bounds one `connect()` over all hosts (the store's `connectionTimeoutMs`).
 */
export function multiHostClient(Base: PgClientClass, target: PgTarget, timeoutMs: number): PgClientClass {
  return class MultiHostClient extends Base {
    readonly #config: PgClientConfig;

    constructor(config: PgClientConfig) {
      super({ ...config, connectionString: target.url });
      this.#config = config;
    }

    /** Promise form (the listener) and callback form (pg-pool's). */
    override connect(callback?: (err?: Error) => void): Promise<unknown> {
      const p = this.#connect();
      if (callback === undefined) return p;
      return p.then(
        () => callback(),
        (e: unknown) => callback(e instanceof Error ? e : new Error(String(e))),
      );
    }

    async #connect(): Promise<void> {
      // The attribute check runs a query after the connection is up, while pg-pool (or the
      // listener) has not yet attached its error listener: a server dying in that window emits
      // 'error' on this client, which must not be an uncaught exception. The failed check rejects
      // connect(), and the caller discards the client.
      const absorb = (): undefined => undefined;
      this.on("error", absorb);
      try {
        await this.#choose();
      } finally {
        this.removeListener?.("error", absorb);
      }
    }

    async #choose(): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      const failures: string[] = [];
      const order = passes(target.attrs);
      let attemptsLeft = order.length * target.hosts.length;
      for (const want of order) {
        for (let i = 0; i < target.hosts.length; i++, attemptsLeft--) {
          const h = target.hosts[i]!;
          const left = deadline - Date.now();
          if (left <= 0) break;
          const where = `${h.host}:${h.port}`;
          const probe = new Base({ ...this.#config, connectionString: target.hostUrls[i]!, connectionTimeoutMillis: Math.max(1, Math.floor(left / attemptsLeft)) });
          probe.on("error", () => undefined);
          let state: ServerState | undefined;
          try {
            await probe.connect();
            if (want !== "any") state = await serverState(probe);
          } catch (e) {
            failures.push(`${where}: ${e instanceof Error ? e.message : String(e)}`);
            continue;
          } finally {
            await probe.end().catch(() => undefined);
          }
          if (state !== undefined && !satisfies(want, state)) {
            failures.push(`${where}: ${describe(state)}`);
            continue;
          }
          await this.#connectTo(h.host, h.port, where);
          return;
        }
      }
      throw new Error(`no host accepted a ${target.attrs} session within ${timeoutMs} ms (${failures.join("; ") || "no time left"})`);
    }

    /** Connects this client to the chosen host and checks its attributes again; closes it if they no longer hold. */
    async #connectTo(host: string, port: number, where: string): Promise<void> {
      // The pool's timeout may have fired meanwhile (it destroys the unconnected socket).
      if (this.connection?.stream?.destroyed === true) throw new Error(`connection timeout while choosing a host (chose ${where})`);
      this.host = host;
      this.port = port;
      if (this.connectionParameters !== undefined) {
        this.connectionParameters.host = host;
        this.connectionParameters.port = port;
      }
      await super.connect();
      if (target.attrs === "any" || target.attrs === "prefer-standby") return;
      let state: ServerState;
      try {
        state = await serverState(this);
      } catch (e) {
        await this.end().catch(() => undefined);
        throw e;
      }
      if (!satisfies(target.attrs, state)) {
        await this.end().catch(() => undefined);
        throw new Error(`${where} became ${describe(state)} while connecting; not a ${target.attrs} session`);
      }
    }
  };
}
