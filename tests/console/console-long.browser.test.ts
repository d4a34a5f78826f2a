/**
 * The console on long pages, in a real Chromium: a fixture larger than the walk-through in
 * console.browser.test.ts builds — an invocation with a dozen steps, a retried attempt per step,
 * an approval and a reconciliation (so well over a hundred journal entries); thirty approvals, some
 * decided; twenty reconciliations, some resolved.
 *
 * Invariants, on every page of the fixture at 1280 px and at a 390 px phone width, with every
 * <details> open: axe-core (its default rules, every impact; at 390 px without color-contrast,
 * see VIEWPORTS) finds nothing, and the page does not scroll sideways.
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BROWSER_AVAILABLE, BROWSER_REQUIRED, launchChromium, screenshot } from "../helpers/browser.js";
import { axeViolations } from "./axe.js";
import { buildLongFixture, type LongFixture } from "./long-fixture.js";
import { SCOPE, startConsoleRig, type ConsoleRig } from "./rig.js";

const run = BROWSER_AVAILABLE || BROWSER_REQUIRED;

// Browser globals, used only inside page.evaluate callbacks (this project's tsconfig has no DOM lib).
interface Box {
  left: number;
  right: number;
  top: number;
  bottom: number;
  width: number;
}
interface Node {
  textContent: string | null;
  parentElement: Node | null;
  getClientRects(): ArrayLike<Box>;
  getBoundingClientRect(): Box;
}
declare const document: { documentElement: { scrollWidth: number; clientWidth: number }; querySelectorAll(s: string): ArrayLike<Node & { open: boolean }> & { forEach(f: (d: Node & { open: boolean }) => void): void } };
declare const getComputedStyle: (n: Node) => { overflowX: string; fontSize: string };
declare const window: { innerWidth: number };

/**
 * axe's rules each viewport skips. At 390 px color-contrast (axe's costliest rule: without it the
 * 390 px pass took 68 s instead of 97 s on a loaded machine) runs no new check: the phone styles (src/console/assets.ts, max-width 40rem) change
 * no colour, the h1 they shrink stays large bold text, and the stacked tables' column labels are
 * pseudo-elements, which the rule does not read. Every other rule (the layout-dependent ones
 * included: scrollable regions, target size) runs at both widths.
 */
const VIEWPORTS = [
  { name: "laptop", width: 1280, height: 900, skip: [] as string[] },
  { name: "phone", width: 390, height: 844, skip: ["color-contrast"] },
] as const;

describe.skipIf(!run)("console on long pages", () => {
  let rig: ConsoleRig;
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  let fx: LongFixture;

  async function signedIn(viewport: { width: number; height: number }): Promise<Page> {
    const ctx = await browser.newContext({ viewport });
    contexts.push(ctx);
    const page = await ctx.newPage();
    await page.goto(`${rig.url}/console`);
    await page.getByLabel("API key").fill(rig.keys.alice);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(/\/console\/approvals/);
    return page;
  }

  const pages = (): Array<[string, string]> => [
    ["approvals", "/console/approvals"],
    ["approvals-approved", "/console/approvals?status=approved"],
    ["approvals-denied", "/console/approvals?status=denied"],
    ["approvals-revoked", "/console/approvals?status=revoked"],
    ["approvals-all", "/console/approvals?status=all"],
    ["reconciliations", "/console/reconciliations"],
    ["reconciliations-resolved", "/console/reconciliations?status=resolved"],
    ["invocations", "/console/invocations"],
    ["invocation-long", `/console/spaces/prod/invocations/${fx.longId}`],
    ["invocation-succeeded", `/console/spaces/prod/invocations/${fx.succeededId}`],
    ["invocation-resolved", `/console/spaces/prod/invocations/${fx.resolvedId}`],
    ["health", "/console/health?verify=prod"],
  ];

  beforeAll(async () => {
    rig = await startConsoleRig();
    browser = await launchChromium();
    fx = await buildLongFixture(rig);
  });

  afterAll(async () => {
    for (const c of contexts) await c.close().catch(() => {});
    await browser?.close();
    await rig?.close();
  });

  for (const vp of VIEWPORTS) {
    it(`every page passes axe (${vp.skip.length === 0 ? "all rules" : `all rules but ${vp.skip.join(", ")}`}, all impacts) and does not scroll sideways at ${vp.width} px`, async () => {
      const page = await signedIn(vp);
      const found: Record<string, unknown> = {};
      for (const [name, path] of pages()) {
        await page.goto(`${rig.url}${path}`);
        // Open every <details> (journal data, chart numbers), as a reader would.
        await page.evaluate(() => document.querySelectorAll("details").forEach((d) => (d.open = true)));
        const bad = await axeViolations(page, vp.skip);
        if (bad.length > 0) found[name] = bad;
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
        if (overflow > 1) found[`${name} overflow`] = overflow;
        await screenshot(page, `long-${vp.name}-${name}`);
      }
      expect(found, JSON.stringify(found, null, 2)).toEqual({});
    }, 240_000);

    it(`lays out codes, ids and badges at ${vp.width} px: a reason code is one line box, no line of an id holds fewer than 3 characters, a badge is one unclipped box`, async () => {
      const page = await signedIn(vp);
      const found: Record<string, unknown> = {};
      for (const [name, path] of pages()) {
        await page.goto(`${rig.url}${path}`);
        const bad = await page.evaluate(() => {
          const out: string[] = [];
          const text = (n: Node): string => (n.textContent ?? "").trim();
          // Line boxes of an inline element: its client rects grouped by line (a <wbr> splits rects).
          const lines = (n: Node): number[] => {
            const byTop = new Map<number, { left: number; right: number }>();
            for (const r of Array.from(n.getClientRects())) {
              if (r.width < 1) continue;
              const k = Math.round(r.top);
              const l = byTop.get(k);
              byTop.set(k, l ? { left: Math.min(l.left, r.left), right: Math.max(l.right, r.right) } : { left: r.left, right: r.right });
            }
            return [...byTop.values()].map((l) => l.right - l.left);
          };
          const all = (s: string): Node[] => Array.from(document.querySelectorAll(s));
          for (const n of all(".code")) if (lines(n).length !== 1) out.push(`code ${text(n)} on ${lines(n).length} lines`);
          for (const n of all(".id")) {
            const char = parseFloat(getComputedStyle(n).fontSize) * 0.6;
            for (const w of lines(n)) if (w < 2.5 * char) out.push(`id ${text(n)} has a line of ${Math.round(w / char)} characters`);
          }
          for (const n of all(".badge")) {
            if (lines(n).length !== 1) out.push(`badge ${text(n)} split over lines`);
            const r = n.getBoundingClientRect();
            if (r.right > window.innerWidth + 0.5 || r.left < -0.5) out.push(`badge ${text(n)} outside the screen`);
            for (let p = n.parentElement; p; p = p.parentElement) {
              if (getComputedStyle(p).overflowX === "visible") continue;
              const c = p.getBoundingClientRect();
              if (r.left < c.left - 0.5 || r.right > c.right + 0.5) out.push(`badge ${text(n)} clipped by its container`);
            }
          }
          return out;
        });
        if (bad.length > 0) found[name] = [...new Set(bad)].slice(0, 8);
      }
      // An invocation id in the list takes one line, laptop or phone.
      await page.goto(`${rig.url}/console/invocations`);
      const tops = await page.getByTestId("invocation-rows").locator("td.lead .id").evaluateAll((ns: Node[]) => ns.map((n) => new Set(Array.from(n.getClientRects()).filter((r) => r.width >= 1).map((r) => Math.round(r.top))).size));
      expect(tops.length).toBeGreaterThan(0);
      if (tops.some((l) => l !== 1)) found["invocation ids in the list (lines)"] = tops;
      expect(found, JSON.stringify(found, null, 2)).toEqual({});
    });
  }

  it("says an unknown outcome's explanation and connector reply once per detail page; other mentions carry the reason code only", async () => {
    const page = await signedIn(VIEWPORTS[0]);
    const reply = "carrier accepted the parcel but sent no tracking number";
    const meaning = "could not tell whether the effect happened";
    const times = async (s: string): Promise<number> => (await page.locator("main").innerText()).split(s).length - 1;
    // Open: said in the notice at the top.
    await page.goto(`${rig.url}/console/spaces/prod/invocations/${fx.longId}`);
    expect(await page.getByTestId("unknown-outcome").innerText()).toContain(reply);
    expect(await times(reply)).toBe(1);
    expect(await times(meaning)).toBe(1);
    expect(await page.locator("main .code", { hasText: "OUTCOME_AMBIGUOUS" }).count()).toBeGreaterThan(2);
    // Resolved: said in its "Sent to reconciliation" entry.
    await page.goto(`${rig.url}/console/spaces/prod/invocations/${fx.resolvedId}`);
    expect(await page.locator("[data-type='reconciliation.opened']").innerText()).toContain("gateway closed the connection");
    expect(await times("gateway closed the connection after accepting the message")).toBe(1);
    expect(await times("could not tell whether the effect happened")).toBe(1);
  });

  it("shows a decided approval with when and how it was decided, never an expiry; a pending one with its expiry", async () => {
    const page = await signedIn(VIEWPORTS[0]);
    await page.goto(`${rig.url}/console/approvals?status=all`);
    const cards = await page.locator("[data-approval]").evaluateAll((ns: Array<Node & { getAttribute(n: string): string | null }>) => ns.map((n) => ({ status: n.getAttribute("data-status"), text: n.textContent ?? "" })));
    const decided = cards.filter((c) => c.status !== "pending");
    expect(decided.map((c) => c.status).sort()).toEqual(expect.arrayContaining(["approved", "denied", "revoked"]));
    for (const c of decided) {
      expect(c.text, c.status ?? "").not.toMatch(/expires/i);
      expect(c.text).toContain("Decided");
    }
    for (const c of cards.filter((x) => x.status === "pending")) expect(c.text).toMatch(/Expires/);
    // How: who decided, and for a revocation who revoked it and why (from the journal).
    await page.goto(`${rig.url}/console/approvals?status=revoked`);
    expect(await page.getByTestId("decided").first().innerText()).toMatch(/^Revoked by user:bob \d{4}-.* UTC — “asked by mistake”$/);
    await page.goto(`${rig.url}/console/approvals?status=denied`);
    expect(await page.getByTestId("decided").first().innerText()).toMatch(/^Denied by user:bob \d{4}-/);
  });

  it("counts invocations, not journal events, on the health page: finished = invocations in a final status; one waiting is not finished", async () => {
    const all = await rig.runtime.host.list(SCOPE, { limit: 1000 });
    const finished = all.filter((i) => ["succeeded", "failed", "denied", "cancelled"].includes(i.status)).length;
    const waiting = all.filter((i) => i.status === "reconciliation_required").length;
    // The fixture's events and invocations differ: retried and reconciled-then-resolved invocations.
    expect(all.some((i) => i.retryCount > 0 && i.status === "succeeded")).toBe(true);
    expect(waiting).toBeGreaterThan(0);
    const page = await signedIn(VIEWPORTS[0]);
    await page.goto(`${rig.url}/console/health`);
    const legends = await page.locator("figure.chart .legend").allInnerTexts();
    const total = (name: string): number => Number(new RegExp(`${name}: (\\d+)`).exec(legends.join(" "))?.[1] ?? NaN);
    expect(total("submitted")).toBe(all.length);
    expect(total("finished")).toBe(finished);
    expect(total("in reconciliation")).toBe(waiting);
    expect(total("succeeded") + total("failed") + total("denied") + total("cancelled")).toBe(finished);
  });
});
