/**
 * The demo config `npm start` serves: embedded SQLite (.writ/writ.db), two actions on an
 * in-process fake provider, and a Cedar policy set where small refunds run, large ones need an
 * approval, and some requests are denied.
 *
 * Run: npm start   (= node bin/writ.js serve --config examples/writ.config.ts)
 * Walkthrough: README.md, "From npm start to an approval and a reconciliation".
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { z } from "zod";
import { defineAction } from "../src/core/action.js";
import { defineConfig } from "../src/config/define-config.js";
import { withDemo } from "../src/cli/demo.js";
import { demoConnectors } from "./demo/connectors.js";

/**
 * The demo's state directory: the repository's .writ/, wherever writ runs (an MCP client starts
 * `writ mcp` from a directory of its own). Relative paths in a config resolve against the config
 * file's directory (docs/cli.md), so "../.writ" is the repository's. $WRIT_DEMO_DIR puts it
 * elsewhere (the tests run the demo in directories of their own).
 */
const CONFIG_DIR = import.meta.dirname;
const state = (name: string): string => join(process.env.WRIT_DEMO_DIR ?? "../.writ", name);

/** Refund part of a payment. Idempotent: the provider dedupes by the step's idempotency key. */
const refund = defineAction({
  id: "payments.refund",
  version: "1",
  params: z.strictObject({
    paymentId: z.string().min(1),
    /** Integer cents: Cedar compares integers only. */
    amount: z.number().int().positive(),
    currency: z.string().length(3),
    reason: z.string().optional(),
  }),
  idempotent: true,
  steps: [{ name: "refund", connector: "demo-payments", operation: "refund" }],
});

/** Send a message. Not idempotent: an unknown outcome goes to a person, never retried blindly. */
const sendMessage = defineAction({
  id: "messages.send",
  version: "1",
  params: z.strictObject({ to: z.string().email(), body: z.string().min(1).max(2000) }),
  idempotent: false,
  steps: [{ name: "send", connector: "demo-messages", operation: "send" }],
});

export default withDemo(
  defineConfig({
    store: { kind: "sqlite", path: state("writ.db") },
    actions: [refund, sendMessage],
    connectors: demoConnectors({
      effectsFile: resolve(CONFIG_DIR, state("demo-provider.jsonl")),
      // The gateway "loses" its answer for messages to this address: the README's reconciliation.
      ambiguousWhen: (connector, _operation, input) => connector === "demo-messages" && (input as { to?: unknown }).to === "lost-reply@example.com",
    }),
    policy: {
      cedar: {
        policies: readFileSync(new URL("./demo/policies.cedar", import.meta.url), "utf8"),
        schema: readFileSync(new URL("./demo/schema.cedarschema", import.meta.url), "utf8"),
      },
    },
    keys: { dir: state("keys") },
    server: { port: 8787, host: "127.0.0.1" },
    worker: { concurrency: 4, pollMs: 250 },
    host: { timeoutMs: 10_000 },
  }),
  {
    // LOCAL DEMO ONLY: `writ serve` creates an admin API key for this tenant (.writ/demo-admin-key)
    // and the authority below. A real deployment has no demo section.
    tenantId: "demo",
    spaceId: "default",
    adminKeyFile: state("demo-admin-key"),
    agentKeyFile: state("demo-agent-key"),
    approverKeyFile: state("demo-approver-key"),
    authorities: [{ authorityRef: "support-bot", principal: { type: "agent", id: "support-bot" }, actions: ["payments.*", "messages.*"] }],
    sampleRequest: {
      action: "payments.refund",
      actionVersion: "1",
      actor: { type: "agent", id: "support-bot" },
      authorityRef: "support-bot",
      params: { paymentId: "pay_1001", amount: 1200, currency: "EUR" },
      idempotencyKey: "refund-pay_1001",
    },
  },
);
