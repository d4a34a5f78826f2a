/**
 * Checkpoint witnesses on Node (docs/archives.md, Checkpoint witnesses): a file (one checkpoint a
 * line, appended and flushed) and an HTTP endpoint (POST a checkpoint; GET `?tenantId=&spaceId=`
 * answers the JSON list it holds).
 */
import { closeSync, fstatSync, fsyncSync, ftruncateSync, mkdirSync, openSync, readFileSync, readSync, writeSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { WritError } from "../core/errors.js";
import type { JournalCheckpoint, Scope } from "../core/types.js";
import { witnessSpecProblem, type CheckpointWitness } from "../core/witness.js";

/**
 * A witness file: every checkpoint shown is appended as a JSON line and flushed to disk. A process
 * killed inside an append leaves a last line without its newline: reads skip it, and the next
 * append cuts it off first (that checkpoint was never taken; it is shown again).
 */
export function fileWitness(path: string): CheckpointWitness {
  const p = resolve(path);
  return {
    name: p,
    async publish(cp) {
      mkdirSync(dirname(p), { recursive: true, mode: 0o700 });
      const fd = openSync(p, "a+", 0o600);
      try {
        dropTornTail(fd);
        writeSync(fd, `${JSON.stringify(cp)}\n`);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    },
    async checkpoints(scope) {
      let text: string;
      try {
        text = readFileSync(p, "utf8");
      } catch (e) {
        if ((e as { code?: string }).code === "ENOENT") return [];
        throw e;
      }
      const out: JournalCheckpoint[] = [];
      const lines = text.split("\n");
      // The last piece is complete only when the file ends in a newline (it is then ""); without
      // one it is an append a crash cut short, never taken by the witness.
      lines.pop();
      lines.forEach((line, i) => {
        if (line.trim() === "") return;
        let v: unknown;
        try {
          v = JSON.parse(line);
        } catch {
          throw new WritError("VALIDATION_FAILED", `${p} line ${i + 1} is not JSON`);
        }
        const cp = v as JournalCheckpoint;
        if (cp?.tenantId === scope.tenantId && cp.spaceId === scope.spaceId) out.push(cp);
      });
      return out;
    },
  };
}

/** Cuts a last line that has no newline (an append a crash cut short) off the file open at `fd`. */
function dropTornTail(fd: number): void {
  const size = fstatSync(fd).size;
  if (size === 0) return;
  // A torn line is shorter than one checkpoint line; a whole tail window without a newline is a
  // file that is not a witness file, left for the reader to name.
  const span = Math.min(size, 65_536);
  const tail = Buffer.alloc(span);
  const got = readSync(fd, tail, 0, span, size - span);
  if (got !== span || tail[span - 1] === 0x0a) return;
  const nl = tail.lastIndexOf(0x0a);
  if (nl === -1 && span < size) return;
  ftruncateSync(fd, size - span + nl + 1);
}

/** The URL as shown in messages: no credentials, no query. */
function shown(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname}`;
}

/**
 * A witness behind an HTTP endpoint (`fetch` defaults to the global one; `headers` go with every
 * request, e.g. an `authorization` the witness asks for). Its name, used in messages and logs, is
 * the URL without credentials or query; errors never carry the full URL.
 */
export function httpWitness(endpoint: string, options: { fetch?: typeof fetch; timeoutMs?: number; headers?: Record<string, string> } = {}): CheckpointWitness {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new WritError("INVALID_ARGUMENT", "a witness URL must be an absolute http(s) URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new WritError("INVALID_ARGUMENT", "a witness URL must be an absolute http(s) URL");
  if (url.username !== "" || url.password !== "") throw new WritError("INVALID_ARGUMENT", `witness ${shown(url)}: a witness URL must not hold credentials (user:password@); pass them in headers: httpWitness(url, { headers })`);
  const f = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const headers = options.headers ?? {};
  const name = shown(url);
  // A failed request, said without the URL's query (it may hold a token) or the headers.
  const call = async (target: URL, init: RequestInit): Promise<Response> => {
    try {
      return await f(target, { ...init, headers: { ...headers, ...(init.headers as Record<string, string> | undefined) }, signal: AbortSignal.timeout(timeoutMs) });
    } catch (e) {
      const cause = (e as { cause?: { code?: unknown; message?: unknown } }).cause;
      const why = typeof cause?.code === "string" ? cause.code : (e as { name?: unknown }).name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : "the request failed";
      throw new WritError("STORE_ERROR", `witness ${name} could not be reached (${why})`);
    }
  };
  return {
    name,
    async publish(cp) {
      const r = await call(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(cp) });
      if (!r.ok) throw new WritError("STORE_ERROR", `witness ${name} answered ${r.status} to a checkpoint`);
    },
    async checkpoints(scope: Scope) {
      const q = new URL(url);
      q.searchParams.set("tenantId", scope.tenantId);
      q.searchParams.set("spaceId", scope.spaceId);
      const r = await call(q, {});
      if (!r.ok) throw new WritError("STORE_ERROR", `witness ${name} answered ${r.status}`);
      let body: unknown;
      try {
        body = await r.json();
      } catch {
        throw new WritError("VALIDATION_FAILED", `witness ${name} did not answer JSON`);
      }
      const list = Array.isArray(body) ? body : (body as { checkpoints?: unknown })?.checkpoints;
      if (!Array.isArray(list)) throw new WritError("VALIDATION_FAILED", `witness ${name} did not answer a list of checkpoints`);
      return list as JournalCheckpoint[];
    },
  };
}

/**
 * A witness named by text (the command line, the config's `archive.witnesses`): an http(s) URL, or
 * a file path (`file:` optional), relative to `baseDir`. Throws `INVALID_ARGUMENT` naming what is
 * wrong with `spec`.
 */
export function witnessOf(spec: string, baseDir = "."): CheckpointWitness {
  const why = witnessSpecProblem(spec);
  // A URL is not repeated: it may hold credentials.
  if (why !== null) throw new WritError("INVALID_ARGUMENT", `witness ${/^[a-z][a-z0-9+.-]*:\/\//i.test(spec) ? "URL" : JSON.stringify(spec)} ${why}`);
  if (/^https?:\/\//i.test(spec)) return httpWitness(spec);
  return fileWitness(resolve(baseDir, spec.startsWith("file://") ? spec.slice(7) : spec.startsWith("file:") ? spec.slice(5) : spec));
}
