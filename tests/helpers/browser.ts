/**
 * Real-browser tests: Debian's Chromium driven by playwright-core. The suite runs when
 * /usr/bin/chromium (or WRIT_CHROMIUM) exists; with WRIT_BROWSER_TESTS=required (CI) a missing
 * browser fails the run instead of skipping it.
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";

export const CHROMIUM = process.env.WRIT_CHROMIUM ?? "/usr/bin/chromium";
export const BROWSER_REQUIRED = process.env.WRIT_BROWSER_TESTS === "required";
export const BROWSER_AVAILABLE = existsSync(CHROMIUM);
/** The one line `npm test` prints when the browser suite cannot run. */
export const BROWSER_SKIPPED_LINE = `[writ] browser suite (tests/console/*.browser.test.ts) did NOT run: ${CHROMIUM} is missing; install it with \`apt-get install -y chromium\` (set WRIT_BROWSER_TESTS=required to make a missing browser fail the run, as .ci/run does)`;

/** Where screenshots go (git-ignored). */
export const ARTIFACTS = join(import.meta.dirname, "..", "artifacts", "console");

export async function launchChromium(): Promise<Browser> {
  if (!BROWSER_AVAILABLE) throw new Error(`WRIT_BROWSER_TESTS=required but ${CHROMIUM} is missing: apt-get install -y chromium`);
  const { chromium } = await import("playwright-core");
  // playwright gives every launch a fresh temporary profile (its own --user-data-dir).
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
}

// Browser globals, used only inside page.evaluate callbacks (this project's tsconfig has no DOM lib).
declare const window: Record<string, unknown>;
declare const document: unknown;

const require = createRequire(import.meta.url);
let axeSource: string | null = null;

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: unknown[]; html: string }>;
}

/**
 * Runs axe-core inside the page (injected through the DevTools protocol, which the page's CSP
 * does not govern) and returns the serious and critical violations.
 */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  axeSource ??= readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
  const has = await page.evaluate(() => typeof window.axe !== "undefined");
  if (!has) await page.evaluate(axeSource);
  const result = await page.evaluate(async () => {
    const axe = window.axe as { run(ctx: unknown, opts: unknown): Promise<{ violations: AxeViolation[] }> };
    const r = await axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => ({ target: n.target, html: n.html.slice(0, 200) })) }));
  });
  return result.filter((v) => v.impact === "serious" || v.impact === "critical");
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}
