/**
 * Authorities in the store (docs/approvals.md, Authorities): standing grants under which actors act. Created, suspended,
 * reinstated, revoked (final); expiry is a field. Given to policy at evaluation and checked again by
 * the boundary at execution. Every change is journaled with who made it.
 */
import { WritError } from "../core/errors.js";
import { globsCover } from "../core/glob.js";
import { appendJournal, draft } from "../core/journal.js";
import { readCommitted, type ListOptions } from "../core/store.js";
import type { Actor, Authority, Json, Scope } from "../core/types.js";
import { checkActor } from "../core/validate.js";
import type { HostContext } from "./context.js";

export interface AuthorityInput {
  authorityRef: string;
  principal: Actor;
  grantor: Actor;
  actions: string[];
  constraints?: { [k: string]: Json };
  expiresAt?: number;
}

export interface Authorities {
  create(scope: Scope, input: AuthorityInput): Promise<Authority>;
  get(scope: Scope, authorityRef: string): Promise<Authority | null>;
  list(scope: Scope, opts?: ListOptions): Promise<Authority[]>;
  suspend(scope: Scope, authorityRef: string, by: Actor): Promise<Authority>;
  reinstate(scope: Scope, authorityRef: string, by: Actor): Promise<Authority>;
  /** Final: a revoked authority is never reinstated. */
  revoke(scope: Scope, authorityRef: string, by: Actor): Promise<Authority>;
}

function fail(msg: string): never {
  throw new WritError("INVALID_ARGUMENT", msg);
}

function checkInput(i: AuthorityInput): void {
  if (typeof i !== "object" || i === null) fail("an authority needs { authorityRef, principal, grantor, actions }");
  if (typeof i.authorityRef !== "string" || !/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,199}$/.test(i.authorityRef)) fail("authorityRef must be 1-200 characters of letters, digits, _ . : -");
  const p = [...checkActor(i.principal, "principal"), ...checkActor(i.grantor, "grantor")];
  if (p.length > 0) fail(p.join("; "));
  if (!Array.isArray(i.actions) || i.actions.length === 0 || !i.actions.every((a) => typeof a === "string" && a.length > 0 && a.length <= 200)) fail("actions must be a non-empty list of action ids or globs");
  if (i.constraints !== undefined && (typeof i.constraints !== "object" || i.constraints === null || Array.isArray(i.constraints))) fail("constraints must be an object");
  if (i.expiresAt !== undefined && !Number.isSafeInteger(i.expiresAt)) fail("expiresAt must be epoch milliseconds");
}

/** True when `action` matches one of the authority's glob patterns (`*` matches any run of characters). */
export function authorityCovers(a: Authority, action: string): boolean {
  return globsCover(a.actions, action);
}

export function createAuthorities(ctx: HostContext): Authorities {
  const { o } = ctx;
  async function change(scope: Scope, ref: string, by: Actor, to: Authority["status"], allowed: Authority["status"][]): Promise<Authority> {
    const problems = checkActor(by, "by");
    if (problems.length > 0) fail(problems.join("; "));
    return o.store.transact(async (tx) => {
      const cur = await tx.getAuthority(scope, ref);
      if (!cur) throw new WritError("NOT_FOUND", `no authority ${ref} in this scope`);
      if (!allowed.includes(cur.status)) throw new WritError("INVALID_STATE", `authority ${ref} is ${cur.status}; cannot become ${to}`);
      const now = o.clock.now();
      const next: Authority = { ...cur, status: to, updatedAt: now };
      await tx.putAuthority(scope, next);
      await appendJournal(tx, o.crypto, scope, [draft(`authority.${to}`, [ref, now], now, { authorityRef: ref }, { from: cur.status, by: { type: by.type, id: by.id } })]);
      return next;
    });
  }
  return {
    async create(scope, input) {
      checkInput(input);
      return o.store.transact(async (tx) => {
        if (await tx.getAuthority(scope, input.authorityRef)) throw new WritError("CONFLICT", `authority ${input.authorityRef} already exists in this scope`);
        const now = o.clock.now();
        const a: Authority = {
          ...scope,
          authorityRef: input.authorityRef,
          principal: { type: input.principal.type, id: input.principal.id },
          grantor: { type: input.grantor.type, id: input.grantor.id },
          actions: [...input.actions],
          constraints: input.constraints ?? {},
          status: "active",
          createdAt: now,
          updatedAt: now,
        };
        if (input.expiresAt !== undefined) a.expiresAt = input.expiresAt;
        await tx.putAuthority(scope, a);
        await appendJournal(tx, o.crypto, scope, [
          draft("authority.created", [a.authorityRef], now, { authorityRef: a.authorityRef }, { principal: { ...a.principal }, grantor: { ...a.grantor }, actions: a.actions, ...(a.expiresAt !== undefined ? { expiresAt: a.expiresAt } : {}) }),
        ]);
        return a;
      });
    },
    get: (scope, ref) => readCommitted(o.store, (tx) => tx.getAuthority(scope, ref)),
    list: (scope, opts) => readCommitted(o.store, (tx) => tx.listAuthorities(scope, opts)),
    suspend: (scope, ref, by) => change(scope, ref, by, "suspended", ["active"]),
    reinstate: (scope, ref, by) => change(scope, ref, by, "active", ["suspended"]),
    revoke: (scope, ref, by) => change(scope, ref, by, "revoked", ["active", "suspended"]),
  };
}
