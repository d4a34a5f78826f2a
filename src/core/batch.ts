/**
 * Group commit for store transitions (docs/stores.md, "Batches"): calls that arrive while a batch
 * is on its way to the store wait and go together as the next batch, in one statement and one
 * commit. A call that finds nothing in flight goes at once (a lone invocation is never held for a
 * batch to fill), except between a batch's landing and the `defer` hop that follows it, when it
 * waits for that hop; `lingerMs` optionally holds the first call of a batch that long for company.
 * Each member succeeds or fails alone: the store answers one outcome per member.
 */
import { WritError } from "./errors.js";

/** One member's answer: its value, or the error it alone failed with. */
export type BatchOutcome<O = unknown> = { ok: true; value: O } | { ok: false; error: unknown };

/** The outcome of one member's promise: never rejects. */
export function outcomeOf<O>(p: Promise<O>): Promise<BatchOutcome<O>> {
  return p.then(
    (value): BatchOutcome<O> => ({ ok: true, value }),
    (error: unknown): BatchOutcome<O> => ({ ok: false, error }),
  );
}

export interface CoalescerOptions {
  /** Most members in one batch. */
  maxBatch: number;
  /** Hold the first call of a batch up to this long unless the batch fills. @defaultValue 0 */
  lingerMs?: number;
  /** A timer (needed only when `lingerMs` > 0); returns a cancel function. */
  setTimer?: (ms: number, cb: () => void) => () => void;
  /**
   * Batches in flight at once. With more than one, a slow batch does not hold back the calls that
   * arrive meanwhile (they go as soon as fewer are in flight). @defaultValue 1
   */
  maxInFlight?: number;
  /**
   * A later hop than a microtask (Node's `setImmediate`): it must call back once, after the
   * microtasks queued before it, in the order it was called. Any batch that forms between a
   * batch's landing and the next such hop leaves on that hop. Without `defer` it leaves on a
   * microtask, queued before the landed members hear their answers, so what those answers call at
   * once (a settlement after a connector call that returned at once, the claim that refills a
   * freed slot) waits for it to land; with it, those calls go in it. Calls from anything else the
   * event loop runs in that window wait for the hop too. Not a timer: outside that window a call
   * goes on a microtask. A `defer` that throws is treated as a microtask.
   */
  defer?: (cb: () => void) => void;
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
 * At most `maxInFlight` batches are in flight (one by default); `apply` rejecting (or throwing)
 * fails every member of that batch with its error.
 */
export function coalescer<I, O>(apply: (batch: I[]) => Promise<Array<BatchOutcome<O>>>, o: CoalescerOptions): Coalescer<I, O> {
  if (!Number.isInteger(o.maxBatch) || o.maxBatch < 1) throw new WritError("INVALID_OPTION", "coalescer: maxBatch must be a positive integer");
  const linger = o.lingerMs ?? 0;
  if (!Number.isFinite(linger) || linger < 0) throw new WritError("INVALID_OPTION", "coalescer: lingerMs must be a number >= 0");
  if (linger > 0 && o.setTimer === undefined) throw new WritError("INVALID_OPTION", "coalescer: lingerMs needs setTimer");
  const maxInFlight = o.maxInFlight ?? 1;
  if (!Number.isInteger(maxInFlight) || maxInFlight < 1) throw new WritError("INVALID_OPTION", "coalescer: maxInFlight must be a positive integer");
  const defer = o.defer;
  if (defer !== undefined && typeof defer !== "function") throw new WritError("INVALID_OPTION", "coalescer: defer must be a function");
  const queue: Array<Waiting<I, O>> = [];
  /** Batches in flight. */
  let inFlight = 0;
  /** Members in flight (for `pending`). */
  let membersInFlight = 0;
  let scheduled = false;
  let cancelLinger: (() => void) | null = null;
  /** Set from a batch's landing until the `defer` hop after it: batches formed meanwhile leave on that hop. */
  let landedTurn = false;
  const endTurn = (): void => {
    landedTurn = false;
  };
  /** `cb` on the `defer` hop (on a microtask should `defer` throw: no call is left waiting); null without `defer`. */
  const later =
    defer === undefined
      ? null
      : (cb: () => void): void => {
          try {
            defer(cb);
          } catch {
            queueMicrotask(cb);
          }
        };

  const flush = (): void => {
    scheduled = false;
    cancelLinger?.();
    cancelLinger = null;
    if (inFlight >= maxInFlight || queue.length === 0) return;
    const batch = queue.splice(0, o.maxBatch);
    inFlight += 1;
    membersInFlight += batch.length;
    // Every member settles exactly once, whatever `apply` does (throws, answers badly).
    const settle = (outs: unknown): void => {
      if (!Array.isArray(outs) || outs.length !== batch.length) {
        const e = new WritError("STORE_ERROR", `batch: the store answered ${Array.isArray(outs) ? outs.length : "no list of"} outcomes for ${batch.length} members`);
        for (const w of batch) w.reject(e);
        return;
      }
      batch.forEach((w, i) => {
        const r = outs[i] as BatchOutcome<O> | undefined;
        if (r?.ok === true) w.resolve(r.value);
        else w.reject(r?.ok === false ? r.error : new WritError("STORE_ERROR", `batch: no outcome for member ${i}`));
      });
    };
    // The flight ends before its members hear back, so `pending()` never counts an answered one.
    const landed = (): void => {
      inFlight -= 1;
      membersInFlight -= batch.length;
      if (!landedTurn && later !== null) {
        landedTurn = true;
        later(endTurn);
      }
      // Whatever queued meanwhile has waited one batch already: it goes now, with what the
      // answers of this batch call at once (see `defer`).
      if (queue.length > 0) schedule(true);
    };
    Promise.resolve()
      .then(() => apply(batch.map((w) => w.input)))
      .then(
        (outs) => {
          landed();
          settle(outs);
        },
        (e: unknown) => {
          landed();
          for (const w of batch) w.reject(e);
        },
      );
    // Room for another batch: the rest of the queue goes too.
    if (queue.length > 0 && inFlight < maxInFlight) schedule(true);
  };

  const schedule = (now: boolean): void => {
    if (inFlight >= maxInFlight) return; // a flight's end flushes
    if (!now && linger > 0 && queue.length < o.maxBatch) {
      cancelLinger ??= o.setTimer!(linger, flush);
      return;
    }
    if (scheduled) return;
    scheduled = true;
    // Calls made in the same turn of the event loop join one batch. After a landing the batch
    // waits for `defer`, so that what the landed answers call at once joins it; any other call
    // goes on a microtask (a lone invocation is never held).
    if (landedTurn && later !== null) later(flush);
    else queueMicrotask(flush);
  };

  const submit = ((input: I): Promise<O> =>
    new Promise<O>((resolve, reject) => {
      queue.push({ input, resolve, reject });
      schedule(queue.length >= o.maxBatch);
    })) as Coalescer<I, O>;
  submit.pending = () => queue.length + membersInFlight;
  return submit;
}
