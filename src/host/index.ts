/**
 * `writ/host`: the durable host (docs/host.md) with Node's clock, crypto and randomness by
 * default, its options, events and workers, and versioned Cedar policies per scope.
 */
import type { Clock, CryptoPort, Random } from "../core/ports.js";
import { sequencerHintClock } from "../core/sequencer.js";
import { defaultPorts } from "../node/defaults.js";
import { systemClock } from "../node/clock.js";
import { createHostCore, type Host } from "./host.js";
import type { HostOptions } from "./options.js";

export { createHostCore, type Host, type Preview, type ResolveInput, type SubmitOptions, type SubmitResult } from "./host.js";
export { type BreakerOptions, type HostOptions, type Logger } from "./options.js";
export { type Worker, type WorkerOptions } from "./worker.js";
export { type HostEvent } from "./events.js";
export { type Approvals, type Approver } from "./approvals.js";
export { type Authorities, type AuthorityInput } from "./authorities.js";
export { type CompletionAnswer, type CompletionInput, type CompletionSecret } from "./completions.js";
export { versionedCedarPolicy, type VersionedPolicy } from "./policy-versions.js";
export { type RetentionApi, type RetentionSignal } from "./retention.js";
export { type HoldReason, type RetentionOptions, type RetentionReport, type RetentionSettings } from "../core/retention.js";

export type CreateHostOptions = Omit<HostOptions, "clock" | "crypto" | "random"> & { clock?: Clock; crypto?: CryptoPort; random?: Random };

/**
 * Creates the durable host (docs/host.md): admission, workers with leases and fencing, multi-step
 * checkpoints, retries, reconciliation and bounded recovery.
 * @example
 * const host = createHost({ store: sqliteStore(), actions, connectors, policy, signingKey });
 * await host.submit(request);
 * const worker = host.worker({ concurrency: 8 }); worker.start();
 */
export function createHost(options: CreateHostOptions): Host {
  // The store's clock where it has one (PostgreSQL: the server's), unless a clock is given.
  const clock = options.clock ?? options.store.clock;
  const host = createHostCore({ ...options, ...defaultPorts({ ...options, ...(clock !== undefined ? { clock } : {}) }) });
  // While no worker of this store runs here (a host that only submits, serves or approves), real
  // time times the store's commit-hint delay, as for a bare boundary: one seal chains the commits
  // of a few milliseconds, and a scope another process's running sequencer has claimed is left to
  // it (docs/journal.md, "One sealer per scope").
  sequencerHintClock(options.store, systemClock);
  return host;
}

