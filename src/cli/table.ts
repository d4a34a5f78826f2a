/**
 * Every command's name, one-line summary and positional arguments, in the order help lists them,
 * and where its flags and code are: each command's module loads only when that command runs or
 * shows its own help, so `writ --help` and a command's start load nothing else (docs/cli.md,
 * Start-up).
 */
import type { Command } from "./command.js";

export const COMMANDS: readonly Command[] = [
  { name: "serve", summary: "run the HTTP API and workers in one process; prints the URL", load: async () => (await import("./commands/serve.js")).serve },
  { name: "worker", summary: "run workers only (no HTTP); with --once, process what is runnable now and exit", load: async () => (await import("./commands/serve.js")).worker },
  { name: "mcp", summary: "serve the MCP gateway on stdio for a local agent (tools = the actions the key's principal may use)", load: async () => (await import("./commands/mcp.js")).mcp },
  { name: "submit", summary: "submit a request (from --file or flags); prints the invocation", load: async () => (await import("./commands/invocations.js")).submit },
  { name: "get", summary: "show one invocation with its steps, approval and reconciliations", args: "<invocation-id>", load: async () => (await import("./commands/invocations.js")).get },
  { name: "ls", summary: "list invocations, newest first", load: async () => (await import("./commands/invocations.js")).ls },
  { name: "wait", summary: "wait until an invocation reaches a state (--until, default settled) or --timeout passes; through a server's long poll with --url", args: "<invocation-id>", load: async () => (await import("./commands/invocations.js")).wait },
  { name: "cancel", summary: "cancel an invocation none of whose steps has started", args: "<invocation-id>", load: async () => (await import("./commands/invocations.js")).cancel },
  { name: "approvals ls", summary: "list approvals (pending by default)", load: async () => (await import("./commands/approvals.js")).approvalsLs },
  { name: "approvals approve", summary: "vote to approve; at quorum the invocation is queued again", args: "<approval-id>", load: async () => (await import("./commands/approvals.js")).approvalsApprove },
  { name: "approvals deny", summary: "deny; the invocation ends denied", args: "<approval-id>", load: async () => (await import("./commands/approvals.js")).approvalsDeny },
  { name: "approvals revoke", summary: "revoke a pending or granted approval (checked again at execution)", args: "<approval-id>", load: async () => (await import("./commands/approvals.js")).approvalsRevoke },
  { name: "reconcile ls", summary: "list reconciliations (open by default)", load: async () => (await import("./commands/approvals.js")).reconcileLs },
  { name: "reconcile resolve", summary: "settle an unknown outcome as succeeded or failed, with a note (journaled with who did it)", args: "<reconciliation-id>", load: async () => (await import("./commands/approvals.js")).reconcileResolve },
  { name: "reconcile resolve-key", summary: "settle a key a bare boundary execution left unknown (interrupted, timed out), journaled with who did it", load: async () => (await import("./commands/approvals.js")).reconcileResolveKey },
  { name: "completions early", summary: "list early completions whose reference has not matched a parked step (oldest first)", load: async () => (await import("./commands/approvals.js")).completionsEarly },
  { name: "journal verify", summary: "recompute the scope's hash chain and check its signed checkpoints; report entries unsealed past the bound (exit 1 if any problem)", load: async () => (await import("./commands/journal.js")).journalVerify },
  { name: "journal export", summary: "write the scope's journal as JSONL (one entry per line, ascending seq) into the state directory, or --out", load: async () => (await import("./commands/journal.js")).journalExport },
  { name: "journal checkpoint", summary: "seal what is committed, then sign a checkpoint of the scope's sealed journal head (lets verify detect a cut tail)", load: async () => (await import("./commands/journal.js")).journalCheckpoint },
  { name: "journal ls", summary: "show sealed journal entries, oldest first (and how many await the sequencer)", load: async () => (await import("./commands/journal.js")).journalLs },
  { name: "keys generate", summary: "generate a decision signing key; it becomes active and the previous one retired (still verifies)", load: async () => (await import("./commands/keys.js")).keysGenerate },
  { name: "keys ls", summary: "list signing keys: kid, status (active, retired, revoked), private file", load: async () => (await import("./commands/keys.js")).keysLs },
  { name: "keys revoke", summary: "revoke a signing key for good: decisions and checkpoints signed with it never verify again", args: "<kid>", load: async () => (await import("./commands/keys.js")).keysRevoke },
  { name: "api-keys create", summary: "create an API key for the tenant; the key is printed once and only its hash is stored", load: async () => (await import("./commands/keys.js")).apiKeysCreate },
  { name: "api-keys ls", summary: "list the tenant's API keys (ids and roles, never secrets)", load: async () => (await import("./commands/keys.js")).apiKeysLs },
  { name: "api-keys delegate", summary: "set the actors an API key may submit for besides its principal (replaces the list; journaled)", args: "<key-id>", load: async () => (await import("./commands/keys.js")).apiKeysDelegate },
  { name: "api-keys revoke", summary: "revoke an API key (it stops working at once)", args: "<key-id>", load: async () => (await import("./commands/keys.js")).apiKeysRevoke },
  { name: "authorities create", summary: "grant an actor a standing authority over some actions", args: "<authority-ref>", load: async () => (await import("./commands/authorities.js")).authoritiesCreate },
  { name: "authorities ls", summary: "list the scope's authorities", load: async () => (await import("./commands/authorities.js")).authoritiesLs },
  { name: "authorities suspend", summary: "suspend an authority (nothing runs under it until reinstated)", args: "<authority-ref>", load: async () => (await import("./commands/authorities.js")).authoritiesSuspend },
  { name: "authorities reinstate", summary: "reinstate a suspended authority", args: "<authority-ref>", load: async () => (await import("./commands/authorities.js")).authoritiesReinstate },
  { name: "authorities revoke", summary: "revoke an authority for good", args: "<authority-ref>", load: async () => (await import("./commands/authorities.js")).authoritiesRevoke },
  { name: "migrate", summary: "apply pending store migrations (idempotent; safe while other processes start)", load: async () => (await import("./commands/keys.js")).migrate },
  { name: "doctor", summary: "check the config, policy, connectors, signing keys and store; say what is wrong and how to fix it", load: async () => (await import("./commands/doctor.js")).doctor },
];
