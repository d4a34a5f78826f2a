/**
 * Connection URLs with several hosts, in libpq's syntax, which node-postgres does not read:
 * `postgres://user@h1:5432,h2:5433/db?target_session_attrs=read-write`. The store tries the hosts
 * in order for each new connection and keeps the first that accepts and has the asked-for session
 * attributes (postgres-multihost.ts; docs/deploying-postgres.md, "Failover and multi-host URLs").
 * Parsing never echoes the URL: it may hold a password.
 */

/** The values of `target_session_attrs` (libpq's): which server a connection may settle on. */
export const TARGET_SESSION_ATTRS = ["any", "read-write", "read-only", "primary", "standby", "prefer-standby"] as const;
export type TargetSessionAttrs = (typeof TARGET_SESSION_ATTRS)[number];

/** One host of the URL. `host` is bare (an IPv6 address without its brackets). */
export interface PgHost {
  host: string;
  port: number;
}

/** A connection URL taken apart. */
export interface PgTarget {
  /** The URL to hand node-postgres: the URL as given when {@link PgTarget.multi} is false, else the first host's. */
  url: string;
  /** The hosts, in the order they are tried (empty when {@link PgTarget.multi} is false). */
  hosts: PgHost[];
  /** For each host, a single-host URL of it (same user, password, database and parameters). */
  hostUrls: string[];
  attrs: TargetSessionAttrs;
  /** Whether connections must choose among hosts or check session attributes (several hosts, or attributes other than `any`). */
  multi: boolean;
}

/** A bad URL; `option` is `url` or `target_session_attrs`, and the message never holds the URL. */
export class PgUrlError extends Error {
  readonly option: string;
  constructor(option: string, message: string) {
    super(message);
    this.option = option;
  }
}

const DEFAULT_PORT = 5432;
const URL_SHAPE = /^(postgres(?:ql)?):\/\/([^/?#]*)([^?#]*)(\?[^#]*)?$/i;

function parseHost(spec: string, n: number, count: number): { host: string; hostForUrl: string; port: number } {
  const where = count > 1 ? `host ${n} of ${count}` : "the host";
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]*)(?::(\d*))?$/.exec(spec);
  if (m === null) throw new PgUrlError("url", `has a malformed ${where}`);
  const hostForUrl = m[1]!;
  // Hosts are chosen and checked over TCP (postgres-multihost.ts); a socket directory is not one.
  if (hostForUrl.length === 0) {
    throw new PgUrlError("url", count > 1 ? `has an empty ${where} (a socket directory cannot be one of several hosts)` : "has an empty host: a Unix socket directory (?host=/dir) works without target_session_attrs only");
  }
  const portText = m[2];
  const port = portText === undefined || portText === "" ? DEFAULT_PORT : Number(portText);
  if (!Number.isInteger(port) || port < 1 || port > 65_535) throw new PgUrlError("url", `has a bad port in ${where} (1 to 65535)`);
  const host = hostForUrl.startsWith("[") ? hostForUrl.slice(1, -1) : hostForUrl;
  return { host, hostForUrl, port };
}

/**
 * Takes a `postgres://` URL apart: its hosts (`h1[:port],h2[:port],…`, IPv6 in brackets) and
 * `target_session_attrs`, which is removed from the URLs handed to node-postgres. Throws
 * {@link PgUrlError} naming the option, never quoting the URL.
 *
 * @example
 * parsePgUrl("postgres://writ@db1:5432,db2:5432/writ?target_session_attrs=read-write").hosts
 * // [{ host: "db1", port: 5432 }, { host: "db2", port: 5432 }]
 */
export function parsePgUrl(url: string): PgTarget {
  const m = URL_SHAPE.exec(url);
  if (m === null) throw new PgUrlError("url", "must be a postgres:// or postgresql:// URL");
  const [, scheme, authority, path, query] = m as unknown as [string, string, string, string, string | undefined];
  const at = authority.lastIndexOf("@");
  const userinfo = at >= 0 ? authority.slice(0, at + 1) : "";
  const hostList = at >= 0 ? authority.slice(at + 1) : authority;
  const specs = hostList.split(",");

  const params = new URLSearchParams(query?.slice(1) ?? "");
  const given = params.getAll("target_session_attrs");
  if (given.length > 1) throw new PgUrlError("target_session_attrs", "is given more than once");
  const raw = given[0] ?? "any";
  if (!(TARGET_SESSION_ATTRS as readonly string[]).includes(raw)) {
    throw new PgUrlError("target_session_attrs", `must be one of ${TARGET_SESSION_ATTRS.join(", ")}`);
  }
  const attrs = raw as TargetSessionAttrs;
  // One host and no attributes to check: node-postgres gets the URL exactly as given (as before
  // multi-host URLs existed), so nothing here may refuse it.
  if (specs.length === 1 && attrs === "any") return asGiven(url);

  const parsed = specs.map((s, i) => parseHost(s, i + 1, specs.length));
  params.delete("target_session_attrs");
  const rest = params.toString();
  const hostUrls = parsed.map((h) => `${scheme}://${userinfo}${h.hostForUrl}:${h.port}${path}${rest.length > 0 ? `?${rest}` : ""}`);
  for (const u of hostUrls) if (!readableUrl(u)) throw new PgUrlError("url", "is not a valid URL");
  return { url: hostUrls[0]!, hosts: parsed.map(({ host, port }) => ({ host, port })), hostUrls, attrs, multi: true };
}

/**
 * Whether node-postgres can read `url`: a WHATWG URL, or one with an empty host after the user
 * (`postgres://user@/db?host=/socket/dir`, a Unix socket directory, as libpq reads it), which the
 * driver's parser reads with a stand-in host. Never throws and never echoes the URL.
 */
export function readableUrl(url: string): boolean {
  for (const u of [url, url.replace("@/", "@stand-in/")]) {
    try {
      new URL(u);
      return true;
    } catch {
      // try the next reading
    }
  }
  return false;
}

/** `url` handed to node-postgres as it is, one host, no attributes checked (the SQL connector's targets). */
export function asGiven(url: string): PgTarget {
  return { url, hosts: [], hostUrls: [url], attrs: "any", multi: false };
}

/** Whether a server in this state may carry a session of `attrs` (`prefer-standby` takes any server: its preference is the order of trying). */
export function satisfies(attrs: TargetSessionAttrs, server: { inRecovery: boolean; readOnly: boolean }): boolean {
  switch (attrs) {
    case "any":
    case "prefer-standby":
      return true;
    case "read-write":
      return !server.readOnly;
    case "read-only":
      return server.readOnly;
    case "primary":
      return !server.inRecovery;
    case "standby":
      return server.inRecovery;
  }
}
