/** A manual Clock for tests and simulation: time moves only when `advance` or `set` is called. */
import type { Clock } from "./ports.js";

export interface ManualClock extends Clock {
  /** Moves time forward, firing due timers in order. */
  advance(ms: number): void;
  set(ms: number): void;
  /** Timers not yet fired or cancelled. */
  pending(): number;
}

export function manualClock(start = 1_700_000_000_000): ManualClock {
  let t = start;
  let nextId = 0;
  const timers = new Map<number, { at: number; fn: () => void }>();
  const fireDue = (): void => {
    for (;;) {
      let due: [number, { at: number; fn: () => void }] | undefined;
      for (const e of timers) if (e[1].at <= t && (!due || e[1].at < due[1].at)) due = e;
      if (!due) return;
      timers.delete(due[0]);
      due[1].fn();
    }
  };
  return {
    now: () => t,
    setTimer(ms, fn) {
      const id = nextId++;
      timers.set(id, { at: t + ms, fn });
      return () => void timers.delete(id);
    },
    advance(ms) {
      t += ms;
      fireDue();
    },
    set(ms) {
      t = ms;
      fireDue();
    },
    pending: () => timers.size,
  };
}
