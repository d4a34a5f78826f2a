/**
 * A long-page fixture for the console: more of everything than a walk-through makes. An invocation
 * with a dozen steps, a retried attempt per step, an approval, large params and a reconciliation
 * at its last step (well over a hundred journal entries); a twin of it that succeeds with a large
 * result; thirty approvals (three approved, three denied, two revoked, the rest waiting); twenty
 * reconciliations (three resolved).
 */
import { SCOPE, until, type ConsoleRig } from "./rig.js";

export interface LongFixture {
  /** The dozen-step invocation waiting in reconciliation. */
  longId: string;
  /** Its twin that succeeded. */
  succeededId: string;
  /** A message whose reconciliation was resolved. */
  resolvedId: string;
}

export const LONG_APPROVALS = 30;
export const LONG_RECONCILIATIONS = 20;

const bob = { actor: { type: "user" as const, id: "bob" }, roles: ["approve"] };
const olga = { type: "user" as const, id: "olga" };

const lines = Array.from({ length: 24 }, (_, i) => ({ sku: `SKU-${1000 + i}-BLUE-XL`, quantity: 1 + (i % 3), note: `line ${i}: gift wrap, leave at the side door if nobody answers` }));

export async function buildLongFixture(rig: ConsoleRig): Promise<LongFixture> {
  const { approvals, reconcile } = rig.runtime.host;
  const pendingOf = (ids: string[]) => async () => (await approvals.list(SCOPE, { status: "pending", limit: 500 })).filter((a) => ids.includes(a.invocationId ?? ""));
  const settled = (id: string, status: string) => async () => ((await rig.runtime.host.get(SCOPE, id))?.status === status ? true : undefined);

  // The long invocations: approved, then a dozen steps each retried once.
  const longId = (await rig.submit({ action: "orders.fulfil", params: { orderId: "lost_ord_4d1f0c9e2b7a46e8a3c5f1d2e9b8a7c6", amount: 9000, lines } })).invocationId;
  const succeededId = (await rig.submit({ action: "orders.fulfil", params: { orderId: "ord_77a1c3e5f7092b4d6e8f0a1c3e5f7092", amount: 9000, lines } })).invocationId;
  const asked = await until("approvals of the long invocations", async () => {
    const found = await pendingOf([longId, succeededId])();
    return found.length === 2 ? found : undefined;
  });
  for (const a of asked) await approvals.approve(SCOPE, a.approvalId, { ...bob, note: "checked the order with the customer" });

  // Thirty approvals: most wait; some are approved, denied or revoked.
  const refunds: string[] = [];
  for (let i = 0; i < LONG_APPROVALS; i++) refunds.push((await rig.submit({ action: "payments.refund", params: { paymentId: `pay_long_${i}`, amount: 6000 + i, currency: "EUR" } })).invocationId);
  const waiting = await until("thirty approvals", async () => {
    const found = await pendingOf(refunds)();
    return found.length === LONG_APPROVALS ? found : undefined;
  });
  for (const a of waiting.slice(0, 3)) await approvals.approve(SCOPE, a.approvalId, { ...bob, note: "fine" });
  for (const a of waiting.slice(3, 6)) await approvals.deny(SCOPE, a.approvalId, { ...bob, note: "not this one" });
  for (const a of waiting.slice(6, 8)) await approvals.revoke(SCOPE, a.approvalId, { ...bob, note: "asked by mistake" });

  // Twenty reconciliations, three resolved.
  const lost: string[] = [];
  for (let i = 0; i < LONG_RECONCILIATIONS; i++) lost.push((await rig.submit({ action: "messages.send", params: { to: "lost@example.com", body: `message ${i}` } })).invocationId);
  const open = await until("twenty reconciliations", async () => {
    const found = (await reconcile.list(SCOPE, { status: "open", limit: 500 })).filter((r) => lost.includes(r.invocationId));
    return found.length === LONG_RECONCILIATIONS ? found : undefined;
  });
  for (const r of open.slice(0, 3)) await reconcile.resolve(SCOPE, r.reconciliationId, { outcome: "succeeded", externalRef: "msg_gateway_resolved_0123456789abcdef", note: "gateway log shows it delivered", by: olga });

  await until("the long invocation in reconciliation", settled(longId, "reconciliation_required"), 30_000);
  await until("its twin succeeded", settled(succeededId, "succeeded"), 30_000);
  return { longId, succeededId, resolvedId: open[0]!.invocationId };
}
