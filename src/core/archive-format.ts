/**
 * Journal archives (docs/archives.md): the port an archive target implements, and the format of a
 * segment, the sealed entries of one scope from one seq through a signed checkpoint, with the
 * checkpoints that sign it and the public keys that verify them. The same format, as `kind:
 * "export"`, heads a `writ journal export` file, so an offline verify sees the checkpoints too.
 */
import { parseJsonStrict } from "./canonical.js";
import { base64url, fromBase64url, fromUtf8, utf8 } from "./encoding.js";
import { WritError } from "./errors.js";
import type { Keyring } from "./keyring.js";
import type { PublicJwk } from "./ports.js";
import type { JournalCheckpoint, JournalEntry, Scope } from "./types.js";

/**
 * Where archived segments live: a local directory by default (`directoryArchive` in
 * src/node/archive-dir.ts); an object store plugs in here. Names are `/`-separated paths.
 */
export interface ArchiveTarget {
  /**
   * Stores `data` under `name`, atomically: once it resolves, `get(name)` returns exactly `data`
   * (after a crash too); a crash before leaves the previous object or none, never a part.
   */
  put(name: string, data: Uint8Array): Promise<void>;
  /** The object's bytes, or null when there is none. */
  get(name: string): Promise<Uint8Array | null>;
  /** The names under `prefix` (ending in `/`), in any order. */
  list(prefix: string): Promise<string[]>;
}

export const SEGMENT_FORMAT = "writ-journal/1";

/** The first line of a segment (or of an export file); the entries follow, one JSON object a line. */
export interface SegmentHeader {
  format: typeof SEGMENT_FORMAT;
  kind: "segment" | "export";
  tenantId: string;
  spaceId: string;
  /** The first entry's seq. */
  fromSeq: number;
  /** The last entry's seq (for an export, fromSeq - 1 when it holds none). */
  throughSeq: number;
  /** The hash of the entry before `fromSeq` (the previous segment's last), null at seq 1. */
  prevHash: string | null;
  /** The last entry's hash (`prevHash` when there is none). */
  headHash: string | null;
  /** How many entries follow. */
  entries: number;
  /** The signed checkpoints within [fromSeq - 1, throughSeq] (a segment: at least one at throughSeq). */
  checkpoints: JournalCheckpoint[];
  /** The public keys (JWK with `kid`) that verify the checkpoints. */
  keys: PublicJwk[];
}

export interface DecodedSegment {
  header: SegmentHeader;
  entries: JournalEntry[];
}

/** A scope's folder in an archive target: `<tenant>/<space>/`, each id made safe for a path. */
export function scopePrefix(scope: Scope): string {
  return `${pathPart(scope.tenantId)}/${pathPart(scope.spaceId)}/`;
}

/** An id as it is, when it is a plain name; otherwise `~` and its base64url (never `.` or `..`). */
function pathPart(id: string): string {
  return /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/.test(id) ? id : `~${base64url(utf8(id))}`;
}

const SEQ_DIGITS = 16;

/** `<prefix><fromSeq>-<throughSeq>.jsonl`, seqs zero-padded so names sort in chain order. */
export function segmentName(scope: Scope, fromSeq: number, throughSeq: number): string {
  return `${scopePrefix(scope)}${String(fromSeq).padStart(SEQ_DIGITS, "0")}-${String(throughSeq).padStart(SEQ_DIGITS, "0")}.jsonl`;
}

/** The seq range a segment's name states, or null when the name is not a segment's. */
export function parseSegmentName(name: string): { fromSeq: number; throughSeq: number } | null {
  const m = /(?:^|\/)(\d{1,20})-(\d{1,20})\.jsonl$/.exec(name);
  if (m === null) return null;
  const fromSeq = Number(m[1]);
  const throughSeq = Number(m[2]);
  return Number.isSafeInteger(fromSeq) && Number.isSafeInteger(throughSeq) && fromSeq >= 1 && throughSeq >= fromSeq ? { fromSeq, throughSeq } : null;
}

/** The header line and one line per entry, as UTF-8 text ending in a newline. */
export function encodeSegment(header: SegmentHeader, entries: readonly JournalEntry[]): string {
  return [JSON.stringify(header), ...entries.map((e) => JSON.stringify(e))].join("\n") + "\n";
}

/**
 * `encodeSegment`'s text as UTF-8 bytes, encoded `slice` entries at a time with `breathe` awaited
 * before each slice (the archiver's yield to its host's event loop).
 */
export async function encodeSegmentBytes(header: SegmentHeader, entries: readonly JournalEntry[], slice: number, breathe?: () => Promise<void>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [utf8(JSON.stringify(header) + "\n")];
  for (let i = 0; i < entries.length; i += slice) {
    await breathe?.();
    let text = "";
    for (const e of entries.slice(i, i + slice)) text += JSON.stringify(e) + "\n";
    parts.push(utf8(text));
  }
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** True when `v` is a segment or export header line. */
export function isSegmentHeader(v: unknown): v is SegmentHeader {
  return typeof v === "object" && v !== null && !Array.isArray(v) && (v as { format?: unknown }).format === SEGMENT_FORMAT;
}

/** Why a header is not well formed, or null. */
function headerProblem(h: SegmentHeader): string | null {
  const wrong: string[] = [];
  if (h.kind !== "segment" && h.kind !== "export") wrong.push("kind");
  for (const k of ["tenantId", "spaceId"] as const) if (typeof h[k] !== "string") wrong.push(k);
  for (const k of ["fromSeq", "throughSeq", "entries"] as const) if (!Number.isSafeInteger(h[k]) || h[k] < 0) wrong.push(k);
  for (const k of ["prevHash", "headHash"] as const) if (h[k] !== null && typeof h[k] !== "string") wrong.push(k);
  if (!Array.isArray(h.checkpoints)) wrong.push("checkpoints");
  if (!Array.isArray(h.keys)) wrong.push("keys");
  return wrong.length > 0 ? `header field(s) missing or wrong: ${wrong.join(", ")}` : null;
}

/**
 * Reads a segment's bytes back: its header and entries. Throws `VALIDATION_FAILED` naming what is
 * wrong (not UTF-8 JSON lines, no header, a line that is not an object); the chain itself is the
 * verifier's business.
 */
export function decodeSegment(data: Uint8Array | string, name: string): DecodedSegment {
  let text: string;
  try {
    text = typeof data === "string" ? data : fromUtf8(data);
  } catch {
    throw new WritError("VALIDATION_FAILED", `${name} is not UTF-8 text`);
  }
  const lines = text.split("\n").filter((l) => l.trim().length > 0);
  const parse = (line: string, i: number): unknown => {
    try {
      return parseJsonStrict(line);
    } catch {
      throw new WritError("VALIDATION_FAILED", `${name} line ${i + 1} is not valid JSON`);
    }
  };
  const header = lines.length > 0 ? parse(lines[0]!, 0) : undefined;
  if (!isSegmentHeader(header)) throw new WritError("VALIDATION_FAILED", `${name} does not start with a ${SEGMENT_FORMAT} header`);
  const why = headerProblem(header);
  if (why !== null) throw new WritError("VALIDATION_FAILED", `${name}: ${why}`);
  const entries: JournalEntry[] = [];
  for (let i = 1; i < lines.length; i++) {
    const v = parse(lines[i]!, i);
    if (typeof v !== "object" || v === null || Array.isArray(v)) throw new WritError("VALIDATION_FAILED", `${name} line ${i + 1} is not a journal entry (a JSON object)`);
    entries.push(v as JournalEntry);
  }
  return { header, entries };
}

/** An archive target in memory (tests, the simulator): puts are atomic, objects copied in and out. */
export function memoryArchive(): ArchiveTarget & { readonly objects: Map<string, Uint8Array> } {
  const objects = new Map<string, Uint8Array>();
  return {
    objects,
    put: async (name, data) => {
      objects.set(name, new Uint8Array(data));
    },
    get: async (name) => {
      const d = objects.get(name);
      return d === undefined ? null : new Uint8Array(d);
    },
    list: async (prefix) => [...objects.keys()].filter((n) => n.startsWith(prefix)),
  };
}

/** A segment as read from a target, or why it could not be read. */
export type ArchivedSegment = { name: string; fromSeq: number; throughSeq: number } & ({ ok: true; segment: DecodedSegment; bytes: number } | { ok: false; error: string });

/** Every segment of `scope` in `target`, ascending by the seq range its name states. */
export async function readArchive(target: ArchiveTarget, scope: Scope): Promise<ArchivedSegment[]> {
  const names = (await target.list(scopePrefix(scope))).flatMap((name) => {
    const range = parseSegmentName(name);
    return range === null ? [] : [{ name, ...range }];
  });
  names.sort((a, b) => a.fromSeq - b.fromSeq || a.throughSeq - b.throughSeq);
  const out: ArchivedSegment[] = [];
  for (const n of names) {
    const data = await target.get(n.name);
    if (data === null) {
      out.push({ ...n, ok: false, error: `${n.name} is listed but cannot be read` });
      continue;
    }
    try {
      out.push({ ...n, ok: true, segment: decodeSegment(data, n.name), bytes: data.length });
    } catch (e) {
      out.push({ ...n, ok: false, error: e instanceof Error ? e.message : String(e) });
    }
  }
  return out;
}

/** The kid in a checkpoint's JWS header (null when unreadable). */
function checkpointKid(cp: JournalCheckpoint): string | null {
  const h = typeof cp.signature === "string" ? fromBase64url(cp.signature.split(".")[0] ?? "") : null;
  if (!h) return null;
  try {
    const kid = (JSON.parse(fromUtf8(h)) as { kid?: unknown }).kid;
    return typeof kid === "string" ? kid : null;
  } catch {
    return null;
  }
}

/** The public keys (JWK with `kid`) in `keyring` that signed `checkpoints`, to store beside them. */
export function checkpointKeys(checkpoints: readonly JournalCheckpoint[], keyring: Keyring): PublicJwk[] {
  const keys: PublicJwk[] = [];
  for (const kid of new Set(checkpoints.map(checkpointKid))) {
    const k = kid === null ? undefined : keyring.get(kid);
    if (k !== undefined) keys.push({ ...k.publicJwk, kid: k.kid });
  }
  return keys;
}
