/**
 * The demo's outside world: an in-process fake payment provider and a fake message gateway. Every
 * effect they perform is appended to a JSONL file (default `.writ/demo-provider.jsonl`), so you can
 * see what really happened at the "provider" — exactly what an operator checks before resolving a
 * reconciliation. The gateway can be told to lose its answer for some inputs: it performs the
 * effect, then answers ambiguously, as a real gateway does when the connection drops after the
 * request went out.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { defineConnector, type Connector, type ConnectorContext, type ConnectorReply } from "../../src/core/action.js";
import type { Json } from "../../src/core/types.js";

/** One effect the fake provider performed. */
export interface DemoEffect {
  at: string;
  connector: string;
  operation: string;
  /** The step idempotency key Writ sent: the provider's dedupe key. */
  idempotencyKey: string;
  /** The provider's reference for the effect (what `--external-ref` takes when you reconcile). */
  ref: string;
  input: Json;
  /** What the provider answered: "success", or "ambiguous" when the answer was lost. */
  answered: "success" | "ambiguous";
}

export interface DemoProviderOptions {
  /** @defaultValue ".writ/demo-provider.jsonl" (relative to the working directory) */
  effectsFile?: string;
  /** Perform the effect but answer ambiguously when this returns true. @defaultValue never */
  ambiguousWhen?: (connector: string, operation: string, input: Json) => boolean;
}

/** Every effect recorded in `file`, oldest first. */
export function readEffects(file: string): DemoEffect[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim().length > 0)
    .map((l) => JSON.parse(l) as DemoEffect);
}

/** The fake provider's two connectors: `demo-payments` (refund) and `demo-messages` (send). */
export function demoConnectors(options: DemoProviderOptions = {}): Connector[] {
  const file = resolve(options.effectsFile ?? ".writ/demo-provider.jsonl");
  const ambiguous = options.ambiguousWhen ?? (() => false);

  function perform(connector: string, prefix: string, ctx: ConnectorContext): ConnectorReply {
    const effects = readEffects(file);
    // A real provider dedupes by idempotency key: the same key never causes a second effect.
    const earlier = effects.find((e) => e.connector === connector && e.idempotencyKey === ctx.idempotencyKey);
    if (earlier) return { outcome: "success", externalRef: earlier.ref, output: { ref: earlier.ref, deduplicated: true } };
    const ref = `${prefix}_${effects.filter((e) => e.connector === connector).length + 1}`;
    const lost = ambiguous(connector, ctx.operation, ctx.input);
    const effect: DemoEffect = { at: new Date().toISOString(), connector, operation: ctx.operation, idempotencyKey: ctx.idempotencyKey, ref, input: ctx.input, answered: lost ? "ambiguous" : "success" };
    mkdirSync(dirname(file), { recursive: true });
    appendFileSync(file, JSON.stringify(effect) + "\n");
    if (lost) return { outcome: "ambiguous", reason: `${connector}: the connection dropped after the request was sent; the effect may or may not have happened` };
    return { outcome: "success", externalRef: ref, output: { ref } };
  }

  return [
    defineConnector({ id: "demo-payments", operations: { refund: (ctx) => perform("demo-payments", "re", ctx) } }),
    defineConnector({ id: "demo-messages", operations: { send: (ctx) => perform("demo-messages", "msg", ctx) } }),
  ];
}
