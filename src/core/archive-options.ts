/** Journal archiving options of a host (docs/archives.md): a leaf module, so the config check can use it without loading the host. */
import type { ArchiveTarget } from "./archive-format.js";
import { WritError } from "./errors.js";
import { MAX_TIMER_MS } from "./validate.js";
import { witnessListProblem, type CheckpointWitness } from "./witness.js";

/** Journal archiving (docs/archives.md). */
export interface ArchiveHostOptions {
  /**
   * Where segments go. Without one the host archives nothing (`writ serve`, `writ worker` and the
   * CLI give a local directory, `<state dir>/archives`, unless the config turns archiving off).
   */
  target?: ArchiveTarget;
  /** How often a started worker archives and prunes, in ms. @defaultValue 60000 */
  everyMs?: number;
  /** Entries one prune transaction deletes. @defaultValue 500 */
  pruneBatch?: number;
  /** The pause between prune transactions in a started worker, in ms (the pace). @defaultValue 20 */
  prunePauseMs?: number;
  /** Most entries a segment holds unless a checkpoint lies further. @defaultValue 10000 */
  segmentEntries?: number;
  /**
   * Archived entries younger than this stay in the database too (console timelines and charts,
   * notifications read them there); 0 prunes everything archived. @defaultValue 2592000000 (30 days)
   */
  keepLiveMs?: number;
  /**
   * Checkpoint witnesses (docs/archives.md, Checkpoint witnesses): every pass of the archiver
   * publishes the checkpoints it signed to each of them; one that fails is counted, logged and
   * retried at the next pass, and archiving goes on. Needs a `target`. @defaultValue []
   */
  witnesses?: readonly CheckpointWitness[];
}

export interface ResolvedArchiveOptions {
  target: ArchiveTarget | null;
  everyMs: number;
  pruneBatch: number;
  prunePauseMs: number;
  segmentEntries: number;
  keepLiveMs: number;
  witnesses: readonly CheckpointWitness[];
}

export function resolveArchiveOptions(o: ArchiveHostOptions | undefined): ResolvedArchiveOptions {
  const int = (name: string, v: unknown, dflt: number, min: number, max: number): number => {
    if (v === undefined) return dflt;
    if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) throw new WritError("INVALID_OPTION", `createHost: archive.${name} must be an integer from ${min} to ${max}`);
    return v;
  };
  const t = o?.target;
  if (t !== undefined && (typeof t !== "object" || t === null || typeof t.put !== "function" || typeof t.get !== "function" || typeof t.list !== "function")) {
    throw new WritError("INVALID_OPTION", "createHost: archive.target must be an ArchiveTarget (put, get, list)");
  }
  const witnesses = o?.witnesses ?? [];
  const why = witnessListProblem(witnesses, "createHost: archive.witnesses");
  if (why !== null) throw new WritError("INVALID_OPTION", why);
  if (witnesses.length > 0 && t === undefined) throw new WritError("INVALID_OPTION", "createHost: archive.witnesses need archiving on (an archive.target): without it nothing signs checkpoints to publish");
  return {
    target: t ?? null,
    witnesses: [...witnesses],
    everyMs: int("everyMs", o?.everyMs, 60_000, 1, MAX_TIMER_MS),
    pruneBatch: int("pruneBatch", o?.pruneBatch, 500, 1, 100_000),
    prunePauseMs: int("prunePauseMs", o?.prunePauseMs, 20, 0, 60_000),
    segmentEntries: int("segmentEntries", o?.segmentEntries, 10_000, 1, 10_000_000),
    keepLiveMs: int("keepLiveMs", o?.keepLiveMs, 30 * 24 * 3_600_000, 0, Number.MAX_SAFE_INTEGER),
  };
}
