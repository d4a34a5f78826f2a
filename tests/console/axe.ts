/**
 * axe-core over a whole console page, every impact (minor and moderate as well as serious and
 * critical): the long-page suite holds the console to all of them.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Page } from "playwright-core";
import type { AxeViolation } from "../helpers/browser.js";

// Browser globals, used only inside page.evaluate callbacks (this project's tsconfig has no DOM lib).
interface Found extends Omit<AxeViolation, "nodes"> {
  nodes: Array<{ target: unknown[]; html: string; failureSummary?: string }>;
}
declare const window: { axe?: { run(ctx: unknown, opts: unknown): Promise<{ violations: Found[] }> } };
declare const document: unknown;

let source: string | undefined;

/**
 * Every violation axe-core finds on the page (its default rule set, less the rules named in
 * `skip`), with up to five nodes each.
 */
export async function axeViolations(page: Page, skip: readonly string[] = []): Promise<Found[]> {
  source ??= readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
  if (!(await page.evaluate(() => window.axe !== undefined))) await page.evaluate(source);
  const rules = Object.fromEntries(skip.map((id) => [id, { enabled: false }]));
  return page.evaluate(async (rules) => {
    const r = await window.axe!.run(document, { resultTypes: ["violations"], rules });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map((n) => ({ target: n.target, html: n.html.slice(0, 160), ...(n.failureSummary ? { failureSummary: n.failureSummary } : {}) })) }));
  }, rules);
}
