/**
 * The console end to end in a real Chromium (Debian's package, driven by playwright-core): one
 * browser launch and one server for the file. Invariants checked on every screen: axe-core finds
 * no serious or critical violation, and the page's Content-Security-Policy blocked nothing the
 * console itself serves (no inline script or style anywhere).
 */
import type { Browser, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BROWSER_AVAILABLE, BROWSER_REQUIRED, launchChromium } from "../helpers/browser.js";
import { people } from "./people.js";
import { SCOPE, startConsoleRig, until, type ConsoleRig } from "./rig.js";

const run = BROWSER_AVAILABLE || BROWSER_REQUIRED;

// Browser globals, used only inside page.evaluate callbacks (this project's tsconfig has no DOM lib).
declare const window: Record<string, unknown>;
declare const document: { cookie: string; activeElement: { textContent: string | null; id: string } | null; documentElement: { scrollWidth: number; clientWidth: number } };
interface El {
  querySelectorAll(s: string): { forEach(f: (b: { removeAttribute(n: string): void }) => void): void };
}

// Small waits over playwright-core locators (vitest's expect has no web-first matchers).
const text = async (l: Locator): Promise<string> => (await l.first().textContent({ timeout: 10_000 })) ?? "";
async function sees(l: Locator, s: string | RegExp, timeout = 10_000): Promise<void> {
  if (typeof s === "string") await expect.poll(() => text(l), { timeout }).toContain(s);
  else await expect.poll(() => text(l), { timeout }).toMatch(s);
}
async function hasText(l: Locator, s: string): Promise<void> {
  await expect.poll(async () => (await text(l)).trim(), { timeout: 10_000 }).toBe(s);
}
async function visible(l: Locator, timeout = 10_000): Promise<void> {
  await l.first().waitFor({ state: "visible", timeout });
}
async function count(l: Locator, n: number): Promise<void> {
  await expect.poll(() => l.count(), { timeout: 10_000 }).toBe(n);
}
async function title(page: Page, re: RegExp): Promise<void> {
  await expect.poll(() => page.title(), { timeout: 10_000 }).toMatch(re);
}

describe.skipIf(!run)("console in a real browser", () => {
  let rig: ConsoleRig;
  let browser: Browser;
  const who = people(() => browser, () => rig.url);
  const { cspErrors } = who;
  const { page: personPage, signIn, check } = who;

  const pendingApproval = (invocationId: string) =>
    until(`approval of ${invocationId}`, async () => (await rig.runtime.host.approvals.list(SCOPE, { status: "pending" })).find((a) => a.invocationId === invocationId));
  const statusOf = async (invocationId: string) => (await rig.runtime.host.get(SCOPE, invocationId))?.status;

  beforeAll(async () => {
    rig = await startConsoleRig();
    browser = await launchChromium();
  });

  afterAll(async () => {
    await who.closeAll();
    await browser?.close();
    await rig?.close();
  });

  it("signs in with an API key (a wrong key is refused with a message), lands on the inbox", async () => {
    const page = await personPage();
    await page.goto(`${rig.url}/console/approvals`);
    await expect.poll(() => page.url()).toContain("/console/sign-in");
    await check(page, "01-sign-in");
    await page.getByLabel("API key").fill("writ_notakey_xxxxxxxxxxxxxxxxxxxxxxxx");
    await page.getByRole("button", { name: "Sign in" }).click();
    await sees(page.getByRole("alert"), "not valid");
    await page.getByLabel("API key").fill(rig.keys.alice);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(/\/console\/approvals$/);
    await hasText(page.getByTestId("who"), "user:alice");
    const cookies = await page.context().cookies();
    const session = cookies.find((c) => c.name === "writ_console");
    expect(session?.httpOnly).toBe(true);
    expect(session?.sameSite).toBe("Strict");
    // HttpOnly: the page's own script cannot read it.
    expect(await page.evaluate(() => document.cookie)).not.toContain("writ_console=");
  });

  it("approves a pending approval (params with <script> and an onerror payload render as text) and watches the invocation run", async () => {
    const { invocationId } = await rig.submit({
      action: "payments.refund",
      params: { paymentId: "<script>window.__xss=1</script>", amount: 9000, currency: "EUR", cardToken: "tok_live_secret", memo: '"><img src=x onerror="window.__xss=2">' },
    });
    const approval = await pendingApproval(invocationId);
    const page = await personPage();
    await signIn(page, rig.keys.alice);
    const card = page.locator(`[data-approval="${approval.approvalId}"]`);
    await visible(card);
    // Escaped: the payloads are text, no element came from them, no handler ran.
    await sees(card.locator("pre.json"), "<script>window.__xss=1</script>");
    // (JSON shows the quotes escaped: \"><img ...>)
    await sees(card.locator("pre.json"), '\\"><img src=x onerror=\\"window.__xss=2\\">');
    await sees(card.locator("pre.json"), "[REDACTED]");
    expect(await text(card.locator("pre.json"))).not.toContain("tok_live_secret");
    expect(await page.locator("main img, main script").count()).toBe(0);
    expect(await page.evaluate(() => window.__xss)).toBeUndefined();
    await visible(card.getByText("refund-large"));
    await hasText(card.getByTestId("quorum"), "0 of 1");
    await title(page, /^\(\d+\) Approvals/);
    await check(page, "02-approvals-inbox");

    await card.getByLabel(/Note/).fill("customer called; refund is right");
    await card.getByRole("button", { name: "Approve" }).click();
    await sees(page.getByRole("status").first(), "Approved");

    // Watch it run: the detail page updates itself (server-sent events) until succeeded.
    await page.goto(`${rig.url}/console/spaces/prod/invocations/${invocationId}`);
    await page.evaluate(() => (window.__stay = 1));
    await sees(page.getByTestId("status"), "succeeded", 15_000);
    expect(await page.evaluate(() => window.__stay)).toBe(1); // no reload happened
    const timeline = page.getByTestId("timeline");
    await sees(timeline, "Submitted");
    await sees(timeline, "Evaluated: approval required");
    await sees(timeline, "Approval granted");
    await sees(timeline, "customer called; refund is right");
    await sees(timeline, "Evaluated: ALLOW, decision consumed");
    await sees(timeline, "Attempt succeeded at step 0 (refund)");
    await sees(page.locator("table.journal tbody tr").first(), "sha256:");
    expect(await page.evaluate(() => window.__xss)).toBeUndefined();
    await check(page, "03-invocation-detail");
    expect(await statusOf(invocationId)).toBe("succeeded");
  });

  it("shows a new approval live (no reload, counter in the title, announced) and denies it", async () => {
    const page = await personPage();
    await signIn(page, rig.keys.bob);
    await page.evaluate(() => (window.__stay = 1));
    const before = await page.locator("[data-approval]").count();
    const { invocationId } = await rig.submit({ action: "payments.refund", params: { paymentId: "pay_live", amount: 7777, currency: "EUR" } });
    const approval = await pendingApproval(invocationId);
    const card = page.locator(`[data-approval="${approval.approvalId}"]`);
    await visible(card, 10_000);
    expect(await page.locator("[data-approval]").count()).toBe(before + 1);
    expect(await page.evaluate(() => window.__stay)).toBe(1);
    await title(page, new RegExp(`^\\(${before + 1}\\) Approvals`));
    await sees(page.locator("#announcer"), "new approval");
    await card.getByLabel(/Note/).fill("not this one");
    await card.getByRole("button", { name: "Deny" }).click();
    await sees(page.getByRole("status").first(), "Denied");
    await until("denied", async () => ((await statusOf(invocationId)) === "denied" ? true : undefined));
    await page.goto(`${rig.url}/console/approvals?status=denied`);
    await sees(page.locator(`[data-approval="${approval.approvalId}"]`), "not this one");
  });

  it("refuses a vote on one's own request: the buttons are disabled and say why; a forced submit is refused", async () => {
    const { invocationId } = await rig.submit({ action: "payments.refund", params: { paymentId: "pay_carol", amount: 8000, currency: "EUR" }, actor: { type: "user", id: "carol" }, authorityRef: "carol" });
    const approval = await pendingApproval(invocationId);
    const page = await personPage();
    await signIn(page, rig.keys.carol);
    const card = page.locator(`[data-approval="${approval.approvalId}"]`);
    const approve = card.getByRole("button", { name: "Approve" });
    expect(await approve.isDisabled()).toBe(true);
    expect(await card.getByRole("button", { name: "Deny" }).isDisabled()).toBe(true);
    await sees(card.locator(".why"), "four-eyes");
    // The reason is the button's description for a screen reader.
    const describedBy = await approve.getAttribute("aria-describedby");
    await sees(page.locator(`#${describedBy}`), "another person must approve");
    await check(page, "04-four-eyes");
    // Forced past the disabled button: the server refuses it all the same.
    await card.evaluate((el: El) => el.querySelectorAll("[disabled]").forEach((b) => b.removeAttribute("disabled")));
    await approve.click();
    await sees(page.getByRole("status").or(page.getByRole("alert")).first(), "cannot approve or deny its own request");
    expect((await rig.runtime.host.approvals.get(SCOPE, approval.approvalId))?.status).toBe("pending");
  });

  it("resolves a reconciliation that appeared live in the queue", async () => {
    const page = await personPage();
    await signIn(page, rig.keys.olga);
    await page.waitForURL(/reconciliations/);
    const { invocationId } = await rig.submit({ action: "messages.send", params: { to: "lost@example.com", body: "your refund is on its way" } });
    const card = page.locator("[data-reconciliation]").filter({ hasText: invocationId });
    await visible(card, 10_000);
    await sees(card, "OUTCOME_AMBIGUOUS");
    await sees(card.getByTestId("reason"), "gateway closed the connection");
    await check(page, "05-reconciliations");
    await card.getByLabel("It succeeded", { exact: true }).check();
    await card.getByLabel(/External reference/).fill("msg_gateway_42");
    await card.getByLabel(/Note/).fill("gateway log shows it delivered");
    await card.getByRole("button", { name: "Resolve" }).click();
    await sees(page.getByRole("status").first(), "Resolved as succeeded");
    expect(await statusOf(invocationId)).toBe("succeeded");
    await page.goto(`${rig.url}/console/spaces/prod/invocations/${invocationId}`);
    await sees(page.getByTestId("timeline"), "Reconciliation resolved as succeeded");
    await sees(page.getByTestId("timeline"), "by user:olga");
  });

  it("refreshes a page that a change overtook before its live stream connected", async () => {
    // The race the first live event must cover: the page is rendered, then a reconciliation opens,
    // then the stream connects. Its first event already carries the new state; the page must still
    // refresh (it compares with the signature it was rendered at).
    const page = await personPage();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    await page.route("**/console/events", async (route) => {
      await held;
      await route.continue();
    });
    await signIn(page, rig.keys.olga);
    await page.waitForURL(/reconciliations/);
    const { invocationId } = await rig.submit({ action: "messages.send", params: { to: "lost@example.com", body: "sent while the stream was held" } });
    await until("reconciliation open", async () => (await rig.runtime.host.reconcile.list(SCOPE, { status: "open" })).find((r) => r.invocationId === invocationId));
    expect(await page.locator("[data-reconciliation]").filter({ hasText: invocationId }).count()).toBe(0);
    release();
    await visible(page.locator("[data-reconciliation]").filter({ hasText: invocationId }), 10_000);
  });

  it("lists invocations with filters, search and cursor pages", async () => {
    for (let i = 0; i < 27; i++) await rig.submit({ action: "payments.refund", params: { paymentId: `pay_bulk_${i}`, amount: 100 + i, currency: "EUR" }, idempotencyKey: `bulk-${i}` });
    await until("bulk done", async () => ((await rig.runtime.host.list(SCOPE, { status: "queued" })).length === 0 ? true : undefined));
    const page = await personPage();
    await signIn(page, rig.keys.alice);
    await page.getByRole("link", { name: "Invocations" }).click();
    await page.getByLabel("Status").selectOption("succeeded");
    await page.getByLabel("Action").selectOption("payments.refund");
    await page.getByRole("button", { name: "Apply" }).click();
    const rows = page.getByTestId("invocation-rows").locator("tr");
    await count(rows, 25);
    const firstPage = await rows.allTextContents();
    expect(firstPage.every((r) => r.includes("succeeded") && r.includes("payments.refund"))).toBe(true);
    await check(page, "06-invocations");
    await page.getByRole("link", { name: /Older invocations/ }).click();
    const second = await page.getByTestId("invocation-rows").locator("tr").allTextContents();
    expect(second.length).toBeGreaterThan(0);
    expect(second.some((r) => firstPage.includes(r))).toBe(false);
    await page.getByLabel(/Search/).fill("bulk-7");
    await page.getByRole("button", { name: "Apply" }).click();
    await count(page.getByTestId("invocation-rows").locator("tr"), 1);
    await sees(page.getByTestId("invocation-rows"), "bulk-7");
    await page.goto(`${rig.url}/console/invocations?actor=agent:nobody`);
    await visible(page.getByText("No invocations match."));
  });

  it("shows health (connectors, leases, journal, archive lag) with charts, and verifies the journal", async () => {
    const page = await personPage();
    await signIn(page, rig.keys.alice);
    await page.getByRole("link", { name: "Health" }).click();
    await sees(page.getByTestId("connectors"), "payments");
    await count(page.locator("figure.chart svg[role=img]"), 2);
    await sees(page.locator("figure.chart").first(), /succeeded: [1-9]/);
    // The rig's worker archives in the background too (every minute, entries kept live 30 days), so
    // what the page shows first depends on how long the suite took to get here: either state, with
    // the lag it has.
    await sees(page.getByTestId("archive-lag"), /(nothing archived yet|archived through seq \d+) \(lag \d+ entr/);
    await sees(page.getByTestId("oldest-live"), /seq \d+ at/);
    // Archived and pruned now: the lag and the oldest live entry follow, and the journal (archive
    // plus database) still verifies from the console.
    const [run] = await rig.runtime.host.archive.runOnce([SCOPE], { keepLiveMs: 0 });
    const state = (await rig.runtime.store.transact((tx) => tx.journalScopes(1000))).find((x) => x.tenantId === SCOPE.tenantId && x.spaceId === SCOPE.spaceId)!;
    expect(state.firstSeq, "archived entries were pruned from the database").toBeGreaterThan(1);
    await page.reload();
    // Other tests' invocations may still add entries: the watermark is at least this run's.
    const shown = Number(/archived through seq (\d+)/.exec(await page.getByTestId("archive-lag").innerText())?.[1] ?? "0");
    expect(shown).toBeGreaterThanOrEqual(run!.archivedThrough);
    await sees(page.getByTestId("oldest-live"), /seq \d+ at/);
    const oldest = Number(/seq (\d+) at/.exec(await page.getByTestId("oldest-live").innerText())?.[1] ?? "0");
    expect(oldest).toBeGreaterThan(1);
    await page.getByRole("button", { name: "Verify the journal of prod" }).click();
    await sees(page.getByTestId("verify-result"), "The journal verifies.");
    await check(page, "07-health");
  });

  it("reads well on a phone and works from the keyboard", async () => {
    const page = await personPage({ width: 390, height: 844 });
    await signIn(page, rig.keys.alice);
    await page.goto(`${rig.url}/console/approvals?status=all`);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow).toBeLessThanOrEqual(1);
    await check(page, "08-phone-approvals");
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Skip to content");
    await page.keyboard.press("Enter");
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("main");
  });

  it("refuses a POST without the CSRF token (nothing changes)", async () => {
    const { invocationId } = await rig.submit({ action: "payments.refund", params: { paymentId: "pay_csrf", amount: 6000, currency: "EUR" } });
    const approval = await pendingApproval(invocationId);
    const page = await personPage();
    await signIn(page, rig.keys.alice);
    const status = await page.evaluate(async (id) => {
      const r = await fetch(`/console/spaces/prod/approvals/${id}/vote`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "verdict=approve&note=forged" });
      return r.status;
    }, approval.approvalId);
    expect(status).toBe(403);
    expect((await rig.runtime.host.approvals.get(SCOPE, approval.approvalId))?.status).toBe("pending");
  });

  it("signs out: the session ends and its cookie no longer works", async () => {
    const page = await personPage();
    await signIn(page, rig.keys.alice);
    const cookie = (await page.context().cookies()).find((c) => c.name === "writ_console")!;
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(/sign-in/);
    expect((await page.context().cookies()).find((c) => c.name === "writ_console")).toBeUndefined();
    const res = await fetch(`${rig.url}/console/approvals`, { headers: { cookie: `writ_console=${cookie.value}` }, redirect: "manual" });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toContain("/console/sign-in");
    await page.goto(`${rig.url}/console/approvals`);
    await expect.poll(() => page.url()).toContain("/console/sign-in");
  });

  it("the Content-Security-Policy blocked nothing the console serves", () => {
    expect(cspErrors).toEqual([]);
  });
});
