/**
 * Checkpoint witnesses (docs/archives.md, Checkpoint witnesses): a signed checkpoint of a scope's
 * head is also published to witnesses outside the operator's database, so rewriting history would
 * need the witnesses too. Verification compares the heads each witness was shown with the chain.
 */
import { checkpointSignatureProblem, type JournalProblem } from "./journal.js";
import type { Keyring } from "./keyring.js";
import type { CryptoPort } from "./ports.js";
import type { JournalCheckpoint, Scope } from "./types.js";

/** Somewhere a checkpoint is published to and read back from (a file, an HTTP endpoint). */
export interface CheckpointWitness {
  /** What the witness is, for messages (a path, a URL without credentials). */
  readonly name: string;
  /** Records the checkpoint; a witness keeps every checkpoint it is shown. */
  publish(cp: JournalCheckpoint): Promise<void>;
  /** The checkpoints of `scope` it holds. */
  checkpoints(scope: Scope): Promise<JournalCheckpoint[]>;
}

/** What one witness answered: its checkpoints of the scope, or why it could not be read. */
export type WitnessAnswer = { witness: string } & ({ ok: true; checkpoints: JournalCheckpoint[] } | { ok: false; error: string });

/** Publishes `cp` to every witness; one failure does not stop the others. Resolves with the failures. */
export async function publishCheckpoint(witnesses: readonly CheckpointWitness[], cp: JournalCheckpoint): Promise<Array<{ witness: string; error: string }>> {
  const failed: Array<{ witness: string; error: string }> = [];
  for (const w of witnesses) {
    try {
      await w.publish(cp);
    } catch (e) {
      failed.push({ witness: w.name, error: e instanceof Error ? e.message : String(e) });
    }
  }
  return failed;
}

/** Asks every witness for the scope's checkpoints. */
export async function askWitnesses(witnesses: readonly CheckpointWitness[], scope: Scope): Promise<WitnessAnswer[]> {
  const out: WitnessAnswer[] = [];
  for (const w of witnesses) {
    try {
      out.push({ witness: w.name, ok: true, checkpoints: await w.checkpoints(scope) });
    } catch (e) {
      out.push({ witness: w.name, ok: false, error: e instanceof Error ? e.message : String(e) });
    }
  }
  return out;
}

/**
 * Findings of the witnesses against the verified chain (`hashes`: seq -> hash of every entry the
 * verifier read, archives included; `headSeq`: the chain's last seq): a witnessed head the chain
 * holds with another hash (`witness_mismatch`: history rewritten), one past the chain's end
 * (`witness_ahead`: entries removed), one whose signature fails (`witness_invalid`), a witness that
 * could not be read (`witness_unreachable`). A witnessed head below what the verifier read (pruned,
 * verified without archives) cannot be judged and is skipped.
 */
export function witnessProblems(crypto: CryptoPort, keyring: Keyring, scope: Scope, hashes: ReadonlyMap<number, string>, headSeq: number, answers: readonly WitnessAnswer[]): JournalProblem[] {
  const problems: JournalProblem[] = [];
  for (const a of answers) {
    if (!a.ok) {
      problems.push({ kind: "witness_unreachable", witness: a.witness, message: `witness ${a.witness} could not be read: ${a.error}` });
      continue;
    }
    for (const cp of a.checkpoints) {
      if (cp?.tenantId !== scope.tenantId || cp.spaceId !== scope.spaceId) continue;
      const why = checkpointSignatureProblem(crypto, keyring, cp);
      if (why !== null) {
        problems.push({ seq: cp.seq, kind: "witness_invalid", witness: a.witness, message: `witness ${a.witness} holds a checkpoint at seq ${cp.seq} that does not verify: ${why}` });
        continue;
      }
      if (cp.seq > headSeq) {
        problems.push({ seq: cp.seq, kind: "witness_ahead", witness: a.witness, message: `witness ${a.witness} was shown a signed head at seq ${cp.seq}, but the journal ends at ${headSeq}: entries were removed` });
        continue;
      }
      const h = hashes.get(cp.seq);
      if (h !== undefined && h !== cp.headHash) {
        problems.push({ seq: cp.seq, kind: "witness_mismatch", witness: a.witness, message: `witness ${a.witness} was shown another entry ${cp.seq} (${cp.headHash}) than the journal holds: history was rewritten` });
      }
    }
  }
  return problems;
}

/**
 * Why `spec` cannot name a witness in a config or on the command line, or null: an http(s) URL
 * (without credentials in it: an HTTP witness that needs them takes headers, `httpWitness(url, {
 * headers })`), or a file path (`file:` optional).
 */
export function witnessSpecProblem(spec: unknown): string | null {
  if (typeof spec !== "string" || spec.trim() === "") return "must be a file path or an http(s) URL";
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(spec)) return spec === "file:" ? "must be a file path or an http(s) URL" : null;
  let url: URL;
  try {
    url = new URL(spec);
  } catch {
    return "is not a valid URL";
  }
  if (url.protocol === "file:") return null;
  if (url.protocol !== "http:" && url.protocol !== "https:") return `must be a file path or an http(s) URL, not ${url.protocol}//`;
  if (url.username !== "" || url.password !== "") return "must not hold credentials (user:password@); give an HTTP witness its credentials in headers: httpWitness(url, { headers })";
  return null;
}

/** What one publishing pass over a scope did: checkpoints the witnesses took, and the witnesses that failed. */
export interface WitnessPass {
  published: number;
  failed: Array<{ witness: string; error: string }>;
}

/**
 * Keeps witnesses up to date with each scope's signed checkpoints (docs/archives.md, Checkpoint
 * witnesses), for the archiver: each pass shows every witness the checkpoints signed since the last
 * one it took, oldest first; a witness that fails is shown them again at the next pass. What each
 * witness took is remembered in this process; until it answers once, it is asked what it holds. A
 * witness that holds nothing of the scope is shown the checkpoints from the newest one at this
 * process's first pass over the scope on (not the whole history: a signed head vouches for every
 * entry before it).
 */
export function witnessPublisher(witnesses: readonly CheckpointWitness[]): { publish(scope: Scope, checkpoints: readonly JournalCheckpoint[]): Promise<WitnessPass> } {
  // `<tenant>\0<space>` -> the newest checkpoint's seq at the first pass over the scope.
  const firstSeen = new Map<string, number>();
  // `<witness index>\0<tenant>\0<space>` -> the highest seq the witness is known to hold.
  const took = new Map<string, number>();
  return {
    async publish(scope, checkpoints) {
      const pass: WitnessPass = { published: 0, failed: [] };
      const mine = checkpoints.filter((cp) => cp.tenantId === scope.tenantId && cp.spaceId === scope.spaceId).sort((a, b) => a.seq - b.seq);
      const newest = mine[mine.length - 1];
      if (newest === undefined) return pass;
      const scopeKey = `${scope.tenantId}\u0000${scope.spaceId}`;
      if (!firstSeen.has(scopeKey)) firstSeen.set(scopeKey, newest.seq);
      for (const [i, w] of witnesses.entries()) {
        const key = `${i}\u0000${scopeKey}`;
        try {
          let through = took.get(key);
          if (through === undefined) {
            const held = (await w.checkpoints(scope)).filter((cp) => cp?.tenantId === scope.tenantId && cp.spaceId === scope.spaceId && Number.isSafeInteger(cp.seq)).map((cp) => cp.seq);
            // A loop, not a spread: a witness may hold more checkpoints than a call takes arguments.
            through = held.length > 0 ? held.reduce((m, q) => (q > m ? q : m), held[0]!) : firstSeen.get(scopeKey)! - 1;
            took.set(key, through);
          }
          for (const cp of mine) {
            if (cp.seq <= through) continue;
            await w.publish(cp);
            through = cp.seq;
            took.set(key, through);
            pass.published += 1;
          }
        } catch (e) {
          pass.failed.push({ witness: w.name, error: e instanceof Error ? e.message : String(e) });
        }
      }
      return pass;
    },
  };
}

/** True when `w` is a CheckpointWitness (a name, `publish` and `checkpoints`). */
export function isCheckpointWitness(w: unknown): w is CheckpointWitness {
  const o = w as Partial<CheckpointWitness> | null;
  return typeof o === "object" && o !== null && typeof o.name === "string" && typeof o.publish === "function" && typeof o.checkpoints === "function";
}

/** What a value that is not a witness should have been, for an error naming its option. */
export const NOT_A_WITNESS = "must be a CheckpointWitness (name, publish, checkpoints): fileWitness(path) or httpWitness(url)";

/** Why `witnesses` is not a list of CheckpointWitness objects (naming the first wrong one as `<option>[i]`), or null. */
export function witnessListProblem(witnesses: unknown, option: string): string | null {
  if (!Array.isArray(witnesses)) return `${option} must be a list of witnesses`;
  const i = witnesses.findIndex((w) => !isCheckpointWitness(w));
  return i === -1 ? null : `${option}[${i}] ${NOT_A_WITNESS}`;
}
