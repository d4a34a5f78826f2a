/**
 * Bundling, the dependency-closure check and the workerd process for tests/workerd
 * (docs/portable-core.md, "The workerd vector run" and "The dependency closure").
 */
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import { builtinModules, createRequire } from "node:module";
import * as net from "node:net";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { build, type Metafile } from "esbuild";

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
let lock: { packages: Record<string, { version?: string }> } | undefined;

/**
 * The workerd binary itself, as the `workerd` package resolves it for this platform. Not
 * `node_modules/.bin/workerd`: that is a Node script that runs the binary as its own child, so
 * stopping it left the server running, reparented to init (one leaked per run of this file).
 */
export const WORKERD_BIN = ((): string => {
  try {
    return (createRequire(import.meta.url)("workerd") as { default: string }).default;
  } catch {
    return path.join(REPO, "node_modules/.bin/workerd"); // no binary for this platform: workerdRuns() says so
  }
})();
export const CEDAR_WASM = path.join(REPO, "node_modules/@cedar-policy/cedar-wasm/web/cedar_wasm_bg.wasm");

/**
 * The packages the portable core may contain, each at exactly this version (package-lock must
 * agree): docs/portable-core.md, "The dependency closure". Anything else fails the check.
 */
export const ALLOWED_PACKAGES: Readonly<Record<string, string>> = {
  "@noble/hashes": "2.4.0",
  "@noble/ed25519": "3.2.0",
  "@cedar-policy/cedar-wasm": "4.13.0",
};
/** Allowed in the vector worker only, never in the production entry: the bench's action schemas. */
export const TEST_ONLY_PACKAGES: Readonly<Record<string, string>> = { zod: lockedVersion("zod") ?? "?" };

/** The version package-lock.json installs of a top-level package. */
export function lockedVersion(name: string): string | undefined {
  lock ??= JSON.parse(fs.readFileSync(path.join(REPO, "package-lock.json"), "utf8")) as { packages: Record<string, { version?: string }> };
  return lock.packages[`node_modules/${name}`]?.version;
}

export interface Bundle {
  file: string;
  bytes: number;
  metafile: Metafile;
}

/** Bundles `entry` for workerd: ESM, neutral platform (no Node resolution), `external` left as imports. */
export async function bundle(entry: string, outfile: string, external: string[] = []): Promise<Bundle> {
  const r = await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    conditions: ["workerd", "worker", "browser", "import"],
    mainFields: ["module", "main"],
    external,
    metafile: true,
    logLevel: "silent",
    sourcemap: false,
  });
  return { file: outfile, bytes: fs.statSync(outfile).size, metafile: r.metafile };
}

export interface Closure {
  /** package -> version of every package with a module in the bundle. */
  packages: Record<string, string>;
  /** What is wrong; empty when the closure is acceptable. */
  problems: string[];
}

const BUILTINS = new Set(builtinModules.flatMap((m) => [m, m.split("/")[0]!]));

function packageOf(input: string): string | null {
  const i = input.lastIndexOf("node_modules/");
  if (i < 0) return null;
  const parts = input.slice(i + "node_modules/".length).split("/");
  return parts[0]!.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]!;
}

/**
 * Reads a metafile: every input is a repository source under `sourceRoots` or a module of an
 * allowed package at its pinned (and locked) version; no `.node` file; no import of a Node
 * built-in (`node:*` or a bare builtin name), external or not; no external import but `externals`.
 */
export function checkClosure(metafile: Metafile, o: { allowed: Readonly<Record<string, string>>; sourceRoots: string[]; externals: string[] }): Closure {
  const problems: string[] = [];
  const packages: Record<string, string> = {};
  for (const [input, info] of Object.entries(metafile.inputs)) {
    if (input.endsWith(".node")) problems.push(`native module ${input}`);
    const pkg = packageOf(input);
    if (pkg === null) {
      if (!o.sourceRoots.some((r) => input.startsWith(r))) problems.push(`source outside ${o.sourceRoots.join(", ")}: ${input}`);
    } else {
      const locked = lockedVersion(pkg);
      packages[pkg] = locked ?? "(not in package-lock)";
      if (!(pkg in o.allowed)) problems.push(`package not on the allowed list: ${pkg}@${locked} (${input})`);
      else if (locked !== o.allowed[pkg]) problems.push(`package ${pkg} is locked at ${locked}, the allowed list pins ${o.allowed[pkg]}`);
    }
    for (const imp of info.imports) {
      const bare = imp.path.replace(/^node:/, "");
      if (imp.path.startsWith("node:") || BUILTINS.has(bare) || BUILTINS.has(bare.split("/")[0]!)) problems.push(`Node built-in ${imp.path} imported by ${input}`);
      else if (imp.external && !o.externals.includes(imp.path)) problems.push(`external import ${imp.path} from ${input}`);
    }
  }
  return { packages, problems };
}

/** A TCP port free on 127.0.0.1 now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * The compatibility date of the vector run. This workerd (1.20261117.1) turns Node compatibility
 * (`process`, `Buffer`, `node:*` modules) on by default for dates from some day between 2026-06-02
 * and 2026-09-01; the date stays before that, and the test asserts the Node globals are absent.
 */
export const COMPATIBILITY_DATE = "2026-06-01";

/** workerd's config: one worker (the bundle plus cedar's wasm module), no compatibility flags, no outbound network. */
export function workerdConfig(port: number): string {
  return `using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .vectorWorker),
    (name = "deny", worker = .denyWorker),
  ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);

const vectorWorker :Workerd.Worker = (
  modules = [
    (name = "worker.js", esModule = embed "worker.js"),
    (name = "cedar.wasm", wasm = embed "cedar.wasm"),
  ],
  compatibilityDate = "${COMPATIBILITY_DATE}",
  compatibilityFlags = [],
  globalOutbound = "deny",
);

const denyWorker :Workerd.Worker = (
  modules = [ (name = "deny.js", esModule = embed "deny.js") ],
  compatibilityDate = "${COMPATIBILITY_DATE}",
  compatibilityFlags = [],
);
`;
}

export const DENY_WORKER = `export default { fetch() { return new Response("outbound traffic is denied in the vector run", { status: 403 }); } };\n`;

/** Whether the workerd binary runs on this platform (its own --version). */
export async function workerdRuns(): Promise<{ ok: boolean; detail: string }> {
  if (!fs.existsSync(WORKERD_BIN)) return { ok: false, detail: `${WORKERD_BIN} is missing (npm ci installs it)` };
  return new Promise((resolve) => {
    const p = spawn(WORKERD_BIN, ["--version"], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    p.stdout.on("data", (d: Buffer) => (out += String(d)));
    p.stderr.on("data", (d: Buffer) => (out += String(d)));
    p.on("error", (e) => resolve({ ok: false, detail: e.message }));
    p.on("exit", (code) => resolve({ ok: code === 0, detail: out.trim() || `exit ${code}` }));
  });
}

export interface Workerd {
  proc: ChildProcess;
  url: string;
  output: () => string;
  stop: () => Promise<void>;
}

/** Starts `workerd serve` on `dir/config.capnp` and waits (bounded) until it answers on `port`. */
export async function startWorkerd(dir: string, port: number, waitMs = 20_000): Promise<Workerd> {
  const proc = spawn(WORKERD_BIN, ["serve", path.join(dir, "config.capnp")], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  proc.stdout.on("data", (d: Buffer) => (out += String(d)));
  proc.stderr.on("data", (d: Buffer) => (out += String(d)));
  let exited: number | null | undefined;
  proc.on("exit", (code) => (exited = code));
  const stop = async (): Promise<void> => {
    if (exited !== undefined) return;
    const gone = new Promise<void>((r) => proc.once("exit", () => r()));
    proc.kill("SIGTERM");
    const t = setTimeout(() => proc.kill("SIGKILL"), 2_000);
    await gone;
    clearTimeout(t);
  };
  const deadline = Date.now() + waitMs;
  for (;;) {
    if (exited !== undefined) throw new Error(`workerd exited (${exited}) before listening:\n${out}`);
    const up = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, "127.0.0.1");
      s.once("connect", () => (s.destroy(), resolve(true)));
      s.once("error", () => resolve(false));
    });
    if (up) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`workerd did not listen on ${port} within ${waitMs} ms:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { proc, url: `http://127.0.0.1:${port}/`, output: () => out, stop };
}
