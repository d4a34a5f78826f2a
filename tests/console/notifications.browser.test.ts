/**
 * The console's notifications page in a real Chromium (docs/console.md, docs/notifications.md).
 * Invariants: axe-core finds no serious or critical violation on the page (nor with a delivery's
 * tries opened); the page lists the tenant's subscriptions (by URL origin only: a path may hold a
 * token) and each delivery with its tries; Redeliver sends the same event again; the page needs an
 * admin key over every space; the Content-Security-Policy blocked nothing.
 */
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../src/runtime/api-keys.js";
import { startReceiver, type Receiver } from "../host/notify-fixture.js";
import { BROWSER_AVAILABLE, BROWSER_REQUIRED, launchChromium } from "../helpers/browser.js";
import { people } from "./people.js";
import { SCOPE, startConsoleRig, until, type ConsoleRig } from "./rig.js";

const run = BROWSER_AVAILABLE || BROWSER_REQUIRED;

describe.skipIf(!run)("console notifications page in a real browser", () => {
  let rig: ConsoleRig;
  let browser: Browser;
  let ok: Receiver;
  let failing: Receiver;
  let adminAll: string;
  const who = people(() => browser, () => rig.url);
  const { page: personPage, signIn, check } = who;

  beforeAll(async () => {
    rig = await startConsoleRig();
    browser = await launchChromium();
    ok = await startReceiver();
    failing = await startReceiver();
    failing.answer = () => 503;
    const { crypto, random, clock } = rig.runtime.host.context.o;
    adminAll = (await createApiKey(rig.runtime.store, crypto, random, { tenantId: SCOPE.tenantId, roles: ["admin"], name: "root" }, clock.now())).key;
  });

  afterAll(async () => {
    await who.closeAll();
    await browser?.close();
    await rig?.close();
    await ok?.close();
    await failing?.close();
    expect(who.cspErrors).toEqual([]);
  });

  it("lists subscriptions and deliveries with their tries; Redeliver sends the event again; axe finds nothing serious", async () => {
    const n = rig.runtime.host.notifications;
    await n.create(SCOPE.tenantId, { url: `${ok.url}?token=s3cr3t-path`, events: ["invocation.ended"], description: "ops webhook" });
    await n.create(SCOPE.tenantId, { url: failing.url, events: ["invocation.ended"], format: "slack", description: "flaky chat" });
    await rig.submit({ action: "payments.refund", params: { paymentId: "pay_n1", amount: 1200, currency: "EUR" } });
    // The rig's started worker runs the dispatcher: wait for both subscriptions' first try.
    await until("both deliveries tried", async () => ((await n.deliveries(SCOPE.tenantId)).filter((d) => d.attempts > 0).length === 2 ? true : undefined), 15_000);

    const page = await personPage();
    await signIn(page, adminAll);
    await page.getByRole("link", { name: "Notifications" }).click();
    await page.waitForURL(/\/console\/notifications$/);
    const subs = page.getByTestId("subscriptions");
    await expect.poll(() => subs.textContent()).toContain("ops webhook");
    const subsText = (await subs.textContent()) ?? "";
    expect(subsText).toContain("flaky chat");
    expect(subsText).not.toContain("s3cr3t-path");
    const cards = page.locator("article.delivery");
    await expect.poll(() => cards.count()).toBe(2);
    await check(page, "notifications-01-page");

    const pending = page.locator('article.delivery[data-status="pending"]');
    await expect.poll(async () => (await pending.getByTestId("tries").textContent()) ?? "").toContain("503");
    await pending.getByText("Tries and body").click();
    await expect.poll(async () => (await pending.locator("table").textContent()) ?? "").toContain("the receiver answered 503");
    await check(page, "notifications-02-tries-open");
    expect(await pending.getByRole("button", { name: "Redeliver" }).count()).toBe(0);

    const delivered = page.locator('article.delivery[data-status="delivered"]');
    const before = ok.requests.length;
    await delivered.getByRole("button", { name: "Redeliver" }).click();
    await expect.poll(async () => (await page.getByRole("status").textContent()) ?? "").toContain("pending again");
    await until("the redelivery", () => (ok.requests.length > before ? true : undefined), 15_000);
    expect(ok.requests.at(-1)!.id).toBe(ok.requests[0]!.id);
    await check(page, "notifications-03-redelivered");

    await page.getByRole("link", { name: "dead" }).click();
    await page.waitForURL(/status=dead/);
    await expect.poll(async () => (await page.getByTestId("deliveries").textContent()) ?? "").toContain("No dead deliveries");
  });

  it("needs an admin key over every space", async () => {
    const page = await personPage();
    await signIn(page, rig.keys.alice);
    expect(await page.getByRole("link", { name: "Notifications" }).count()).toBe(0);
    const res = await page.goto(`${rig.url}/console/notifications`);
    expect(res?.status()).toBe(403);
    await check(page, "notifications-04-forbidden");
  });
});
