/**
 * Checkpoint witnesses on Node (docs/archives.md, Checkpoint witnesses): a file (one checkpoint a
 * line, appended and flushed) and an HTTP endpoint (POST a checkpoint; GET `?tenantId=&spaceId=`
 * answers the JSON list it holds).
 */
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, writeSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { WritError } from "../core/errors.js";
import type { JournalCheckpoint, Scope } from "../core/types.js";
import type { CheckpointWitness } from "../core/witness.js";

/** A witness file: every checkpoint shown is appended as a JSON line and flushed to disk. */
export function fileWitness(path: string): CheckpointWitness {
  const p = resolve(path);
  return {
    name: p,
    async publish(cp) {
      mkdirSync(dirname(p), { recursive: true, mode: 0o700 });
      const fd = openSync(p, "a", 0o600);
      try {
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
      text.split("\n").forEach((line, i) => {
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

/** The URL as shown in messages: no credentials, no query. */
function shown(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname}`;
}

/** A witness behind an HTTP endpoint (`fetch` defaults to the global one). */
export function httpWitness(endpoint: string, options: { fetch?: typeof fetch; timeoutMs?: number } = {}): CheckpointWitness {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new WritError("INVALID_ARGUMENT", "a witness URL must be an absolute http(s) URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new WritError("INVALID_ARGUMENT", "a witness URL must be an absolute http(s) URL");
  const f = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const name = shown(url);
  return {
    name,
    async publish(cp) {
      const r = await f(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(cp), signal: AbortSignal.timeout(timeoutMs) });
      if (!r.ok) throw new WritError("STORE_ERROR", `witness ${name} answered ${r.status} to a checkpoint`);
    },
    async checkpoints(scope: Scope) {
      const q = new URL(url);
      q.searchParams.set("tenantId", scope.tenantId);
      q.searchParams.set("spaceId", scope.spaceId);
      const r = await f(q, { signal: AbortSignal.timeout(timeoutMs) });
      if (!r.ok) throw new WritError("STORE_ERROR", `witness ${name} answered ${r.status}`);
      const body = (await r.json());
      const list = Array.isArray(body) ? body : (body as { checkpoints?: unknown })?.checkpoints;
      if (!Array.isArray(list)) throw new WritError("VALIDATION_FAILED", `witness ${name} did not answer a list of checkpoints`);
      return list as JournalCheckpoint[];
    },
  };
}

/** A witness named on the command line: an http(s) URL, or a file path (`file:` optional). */
export function witnessOf(spec: string): CheckpointWitness {
  if (/^https?:\/\//i.test(spec)) return httpWitness(spec);
  return fileWitness(spec.startsWith("file:") ? spec.slice(5) : spec);
}
