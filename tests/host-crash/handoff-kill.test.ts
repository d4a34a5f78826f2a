/**
 * A worker killed between the provider's accept and the handoff record (issue "Long-running
 * operations"; SPEC 4.6 recovery, SPEC 4.7 external completion). Real processes, SQLite and
 * PostgreSQL.
 *
 * Scenario: an action whose one step starts a long-running operation (`completion: { deadlineMs }`;
 * the connector replies `{ outcome: "accepted", externalRef }`). A child worker process claims it;
 * its connector starts the operation at the provider (the file ledger outside the store records it
 * under the step idempotency key, with the provider's own reference) and the child SIGKILLs itself
 * before returning: the store still has the step `started` (intent, no outcome, no handoff, no
 * reference), the invocation `running` under a dead lease. Then a fresh worker (in this process,
 * 500 ms leases) recovers it, and the test delivers the operation's completion, signed (Standard
 * Webhooks, `host.receiveCompletion`) or through `host.complete`.
 *
 * (a) Idempotent action, provider honours the step key: recovery calls the step again with the same
 *     key, the provider answers with the SAME reference and starts nothing; the handoff is recorded
 *     with that reference (parked), the completion settles it: succeeded.
 * (b) Non-idempotent action: recovery never calls the connector again; the step becomes `unknown`
 *     and the invocation reconciliation_required (OUTCOME_AMBIGUOUS) with one open record. The
 *     completion, delivered then, matches nothing (no handoff was recorded) and is refused
 *     COMPLETION_UNKNOWN_REFERENCE, changing nothing; the operator resolves the record with the
 *     provider's reference (host.reconcile.resolve): succeeded.
 * (c) The completion arrives while the invocation is stuck between the crash and the recovery
 *     (before any worker reclaims it). The dead worker's step is still `started` and its invocation
 *     `running`: a call to the connector is in flight in the scope, so the completion is `early`,
 *     stored durably and journaled, not applied (SPEC 4.7). Idempotent: the recovery re-calls with
 *     the same key, the handoff's parking transaction applies the stored completion, and the
 *     invocation goes straight to succeeded. Non-idempotent: the invocation never parks, so the
 *     early completion is kept (never applied) and the invocation goes to an operator as in (b).
 *
 * Invariants checked (fixtures/invariants.ts, I1-I7, plus per-case assertions):
 * - no operation started twice at the provider for the idempotent action: one `effect` line (one
 *   provider reference) for the step key, the recovery's repeated start absorbed as a `dedup` with
 *   the same reference; for the non-idempotent action, no call after the crash at all (I1, I3);
 * - nothing lost: every operation the provider started is either settled by its completion
 *   (exactly one applied completion, linked to its invocation and step) or in an open
 *   reconciliation (then resolved by an operator with the provider's reference); a completion kept
 *   `early` is applied at parking or its operation is with an operator (I7);
 * - no completion applied twice: per reference at most one `applied`/`late` record; repeats
 *   (same webhook-id: WEBHOOK_REPLAYED; a new delivery of the same content: `duplicate`) change
 *   nothing (I7 and the assertions below);
 * - the journal verifies in every scope and ends, for each invocation, on its stored status (I4);
 *   nothing is left running or parked (I2); unknown outcomes have an open reconciliation (I5).
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { base64 } from "../../src/core/encoding.js";
import type { CompletionRecord, Invocation, InvocationStatus } from "../../src/core/types.js";
import { signWebhook } from "../../src/core/webhook.js";
import { nodeCryptoPort, sealJournalNow } from "../../src/index.js";
import { killChild, reapChildren, sleep, spawnChild, type ChildExit } from "./fixtures/children.js";
import { STORE_KINDS } from "./fixtures/hosting.js";
import { summary, type CheckReport } from "./fixtures/invariants.js";
import { CONNECTOR_ID, SCOPES, requestFor, type ActionName } from "./fixtures/scenario.js";
import { makeWorld, type World } from "./fixtures/world.js";

// No child outlives its test: each test reaps its own, a survivor here is a leak.
afterAll(async () => expect(await reapChildren()).toBe(0));

const SECRET = `whsec_${base64(randomBytes(24))}`;
const CRYPTO = nodeCryptoPort();
const SCOPE = SCOPES[0]!;
const OPERATOR = { type: "user", id: "ops-alice" } as const;

function within<T>(p: Promise<T>, ms: number, what: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(what())), ms)))]).finally(() => clearTimeout(timer));
}

/** A signed delivery of the provider's completion (Standard Webhooks), as its HTTP route gets it. */
function delivery(id: string, externalRef: string): { headers: { id: string; timestamp: string; signature: string }; body: string } {
  const body = JSON.stringify({ externalRef, outcome: "success", result: { operation: externalRef, state: "done" } });
  const ts = Math.floor(Date.now() / 1000);
  return { headers: { id, timestamp: String(ts), signature: signWebhook(CRYPTO, SECRET, id, ts, body) }, body };
}
const completion = (externalRef: string, deliveryId?: string) => ({
  connector: CONNECTOR_ID,
  externalRef,
  outcome: "success" as const,
  result: { operation: externalRef, state: "done" },
  ...(deliveryId !== undefined ? { deliveryId } : {}),
});

const invocation = async (w: World, id: string): Promise<Invocation> => (await w.store.transact((tx) => tx.getInvocation(SCOPE, id)))!;
const step0 = async (w: World, id: string) => (await w.store.transact((tx) => tx.getSteps(SCOPE, id))).find((s) => s.stepIndex === 0);
const completions = (w: World, ref: string): Promise<CompletionRecord[]> => w.store.transact((tx) => tx.listCompletions(SCOPE, CONNECTOR_ID, ref));
const journalTypes = async (w: World, id: string): Promise<string[]> =>
  (await sealJournalNow(w.store, SCOPE), await w.store.transact((tx) => tx.readJournal(SCOPE))).filter((e) => e.refs.invocationId === id || e.refs.completionId !== undefined).map((e) => e.type);

/**
 * Submits one invocation of `action`, lets a child worker start its operation at the provider and
 * SIGKILL itself before the connector returns. Returns the invocation and the provider's reference.
 */
async function crashAtAccept(w: World, action: ActionName): Promise<{ id: string; ref: string }> {
  const [id] = await w.submit([requestFor(0, action)]);
  const marker = join(w.dir, "kill-marker");
  const child = spawnChild(`${w.target.kind}/handoff/${action}`, w.childEnv("doomed", { WRIT_KILL_AT: "after-effect", WRIT_MARKER: marker, WRIT_LEASE_MS: "500", WRIT_POLL_MS: "20", WRIT_CONCURRENCY: "1" }));
  let exit: ChildExit;
  try {
    exit = await within(child.exited, 30_000, () => `the child never started the operation; stdout: ${JSON.stringify(child.lines.slice(-5))}; stderr: ${child.stderr()}`);
  } finally {
    await killChild(child);
  }
  expect(exit.signal, child.stderr()).toBe("SIGKILL");
  const killed = JSON.parse(readFileSync(marker, "utf8")) as { point: string; invocationId: string };
  expect(killed).toMatchObject({ point: "after-effect", invocationId: id });

  // The provider started the operation (one line, with its reference) ...
  const lines = w.ledger.entries();
  expect(lines).toEqual([expect.objectContaining({ kind: "effect", invocationId: id, stepIndex: 0, operation: "start", worker: "doomed", externalRef: expect.any(String) })]);
  const ref = lines[0]!.externalRef!;
  // ... and the store knows nothing of it: intent without outcome, no handoff, no reference.
  const inv = await invocation(w, id!);
  expect(inv).toMatchObject({ status: "running", leaseOwner: "doomed", attemptCount: 1 });
  const s = await step0(w, id!);
  expect(s).toMatchObject({ status: "started" });
  expect(s?.externalRef).toBeUndefined();
  expect(await w.store.transact((tx) => tx.findStepByExternalRef(SCOPE, CONNECTOR_ID, ref))).toBeNull();
  return { id: id!, ref };
}

/** A fresh worker (in this process) runs until the invocation leaves queued/running. */
async function recover(w: World, id: string): Promise<InvocationStatus> {
  const worker = w.host.worker({ id: "rescuer", leaseMs: 500, pollMs: 20, concurrency: 1 });
  const deadline = Date.now() + 15_000;
  for (;;) {
    const status = (await invocation(w, id)).status;
    if (status !== "queued" && status !== "running") return status;
    if (Date.now() > deadline) throw new Error(`recovery did not move ${id} out of ${status}`);
    if ((await worker.runOnce()).length === 0) await sleep(20);
  }
}

async function checked(w: World, id: string, label: string): Promise<CheckReport> {
  const report = await w.check([id]);
  console.log(`[handoff-kill] ${w.target.kind} ${label}: ${summary(report)}`);
  expect(report.violations).toEqual([]);
  return report;
}

/** The provider's view: operations started (effect lines) and repeated starts it absorbed, per reference. */
function provider(w: World): { started: string[]; absorbed: string[] } {
  const lines = w.ledger.entries();
  return { started: lines.filter((l) => l.kind === "effect").map((l) => l.externalRef!), absorbed: lines.filter((l) => l.kind === "dedup").map((l) => l.externalRef!) };
}

async function resolveByOperator(w: World, id: string, ref: string): Promise<void> {
  const open = await w.host.reconcile.list(SCOPE, { status: "open" });
  expect(open).toEqual([expect.objectContaining({ invocationId: id, stepIndex: 0, reasonCode: "OUTCOME_AMBIGUOUS" })]);
  const resolved = await w.host.reconcile.resolve(SCOPE, open[0]!.reconciliationId, {
    outcome: "succeeded",
    externalRef: ref,
    note: `provider shows operation ${ref} started under this step's key`,
    by: OPERATOR,
  });
  expect(resolved).toMatchObject({ status: "succeeded", result: { externalRef: ref } });
  expect(await step0(w, id)).toMatchObject({ status: "succeeded", externalRef: ref });
}

for (const kind of STORE_KINDS) {
  describe.concurrent(`killed between accept and handoff on ${kind}`, () => {
    /** A test in a fresh world (store, ledger, host with the completion secret), closed afterwards. */
    const inWorld = (name: string, fn: (w: World) => Promise<void>): void =>
      void it(name, async () => {
        const w = await makeWorld(kind, { completionSecrets: [{ ...SCOPE, connector: CONNECTOR_ID, secrets: [SECRET] }] });
        try {
          await fn(w);
        } finally {
          await w.close();
        }
      });

    inWorld("(a) idempotent: recovery re-starts with the same key, gets the same reference, parks; the signed completion settles it once", async (w) => {
      const { id, ref } = await crashAtAccept(w, "lro1");
      expect(await recover(w, id)).toBe("parked");
      const parked = await invocation(w, id);
      expect(parked.leaseOwner).toBeUndefined();
      expect(parked.deadlineAt).toBeGreaterThan(Date.now());
      expect(await step0(w, id)).toMatchObject({ status: "handed_off", externalRef: ref, connector: CONNECTOR_ID });
      // One operation at the provider; the recovery's start was absorbed and answered with its reference.
      expect(provider(w)).toEqual({ started: [ref], absorbed: [ref] });

      const d = delivery("wh-a-1", ref);
      expect(await w.host.receiveCompletion(CONNECTOR_ID, d.headers, d.body)).toEqual({ disposition: "applied", invocationId: id, status: "succeeded", scope: SCOPE });
      // Repeats change nothing: the same delivery again, a re-sent one, the same through the library.
      await expect(w.host.receiveCompletion(CONNECTOR_ID, d.headers, d.body)).rejects.toMatchObject({ code: "WEBHOOK_REPLAYED" });
      const again = delivery("wh-a-2", ref);
      expect(await w.host.receiveCompletion(CONNECTOR_ID, again.headers, again.body)).toMatchObject({ disposition: "duplicate", invocationId: id });
      expect(await w.host.complete(SCOPE, completion(ref))).toMatchObject({ disposition: "duplicate" });

      const done = await invocation(w, id);
      expect(done).toMatchObject({ status: "succeeded", result: { start: { operation: ref, state: "done" } } });
      expect(await completions(w, ref)).toEqual([expect.objectContaining({ completionId: "wh-a-1", disposition: "applied", invocationId: id, stepIndex: 0 })]);
      expect(provider(w)).toEqual({ started: [ref], absorbed: [ref] });
      const report = await checked(w, id, "(a) idempotent");
      expect(report.byStatus).toEqual({ succeeded: 1 });
      expect(report.views.get(id)!.attempts.map((a) => a.state).sort()).toEqual(["HANDED_OFF", "UNKNOWN"]); // the dead worker's attempt, superseded
    });

    inWorld("(b) non-idempotent: recovery never calls again, reconciliation_required; the operator resolves with the provider's reference", async (w) => {
      const { id, ref } = await crashAtAccept(w, "lroOnce1");
      expect(await recover(w, id)).toBe("reconciliation_required");
      expect(await step0(w, id)).toMatchObject({ status: "unknown", reasonCode: "OUTCOME_AMBIGUOUS" });
      expect(provider(w)).toEqual({ started: [ref], absorbed: [] });
      const open = await checked(w, id, "(b) non-idempotent, before resolution");
      expect(open.views.get(id)!.recs).toEqual([expect.objectContaining({ status: "open", stepIndex: 0, reasonCode: "OUTCOME_AMBIGUOUS" })]);

      // The provider's completion matches nothing waiting (no handoff was ever recorded): refused, nothing written.
      const journalBefore = await journalTypes(w, id);
      const d = delivery("wh-b-1", ref);
      await expect(w.host.receiveCompletion(CONNECTOR_ID, d.headers, d.body)).rejects.toMatchObject({ code: "COMPLETION_UNKNOWN_REFERENCE" });
      expect(await completions(w, ref)).toEqual([]);
      expect(await journalTypes(w, id)).toEqual(journalBefore);
      expect((await invocation(w, id)).status).toBe("reconciliation_required");

      await resolveByOperator(w, id, ref);
      // A later delivery for the ended invocation agrees with the operator's resolution: kept as
      // evidence (docs/completions.md), the status stays, nothing is applied again.
      const late = delivery("wh-b-2", ref);
      await expect(w.host.receiveCompletion(CONNECTOR_ID, late.headers, late.body)).resolves.toMatchObject({ disposition: "evidence", status: "succeeded" });
      expect(await completions(w, ref)).toEqual([expect.objectContaining({ disposition: "evidence" })]);
      expect(await journalTypes(w, id)).toContain("completion.evidence");
      expect((await invocation(w, id)).status).toBe("succeeded");

      expect(provider(w)).toEqual({ started: [ref], absorbed: [] });
      const report = await checked(w, id, "(b) non-idempotent, resolved");
      expect(report.byStatus).toEqual({ succeeded: 1 });
      expect(report.views.get(id)!.recs).toEqual([expect.objectContaining({ status: "resolved", resolution: expect.objectContaining({ outcome: "succeeded", externalRef: ref, by: OPERATOR }) })]);
    });

    inWorld("(c) idempotent: a completion before the recovery is kept early and applied once, at the recovery's parking", async (w) => {
      const { id, ref } = await crashAtAccept(w, "lro1");
      // No worker has reclaimed it: the dead worker's call is still in flight as far as the store knows.
      const d = delivery("wh-c-1", ref);
      expect(await w.host.receiveCompletion(CONNECTOR_ID, d.headers, d.body)).toEqual({ disposition: "early", scope: SCOPE });
      await expect(w.host.receiveCompletion(CONNECTOR_ID, d.headers, d.body)).rejects.toMatchObject({ code: "WEBHOOK_REPLAYED" });
      expect(await w.host.complete(SCOPE, completion(ref, "wh-c-2"))).toEqual({ disposition: "duplicate" });
      expect(await completions(w, ref)).toEqual([expect.objectContaining({ completionId: "wh-c-1", disposition: "early" })]);
      expect((await completions(w, ref))[0]!.appliedAt).toBeUndefined();
      expect(await invocation(w, id)).toMatchObject({ status: "running", leaseOwner: "doomed" });
      expect(await step0(w, id)).toMatchObject({ status: "started" });

      // Recovery: same key, same reference; the parking transaction applies the stored completion.
      expect(await recover(w, id)).toBe("succeeded");
      expect(provider(w)).toEqual({ started: [ref], absorbed: [ref] });
      expect(await step0(w, id)).toMatchObject({ status: "succeeded", externalRef: ref, output: { operation: ref, state: "done" } });
      const stored = await completions(w, ref);
      expect(stored).toEqual([expect.objectContaining({ completionId: "wh-c-1", disposition: "applied", invocationId: id, stepIndex: 0, appliedAt: expect.any(Number) })]);
      const journal = await journalTypes(w, id);
      expect(journal.filter((t) => t.startsWith("completion."))).toEqual(["completion.early"]);
      expect(journal.filter((t) => t === "invocation.parked" || t === "invocation.succeeded")).toEqual(["invocation.parked", "invocation.succeeded"]);

      // Once more after the fact: absorbed.
      const again = delivery("wh-c-3", ref);
      expect(await w.host.receiveCompletion(CONNECTOR_ID, again.headers, again.body)).toMatchObject({ disposition: "duplicate" });
      expect(await completions(w, ref)).toHaveLength(1);
      const report = await checked(w, id, "(c) idempotent, early completion");
      expect(report.byStatus).toEqual({ succeeded: 1 });
    });

    inWorld("(c) non-idempotent: a completion before the recovery is kept early; the invocation never parks and goes to an operator", async (w) => {
      const { id, ref } = await crashAtAccept(w, "lroOnce1");
      expect(await w.host.complete(SCOPE, completion(ref, "wh-d-1"))).toEqual({ disposition: "early" });
      expect(await recover(w, id)).toBe("reconciliation_required");
      expect(provider(w)).toEqual({ started: [ref], absorbed: [] });
      // Kept, not applied, not lost: the record and its journal entry stay.
      expect(await completions(w, ref)).toEqual([expect.objectContaining({ completionId: "wh-d-1", disposition: "early" })]);
      expect((await completions(w, ref))[0]!.appliedAt).toBeUndefined();
      expect((await journalTypes(w, id)).filter((t) => t.startsWith("completion."))).toEqual(["completion.early"]);
      await checked(w, id, "(c) non-idempotent, early completion, before resolution");

      await resolveByOperator(w, id, ref);
      // The operator's resolution linked the early completion (it agreed) to the invocation.
      expect(await w.host.complete(SCOPE, completion(ref, "wh-d-2"))).toEqual({ disposition: "duplicate", invocationId: id });
      expect(await completions(w, ref)).toEqual([expect.objectContaining({ completionId: "wh-d-1", disposition: "applied", invocationId: id })]);
      const report = await checked(w, id, "(c) non-idempotent, early completion, resolved");
      expect(report.byStatus).toEqual({ succeeded: 1 });
    });
  });
}
