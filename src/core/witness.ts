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
