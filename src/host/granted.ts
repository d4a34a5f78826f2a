/**
 * The actions an actor may ask for, each with the authority it would act under: the actions the
 * host defines that one of the actor's active, unexpired authorities covers. The MCP gateway offers
 * them as tools; the HTTP API lists them (`GET …/actions`) for the client's tool adapters.
 */
import type { ActionDefinition } from "../core/action.js";
import { globsCover } from "../core/glob.js";
import type { Actor, Authority, Scope } from "../core/types.js";
import type { Host } from "./host.js";

export interface GrantedAction {
  action: ActionDefinition<unknown>;
  /** The first (by authorityRef) active authority of the actor that covers the action. */
  authority: Authority;
}

function sameActor(a: Actor, b: Actor): boolean {
  return a.type === b.type && a.id === b.id;
}

/** The actions `actor` holds an authority for in `scope`, in the host's order of actions. */
export async function grantedActions(host: Host, scope: Scope, actor: Actor): Promise<GrantedAction[]> {
  const now = host.context.o.clock.now();
  const mine = (await host.authorities.list(scope, { limit: 1000 }))
    .filter((a) => sameActor(a.principal, actor) && a.status === "active" && (a.expiresAt === undefined || a.expiresAt > now))
    .sort((a, b) => (a.authorityRef < b.authorityRef ? -1 : a.authorityRef > b.authorityRef ? 1 : 0));
  const out: GrantedAction[] = [];
  for (const action of host.context.actions.values()) {
    const authority = mine.find((a) => globsCover(a.actions, action.id));
    if (authority) out.push({ action, authority });
  }
  return out;
}
