/** `writ journal verify|export|checkpoint|ls`: the scope's hash-chained evidence (docs/journal.md). */
import { readCommitted } from "../../core/store.js";
import { createWriteStream, mkdirSync, renameSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { once } from "node:events";
import { createKeyring } from "../../core/keyring.js";
import { readArchive } from "../../core/archive-format.js";
import { journalPages, openJournalExport } from "../../core/journal-export.js";
import { checkUnsealed, liveStart, verifyArchivedChain, verifyExportedJournal, verifyJournal, writeCheckpoint, type JournalVerification } from "../../core/journal.js";
import { checkSealWithinMs, sequencerFor } from "../../core/sequencer.js";
import type { JournalEntry, Scope } from "../../core/types.js";
import type { Keyring } from "../../core/keyring.js";
import { defaultCrypto } from "../../node/defaults.js";
import { systemClock } from "../../node/clock.js";
import { flag, intFlag, list, str } from "../args.js";
import { askWitnesses, publishCheckpoint, witnessProblems } from "../../core/witness.js";
import { witnessOf } from "../../node/witness.js";
import { LIMIT_OPTION, type CommandBody } from "../command.js";
import type { CliContext } from "../context.js";
import { EXIT } from "../exit-codes.js";
import { readInput } from "../files.js";
import { usageError } from "../exit-codes.js";
import { journalLength, parseJournalFile } from "../journal-io.js";
import { brief, time } from "../output.js";
import { NO_PROGRESS, createProgress } from "../progress.js";

function explicitScope(ctx: CliContext): boolean {
  return str(ctx.values, "tenant") !== undefined || str(ctx.values, "space") !== undefined;
}

export const journalVerify: CommandBody = {
  options: {
    file: { type: "string", value: "<jsonl>", description: "verify an exported JSONL file instead of the store (the chain and the checkpoints the export carries; needs no config)" },
    witness: { type: "string", multiple: true, value: "<file|url>", description: "also check the signed heads this checkpoint witness holds against the chain (a rewritten history is named); repeatable" },
    keys: { type: "string", value: "<file>", description: "with --file: check the checkpoints against these public keys only (a JWK, an array of JWKs or a JWKS); without it the keys the export carries are used and named in the answer" },
    "trust-archived-keys": { type: "boolean", description: "verify a checkpoint whose key the keyring lacks with the key archived beside it (named in the answer); off: such a checkpoint is a problem" },
  },
  async run(ctx) {
    const file = str(ctx.values, "file");
    let result: JournalVerification;
    let scope: Scope;
    // seq -> hash of every entry read (archives included), for the witnesses.
    const hashes = new Map<number, string>();
    let keyring = createKeyring([]);
    if (file !== undefined) {
      const { header, entries } = parseJournalFile(readInput(file, "file"), file);
      const first = header ?? entries[0];
      scope = first && !explicitScope(ctx) ? { tenantId: String(first.tenantId), spaceId: String(first.spaceId) } : await ctx.scope();
      const keysFile = str(ctx.values, "keys");
      if (keysFile !== undefined) keyring = keyringOf(readInput(keysFile, "keys"), keysFile);
      result = verifyExportedJournal(defaultCrypto(), keyring, scope, header, entries, { trustArchivedKeys: keysFile === undefined });
      for (const e of entries) hashes.set(e.seq, e.hash);
      // The file's own keys vouch for the witness check only as they do for the file: not when the
      // auditor named the keys to trust (`--keys`: only those).
      for (const k of keysFile === undefined ? (header?.keys ?? []) : []) {
        try {
          if (typeof k.kid === "string") keyring.add({ kid: k.kid, publicJwk: k });
        } catch {
          // a malformed exported key verifies nothing; the witness check then names the checkpoint
        }
      }
    } else {
      scope = await ctx.scope();
      const rt = await ctx.runtime();
      // Unsealed entries first: one sealed meanwhile then shows in the chain too, never in neither.
      const pending = await rt.store.transact((tx) => tx.listUnsealed(scope));
      const total = await journalLength(rt.store, scope);
      const bar = createProgress(ctx.io.stderr, { label: "verifying", total });
      const entries: JournalEntry[] = [];
      try {
        for await (const page of journalPages(rt.store, scope)) {
          entries.push(...page);
          bar.update(entries.length);
        }
      } finally {
        bar.done();
      }
      const [checkpoints, watermark] = await rt.store.transact(async (tx) => [await tx.listCheckpoints(scope), await tx.journalArchivedThrough(scope)] as const);
      // With archives (on by default), the segments and the database are one chain (docs/archives.md).
      const target = rt.host.archive.target;
      const segments = target !== null ? await readArchive(target, scope) : [];
      const chain =
        target !== null
          ? verifyArchivedChain(defaultCrypto(), rt.keyring, scope, segments, entries, checkpoints, watermark, { trustArchivedKeys: flag(ctx.values, "trust-archived-keys") })
          : verifyJournal(defaultCrypto(), rt.keyring, scope, entries, checkpoints, liveStart(entries, watermark));
      for (const s of segments) if (s.ok) for (const e of s.segment.entries) hashes.set(e.seq, e.hash);
      for (const e of entries) hashes.set(e.seq, e.hash);
      keyring = rt.keyring;
      const sealedIds = new Set(entries.map((e) => e.id));
      const still = pending.filter((u) => !sealedIds.has(u.id));
      const late = checkUnsealed(still, { now: systemClock.now(), sealWithinMs: checkSealWithinMs("config host", rt.config.host?.sealWithinMs) });
      result = { ...chain, ok: chain.ok && late.length === 0, unsealed: still.length, problems: [...chain.problems, ...late] };
    }
    const witnesses = list(ctx.values, "witness").map((w) => witnessOf(w, ctx.cwd));
    if (witnesses.length > 0) {
      const found = witnessProblems(defaultCrypto(), keyring, scope, hashes, result.headSeq, await askWitnesses(witnesses, scope));
      result = { ...result, ok: result.ok && found.length === 0, problems: [...result.problems, ...found] };
    }
    ctx.out.result({ scope, ...result }, () => {
      const where = `${scope.tenantId}/${scope.spaceId}${file !== undefined ? ` (${file})` : ""}`;
      if (result.ok) {
        ctx.out.line(`journal ${where}: ok — ${result.entries} entries, head seq ${result.headSeq}${result.headHash ? ` ${result.headHash}` : ""}, ${result.checkpoints} signed checkpoint(s) hold`);
        if (result.archive !== undefined && result.archive.segments > 0) ctx.out.line(`(seqs 1..${result.archive.archivedThrough} from ${result.archive.segments} archive segment(s), the rest from the database)`);
        if ((result.unsealed ?? 0) > 0) ctx.out.line(`(${result.unsealed} more entr${result.unsealed === 1 ? "y is" : "ies are"} committed and awaiting the sequencer, within the sealing bound)`);
        if (witnesses.length > 0) ctx.out.line(`(the heads ${witnesses.length} witness(es) hold agree with the chain)`);
        if (result.keysFromArchive !== undefined) {
          ctx.out.line(
            `(checkpoints signed by ${result.keysFromArchive.join(", ")} were verified with the key${result.keysFromArchive.length === 1 ? "" : "s"} the ${file !== undefined ? "file" : "archive"} carries itself: the data is intact and not cut, but whoever could rewrite it could also have signed it; compare those keys with ones you trust${file !== undefined ? ", or pass --keys" : ""})`,
          );
        }
        if (result.checkpoints === 0 && file === undefined) ctx.out.line("(no signed checkpoint yet: `writ journal checkpoint` signs the head so a cut tail is detected too)");
      } else {
        ctx.out.line(`journal ${where}: BROKEN — ${result.problems.length} problem(s) in ${result.entries} entries`);
        ctx.out.table(result.problems, [
          { header: "seq", value: (x) => (x.seq === undefined ? (x.id ?? "-") : String(x.seq)) },
          { header: "kind", value: (x) => x.kind },
          { header: "segment", value: (x) => x.segment ?? x.witness ?? "-" },
          { header: "problem", value: (x) => x.message },
        ]);
      }
    });
    return result.ok ? EXIT.OK : EXIT.FAILED;
  },
};

export const journalExport: CommandBody = {
  details:
    "A file is written atomically (a temporary file renamed at the end); the default file is replaced by the next default export. Its first line is a header with the signed checkpoints and the public keys that verify them, so `writ journal verify --file <file>` checks it offline, a cut tail included (docs/archives.md).",
  options: {
    out: { type: "string", short: "o", value: "<file>", description: "write to this file, \"-\" for stdout (default: <state dir>/exports/journal-<tenant>-<space>.jsonl, the state dir being the parent of the config's keys.dir, e.g. .writ)" },
    "from-seq": { type: "string", value: "<n>", description: "start at this seq (default 1)" },
  },
  async run(ctx) {
    const outFlag = str(ctx.values, "out");
    const fromSeq = intFlag(ctx.values, "from-seq") ?? 1;
    const scope = await ctx.scope();
    const rt = await ctx.runtime();
    // Default: the state directory (beside the keys, ignored by git in this repository), never the working tree.
    const exportsDir = join(dirname(rt.keysDir), "exports");
    const out = outFlag === "-" ? undefined : (outFlag ?? join(exportsDir, `journal-${scope.tenantId}-${scope.spaceId}.jsonl`));
    if (outFlag === undefined) mkdirSync(exportsDir, { recursive: true, mode: 0o700 });
    const exp = await openJournalExport(rt.store, rt.keyring, scope, fromSeq);
    const total = exp.header.entries;
    // The bar shares the terminal with the data when the data goes to a terminal: keep it off then.
    const bar = out !== undefined || !ctx.io.stdoutIsTTY ? createProgress(ctx.io.stderr, { label: "exporting", total }) : NO_PROGRESS;
    const target = out !== undefined ? ctx.resolvePath(out) : undefined;
    const tmp = target !== undefined ? `${target}.tmp-${process.pid}` : undefined;
    const file = tmp !== undefined ? createWriteStream(tmp, { flags: "wx" }) : undefined;
    let n = 0;
    try {
      for await (const chunk of exp.chunks()) {
        if (!file) ctx.io.stdout.write(chunk.text);
        else if (!file.write(chunk.text)) await once(file, "drain");
        n += chunk.entries;
        bar.update(n);
      }
      if (file) {
        file.end();
        await once(file, "finish");
        renameSync(tmp!, target!);
      }
    } catch (e) {
      file?.destroy();
      if (tmp !== undefined) rmSync(tmp, { force: true });
      throw e;
    } finally {
      bar.done();
    }
    if (target !== undefined) {
      if (ctx.out.json) ctx.out.result({ scope, file: target, entries: n }, () => undefined);
      else ctx.out.line(`exported ${n} entries of ${scope.tenantId}/${scope.spaceId} to ${outFlag ?? ctx.relative(target)}`);
    }
  },
};

export const journalCheckpoint: CommandBody = {
  options: {
    witness: { type: "string", multiple: true, value: "<file|url>", description: "also publish the checkpoint to this witness (a file, or an http(s) endpoint); repeatable (docs/archives.md)" },
  },
  async run(ctx) {
    const scope = await ctx.scope();
    const rt = await ctx.runtime();
    const witnesses = list(ctx.values, "witness").map((w) => witnessOf(w, ctx.cwd));
    await sequencerFor(rt.store, defaultCrypto()).seal(scope);
    const cp = await rt.store.transact((tx) => writeCheckpoint(tx, defaultCrypto(), scope, rt.signingKey, systemClock.now()));
    const failed = cp !== null ? await publishCheckpoint(witnesses, cp) : [];
    ctx.out.result({ checkpoint: cp, witnesses: witnesses.length, failed }, () => {
      if (!cp) ctx.out.line(`journal ${scope.tenantId}/${scope.spaceId} is empty: nothing to sign`);
      else ctx.out.line(`signed checkpoint of ${scope.tenantId}/${scope.spaceId} at seq ${cp.seq} (${cp.headHash}) with key ${rt.signingKey.kid}`);
      if (cp && witnesses.length > 0) ctx.out.line(`published to ${witnesses.length - failed.length} of ${witnesses.length} witness(es)`);
      for (const f of failed) ctx.out.line(`witness ${f.witness} did not take it: ${f.error}`);
    });
    return failed.length > 0 ? EXIT.FAILED : EXIT.OK;
  },
};

export const journalLs: CommandBody = {
  options: {
    "from-seq": { type: "string", value: "<n>", description: "start at this seq (default 1)" },
    ...LIMIT_OPTION,
  },
  async run(ctx) {
    const fromSeq = intFlag(ctx.values, "from-seq") ?? 1;
    const limit = intFlag(ctx.values, "limit") ?? 50;
    const scope = await ctx.scope();
    // Reads only: nothing is created where no store exists yet (docs/cli.md, Start-up).
    const { store } = await ctx.reads();
    const [items, unsealed] = await readCommitted(store, async (tx) => [await tx.readJournal(scope, { fromSeq, limit }), await tx.listUnsealed(scope, { limit })] as const);
    ctx.out.result({ items, unsealed }, () => {
      ctx.out.table(items, [
        { header: "seq", value: (e) => String(e.seq) },
        { header: "at", value: (e) => time(e.at) },
        { header: "type", value: (e) => e.type },
        { header: "refs", value: (e) => Object.values(e.refs).join(" ") },
        { header: "data", value: (e) => brief(e.data, 70) },
      ]);
      if (unsealed.length > 0) ctx.out.line(`(${unsealed.length}${unsealed.length === limit ? "+" : ""} committed entr${unsealed.length === 1 ? "y awaits" : "ies await"} the sequencer; they get a seq once sealed)`);
    });
    if (items.length === 0 && unsealed.length === 0) await ctx.explainEmpty("journal entries");
  },
};

export const journalArchive: CommandBody = {
  details:
    "Archives what is closed in every scope with a sealed journal (or only --tenant/--space): signs a checkpoint of each head, writes each segment through it to the archive target (config `archive`, by default <state dir>/archives), reads it back, moves the watermark, then drops the archived entries from the database in small batches (never the head, never past a notification subscription's cursor), and publishes the checkpoints it signed to the config's archive.witnesses (exit 1 when a witness did not take one; archiving is done all the same). Safe to run from cron beside running workers (docs/archives.md).",
  options: {
    "keep-live-ms": { type: "string", value: "<ms>", description: "keep archived entries younger than this in the database (default: the config's archive.keepLiveMs, 30 days); 0 prunes all that is archived" },
  },
  async run(ctx) {
    const keepLiveMs = intFlag(ctx.values, "keep-live-ms", 0);
    const rt = await ctx.runtime();
    if (rt.host.archive.target === null) {
      ctx.out.line("journal archiving is off in this config (archive.enabled: false): nothing archived");
      return EXIT.FAILED;
    }
    const only = explicitScope(ctx) ? [await ctx.scope()] : undefined;
    // What is committed is sealed first, so the checkpoint covers it.
    const crypto = defaultCrypto();
    if (only !== undefined) await sequencerFor(rt.store, crypto).seal(only[0]!);
    else await sequencerFor(rt.store, crypto).sealAll();
    const runs = await rt.host.archive.runOnce(only, keepLiveMs !== undefined ? { keepLiveMs } : {});
    const where = "dir" in rt.host.archive.target ? String((rt.host.archive.target as { dir: unknown }).dir) : "the archive target";
    ctx.out.result({ target: where, runs }, () => {
      if (runs.length === 0) ctx.out.line("no sealed journal yet: nothing to archive");
      for (const r of runs) {
        const bytes = r.segments.reduce((n, s) => n + s.bytes, 0);
        const seg = r.segments.length === 0 ? "nothing new to archive" : `archived ${r.segments.length} segment(s), seqs ${r.segments[0]!.fromSeq}..${r.segments[r.segments.length - 1]!.throughSeq} (${bytes} bytes)`;
        const held = r.heldBy === "notifications" ? " (held by a notification subscription's cursor)" : "";
        const w = r.witnesses === undefined ? "" : `; published ${r.witnesses.published} checkpoint(s) to witnesses`;
        ctx.out.line(`${r.scope.tenantId}/${r.scope.spaceId}: ${seg}; archived through seq ${r.archivedThrough} of ${r.headSeq}; pruned ${r.pruned} entries${held}; live from seq ${r.firstLiveSeq ?? "-"}${w}`);
        for (const f of r.witnesses?.failed ?? []) ctx.out.line(`  witness ${f.witness} did not take it (retried at the next run): ${f.error}`);
      }
      if (runs.length > 0) ctx.out.line(`archive: ${ctx.relative(where)}`);
    });
    // Archiving went on; a witness that did not take a checkpoint still fails the run, for cron to see.
    return runs.some((r) => (r.witnesses?.failed.length ?? 0) > 0) ? EXIT.FAILED : EXIT.OK;
  },
};

/** The public keys an auditor trusts, from a JWK, an array of JWKs or a JWKS (`{ keys: [...] }`). */
function keyringOf(text: string, name: string): Keyring {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw usageError(`--keys ${name}: not JSON (a JWK, an array of JWKs or a JWKS)`);
  }
  const list = Array.isArray(parsed) ? parsed : typeof parsed === "object" && parsed !== null && Array.isArray((parsed as { keys?: unknown }).keys) ? (parsed as { keys: unknown[] }).keys : [parsed];
  const ring = createKeyring([]);
  for (const [i, k] of list.entries()) {
    const kid = typeof k === "object" && k !== null ? (k as { kid?: unknown }).kid : undefined;
    if (typeof kid !== "string" || kid === "") throw usageError(`--keys ${name}: key ${i + 1} has no kid`);
    try {
      ring.add({ kid, publicJwk: k as never });
    } catch (e) {
      throw usageError(`--keys ${name}: key ${kid}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  if (ring.list().length === 0) throw usageError(`--keys ${name}: no key in it`);
  return ring;
}
