/**
 * A FIFO async mutex. Uncontended acquisition is synchronous (`tryAcquire`), so a transaction that
 * meets no contention pays no promise hop for the lock.
 */
export class Mutex {
  #locked = false;
  #waiters: Array<() => void> = [];
  #head = 0;

  /** Takes the lock if it is free; true when taken. */
  tryAcquire(): boolean {
    if (this.#locked) return false;
    this.#locked = true;
    return true;
  }

  /** Resolves once the lock is held by the caller (waiters are served in arrival order). */
  acquire(): Promise<void> {
    if (this.tryAcquire()) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.#waiters.push(resolve);
    });
  }

  /** Hands the lock to the next waiter, or frees it. */
  release(): void {
    if (this.#head < this.#waiters.length) {
      const next = this.#waiters[this.#head] as () => void;
      this.#head += 1;
      if (this.#head === this.#waiters.length) {
        this.#waiters = [];
        this.#head = 0;
      } else if (this.#head >= 1024 && this.#head * 2 >= this.#waiters.length) {
        this.#waiters = this.#waiters.slice(this.#head);
        this.#head = 0;
      }
      next();
      return;
    }
    this.#locked = false;
  }
}
