/**
 * Option checks shared by the built-in connectors: every bad option throws `INVALID_OPTION`
 * naming the option (`details.option`), never echoing a secret value.
 */
import { WritError } from "../core/errors.js";
import type { Clock } from "../core/ports.js";

/** Connector ids follow `defineConnector`. */
const ID_RE = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

/** An `INVALID_OPTION` error of `entry` (e.g. `httpConnector`) naming `option`. */
export function invalidOption(entry: string, option: string, message: string): WritError {
  return new WritError("INVALID_OPTION", `${entry} option \`${option}\` ${message}`, { details: { option } });
}

/** Checks that `options` is an object and its `id` a valid connector id. */
export function checkConnectorBasics(entry: string, options: unknown): { id: string } {
  if (typeof options !== "object" || options === null) throw invalidOption(entry, "options", "must be an object");
  const id = (options as { id?: unknown }).id;
  if (typeof id !== "string" || !ID_RE.test(id)) throw invalidOption(entry, "id", `must match ${ID_RE.source}`);
  return { id };
}

/** Checks the `operations` map: a non-empty object of objects; returns its entries. */
export function operationEntries(entry: string, operations: unknown): [string, Record<string, unknown>][] {
  if (typeof operations !== "object" || operations === null || Array.isArray(operations)) throw invalidOption(entry, "operations", "must be an object of operations");
  const list = Object.entries(operations as Record<string, unknown>);
  if (list.length === 0) throw invalidOption(entry, "operations", "must name at least one operation");
  for (const [name, op] of list) {
    if (name.length === 0) throw invalidOption(entry, "operations", "has an operation with an empty name");
    if (typeof op !== "object" || op === null) throw invalidOption(entry, `operations.${name}`, "must be an object");
  }
  return list as [string, Record<string, unknown>][];
}

/** A positive integer timer length (ms), or undefined when absent. */
export function optionalMs(entry: string, option: string, v: unknown): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 1 || v > 2_147_483_647) throw invalidOption(entry, option, "must be an integer number of ms between 1 and 2147483647");
  return v;
}

/** A Clock port (now and setTimer), or the default. */
export function clockOption(entry: string, v: unknown, fallback: Clock): Clock {
  if (v === undefined) return fallback;
  const ok = typeof v === "object" && v !== null && typeof (v as { now?: unknown }).now === "function" && typeof (v as { setTimer?: unknown }).setTimer === "function";
  if (!ok) throw invalidOption(entry, "clock", "must be a Clock ({ now(), setTimer(ms, fn) })");
  return v as Clock;
}

/** Longest timer Node can arm (a longer one fires at once). */
const MAX_TIMER_MS = 2_147_483_647;

/** How much time is left before `deadline` (epoch ms on `clock`), capped by `timeoutMs` and the longest timer. */
export function budgetMs(clock: Clock, deadline: number, timeoutMs: number | undefined): number {
  const left = Number.isFinite(deadline) ? deadline - clock.now() : MAX_TIMER_MS;
  return Math.min(left, timeoutMs ?? MAX_TIMER_MS, MAX_TIMER_MS);
}
