/**
 * What a simulation run turns on (docs/simulation.md): fault classes and invariants, each
 * switchable, and the scenario sizes. Invariants tagged with an issue item check the semantics
 * that item's fix establishes; they are off by default until the fix is on the branch (add the
 * item to FIXED_ITEMS). WRIT_SIM_INVARIANTS and WRIT_SIM_FAULTS override from the environment.
 */

/** Items of issue 12 whose fixes are on this branch; their invariants run by default. */
export const FIXED_ITEMS: readonly number[] = [1, 2, 3, 4, 5, 6, 7, 8];

export const INVARIANTS = {
  /** Every effect a provider applied was made under a decision the store recorded as consumed (same attempt). */
  decisionConsumed: { item: 0 },
  /** At most one effect per step key of a non-idempotent action. */
  atMostOnce: { item: 0 },
  /** After the drain every invocation is terminal or legitimately parked (with the record that justifies it). */
  settled: { item: 0 },
  /** Acknowledged votes, revocations, cancels and resolutions are all reflected in the store. */
  noLostUpdate: { item: 0 },
  /** Every scope's journal verifies once the sequencer sealed it. */
  journal: { item: 0 },
  /** No connector call (compensations included) under a claim whose attemptCount exceeds recoveryMaxAttempts. */
  budget: { item: 1 },
  /** An invocation's attemptCount equals the number of claims of it the simulator observed. */
  attemptCount: { item: 2 },
  /** An invocation never ends failed while one of its steps started without a known outcome. */
  versionVanished: { item: 3 },
  /** No connector call after an accepted cancel; no accepted cancel of an invocation with a started step. */
  cancel: { item: 4 },
  /** No transition out of a terminal status (a callback after the end never changes it). */
  endedKeepsStatus: { item: 5 },
  /** No call under a claim made while the fleet-wide breaker (from committed outcomes) was open. */
  breakerFleet: { item: 6 },
  /** A bare boundary.execute key interrupted by a crash is not refused EXECUTION_IN_PROGRESS after the drain. */
  bareKey: { item: 7 },
  /** No executed attempt under a decision issued before the key's previous failed attempt ended. */
  freshDecision: { item: 8 },
  /**
   * Retention (docs/retention.md): every invocation pruned was ended, ended before the window, had
   * no open reconciliation or pending approval, and no journal entry naming it lay above the
   * archive watermark its pruning transaction read.
   */
  retention: { item: 0 },
} as const;
export type InvariantName = keyof typeof INVARIANTS;

export const FAULTS = [
  "storeThrow",
  "storeLostAck",
  "claimLostAck",
  "crash",
  "redeploy",
  "connectorFail",
  "connectorHang",
  "connectorLate",
  "connectorAmbiguous",
  "handoff",
  "callbackEarly",
  "callbackLate",
  "callbackTwice",
  "callbackContradict",
  "approvals",
  "revoke",
  "cancel",
  "operatorResolve",
  "bare",
  "retention",
  "archive",
] as const;
export type FaultName = (typeof FAULTS)[number];

/**
 * Fault classes off unless WRIT_SIM_FAULTS turns them on. None today: `claimLostAck` was off until
 * the worker stopped heartbeating leases it does not know it holds (docs/simulation.md, "Found").
 */
export const OFF_BY_DEFAULT: readonly FaultName[] = [];

export interface SimConfig {
  invariants: ReadonlySet<InvariantName>;
  faults: ReadonlySet<FaultName>;
  /** Kernel steps of the main phase, before the drain. */
  mainSteps: [number, number];
  invocations: [number, number];
  workers: [number, number];
  /** Keep every trace line (for printing a failing seed). */
  keepTrace: boolean;
}

function parseList<T extends string>(env: string | undefined, all: readonly T[], dflt: readonly T[], what: string): Set<T> {
  if (env === undefined || env.trim() === "") return new Set(dflt);
  const out = new Set<T>(env.trim().startsWith("+") || env.trim().startsWith("-") ? dflt : []);
  for (const raw of env.split(",").map((s) => s.trim()).filter(Boolean)) {
    if (raw === "all") {
      for (const a of all) out.add(a);
      continue;
    }
    const off = raw.startsWith("-");
    const name = raw.replace(/^[+-]/, "");
    const item = /^item(\d)$/.exec(name);
    const names = item ? all.filter((n) => (INVARIANTS as Record<string, { item: number }>)[n]?.item === Number(item[1])) : [name as T];
    for (const n of names) {
      if (!all.includes(n)) throw new Error(`${what}: unknown name ${n} (known: ${all.join(", ")})`);
      if (off) out.delete(n);
      else out.add(n);
    }
  }
  return out;
}

const ALL_INVARIANTS = Object.keys(INVARIANTS) as InvariantName[];

/** The invariants on by default: the base ones and those of the fixed items. */
export const DEFAULT_INVARIANTS: readonly InvariantName[] = ALL_INVARIANTS.filter((n) => INVARIANTS[n].item === 0 || FIXED_ITEMS.includes(INVARIANTS[n].item));

/**
 * The configuration of a run: defaults, then `overrides`, then the environment
 * (`WRIT_SIM_INVARIANTS=all`, `=+budget,-journal`, `=item6`; `WRIT_SIM_FAULTS=-crash`).
 */
export function simConfig(overrides: Partial<SimConfig> = {}, env: NodeJS.ProcessEnv = process.env): SimConfig {
  const base: SimConfig = {
    invariants: new Set(DEFAULT_INVARIANTS),
    faults: new Set(FAULTS.filter((f) => !OFF_BY_DEFAULT.includes(f))),
    mainSteps: [100, 260],
    invocations: [2, 6],
    workers: [2, 3],
    keepTrace: env.WRIT_SIM_TRACE === "1",
    ...overrides,
  };
  return {
    ...base,
    invariants: parseList(env.WRIT_SIM_INVARIANTS, ALL_INVARIANTS, [...base.invariants], "WRIT_SIM_INVARIANTS"),
    faults: parseList(env.WRIT_SIM_FAULTS, FAULTS, [...base.faults], "WRIT_SIM_FAULTS"),
  };
}
