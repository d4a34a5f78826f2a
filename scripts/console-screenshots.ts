/**
 * Walks the README's approval and reconciliation steps through the console, in a real Chromium,
 * on the demo config (`writ serve --config examples/writ.config.ts` in a fresh directory), and
 * writes the screenshots the README shows: docs/console-approvals.png and
 * docs/console-reconciliations.png.
 *
 * Run: npx tsx scripts/console-screenshots.ts   (needs /usr/bin/chromium)
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { launchChromium } from "../tests/helpers/browser.js";

const REPO = join(import.meta.dirname, "..");
const dir = mkdtempSync(join(tmpdir(), "writ-shots-"));
const child = spawn(process.execPath, [join(REPO, "bin", "writ.js"), "serve", "--config", join(REPO, "examples", "writ.config.ts"), "--port", "0", "--json", "--quiet"], { cwd: dir, stdio: ["ignore", "pipe", "inherit"] });
let out = "";
const banner = await new Promise<{ url: string; demo: { adminKey: string } }>((resolve, reject) => {
  child.stdout.setEncoding("utf8").on("data", (d: string) => {
    out += d;
    try {
      resolve(JSON.parse(out) as { url: string; demo: { adminKey: string } });
    } catch {
      /* not complete yet */
    }
  });
  child.on("close", (code) => reject(new Error(`writ serve exited ${code}`)));
});
const api = `${banner.url}/v1/spaces/default`;
const auth = { authorization: `Bearer ${banner.demo.adminKey}`, "content-type": "application/json" };
const submit = (action: string, params: object, idempotencyKey: string) =>
  fetch(`${api}/invocations`, { method: "POST", headers: auth, body: JSON.stringify({ action, actionVersion: "1", actor: { type: "agent", id: "support-bot" }, authorityRef: "support-bot", params, idempotencyKey }) });

const browser = await launchChromium();
try {
  await submit("payments.refund", { paymentId: "pay_2002", amount: 25000, currency: "EUR" }, "refund-pay_2002");
  await submit("messages.send", { to: "lost-reply@example.com", body: "Your refund is on its way." }, "msg-4004");
  const page = await (await browser.newContext({ viewport: { width: 1100, height: 800 } })).newPage();
  await page.goto(`${banner.url}/console`);
  await page.getByLabel("API key").fill(banner.demo.adminKey);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(/approvals/);
  await page.locator("[data-approval]").first().waitFor();
  await page.screenshot({ path: join(REPO, "docs", "console-approvals.png") });
  await page.getByLabel(/Note/).fill("customer called, refund is right");
  await page.getByRole("button", { name: "Approve" }).click();
  await page.getByRole("link", { name: /Reconciliations/ }).click();
  await page.locator("[data-reconciliation]").first().waitFor({ timeout: 15_000 });
  await page.getByLabel("It succeeded", { exact: true }).check();
  await page.getByLabel(/External reference/).fill("msg_1");
  await page.getByLabel(/Note/).fill("gateway log shows msg_1 delivered");
  await page.screenshot({ path: join(REPO, "docs", "console-reconciliations.png") });
  await page.getByRole("button", { name: "Resolve" }).click();
  await page.getByText("Resolved as succeeded").waitFor();
  const list = (await (await fetch(`${api}/invocations`, { headers: auth })).json()) as { items: Array<{ action: string; status: string }> };
  console.log(list.items.map((i) => `${i.action} ${i.status}`).join("\n"));
} finally {
  await browser.close();
  child.kill("SIGTERM");
  await new Promise((r) => child.on("close", r));
  rmSync(dir, { recursive: true, force: true });
}
