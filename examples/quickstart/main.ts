/**
 * Quickstart: mint a decision, execute an action through the boundary against a local connector,
 * show that the decision is refused for any other request (its reason code) and that the same
 * request again is answered as a duplicate, and print the journal and its verification.
 *
 * Run: npx tsx examples/quickstart/main.ts   (`npm start` is the HTTP demo, see README.md)
 */
import { z } from "zod";
import {
  checkpointJournal,
  createBoundary,
  createKeyring,
  defineAction,
  defineConnector,
  generateSigningKey,
  memoryStore,
  readWholeJournal,
  requestDigest,
  signDecision,
  verifyJournalIn,
  type ActionRequest,
  type Authority,
} from "../../src/index.js";

const scope = { tenantId: "acme", spaceId: "payments" };

// A local connector: a pretend payment provider that honours idempotency keys.
const refunds = new Map<string, string>();
const payments = defineConnector({
  id: "payments",
  operations: {
    refund: ({ input, idempotencyKey }) => {
      const existing = refunds.get(idempotencyKey);
      const ref = existing ?? `re_${refunds.size + 1}`;
      refunds.set(idempotencyKey, ref);
      return { outcome: "success", externalRef: ref, output: { refunded: (input as { amount: number }).amount } };
    },
  },
});

const refund = defineAction({
  id: "payments.refund",
  version: "1",
  params: z.object({ paymentId: z.string(), amount: z.number().positive() }),
  idempotent: true,
  steps: [{ name: "refund", connector: "payments", operation: "refund" }],
});

const authority: Authority = {
  ...scope,
  authorityRef: "auth-support-bot",
  principal: { type: "agent", id: "support-bot" },
  grantor: { type: "user", id: "alice" },
  actions: ["payments.*"],
  constraints: { maxAmount: 500 },
  status: "active",
  createdAt: 0,
  updatedAt: 0,
};

async function main(): Promise<void> {
  const key = generateSigningKey({ kid: "policy-key-1" });
  const keyring = createKeyring([{ kid: key.kid, publicJwk: key.publicJwk }]);
  const store = memoryStore();
  const boundary = createBoundary({
    store,
    keyring,
    actions: [refund],
    connectors: [payments],
    authority: (_scope, ref) => (ref === authority.authorityRef ? authority : null),
    acceptedPolicyRefs: ["policy:v1"],
  });

  const request: ActionRequest = {
    ...scope,
    action: "payments.refund",
    actionVersion: "1",
    actor: { type: "agent", id: "support-bot" },
    authorityRef: authority.authorityRef,
    params: { paymentId: "pay_123", amount: 42 },
    idempotencyKey: "refund-pay_123",
  };

  // 1. A policy decision point (here: us) signs an ALLOW decision bound to the request digest.
  const decision = signDecision(key, { result: "ALLOW", requestDigest: requestDigest(request), ...scope, authorityRef: authority.authorityRef, policyRef: "policy:v1", reasons: ["refunds under 500 allowed"] });
  console.log("decision (JWS):", decision.slice(0, 60) + "…");

  // 2. The boundary checks it and runs the action once.
  const first = await boundary.execute(request, decision);
  console.log(`\nexecute       -> ${first.state} externalRef=${first.externalRef ?? "-"}`);

  // 3. The decision used for another request (here: another idempotency key) is refused: it is bound to the digest of one exact request.
  const other = { ...request, idempotencyKey: "refund-pay_123-again" };
  const misuse = await boundary.execute(other, decision);
  console.log(`other request -> ${misuse.state} ${misuse.reasonCode ?? ""} (${misuse.reason ?? ""})`);

  // 4. The same request under a fresh decision returns the original result: DUPLICATE, no second refund.
  const fresh = signDecision(key, { result: "ALLOW", requestDigest: requestDigest(request), ...scope, authorityRef: authority.authorityRef, policyRef: "policy:v1" });
  const dup = await boundary.execute(request, fresh);
  console.log(`fresh, same   -> ${dup.state} externalRef=${dup.externalRef ?? "-"} (refunds made: ${refunds.size})`);

  // 5. The journal: hash-chained, checkpointed, verified.
  await checkpointJournal(store, key, scope);
  console.log("\njournal:");
  for (const e of await readWholeJournal(store, scope)) {
    console.log(`  #${e.seq} ${e.type.padEnd(18)} ${e.hash.slice(0, 22)}… prev=${e.prevHash ? e.prevHash.slice(0, 14) + "…" : "none"}`);
  }
  const v = await verifyJournalIn(store, keyring, scope);
  console.log(`\njournal verification: ${v.ok ? "OK" : "FAILED"} (${v.entries} entries, ${v.checkpoints} checkpoint(s), head #${v.headSeq})`);
  for (const p of v.problems) console.log("  problem:", p.message);
  await store.close();
  if (!v.ok) process.exitCode = 1;
}

await main();
