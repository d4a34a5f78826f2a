/**
 * An in-process write lock per database file. SQLite's own lock (with `busy_timeout`) serialises
 * writers across processes, but its busy handler waits synchronously: two stores over one file in
 * the same process would block the event loop while the holder, on that same loop, can never
 * finish. Stores therefore take this asynchronous lock before `BEGIN IMMEDIATE`, so writers of
 * one process queue without blocking and only other processes meet the busy timeout.
 */

/** A FIFO lock with direct hand-off (a releaser cannot barge ahead of waiters). */
export class FileWriteLock {
  #held = false;
  readonly #waiters: Array<() => void> = [];
  /** Stores sharing this lock; the registry forgets the lock when it drops to 0. */
  users = 0;

  /** Takes the lock if it is free, synchronously. */
  tryAcquire(): boolean {
    if (this.#held) return false;
    this.#held = true;
    return true;
  }

  /** Resolves once the lock is held by the caller. */
  acquire(): Promise<void> {
    if (this.tryAcquire()) return Promise.resolve();
    return new Promise<void>((resolve) => this.#waiters.push(resolve));
  }

  /** Hands the lock to the next waiter, or frees it. */
  release(): void {
    const next = this.#waiters.shift();
    if (next === undefined) this.#held = false;
    else next();
  }
}

const registry = new Map<string, FileWriteLock>();

/** The lock of a database file (by its real path); `undefined` key: a private lock (`:memory:`). */
export function openFileLock(key: string | undefined): FileWriteLock {
  if (key === undefined) return new FileWriteLock();
  let lock = registry.get(key);
  if (lock === undefined) {
    lock = new FileWriteLock();
    registry.set(key, lock);
  }
  lock.users++;
  return lock;
}

/** Drops one store's use of a file lock. */
export function closeFileLock(key: string | undefined, lock: FileWriteLock): void {
  if (key === undefined) return;
  lock.users--;
  if (lock.users <= 0 && registry.get(key) === lock) registry.delete(key);
}
