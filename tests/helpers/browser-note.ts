/** Vitest global setup: says once, in one line, when the browser suite cannot run here. */
import { BROWSER_AVAILABLE, BROWSER_REQUIRED, BROWSER_SKIPPED_LINE } from "./browser.js";

export default function setup(): void {
  if (!BROWSER_AVAILABLE && !BROWSER_REQUIRED) process.stdout.write(`${BROWSER_SKIPPED_LINE}\n`);
}
