/**
 * Action globs of an authority (docs/approvals.md, Authorities): `*` matches any run of
 * characters, dots included (`payments.*` covers `payments.refund` and `payments.refund.partial`;
 * `*` alone covers every action). Every other character matches itself; there is no escaping.
 */

/** True when `action` matches `pattern`. */
export function globMatch(pattern: string, action: string): boolean {
  const parts = pattern.split("*");
  if (parts.length === 1) return pattern === action;
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (action.length < first.length + last.length) return false;
  if (!action.startsWith(first) || !action.endsWith(last)) return false;
  // Greedy-free leftmost matching of the middle parts is complete for `*`-only globs.
  let at = first.length;
  const end = action.length - last.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const p = parts[i]!;
    const j = action.indexOf(p, at);
    if (j < 0 || j + p.length > end) return false;
    at = j + p.length;
  }
  return true;
}

/** True when any pattern of the list matches `action`. */
export function globsCover(patterns: readonly string[], action: string): boolean {
  for (const p of patterns) if (typeof p === "string" && globMatch(p, action)) return true;
  return false;
}
