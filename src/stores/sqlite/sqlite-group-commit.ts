/**
 * Group commit for the single SQLite connection: logical transactions run strictly one after
 * another, each inside a SAVEPOINT of a shared physical transaction, and are acknowledged only
 * after the physical COMMIT that carries them succeeded.
 */
import type Database from "better-sqlite3";
import { performance } from "node:perf_hooks";
import { WritError } from "../../core/errors.js";
import type { FileWriteLock } from "./sqlite-file-lock.js";

/** Counters of one store's commits (for tests and benchmarks). */
export interface GroupCommitStats {
  /** Physical COMMITs (one fsync each under `synchronous=FULL`). */
  commits: number;
  /** Logical transactions acknowledged as committed. */
  logicalCommits: number;
  /** Logical transactions that failed (their writes rolled back). */
  logicalRollbacks: number;
  /** Most logical transactions one physical COMMIT carried. */
  largestBatch: number;
}

/** When the shared physical transaction commits; `maxBatch` 1 commits each transaction alone. */
export interface GroupCommitLimits {
  maxBatch: number;
  maxBatchMs: number;
  /** Runs after every successful physical COMMIT. Must not throw. */
  afterCommit?: () => void;
  /**
   * Runs when a batch is about to commit because nothing more is queued (not when a limit ends
   * it, nor before an exclusive job). True when it queued work (synchronously or in the next
   * event loop turn) that should join this batch: the batch then goes on with it. Must not throw.
   */
  beforeCommit?: () => boolean;
}

interface LogicalJob {
  kind: "logical";
  fn: () => Promise<unknown>;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

interface ExclusiveJob {
  kind: "exclusive";
  /** Whether `fn` writes (takes the file's write lock around it). */
  writes: boolean;
  fn: () => unknown;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

type Job = LogicalJob | ExclusiveJob;

/** A finished logical transaction waiting for the physical outcome of its batch. */
interface Member {
  job: LogicalJob;
  ok: boolean;
  value: unknown;
  error: unknown;
}

function storeError(message: string, cause: unknown): WritError {
  return new WritError("STORE_ERROR", message, { cause });
}

/**
 * Serialises work on one better-sqlite3 connection and batches commits.
 *
 * - `run(fn)` queues a logical transaction. When its turn comes, a physical transaction is opened
 *   if none is (`BEGIN IMMEDIATE`), then `SAVEPOINT writ_tx`; `fn` runs (it may await; nothing else
 *   touches the connection meanwhile). Success releases the savepoint; failure rolls back to it,
 *   so the failed transaction leaves nothing behind and its batch-mates keep their writes.
 * - The physical transaction commits when no transaction is waiting (after letting the event loop
 *   turn once, so that work already in flight can join), when it carries `maxBatch` logical
 *   ones, or when `maxBatchMs` have passed since it began. Only then are the promises of
 *   its logical transactions settled (failed ones too, so that no answer is given from state that
 *   never became durable). If COMMIT fails, every logical transaction of the batch rejects with
 *   `STORE_ERROR`; if SQLite aborts the physical transaction on its own (disk full, I/O error),
 *   the same happens to the batch-mates already finished.
 * - `exclusive(fn)` runs `fn` between batches, with no transaction open (migrations, close).
 * - A physical transaction holds the file's in-process write lock (`sqlite-file-lock.ts`) from
 *   before BEGIN until it ends, so that several stores over one file in one process queue
 *   instead of blocking the event loop in SQLite's busy handler.
 *
 * Calling `run` from inside a running logical transaction deadlocks: use the `tx` you were given.
 */
export class GroupCommitter {
  readonly #db: Database.Database;
  readonly #limits: GroupCommitLimits;
  readonly #lock: FileWriteLock;
  #holdingLock = false;
  /** Waiting jobs: `#queue[#head]` is the next one (an index, so that taking one is O(1)). */
  #queue: (Job | undefined)[] = [];
  #head = 0;
  #batch: Member[] = [];
  #okInBatch = 0;
  #batchStartedAt = 0;
  #draining = false;
  readonly #stats: GroupCommitStats = { commits: 0, logicalCommits: 0, logicalRollbacks: 0, largestBatch: 0 };
  readonly #begin: Database.Statement;
  readonly #commit: Database.Statement;
  readonly #rollback: Database.Statement;
  readonly #savepoint: Database.Statement;
  readonly #release: Database.Statement;
  readonly #rollbackTo: Database.Statement;

  constructor(db: Database.Database, lock: FileWriteLock, limits: GroupCommitLimits) {
    this.#db = db;
    this.#lock = lock;
    this.#limits = limits;
    this.#begin = db.prepare("BEGIN IMMEDIATE");
    this.#commit = db.prepare("COMMIT");
    this.#rollback = db.prepare("ROLLBACK");
    this.#savepoint = db.prepare("SAVEPOINT writ_tx");
    this.#release = db.prepare("RELEASE writ_tx");
    this.#rollbackTo = db.prepare("ROLLBACK TO writ_tx");
  }

  /** Queues a logical transaction; resolves with `fn`'s value once durable. */
  run<T>(fn: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ kind: "logical", fn, resolve: resolve as (v: unknown) => void, reject });
      this.#schedule();
    });
  }

  /**
   * Queues `fn` to run alone on the connection, after the current batch committed; with
   * `writes`, under the file's write lock.
   */
  exclusive<T>(fn: () => T, writes = false): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ kind: "exclusive", writes, fn, resolve: resolve as (v: unknown) => void, reject });
      this.#schedule();
    });
  }

  /** A snapshot of the counters. */
  stats(): GroupCommitStats {
    return { ...this.#stats };
  }

  #schedule(): void {
    if (this.#draining) return;
    this.#draining = true;
    // Start on a microtask so that callers queueing in the same tick share a batch, and `fn`
    // never runs inside the caller's own stack.
    queueMicrotask(() => void this.#drain());
  }

  async #drain(): Promise<void> {
    try {
      for (let job = this.#take(); job !== undefined; job = this.#take()) {
        if (job.kind === "exclusive") {
          this.#commitBatch();
          if (job.writes && !this.#tryLock()) await this.#waitLock();
          this.#runExclusive(job);
          this.#releaseLock();
          continue;
        }
        await this.#runLogical(job);
        if (this.#batch.length > 0 && this.#shouldCommit() && !(await this.#moreArrived()) && !(await this.#joinedBeforeCommit())) this.#commitBatch();
      }
    } catch (e) {
      // Not reached by design; never leave callers hanging if it is.
      this.#abortBatch(storeError("group commit failed unexpectedly", e));
      for (let job = this.#take(); job !== undefined; job = this.#take()) job.reject(storeError("group commit failed unexpectedly", e));
    } finally {
      if (!this.#db.inTransaction) this.#releaseLock();
      this.#draining = false;
    }
  }

  #take(): Job | undefined {
    const job = this.#queue[this.#head];
    if (job === undefined) {
      this.#queue = [];
      this.#head = 0;
      return undefined;
    }
    this.#queue[this.#head++] = undefined; // let the job be collected
    return job;
  }

  /**
   * With the queue empty and room left in the batch, lets the event loop turn once before the
   * commit, so that transactions of work that is already in flight (HTTP requests whose bytes
   * arrived while the last COMMIT blocked the thread) join this batch instead of each paying
   * for its own fsync. True when something was queued meanwhile (the batch goes on).
   */
  async #moreArrived(): Promise<boolean> {
    if (this.#head < this.#queue.length || this.#batch.length >= this.#limits.maxBatch) return false;
    await new Promise<void>((resolve) => setImmediate(resolve));
    return this.#head < this.#queue.length && performance.now() - this.#batchStartedAt < this.#limits.maxBatchMs;
  }

  /**
   * With the queue empty and the batch about to commit, runs `beforeCommit` (the store queues the
   * journal seal of the batch's entries there) and lets the event loop turn once. True when work
   * was queued meanwhile and the batch goes on with it.
   */
  async #joinedBeforeCommit(): Promise<boolean> {
    const hook = this.#limits.beforeCommit;
    if (hook === undefined || this.#head < this.#queue.length || this.#batch.length >= this.#limits.maxBatch || this.#okInBatch === 0 || !this.#db.inTransaction) return false;
    if (!hook()) return false;
    await new Promise<void>((resolve) => setImmediate(resolve));
    return this.#head < this.#queue.length && performance.now() - this.#batchStartedAt < this.#limits.maxBatchMs;
  }

  #shouldCommit(): boolean {
    return (
      this.#head >= this.#queue.length ||
      this.#batch.length >= this.#limits.maxBatch ||
      performance.now() - this.#batchStartedAt >= this.#limits.maxBatchMs
    );
  }

  #runExclusive(job: ExclusiveJob): void {
    try {
      job.resolve(job.fn());
    } catch (e) {
      job.reject(e);
    }
  }

  async #runLogical(job: LogicalJob): Promise<void> {
    if (!this.#db.inTransaction) {
      if (!this.#tryLock()) await this.#waitLock();
      try {
        this.#begin.run();
      } catch (e) {
        this.#releaseLock();
        job.reject(storeError("could not begin a transaction", e));
        return;
      }
      this.#batchStartedAt = performance.now();
    }
    try {
      this.#savepoint.run();
    } catch (e) {
      job.reject(storeError("could not open a savepoint", e));
      this.#endIfEmpty();
      return;
    }
    let ok = false;
    let value: unknown;
    let error: unknown;
    try {
      value = await job.fn();
      ok = true;
    } catch (e) {
      error = e;
    }
    if (ok) {
      try {
        this.#release.run();
      } catch (e) {
        ok = false;
        error = storeError("could not release a savepoint", e);
      }
    }
    if (!ok && !this.#undoSavepoint()) {
      // The physical transaction is gone or unusable: the whole batch is lost.
      this.#abortBatch(storeError("the transaction was aborted by SQLite; nothing of this batch was committed", error));
      this.#stats.logicalRollbacks++;
      job.reject(error);
      return;
    }
    this.#batch.push({ job, ok, value, error });
    if (ok) {
      this.#okInBatch++;
    } else if (this.#okInBatch === 0) {
      // Only failures so far: nothing to make durable, end the physical transaction now.
      this.#rollbackPhysical();
      this.#settle(this.#takeBatch());
    }
  }

  /** Rolls back to the savepoint and releases it; false if the physical transaction is unusable. */
  #undoSavepoint(): boolean {
    if (!this.#db.inTransaction) return false;
    try {
      this.#rollbackTo.run();
      this.#release.run();
      return true;
    } catch {
      return false;
    }
  }

  #takeBatch(): Member[] {
    const batch = this.#batch;
    this.#batch = [];
    this.#okInBatch = 0;
    return batch;
  }

  #commitBatch(): void {
    if (this.#batch.length === 0) {
      this.#endIfEmpty();
      return;
    }
    const okCount = this.#okInBatch;
    const batch = this.#takeBatch();
    if (okCount === 0) {
      this.#rollbackPhysical();
      this.#settle(batch);
      return;
    }
    try {
      this.#commit.run();
    } catch (e) {
      this.#rollbackPhysical();
      for (const m of batch) {
        this.#stats.logicalRollbacks++;
        m.job.reject(storeError("commit failed; the transaction is not durable", e));
      }
      return;
    }
    this.#releaseLock();
    this.#stats.commits++;
    this.#stats.largestBatch = Math.max(this.#stats.largestBatch, okCount);
    this.#settle(batch);
    this.#limits.afterCommit?.();
  }

  /** Settles every member with its own outcome (the batch's physical outcome is known). */
  #settle(batch: Member[]): void {
    for (const m of batch) {
      if (m.ok) {
        this.#stats.logicalCommits++;
        m.job.resolve(m.value);
      } else {
        this.#stats.logicalRollbacks++;
        m.job.reject(m.error);
      }
    }
  }

  /** Rolls back the physical transaction; finished members reject with `err` (failed ones with their own error). */
  #abortBatch(err: WritError): void {
    this.#rollbackPhysical();
    for (const m of this.#takeBatch()) {
      this.#stats.logicalRollbacks++;
      m.job.reject(m.ok ? err : m.error);
    }
  }

  #endIfEmpty(): void {
    if (this.#batch.length === 0) this.#rollbackPhysical();
  }

  /** Ends the physical transaction (if SQLite has not already) and frees the file's write lock. */
  #rollbackPhysical(): void {
    if (this.#db.inTransaction) {
      try {
        this.#rollback.run();
      } catch {
        // The connection already ended the transaction; nothing more to undo.
      }
    }
    this.#releaseLock();
  }

  /** Takes the file's write lock if it is free (or already ours), without waiting. */
  #tryLock(): boolean {
    if (this.#holdingLock) return true;
    this.#holdingLock = this.#lock.tryAcquire();
    return this.#holdingLock;
  }

  /** Waits for the file's write lock (another store of this process holds it). */
  async #waitLock(): Promise<void> {
    await this.#lock.acquire();
    this.#holdingLock = true;
  }

  #releaseLock(): void {
    if (!this.#holdingLock) return;
    this.#holdingLock = false;
    this.#lock.release();
  }
}
