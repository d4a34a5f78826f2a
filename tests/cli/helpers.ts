/**
 * Runs the real `writ` binary (node bin/writ.js) in a temporary directory with a temporary config.
 * The workspace links the repository's node_modules so the config can import zod.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const REPO = resolve(fileURLToPath(new URL(".", import.meta.url)), "../..");
export const BIN = join(REPO, "bin", "writ.js");

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** The scope every workspace command runs in unless a test passes --tenant/--space. */
export const SCOPE_ENV = { WRIT_TENANT: "acme", WRIT_SPACE: "prod" };

/** A child environment without the caller's WRIT_* settings (tests must not depend on the shell). */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("WRIT_") && v !== undefined) env[k] = v;
  return { ...env, ...extra };
}

/** Runs `writ <args>` in `cwd` and collects its output and exit code. */
export function writ(cwd: string, args: string[], options: { env?: Record<string, string>; input?: string; timeoutMs?: number } = {}): Promise<RunResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd, env: childEnv({ ...SCOPE_ENV, ...options.env }), stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 30_000);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolvePromise({ code, signal, stdout, stderr });
    });
    child.stdin.end(options.input ?? "");
  });
}

/** Parses a command's --json stdout, failing with its stderr when it is not JSON. */
export function json<T = Record<string, unknown>>(r: RunResult): T {
  try {
    return JSON.parse(r.stdout) as T;
  } catch {
    throw new Error(`not JSON (exit ${r.code}):\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  }
}

const p = (rel: string): string => JSON.stringify(join(REPO, rel));

/**
 * A config with the demo's actions, fake provider and policies (no demo section): refunds up to
 * 5000 run, up to 100000 need an approval, above are denied; messages to lost-reply@example.com
 * end ambiguous.
 */
export const TEST_CONFIG = `
import { readFileSync } from "node:fs";
import { z } from "zod";
import { defineAction } from ${p("src/core/action.js")};
import { defineConfig } from ${p("src/config/define-config.js")};
import { demoConnectors } from ${p("examples/demo/connectors.js")};

export default defineConfig({
  store: { kind: "sqlite", path: ".writ/writ.db" },
  actions: [
    defineAction({ id: "payments.refund", version: "1", idempotent: true,
      params: z.strictObject({ paymentId: z.string(), amount: z.number().int().positive(), currency: z.string().length(3) }),
      steps: [{ name: "refund", connector: "demo-payments", operation: "refund" }] }),
    defineAction({ id: "messages.send", version: "1", idempotent: false,
      params: z.strictObject({ to: z.string(), body: z.string() }),
      steps: [{ name: "send", connector: "demo-messages", operation: "send" }] }),
  ],
  connectors: demoConnectors({ effectsFile: ".writ/provider.jsonl",
    ambiguousWhen: (connector, _op, input) => connector === "demo-messages" && input.to === "lost-reply@example.com" }),
  policy: { cedar: { policies: readFileSync(${p("examples/demo/policies.cedar")}, "utf8") } },
  worker: { pollMs: 100 },
});
`;

/** A fresh temporary workspace holding `writ.config.ts` (or `files` instead). Remove it with `cleanup`. */
export function workspace(files: Record<string, string> = { "writ.config.ts": TEST_CONFIG }): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "writ-cli-"));
  symlinkSync(join(REPO, "node_modules"), join(dir, "node_modules"), "dir");
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
