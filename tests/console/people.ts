/**
 * People in the browser suites: a page per person (its own context, Content-Security-Policy
 * complaints collected), signing in with an API key, and the check every screen passes (axe-core:
 * no serious or critical violation; a screenshot kept).
 */
import type { Browser, BrowserContext, ConsoleMessage, Page } from "playwright-core";
import { expect } from "vitest";
import { screenshot, seriousViolations } from "../helpers/browser.js";

export interface People {
  /** What the pages' Content-Security-Policy refused (expected to stay empty). */
  readonly cspErrors: string[];
  page: (viewport?: { width: number; height: number }) => Promise<Page>;
  signIn: (page: Page, key: string) => Promise<void>;
  /** axe on the current screen, and a screenshot of it. */
  check: (page: Page, name: string) => Promise<void>;
  closeAll: () => Promise<void>;
}

export function people(browser: () => Browser, url: () => string): People {
  const contexts: BrowserContext[] = [];
  const cspErrors: string[] = [];
  return {
    cspErrors,
    async page(viewport = { width: 1280, height: 900 }) {
      const ctx = await browser().newContext({ viewport });
      contexts.push(ctx);
      const page = await ctx.newPage();
      page.on("console", (m: ConsoleMessage) => {
        if (/Content Security Policy|Refused to/i.test(m.text())) cspErrors.push(m.text());
      });
      return page;
    },
    async signIn(page, key) {
      await page.goto(`${url()}/console`);
      await page.getByLabel("API key").fill(key);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.waitForURL(/\/console\/(approvals|reconciliations|invocations)/);
    },
    async check(page, name) {
      const bad = await seriousViolations(page);
      expect(bad, `${name}: ${JSON.stringify(bad, null, 2)}`).toEqual([]);
      await screenshot(page, name);
    },
    async closeAll() {
      for (const c of contexts) await c.close().catch(() => {});
    },
  };
}
