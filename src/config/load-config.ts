/**
 * Loads `writ.config.ts` (or .mts/.js/.mjs) without a TypeScript runtime: the config and the local
 * files it imports are bundled into one ES module by esbuild, written to a cache in the state
 * directory and imported from there (docs/cli.md, Config files). Pure ES module packages (zod, say)
 * are inlined: one file loads far faster than a tree of a hundred modules. `writ` itself, CommonJS
 * packages, native addons and Node built-ins stay imports, resolved from the importing file, so the
 * config uses the same `writ` modules as the CLI.
 *
 * The cache is keyed by the config's path and content; an entry is used only while every file that
 * went into it (inlined package files included) still has the content it had (sha256 of each), so
 * an edit, a patch or an upgrade rebuilds it. esbuild itself is imported only on a rebuild.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { isBuiltin, SourceMap } from "node:module";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Message, Plugin } from "esbuild";
import { WritError, errorMessage } from "../core/errors.js";
import { checkConfig, type WritConfig } from "./define-config.js";

export const CONFIG_FILES = ["writ.config.ts", "writ.config.mts", "writ.config.js", "writ.config.mjs"];

/** Bumped when the bundle's shape changes, so older cache entries are not used. */
const CACHE_FORMAT = 2;
/** Cache entries not used for this long are removed when another entry is written. */
const CACHE_KEEP_MS = 7 * 24 * 3600 * 1000;

/** Finds the config: an explicit path, else the first of CONFIG_FILES in `cwd`. */
export function findConfig(cwd: string, explicit?: string): string {
  if (explicit) {
    const p = isAbsolute(explicit) ? explicit : resolve(cwd, explicit);
    if (!existsSync(p)) throw new WritError("INVALID_OPTION", `config file ${explicit} does not exist`);
    return p;
  }
  for (const f of CONFIG_FILES) {
    const p = resolve(cwd, f);
    if (existsSync(p)) return p;
  }
  throw new WritError("INVALID_OPTION", `no config found in ${cwd} (looked for ${CONFIG_FILES.join(", ")}); pass --config <file>`);
}

export interface LoadConfigOptions {
  /**
   * Where compiled configs are cached. Created 0700 when missing.
   * @defaultValue `.writ/cache` under the current directory (the default state directory)
   */
  cacheDir?: string;
}

/** A cache entry's manifest: the bundle's file name and the content hash of every input. */
interface Manifest {
  format: number;
  output: string;
  inputs: Array<[path: string, sha256: string]>;
}

const sha256 = (data: string | Uint8Array): string => createHash("sha256").update(data).digest("hex");

function readManifest(file: string): Manifest | null {
  try {
    const m = JSON.parse(readFileSync(file, "utf8")) as Manifest;
    return m.format === CACHE_FORMAT && typeof m.output === "string" && Array.isArray(m.inputs) ? m : null;
  } catch {
    return null;
  }
}

/** True while every input still has the content the bundle was built from. */
function fresh(m: Manifest, dir: string): boolean {
  if (!existsSync(join(dir, m.output))) return false;
  for (const [path, hash] of m.inputs) {
    let content: Buffer;
    try {
      content = readFileSync(path);
    } catch {
      return false;
    }
    if (sha256(content) !== hash) return false;
  }
  return true;
}

/** Writes `content` to `file` through a temporary file and a rename (a reader never sees half). */
function writeAtomic(file: string, content: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, content, { mode: 0o600 });
  renameSync(tmp, file);
}

/** Removes cache files not touched for CACHE_KEEP_MS (each edit of a config leaves an entry). */
function prune(dir: string, keep: Set<string>, now: number): void {
  for (const f of readdirSync(dir)) {
    if (keep.has(f)) continue;
    try {
      if (now - statSync(join(dir, f)).mtimeMs > CACHE_KEEP_MS) rmSync(join(dir, f), { force: true });
    } catch {
      // raced with another process: either way it is gone or fresh
    }
  }
}

/** `file:line:col: text` for an esbuild message (paths relative to `base`). */
function formatMessage(m: Message, base: string): string {
  const loc = m.location;
  return loc ? `${resolve(base, loc.file)}:${loc.line}:${loc.column + 1}: ${m.text}` : m.text;
}

/** The directory of this package (writ): its files always stay imports of the config bundle. */
const WRIT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

type PackageJson = { name?: unknown; type?: unknown; gypfile?: unknown; binary?: unknown };

interface PackageInfo {
  /** Whether the config bundle may inline the package's files. */
  inline: boolean;
}

/**
 * The package a file of node_modules belongs to (its nearest package.json with a name), and
 * whether it may be inlined: an ES module package ("type": "module") with no native addon, not
 * writ. CommonJS packages stay imports (a bundle cannot give them their own `require`).
 */
function packageOf(file: string, cache: Map<string, PackageInfo | null>): PackageInfo | null {
  if (!/[\\/]node_modules[\\/]/.test(file)) return null;
  let dir = dirname(file);
  const seen: string[] = [];
  let found: PackageInfo | null = null;
  for (;;) {
    const known = cache.get(dir);
    if (known !== undefined) {
      found = known;
      break;
    }
    seen.push(dir);
    const manifest = join(dir, "package.json");
    let pkg: PackageJson | null;
    try {
      pkg = JSON.parse(readFileSync(manifest, "utf8")) as PackageJson | null;
    } catch {
      pkg = null;
    }
    if (pkg && typeof pkg.name === "string") {
      const native = pkg.gypfile === true || pkg.binary !== undefined || existsSync(join(dir, "binding.gyp"));
      found = { inline: pkg.type === "module" && !native && resolve(dir) !== WRIT_ROOT && pkg.name !== "writ" };
      break;
    }
    const up = dirname(dir);
    if (up === dir || /[\\/]node_modules$/.test(dir)) break;
    dir = up;
  }
  for (const d of seen) cache.set(d, found);
  return found;
}

/**
 * The esbuild plugin: packages that may not be inlined and built-ins become imports of absolute
 * file URLs (resolved the way Node resolves them from the importing file); pure ES module packages
 * are bundled. Each file's `import.meta.url`, `dirname` and `filename` keep naming the file itself
 * rather than the bundle. Records each input's hash.
 */
function configPlugin(hashes: Map<string, string>, packages: Map<string, PackageInfo | null>): Plugin {
  return {
    name: "writ-config",
    setup(build) {
      build.onResolve({ filter: /^[^./]/ }, async (args) => {
        if (args.pluginData === "writ-resolve") return undefined;
        if (isBuiltin(args.path)) return { path: args.path, external: true };
        if (args.path.startsWith("file:")) return resolveFileUrl(args.path, packages);
        const r = await build.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, importer: args.importer, pluginData: "writ-resolve" });
        if (r.errors.length > 0) return { errors: r.errors };
        if (isAbsolute(r.path) && packageOf(r.path, packages)?.inline === true) return { path: r.path };
        return { path: pathToFileURL(r.path).href, external: true };
      });
      build.onLoad({ filter: /\.[cm]?[jt]sx?$/ }, (args) => {
        const source = readFileSync(args.path, "utf8");
        hashes.set(args.path, sha256(source));
        const ext = /\.[cm]?([jt]sx?)$/.exec(args.path)![1] as "js" | "ts" | "jsx" | "tsx";
        if (!source.includes("import.meta")) return { contents: source, loader: ext };
        // One line, before the first: line numbers (and so the source map) stay those of the file.
        const meta = `const __writ_meta_url = ${JSON.stringify(pathToFileURL(args.path).href)}, __writ_meta_filename = ${JSON.stringify(args.path)}, __writ_meta_dirname = ${JSON.stringify(dirname(args.path))};`;
        return { contents: meta + source, loader: ext };
      });
    },
  };
}

/**
 * An import written as an absolute `file:` URL (esbuild resolves paths, not URLs): the file it
 * names, bundled like a local file, or an import of the URL when it lies in a package that stays
 * an import.
 */
function resolveFileUrl(url: string, packages: Map<string, PackageInfo | null>): { path: string; external?: boolean } | { errors: Array<{ text: string }> } {
  let file: string;
  try {
    file = fileURLToPath(url);
  } catch (e) {
    return { errors: [{ text: `${url} is not a local file URL (${errorMessage(e)})` }] };
  }
  if (!existsSync(file)) return { errors: [{ text: `${url} names no file (${file} does not exist)` }] };
  if (packageOf(file, packages)?.inline === false) return { path: pathToFileURL(file).href, external: true };
  return { path: file };
}

/** Bundles the config; throws INVALID_OPTION with each error's file:line:col. */
async function bundle(path: string, outfile: string): Promise<{ js: string; map: string; inputs: Manifest["inputs"] }> {
  const { build } = await import("esbuild");
  const hashes = new Map<string, string>();
  const packages = new Map<string, PackageInfo | null>();
  const base = dirname(path);
  let result;
  try {
    result = await build({
      entryPoints: [path],
      outfile,
      absWorkingDir: base,
      bundle: true,
      write: false,
      metafile: true,
      format: "esm",
      platform: "node",
      target: "node20",
      conditions: [],
      mainFields: ["main"],
      keepNames: true,
      sourcemap: "external",
      sourcesContent: false,
      logLevel: "silent",
      define: { "import.meta.url": "__writ_meta_url", "import.meta.filename": "__writ_meta_filename", "import.meta.dirname": "__writ_meta_dirname" },
      plugins: [configPlugin(hashes, packages)],
    });
  } catch (e) {
    const errors = (e as { errors?: Message[] }).errors;
    if (Array.isArray(errors) && errors.length > 0) throw new Error(errors.map((m) => formatMessage(m, base)).join("; "));
    throw e;
  }
  const js = result.outputFiles.find((f) => f.path.endsWith(".mjs"))?.text ?? "";
  const map = result.outputFiles.find((f) => f.path.endsWith(".map"))?.text ?? "";
  const inputs: Manifest["inputs"] = [];
  for (const input of Object.keys(result.metafile.inputs)) {
    const abs = resolve(base, input);
    inputs.push([abs, hashes.get(abs) ?? sha256(readFileSync(abs))]);
  }
  return { js, map, inputs };
}

/** The cached bundle of `path` (built when missing or stale): its file and the files that went in. */
async function compiled(path: string, dir: string): Promise<{ file: string; inputs: string[] }> {
  const source = readFileSync(path);
  const key = sha256(`${CACHE_FORMAT}\0${path}\0${sha256(source)}`).slice(0, 32);
  const manifestFile = join(dir, `${key}.json`);
  const known = readManifest(manifestFile);
  if (known && fresh(known, dir)) return { file: join(dir, known.output), inputs: known.inputs.map(([p]) => p) };
  const { js, map, inputs } = await bundle(path, join(dir, "config.mjs"));
  // Named by the bundle's content: a rebuilt bundle is a new URL, never a module this process cached.
  const output = `${sha256(js).slice(0, 32)}.mjs`;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeAtomic(join(dir, `${output}.map`), map);
  writeAtomic(join(dir, output), `${js}//# sourceMappingURL=${output}.map\n`);
  writeAtomic(manifestFile, JSON.stringify({ format: CACHE_FORMAT, output, inputs } satisfies Manifest));
  prune(dir, new Set([output, `${output}.map`, `${key}.json`]), Date.now());
  return { file: join(dir, output), inputs: inputs.map(([p]) => p) };
}

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * Where in the config an evaluation error was thrown: its first stack frame in the bundle, mapped
 * back through the bundle's source map, or in one of the inputs (a stack already mapped, e.g. with
 * --enable-source-maps).
 */
function origin(e: unknown, bundle: { file: string; inputs: string[] }): string | null {
  const stack = e instanceof Error ? e.stack : undefined;
  if (typeof stack !== "string") return null;
  const files = [bundle.file, ...bundle.inputs].map((f) => `(?:${escape(pathToFileURL(f).href)}|${escape(f)})`);
  const at = new RegExp(`(${files.join("|")}):(\\d+):(\\d+)`).exec(stack);
  if (!at) return null;
  const [, where, line, column] = at as unknown as [string, string, string, string];
  const file = where.startsWith("file:") ? fileURLToPath(where) : where;
  if (file !== bundle.file) return `${file}:${line}:${column}`;
  try {
    const map = new SourceMap(JSON.parse(readFileSync(`${bundle.file}.map`, "utf8")));
    const entry = map.findEntry(Number(line) - 1, Number(column) - 1) as { originalSource?: string; originalLine?: number; originalColumn?: number };
    if (entry.originalSource === undefined || entry.originalLine === undefined) return null;
    const src = entry.originalSource.startsWith("file:") ? fileURLToPath(entry.originalSource) : resolve(dirname(bundle.file), entry.originalSource);
    return `${src}:${entry.originalLine + 1}:${(entry.originalColumn ?? 0) + 1}`;
  } catch {
    return null;
  }
}

/** Compiles (or takes from the cache) and imports the config, then checks its shape. */
export async function loadConfig(path: string, options: LoadConfigOptions = {}): Promise<WritConfig> {
  const failed = (e: unknown, where?: string | null): WritError =>
    new WritError("INVALID_OPTION", `config ${path} failed to load: ${errorMessage(e)}${where ? ` (at ${where})` : ""}`, { cause: e });
  const cacheDir = join(options.cacheDir ?? join(process.cwd(), ".writ", "cache"), "config");
  let bundle: { file: string; inputs: string[] };
  try {
    bundle = await compiled(path, cacheDir).catch((e: unknown) => {
      // A state directory we cannot write (read-only checkout): a private temporary cache instead.
      if (e instanceof Error && /^E(ACCES|PERM|ROFS|NOTDIR)$/.test((e as { code?: string }).code ?? "")) return compiled(path, join(tmpdir(), `writ-config-cache-${process.getuid?.() ?? "user"}`));
      throw e;
    });
  } catch (e) {
    throw failed(e);
  }
  let mod: { default?: unknown };
  try {
    mod = (await import(pathToFileURL(bundle.file).href)) as { default?: unknown };
  } catch (e) {
    throw failed(e, origin(e, bundle));
  }
  const config = (mod.default as { default?: unknown } | undefined)?.default ?? mod.default;
  checkConfig(config, path);
  return config;
}
