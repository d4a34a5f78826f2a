/** Waiting in tests: by wall time, so real database I/O fits, never by a fixed number of ticks. */
export const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

/** Resolves once `cond` holds; throws naming `what` after `ms`. */
export async function until(cond: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (cond()) return;
    await tick();
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** As {@link until} for a condition that reads (a store, a file): checked every `everyMs`. */
export async function untilRead(cond: () => Promise<boolean>, what: string, ms = 10_000, everyMs = 10): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out waiting for ${what}`);
}
