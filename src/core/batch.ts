/**
 * Group commit for store transitions (docs/stores.md, "Batches"): calls that arrive while a batch
 * is on its way to the store wait and go together as the next batch, in one statement and one
 * commit. A call that finds nothing in flight goes at once (a lone invocation is never held for a
 * batch to fill); `lingerMs` optionally holds the first call of a batch that long for company.
 * Each member succeeds or fails alone: the store answers one outcome per member.
 */
import { WritError } from "./errors.js";

/** One member's answer: its value, or the error it alone failed with. */
export type BatchOutcome<O = unknown> = { ok: true; value: O } | { ok: false; error: unknown };

export interface CoalescerOptions {
  /** Most members in one batch. */
  maxBatch: number;
  /** Hold the first call of a batch up to this long unless the batch fills. @defaultValue 0 */
  lingerMs?: number;
  /** A timer (needed only when `lingerMs` > 0); returns a cancel function. */
  setTimer?: (ms: number, cb: () => void) => () => void;
}

interface Waiting<I, O> {
  input: I;
  resolve: (v: O) => void;
  reject: (e: unknown) => void;
}

export interface Coalescer<I, O> {
  /** Queues `input` for the next batch; settles with its member's outcome. */
  (input: I): Promise<O>;
  /** Members waiting or in flight (for tests and metrics). */
  pending(): number;
}

/**
 * A queue in front of `apply`, which takes a batch and answers one outcome per member, in order.
 * At most one batch is in flight; `apply` rejecting fails every member of that batch with its error.
 */
export function coalescer<I, O>(apply: (batch: I[]) => Promise<Array<BatchOutcome<O>>>, o: CoalescerOptions): Coalescer<I, O> {
  if (!Number.isInteger(o.maxBatch) || o.maxBatch < 1) throw new WritError("INVALID_OPTION", "coalescer: maxBatch must be a positive integer");
  const linger = o.lingerMs ?? 0;
  if (!Number.isFinite(linger) || linger < 0) throw new WritError("INVALID_OPTION", "coalescer: lingerMs must be a number >= 0");
  if (linger > 0 && o.setTimer === undefined) throw new WritError("INVALID_OPTION", "coalescer: lingerMs needs setTimer");
  const queue: Array<Waiting<I, O>> = [];
  let inFlight = 0;
  let scheduled = false;
  let cancelLinger: (() => void) | null = null;

  const flush = (): void => {
    scheduled = false;
    cancelLinger?.();
    cancelLinger = null;
    if (inFlight > 0 || queue.length === 0) return;
    const batch = queue.splice(0, o.maxBatch);
    inFlight += batch.length;
    let answered = false;
    apply(batch.map((w) => w.input))
      .then(
        (outs) => {
          answered = true;
          if (outs.length !== batch.length) {
            const e = new WritError("STORE_ERROR", `batch: the store answered ${outs.length} outcomes for ${batch.length} members`);
            for (const w of batch) w.reject(e);
            return;
          }
          batch.forEach((w, i) => {
            const r = outs[i]!;
            if (r.ok) w.resolve(r.value);
            else w.reject(r.error);
          });
        },
        (e: unknown) => {
          if (!answered) for (const w of batch) w.reject(e);
        },
      )
      .finally(() => {
        inFlight -= batch.length;
        // Whatever queued meanwhile has waited one batch already: it goes now.
        if (queue.length > 0) schedule(true);
      });
  };

  const schedule = (now: boolean): void => {
    if (inFlight > 0) return; // the flight's end flushes
    if (!now && linger > 0 && queue.length < o.maxBatch) {
      cancelLinger ??= o.setTimer!(linger, flush);
      return;
    }
    if (scheduled) return;
    scheduled = true;
    // Calls made in the same turn of the event loop join one batch.
    queueMicrotask(flush);
  };

  const submit = ((input: I): Promise<O> =>
    new Promise<O>((resolve, reject) => {
      queue.push({ input, resolve, reject });
      schedule(queue.length >= o.maxBatch);
    })) as Coalescer<I, O>;
  submit.pending = () => queue.length + inFlight;
  return submit;
}
