/**
 * How the MCP gateway names an agent's idempotency keys (docs/mcp.md, Idempotency). A module of
 * its own, free of the MCP SDK, so the console can find an agent's call by the key it sent.
 */

/** `_meta` key of a call's idempotency key (stable across the client's retries of one call). */
export const IDEMPOTENCY_META = "writ/idempotencyKey";

/**
 * The idempotency key Writ stores for a key an agent sent in `_meta["writ/idempotencyKey"]`:
 * `mcp:<key>`, so an agent's keys never meet keys that HTTP or CLI callers chose for the same
 * action (docs/mcp.md, Idempotency). Search for this form to find an agent's call by its key.
 * @example storedIdempotencyKey("refund-order-1234") // "mcp:refund-order-1234"
 */
export function storedIdempotencyKey(sent: string): string {
  return `mcp:${sent}`;
}
