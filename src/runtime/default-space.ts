/**
 * The one rule for the space a command or an MCP client works in when it names none (docs/cli.md,
 * docs/mcp.md): the named one, else the key's only space, else the tenant's only space, else the
 * config's demo space. The CLI, `writ mcp` and the `/mcp` route all ask {@link defaultSpace}.
 *
 * The tenant's spaces are the spaces its API keys name (a key for all spaces names none): Writ
 * keeps no other list of spaces.
 */
import type { WritConfig } from "../config/define-config.js";
import type { Store } from "../core/store.js";
import { readCommitted } from "../core/store.js";
import type { ApiKeyRecord } from "../core/types.js";

/** A space and where it came from, for messages (e.g. `--space`, `the key's only space`). */
export interface SpaceChoice {
  spaceId: string;
  from: string;
}

export interface DefaultSpaceInput {
  /** The space the caller named (a flag, a variable, a header), with where it came from. */
  named?: SpaceChoice | undefined;
  /** The caller's API key (MCP); the CLI has none. */
  key?: ApiKeyRecord | undefined;
  /** The spaces the tenant's API keys name; asked only when the rule gets that far. */
  tenantSpaces: () => Promise<string[]>;
  /** The config's demo space (`demo.spaceId`), if it has a demo section. */
  demoSpace?: string | undefined;
}

/** The space by the rule above, or null when nothing names one (the caller decides: a default or an error). */
export async function defaultSpace(i: DefaultSpaceInput): Promise<SpaceChoice | null> {
  if (i.named !== undefined) return i.named;
  const keyOnly = i.key !== undefined ? onlyOf(i.key.spaces) : undefined;
  if (keyOnly !== undefined) return { spaceId: keyOnly, from: "the API key's only space" };
  const tenantOnly = onlyOf(await i.tenantSpaces());
  if (tenantOnly !== undefined) return { spaceId: tenantOnly, from: "the tenant's only space (the one its API keys name)" };
  if (i.demoSpace !== undefined) return { spaceId: i.demoSpace, from: "the config's demo space" };
  return null;
}

function onlyOf(spaces: readonly string[]): string | undefined {
  const named = [...new Set(spaces.filter((s) => s !== "*"))];
  return named.length === 1 ? named[0] : undefined;
}

/** The spaces the tenant's unrevoked API keys name (a key for all spaces names none). */
export async function tenantSpacesOf(store: Store, tenantId: string): Promise<string[]> {
  const keys = await readCommitted(store, (tx) => tx.listApiKeys(tenantId));
  return keys.filter((k) => k.revokedAt === undefined).flatMap((k) => k.spaces);
}

/** The config's demo space (`withDemo(..., { spaceId })`), or undefined without a demo section. */
export function configDemoSpace(config: WritConfig): string | undefined {
  const id = (config as { demo?: { spaceId?: unknown } }).demo?.spaceId;
  return typeof id === "string" ? id : undefined;
}
