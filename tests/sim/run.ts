/**
 * One seeded run (docs/simulation.md): set up a world on a store, run the main phase (the seed
 * picks every event), drain (no new faults; time advances, sweeps run), then check invariants.
 */
import { readArchive } from "../../src/core/archive-format.js";
import { sealScopeNow, verifyStoredJournal } from "../../src/core/journal.js";
import type { Store } from "../../src/core/store.js";
import { TERMINAL_INVOCATION_STATUSES, type Invocation, type InvocationStatus, type JournalEntry } from "../../src/core/types.js";
import { memoryStore } from "../../src/stores/memory/index.js";
import { sqliteStore } from "../../src/stores/sqlite/index.js";
import pg from "pg";
import { postgresStore } from "../../src/stores/postgres/index.js";
import { freshDatabase, type FreshDatabase } from "../helpers/pg.js";
import { INVARIANTS, simConfig, type InvariantName, type SimConfig } from "./config.js";
import { HOST_LIMITS, SCOPE, World, type Effect, type WorldOptions } from "./world.js";
import { withSpan } from "../../src/host/telemetry.js";

export type SimStoreKind = "memory" | "sqlite" | "postgres";

export interface Violation {
  invariant: InvariantName;
  item: number;
  message: string;
}

export interface SimResult {
  seed: number;
  store: SimStoreKind;
  violations: Violation[];
  traceHash: string;
  events: number;
  stats: {
    invocations: number;
    statuses: Record<string, number>;
    calls: number;
    effects: number;
    crashes: number;
    virtualMs: number;
    drainSteps: number;
    /** Batching (docs/simulation.md, "Batches"): the seed's batch size (null: off) and its batch operations. */
    batchMax: number | null;
    /** Journal segments the worker nodes archived (docs/archives.md). */
    archiveSegments: number;
    /** Batch operations; those of 2+ members; members failed alone (settlements refused for a lost lease among them); crashes with a batch queued or in flight. */
    batches: { ops: number; multi: number; members: number; failedAlone: number; settlesLeaseLost: number; diedMidBatch: number };
    /** Invocations retention pruned (docs/retention.md). */
    pruned: number;
  };
  notes: string[];
  trace: string[] | null;
}

/** Makes an empty, migrated store of `kind` (PostgreSQL: a fresh database, dropped at cleanup). */
export async function makeStore(kind: SimStoreKind): Promise<{ store: Store; cleanup: () => Promise<void> }> {
  if (kind === "memory") {
    const store = memoryStore();
    await store.migrate();
    return { store, cleanup: () => store.close() };
  }
  if (kind === "sqlite") {
    // One connection and no group commit: no setImmediate or wall-clock batching in the run.
    const store = sqliteStore({ path: ":memory:", groupCommit: false });
    await store.migrate();
    return { store, cleanup: () => store.close() };
  }
  // One database per test process, emptied before each seed (creating one per seed is slow).
  sharedPg ??= freshDatabase();
  const db = await sharedPg;
  const admin = new pg.Client({ connectionString: db.url });
  await admin.connect();
  try {
    const store = postgresStore({ url: db.url }, { max: 4 });
    await store.migrate();
    const { rows } = await admin.query<{ tablename: string }>("SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE 'writ_%' AND tablename <> 'writ_migrations'");
    // DELETE, not TRUNCATE: the tables are small and TRUNCATE costs a second or so per seed.
    if (rows.length > 0) await admin.query(rows.map((r) => `DELETE FROM "${r.tablename}";`).join(" "));
    return { store, cleanup: () => store.close() };
  } finally {
    await admin.end();
  }
}

let sharedPg: Promise<FreshDatabase> | undefined;

/** Drops the shared PostgreSQL database of this process (afterAll of a suite that used it). */
export async function dropSharedPostgres(): Promise<void> {
  if (sharedPg) await (await sharedPg).drop();
  sharedPg = undefined;
}

/** The one-line command that replays a seed. */
export function replayCommand(seed: number, store: SimStoreKind, file = "tests/sim/sim.test.ts"): string {
  const extra = ["WRIT_SIM_INVARIANTS", "WRIT_SIM_FAULTS"].filter((k) => process.env[k] !== undefined).map((k) => `${k}=${process.env[k]} `);
  return `${extra.join("")}WRIT_SIM_SEED=${seed} WRIT_SIM_STORE=${store} npx vitest run ${file}`;
}

/**
 * Loads what the host imports lazily on first use (the OpenTelemetry API, on the first span): that
 * import is real I/O, longer than the kernel's quiescence turn, so without this the first seed a
 * process runs would interleave differently from its replay.
 */
let warmedUp = false;
async function warmUp(): Promise<void> {
  if (warmedUp) return;
  await withSpan("writ.sim.warmup", {}, async () => undefined);
  warmedUp = true;
}

export async function runSeed(seed: number, kind: SimStoreKind, config: SimConfig = simConfig(), options: WorldOptions = {}): Promise<SimResult> {
  await warmUp();
  const { store, cleanup } = await makeStore(kind);
  try {
    return await runOn(seed, kind, store, config, options);
  } finally {
    await cleanup();
  }
}

async function runOn(seed: number, kind: SimStoreKind, inner: Store, config: SimConfig, options: WorldOptions): Promise<SimResult> {
  const w = new World(seed, inner, config, options);
  const { sim, rng } = w;
  await w.setup();
  const start = sim.now;
  const mainSteps = rng.int(config.mainSteps[0], config.mainSteps[1]);
  const total = rng.int(config.invocations[0], config.invocations[1]);
  let submitted = 0;
  let crashes = 0;
  let bares = 0;
  const on = (f: Parameters<World["on"]>[0]): number => (w.on(f) ? 1 : 0);

  for (let step = 0; step < mainSteps; step++) {
    await sim.quiesce();
    const ready = sim.readyCount() > 0;
    const r = rng.float();
    if (ready && r < 0.85) {
      sim.runRandomOp();
      continue;
    }
    if (r < (ready ? 0.93 : 0.3)) {
      const ev = rng.weighted({
        submit: submitted < total ? 6 : 0,
        approval: on("approvals") * 2,
        cancel: on("cancel") * 0.6,
        resolve: on("operatorResolve") * 0.6,
        crash: on("crash") * (w.compensating.size > 0 ? 3 : 0.5),
        bare: bares < 3 ? on("bare") * 0.6 : 0,
        archive: on("retention") * 0.6,
        prune: on("retention") * 0.3,
        nothing: 0.5,
      });
      if (ev === "submit") w.submit(submitted++);
      else if (ev === "approval") w.approvalEvent();
      else if (ev === "cancel") w.cancelEvent();
      else if (ev === "resolve") w.resolveEvent();
      else if (ev === "crash") {
        crashes++;
        w.crashEvent();
      } else if (ev === "bare") {
        bares++;
        w.bareEvent();
      } else if (ev === "archive") w.archiveEvent();
      else if (ev === "prune") w.pruneEvent();
      continue;
    }
    if (!sim.fireNextTimer()) sim.runRandomOp();
  }
  // Whatever was not submitted yet is submitted now, so every scenario has its invocations.
  while (submitted < total) w.submit(submitted++);

  // Drain: no more store faults, crashes or client events; dead workers come back; time runs.
  w.draining = true;
  sim.trace("drain");
  if (w.workers.filter((x) => x.node.alive).length < 2) w.startWorker();
  const drainEnd = sim.now + 150_000;
  let drainSteps = 0;
  let settledOk = false;
  const stepCap = 40_000;
  let idle = 0;
  for (; drainSteps < stepCap; drainSteps++) {
    await sim.quiesce();
    if (sim.readyCount() > 0) sim.runRandomOp();
    else {
      if (idle++ % 4 === 0 && (await w.settled())) {
        settledOk = true;
        break;
      }
      if (sim.now > drainEnd || !sim.fireNextTimer()) break;
    }
  }
  // Interrupted bare keys are executed again (item 7) once their bound has passed
  // (docs/boundary.md, Interrupted executions), then the last seals run.
  if (w.obs.bareInterrupted.length > 0) {
    // "More than inProgressTimeoutMs ago": at exactly the bound the key is still in progress.
    const wait = HOST_LIMITS.inProgressTimeoutMs + 1;
    const until = sim.now + wait;
    sim.setTimer(w.env, wait, () => undefined);
    for (let i = 0; i < 20_000 && sim.now < until; i++) {
      await sim.quiesce();
      if (sim.readyCount() > 0) sim.runRandomOp();
      else if (!sim.fireNextTimer()) break;
    }
  }
  const retries = w.bareRetry();
  for (let i = 0; i < 2000 && w.obs.bareAfterDrain.length < retries.length; i++) {
    await sim.quiesce();
    if (sim.readyCount() > 0) sim.runRandomOp();
    else if (!sim.fireNextTimer()) break;
  }
  await sim.quiesce();

  const violations = await checkInvariants(w, inner, config, { settledOk, drainSteps, stepCap });
  const invs = await inner.transact((tx) => tx.listInvocations(SCOPE, { limit: 1000 }));
  const statuses: Record<string, number> = {};
  for (const i of invs) {
    statuses[i.status] = (statuses[i.status] ?? 0) + 1;
    sim.trace(`final ${i.invocationId} ${i.status} attempts ${i.attemptCount}`);
  }
  // Retention last: the statuses above are the run's; then ended work is archived and pruned.
  if (config.faults.has("retention")) violations.push(...(await retentionPhase(w, inner, config)));
  const head = await inner.transact((tx) => tx.journalHead(SCOPE));
  sim.trace(`journal ${head?.seq ?? 0} ${head?.hash ?? ""}`);
  const { hash, events } = sim.traceHash();
  return {
    seed,
    store: kind,
    violations,
    traceHash: hash,
    events,
    stats: { invocations: invs.length, statuses, calls: w.obs.calls.length, effects: w.obs.effects.length, crashes, virtualMs: sim.now - start, drainSteps, batchMax: w.batchMax ?? null, batches: { ...w.batches }, pruned: w.obs.pruned.size, archiveSegments: w.archive.objects.size },
    notes: w.obs.notes,
    trace: sim.lines,
  };
}

const TERMINAL = new Set<InvocationStatus>(TERMINAL_INVOCATION_STATUSES);
const RETENTION_WINDOW = Math.max(HOST_LIMITS.retention.invocationsMs, HOST_LIMITS.retention.replayWindowMs);

/** retention: everything pruned was ended long enough, held by nothing, archived, and is gone. */
function checkPruned(w: World, invs: readonly Invocation[], journal: readonly JournalEntry[], fail: (i: InvariantName, m: string) => void): void {
  for (const [id, p] of w.obs.pruned) {
    if (!TERMINAL.has(p.invocation.status)) fail("retention", `${id} was pruned while ${p.invocation.status}`);
    if (p.invocation.updatedAt >= p.at - RETENTION_WINDOW) fail("retention", `${id} was pruned at ${p.at}, ended at ${p.invocation.updatedAt}: within the ${RETENTION_WINDOW} ms window`);
    if (p.openReconciliations > 0) fail("retention", `${id} was pruned with ${p.openReconciliations} open reconciliation(s)`);
    if (p.approvalStatus === "pending") fail("retention", `${id} was pruned with a pending approval`);
    const above = journal.filter((e) => e.refs?.invocationId === id && e.seq > p.watermark);
    if (above.length > 0) fail("retention", `${id} was pruned with journal entries above the archive watermark ${p.watermark} (seq ${above.map((e) => e.seq).join(", ")})`);
    if (invs.some((i) => i.invocationId === id)) fail("retention", `${id} was pruned but is still in the store`);
  }
}

/** Runs the kernel until `p` settles (or nothing can move); its value, or undefined. */
async function drive<T>(w: World, p: Promise<T>): Promise<T | undefined> {
  let done = false;
  let value: T | undefined;
  p.then(
    (v) => {
      done = true;
      value = v;
    },
    () => {
      done = true;
    },
  );
  for (let i = 0; i < 20_000 && !done; i++) {
    await w.sim.quiesce();
    if (done) break;
    if (w.sim.readyCount() > 0) w.sim.runRandomOp();
    else if (!w.sim.fireNextTimer()) break;
  }
  return value;
}

/**
 * After the other invariants were checked: the archiver archives the whole journal, time passes
 * beyond the retention window (the workers' background pruners run meanwhile), an operator's prune
 * runs, and then exactly the ended, unheld invocations are gone (docs/retention.md), what was
 * pruned passes \`retention\`, and the journal still verifies.
 */
async function retentionPhase(w: World, store: Store, config: SimConfig): Promise<Violation[]> {
  const out: Violation[] = [];
  const fail = (invariant: InvariantName, message: string): void => {
    if (config.invariants.has(invariant)) out.push({ invariant, item: INVARIANTS[invariant].item, message });
  };
  w.sim.trace("retention phase");
  await drive(w, w.archiveAll());
  const until = w.sim.now + RETENTION_WINDOW + 1;
  w.sim.setTimer(w.env, RETENTION_WINDOW + 1, () => undefined);
  for (let i = 0; i < 20_000 && w.sim.now < until; i++) {
    await w.sim.quiesce();
    if (w.sim.readyCount() > 0) w.sim.runRandomOp();
    else if (!w.sim.fireNextTimer()) break;
  }
  await drive(w, w.archiveAll());
  await drive(w, w.prune());
  await w.sim.quiesce();
  const invs = await store.transact((tx) => tx.listInvocations(SCOPE, { limit: 1000 }));
  await sealScopeNow(store, w.crypto, SCOPE);
  const journal = await store.transact((tx) => tx.readJournal(SCOPE, { limit: 100_000 }));
  checkPruned(w, invs, journal, fail);
  const through = await store.transact((tx) => tx.journalArchivedThrough(SCOPE));
  for (const inv of invs) {
    if (!TERMINAL.has(inv.status) || inv.updatedAt >= w.sim.now - RETENTION_WINDOW) continue;
    if (journal.some((e) => e.refs?.invocationId === inv.invocationId && e.seq > through)) continue;
    const open = await store.transact((tx) => tx.listReconciliations(SCOPE, { invocationId: inv.invocationId, status: "open" }));
    const ap = inv.approvalId !== undefined ? await store.transact((tx) => tx.getApproval(SCOPE, inv.approvalId!)) : null;
    if (open.length === 0 && ap?.status !== "pending") fail("retention", `${inv.invocationId} (${inv.status}, ended ${inv.updatedAt}, archived) was not pruned by ${w.sim.now}`);
  }
  const v = await verifyStoredJournal(store, w.crypto, w.keyring, SCOPE, undefined, 1000, w.on("archive") ? w.archive : undefined);
  if (!v.ok) fail("journal", `after pruning, the journal does not verify: ${JSON.stringify(v.problems.slice(0, 3))}`);
  return out;
}

async function checkInvariants(w: World, store: Store, config: SimConfig, drain: { settledOk: boolean; drainSteps: number; stepCap: number }): Promise<Violation[]> {
  const out: Violation[] = [];
  const fail = (invariant: InvariantName, message: string): void => {
    if (config.invariants.has(invariant)) out.push({ invariant, item: INVARIANTS[invariant].item, message });
  };
  const { obs } = w;
  const invs = await store.transact((tx) => tx.listInvocations(SCOPE, { limit: 1000 }));
  const now = w.sim.now;

  // A pruned invocation's rows are gone with it (docs/retention.md): the checks that read them skip it.
  const pruned = obs.pruned;
  const prunedApprovals = new Set([...pruned.values()].flatMap((p) => (p.invocation.approvalId !== undefined ? [p.invocation.approvalId] : [])));
  const prunedRecs = new Set([...pruned.values()].flatMap((p) => p.reconciliationIds));

  // decisionConsumed: every effect under a decision consumed for that very attempt.
  for (const e of obs.effects) {
    if (pruned.has(e.call.invocationId) || obs.prunedBareAt.has(e.call.invocationId)) continue;
    const c = await store.transact((tx) => tx.getConsumedDecision(SCOPE, e.call.decisionId));
    if (!c || c.attemptId !== e.call.attemptId) fail("decisionConsumed", `effect of call #${e.call.n} (${e.key}) under decision ${e.call.decisionId}: ${c ? `consumed by attempt ${c.attemptId}, not ${e.call.attemptId}` : "never consumed"}`);
  }

  // atMostOnce: one effect per non-idempotent step key.
  const perKey = new Map<string, number[]>();
  // Per invocation: a key reused after its invocation was pruned is a new request (docs/retention.md,
  // the replay window), whose effects are its own. A bare execution keeps its invocation id when its
  // key is executed again after the key was pruned: each prune starts a new request for that id.
  const epoch = (e: Effect): number => (obs.prunedBareAt.get(e.call.invocationId) ?? []).filter((t) => t < e.call.at).length;
  for (const e of obs.effects) {
    if (e.idempotent) continue;
    const k = `${e.key}\u0000${e.call.invocationId}\u0000${epoch(e)}`;
    perKey.set(k, [...(perKey.get(k) ?? []), e.call.n]);
  }
  for (const [key, calls] of perKey) if (calls.length > 1) fail("atMostOnce", `non-idempotent step key ${key.split("\u0000")[0]} took effect ${calls.length} times (calls #${calls.join(", #")})`);
  const keyOwners = new Map<string, Set<string>>();
  for (const e of obs.effects) if (!e.idempotent) keyOwners.set(e.key, (keyOwners.get(e.key) ?? new Set()).add(e.call.invocationId));
  for (const [key, owners] of keyOwners) {
    const live = [...owners].filter((id) => !pruned.has(id));
    if (owners.size > 1 && live.length === owners.size) fail("atMostOnce", `non-idempotent step key ${key} took effect under ${owners.size} invocations, none pruned`);
  }

  // settled: terminal, or parked with what justifies it.
  if (!drain.settledOk && drain.drainSteps >= drain.stepCap) fail("settled", `the drain did not settle within ${drain.stepCap} steps`);
  for (const inv of invs) {
    if (TERMINAL.has(inv.status)) continue;
    const id = inv.invocationId;
    if (inv.status === "awaiting_approval") {
      const ap = inv.approvalId ? await store.transact((tx) => tx.getApproval(SCOPE, inv.approvalId!)) : null;
      if (!ap || ap.status !== "pending" || ap.expiresAt <= now) fail("settled", `${id} awaiting_approval after the drain with approval ${ap ? `${ap.status}, expires ${ap.expiresAt}` : "missing"}`);
    } else if (inv.status === "parked") {
      const steps = await store.transact((tx) => tx.getSteps(SCOPE, id));
      const handed = steps.find((s) => s.status === "handed_off");
      if (!handed) fail("settled", `${id} parked without a handed_off step`);
      else if (inv.deadlineAt !== undefined && inv.deadlineAt <= now) fail("settled", `${id} parked past its completion deadline (${inv.deadlineAt} <= ${now})`);
    } else if (inv.status === "reconciliation_required") {
      const recs = await store.transact((tx) => tx.listReconciliations(SCOPE, { invocationId: id, status: "open" }));
      if (recs.length === 0) fail("settled", `${id} reconciliation_required without an open reconciliation record`);
    } else fail("settled", `${id} is ${inv.status} after the drain`);
  }

  // noLostUpdate: acknowledged writes of the API are all in the store.
  for (const v of obs.votes) {
    if (prunedApprovals.has(v.approvalId)) continue;
    const ap = await store.transact((tx) => tx.getApproval(SCOPE, v.approvalId));
    if (!ap?.votes.some((x) => x.approver.id === v.approver && x.verdict === v.verdict)) fail("noLostUpdate", `acknowledged ${v.verdict} by ${v.approver} on ${v.approvalId} is not recorded`);
  }
  for (const id of obs.revokes) {
    if (prunedApprovals.has(id)) continue;
    const ap = await store.transact((tx) => tx.getApproval(SCOPE, id));
    if (ap?.status !== "revoked") fail("noLostUpdate", `acknowledged revocation of ${id}: approval is ${ap?.status ?? "missing"}`);
  }
  for (const [id] of obs.cancels) {
    const inv = invs.find((i) => i.invocationId === id) ?? pruned.get(id)?.invocation;
    if (inv?.status !== "cancelled") fail("noLostUpdate", `acknowledged cancel of ${id}: invocation is ${inv?.status ?? "missing"}`);
  }
  for (const id of obs.resolves) {
    if (prunedRecs.has(id)) continue;
    const rec = await store.transact((tx) => tx.getReconciliation(SCOPE, id));
    if (rec?.status !== "resolved") fail("noLostUpdate", `acknowledged resolution of ${id}: record is ${rec?.status ?? "missing"}`);
  }

  // journal: sealed and verified in every scope written.
  const scopes = await store.transact((tx) => tx.unsealedScopes(100));
  const all = [SCOPE, ...scopes.filter((s) => s.tenantId !== SCOPE.tenantId || s.spaceId !== SCOPE.spaceId)];
  for (const sc of all) {
    await sealScopeNow(store, w.crypto, { tenantId: sc.tenantId, spaceId: sc.spaceId });
    // With archiving on, the archived segments and the database verify as one chain.
    const v = await verifyStoredJournal(store, w.crypto, w.keyring, { tenantId: sc.tenantId, spaceId: sc.spaceId }, undefined, 1000, w.on("archive") ? w.archive : undefined);
    if (!v.ok) fail("journal", `journal of ${sc.tenantId}/${sc.spaceId} does not verify: ${JSON.stringify(v.problems.slice(0, 3))}`);
  }
  // The whole journal: what was archived (and pruned from the database), then the rest.
  const archived = (await readArchive(w.archive, SCOPE)).flatMap((s) => (s.ok ? s.segment.entries : []));
  const lastArchived = archived[archived.length - 1]?.seq ?? 0;
  const journal = [...archived, ...(await store.transact((tx) => tx.readJournal(SCOPE, { limit: 100_000 }))).filter((e) => e.seq > lastArchived)];

  checkPruned(w, invs, journal, fail);

  // budget (item 1): no call under a claim beyond the recovery budget.
  for (const c of obs.calls) {
    const counted = c.attemptCount === undefined ? undefined : c.attemptCount - (c.recoveryBase ?? 0);
    if (counted !== undefined && counted > HOST_LIMITS.recoveryMaxAttempts) {
      fail("budget", `call #${c.n} (${c.compensation ? "compensation" : "step"} ${c.stepIndex} of ${c.invocationId}) under a claim with attemptCount ${c.attemptCount} - recoveryBase ${c.recoveryBase ?? 0} > ${HOST_LIMITS.recoveryMaxAttempts}`);
    }
  }

  // attemptCount (item 2): the stored count is the number of claims observed.
  for (const inv of invs) {
    const claimed = obs.claims.get(inv.invocationId)?.length ?? 0;
    const handed = obs.handbacks.get(inv.invocationId) ?? 0;
    if (inv.attemptCount !== claimed - handed) fail("attemptCount", `${inv.invocationId} (${inv.status}) has attemptCount ${inv.attemptCount}, claimed ${claimed} times, ${handed} handed back by a circuit-open re-queue`);
  }

  // versionVanished (item 3): failed never hides a step without a known outcome.
  for (const inv of invs.filter((i) => i.status === "failed")) {
    const steps = await store.transact((tx) => tx.getSteps(SCOPE, inv.invocationId));
    const open = steps.filter((s) => s.status === "started" || s.status === "unknown" || s.status === "handed_off");
    if (open.length > 0) fail("versionVanished", `${inv.invocationId} ended failed (${inv.lastError ?? ""}) with step(s) ${open.map((s) => `${s.stepIndex}:${s.status}`).join(", ")}`);
  }

  // cancel (item 4): no call after an accepted cancel; no accepted cancel after a step started.
  for (const [id, at] of obs.cancels) {
    const late = obs.calls.filter((c) => c.invocationId === id && c.at >= at);
    if (late.length > 0) fail("cancel", `${id} was cancelled at ${at}, then called (#${late.map((c) => c.n).join(", #")})`);
    const steps = await store.transact((tx) => tx.getSteps(SCOPE, id));
    if (steps.length > 0 || obs.calls.some((c) => c.invocationId === id && !c.compensation)) fail("cancel", `${id} cancel accepted although a step started`);
  }
  // A cancelled invocation never had a decision consumed (docs/host.md, Cancellation): the prepare
  // read stops a worker that sees the cancel, and the fenced begin (consumption with the first
  // step's intent) refuses one that does not. A decision signed in memory and refused there is
  // never consumed and leaves nothing behind.
  for (const inv of invs.filter((i) => i.status === "cancelled")) {
    const attempts = await store.transact((tx) => tx.listAttempts(SCOPE, { invocationId: inv.invocationId }));
    for (const a of attempts) {
      const consumed = a.decisionId === undefined ? null : await store.transact((tx) => tx.getConsumedDecision(SCOPE, a.decisionId!));
      if (consumed !== null) fail("cancel", `${inv.invocationId}: decision ${a.decisionId} consumed (attempt ${a.attemptId}) although the invocation ended cancelled`);
    }
  }

  // endedKeepsStatus (item 5): the journal shows no move out of a terminal status.
  for (const e of journal) {
    const d = e.data as { from?: string; to?: string } | undefined;
    if (e.type.startsWith("invocation.") && d?.from !== undefined && TERMINAL.has(d.from as InvocationStatus)) {
      fail("endedKeepsStatus", `${String(e.refs?.invocationId)} moved ${d.from} -> ${String(d.to)} (journal seq ${e.seq})`);
    }
  }

  // breakerFleet (item 6).
  for (const v of obs.breakerViolations) fail("breakerFleet", v);

  // bareKey (item 7).
  for (const b of obs.bareAfterDrain) {
    // A key whose execution handed off before the crash is legitimately in progress (the provider
    // holds the operation): only an execution interrupted mid-call is bounded.
    const rec = await store.transact((tx) => tx.getIdempotency(SCOPE, b.action, b.key));
    if (b.reasonCode === "EXECUTION_IN_PROGRESS" && rec?.state !== "handed_off") fail("bareKey", `bare key ${b.action}/${b.key} interrupted by a crash still answers EXECUTION_IN_PROGRESS after the drain`);
  }

  // freshDecision (item 8): an attempt that ran was authorised after the key's last failure ended.
  const attempts = await store.transact((tx) => tx.listAttempts(SCOPE, { limit: 100_000 }));
  const lastFailed = new Map<string, { endedAt: number; attemptId: string }>();
  for (const a of attempts) {
    const key = `${a.action ?? ""}\u0000${a.idempotencyKey ?? ""}`;
    if (a.state !== "REFUSED" && a.state !== "DUPLICATE" && a.decisionId !== undefined) {
      const issued = obs.decisions.get(a.decisionId);
      const prev = lastFailed.get(key);
      if (issued !== undefined && prev && issued < prev.endedAt) fail("freshDecision", `attempt ${a.attemptId} of ${a.action}/${a.idempotencyKey} ran under decision ${a.decisionId} issued at ${issued}, before attempt ${prev.attemptId} failed at ${prev.endedAt}`);
    }
    if (a.state === "FAILED" && a.endedAt !== undefined) lastFailed.set(key, { endedAt: a.endedAt, attemptId: a.attemptId });
  }
  return out;
}
