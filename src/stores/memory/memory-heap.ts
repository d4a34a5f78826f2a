/** A binary min-heap: the memory store's index of claimable invocations. */
export class Heap<T> {
  readonly #before: (a: T, b: T) => boolean;
  #items: T[] = [];

  /** `before(a, b)` is true when `a` must come out before `b`. */
  constructor(before: (a: T, b: T) => boolean) {
    this.#before = before;
  }

  get size(): number {
    return this.#items.length;
  }

  /** The first item, left in place. */
  peek(): T | undefined {
    return this.#items[0];
  }

  /** Every item, in no particular order. */
  values(): readonly T[] {
    return this.#items;
  }

  push(item: T): void {
    const a = this.#items;
    let i = a.length;
    a.push(item);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = a[parent] as T;
      if (!this.#before(item, p)) break;
      a[i] = p;
      i = parent;
    }
    a[i] = item;
  }

  pop(): T | undefined {
    const a = this.#items;
    const top = a[0];
    const last = a.pop();
    if (a.length === 0 || last === undefined) return top;
    const n = a.length;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && this.#before(a[r] as T, a[l] as T) ? r : l;
      const child = a[c] as T;
      if (!this.#before(child, last)) break;
      a[i] = child;
      i = c;
    }
    a[i] = last;
    return top;
  }

  clear(): void {
    this.#items = [];
  }
}
