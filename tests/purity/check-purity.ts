/**
 * Core purity checker (SPEC section 1): the core may not do I/O, read time or entropy, or reach the
 * host runtime. Time, timers, entropy, crypto and storage come in through ports.
 *
 * Given a core root, this walks the import graph from every `.ts` file under the root (excluding
 * `*.test.ts`) and reports:
 *
 * - imports (static, `export ... from`, `import type`, `import("...")` types, dynamic `import()`,
 *   `require(...)`, `import x = require(...)`, triple-slash references) that leave the core: a
 *   relative/absolute path resolving outside the root, a Node builtin (`node:*` or a bare builtin
 *   name), a bare package not on the allowlist, a URL, a `#subpath` import, a non-literal specifier,
 *   or a specifier that does not resolve to an existing TypeScript source file (fail closed);
 * - references to ambient globals that read time or entropy, schedule timers, do I/O, or evaluate
 *   code (`Date.now()`, `new Date()`, `Math.random`, `setTimeout`, `process`, `fetch`, `crypto`, ...).
 *
 * Globals are identified with the TypeScript checker's symbol resolution over a lib-less program:
 * an identifier is a global when it resolves to nothing (no lib is loaded, so every runtime global
 * resolves to nothing) or only to ambient (`declare`) declarations. A local `const process = 1`,
 * a parameter named `setTimeout` or a property `x.fetch` therefore never matches.
 *
 * This module is test code and may use Node freely.
 */
import { builtinModules } from "node:module";
import * as fs from "node:fs";
import * as path from "node:path";
import ts from "typescript";

/**
 * Bare packages the core may import, by package name (a subpath of an allowed package is allowed).
 *
 * Starts EMPTY on purpose. Every addition needs review: the package (and everything it imports)
 * must be pure in the sense of SPEC section 1 and must run unchanged on Node and on workerd.
 * The same list governs type-only imports (see `checkSpecifier`).
 */
export const ALLOWED_PACKAGES: ReadonlySet<string> = new Set<string>([]);

export type Rule =
  | "parse-error"
  | "import:node-builtin"
  | "import:package"
  | "import:outside-core"
  | "import:unresolved"
  | "import:non-literal"
  | "import:url"
  | "import:meta"
  | `global:${string}`;

export interface Violation {
  /** Absolute path of the offending file. */
  file: string;
  /** 1-based. */
  line: number;
  /** 1-based. */
  column: number;
  rule: Rule;
  message: string;
}

export interface PurityReport {
  /** Absolute paths of every core file that was checked. */
  files: string[];
  violations: Violation[];
}

export interface CheckOptions {
  /** Overrides {@link ALLOWED_PACKAGES} (tests use this to exercise the allowlist). */
  allowedPackages?: ReadonlySet<string>;
}

/**
 * Globals banned outright: any value reference (call, property access, passing it around) fails.
 * The value is the reason shown in the report.
 */
const BANNED_GLOBALS: ReadonlyMap<string, string> = new Map([
  // Time and timers: use the Clock port.
  ["performance", "reads high-resolution time; use the Clock port"],
  ["setTimeout", "schedules a timer; use the Clock port"],
  ["setInterval", "schedules a timer; use the Clock port"],
  ["setImmediate", "schedules a macrotask; use the Clock port"],
  ["clearTimeout", "timer API; use the Clock port"],
  ["clearInterval", "timer API; use the Clock port"],
  ["clearImmediate", "timer API; use the Clock port"],
  ["requestAnimationFrame", "schedules a timer; use the Clock port"],
  ["cancelAnimationFrame", "timer API; use the Clock port"],
  ["requestIdleCallback", "schedules a timer; use the Clock port"],
  ["cancelIdleCallback", "timer API; use the Clock port"],
  ["MessageChannel", "schedules macrotasks (a timer in disguise); use the Clock port"],
  // Entropy and crypto: use the Random / CryptoPort ports.
  ["crypto", "web crypto global (entropy and keys); use the Random / CryptoPort ports"],
  // Host runtime.
  ["process", "Node process global (environment, exit, stdio, time); pass configuration in"],
  ["require", "CommonJS require loads modules outside the import graph"],
  ["module", "CommonJS module object"],
  ["exports", "CommonJS exports object"],
  ["Buffer", "Node-only Buffer; use Uint8Array (see core/encoding)"],
  ["__dirname", "Node module location"],
  ["__filename", "Node module location"],
  ["Deno", "Deno runtime namespace"],
  ["Bun", "Bun runtime namespace"],
  // Network, storage, other I/O.
  ["fetch", "network I/O; use a Connector"],
  ["XMLHttpRequest", "network I/O; use a Connector"],
  ["WebSocket", "network I/O; use a Connector"],
  ["EventSource", "network I/O; use a Connector"],
  ["BroadcastChannel", "cross-context I/O"],
  ["navigator", "host environment (and sendBeacon network I/O)"],
  ["location", "host environment"],
  ["document", "host environment"],
  ["localStorage", "storage I/O; use the Store port"],
  ["sessionStorage", "storage I/O; use the Store port"],
  ["indexedDB", "storage I/O; use the Store port"],
  ["caches", "storage I/O; use the Store port"],
  ["console", "logging is I/O; report through a port or return the information"],
  ["Worker", "threads"],
  ["importScripts", "loads code outside the import graph"],
  // Code evaluation.
  ["eval", "evaluates code outside the import graph"],
  // Garbage-collection observers make behaviour depend on GC timing (breaks deterministic simulation).
  ["WeakRef", "observes garbage-collection timing (nondeterministic)"],
  ["FinalizationRegistry", "observes garbage-collection timing (nondeterministic)"],
]);

/**
 * Namespace-like globals whose other members are pure, with the members that are not. Static
 * member access (`Math.max`, `Math["max"]`) to other members is allowed; a banned member, a
 * computed member (`Math[k]`) or the namespace escaping as a value (`const M = Math`) fails closed.
 */
const BANNED_MEMBERS: ReadonlyMap<string, ReadonlyMap<string, string>> = new Map([
  ["Math", new Map([["random", "reads entropy; use the Random port"]])],
  ["Temporal", new Map([["Now", "reads the current time; use the Clock port"]])],
  ["AbortSignal", new Map([["timeout", "schedules a timer; use the Clock port"]])],
  [
    "Atomics",
    new Map([
      ["wait", "blocks on time"],
      ["waitAsync", "schedules a timer"],
    ]),
  ],
]);

/**
 * `Date` is handled on its own. Allowed: `new Date(x, ...)` with at least one argument (a pure
 * conversion from a given instant, e.g. to format an injected `Clock.now()`), `Date.UTC`,
 * `Date.parse`, `Date.prototype` and `x instanceof Date`. Everything else fails: `Date.now`,
 * `new Date()` / `new Date` (reads the clock), `Date(...)` called as a function (returns the
 * current time as a string and ignores its arguments), `new Date(...spread)` (the spread may be
 * empty), and `Date` escaping as a value (`const D = Date; new D()`).
 */
const DATE_PURE_MEMBERS: ReadonlySet<string> = new Set(["UTC", "parse", "prototype"]);

/**
 * Names that denote the global object. `globalThis.X` / `globalThis["X"]` is treated exactly like
 * the bare global `X`; any other use (computed key, aliasing `const g = globalThis`) fails closed.
 */
const GLOBAL_OBJECTS: ReadonlySet<string> = new Set(["globalThis", "global", "window", "self"]);

// Deliberately NOT banned:
// - `queueMicrotask`: it reads neither time nor entropy and does no I/O; it queues a callback on
//   the microtask queue exactly like `Promise.resolve().then(fn)`, whose ordering is deterministic.
// - `new Date(ms)` and friends: see DATE_PURE_MEMBERS.
// - Pure built-ins (`JSON`, `TextEncoder`, `URL`, `structuredClone`, `AbortController`, ...).
// Known limits (not detectable by name): `Intl.DateTimeFormat().format()` with no argument
// formats the current time; `(function () {}).constructor` reaches the Function constructor.

const NODE_BUILTINS: ReadonlySet<string> = new Set(builtinModules.map((m) => m.replace(/^node:/, "")));

const TS_SOURCE = /\.(?:[cm]?ts|tsx)$/;
const TEST_FILE = /\.test\.(?:[cm]?ts|tsx)$/;

/** Runs the purity check on every core file under `coreRoot`. */
export function checkCorePurity(coreRoot: string, options: CheckOptions = {}): PurityReport {
  const allowed = options.allowedPackages ?? ALLOWED_PACKAGES;
  const root = fs.realpathSync(path.resolve(coreRoot));
  const violations: Violation[] = [];

  const start = listSources(root);
  const files = new Set(start);
  const queue = [...start];
  const parsed: ts.SourceFile[] = [];

  // Pass 1: parse and follow the import graph. Every in-root target is checked too, so a core file
  // importing an in-root file the directory walk skipped (e.g. a *.test.ts) still gets checked.
  while (queue.length > 0) {
    const file = queue.shift()!;
    const sf = ts.createSourceFile(file, fs.readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true, scriptKind(file));
    parsed.push(sf);
    const report: Report = (where, rule, message) => {
      violations.push(at(sf, where, rule, message));
    };
    for (const imp of collectImports(sf, report)) {
      const target = checkSpecifier(imp, root, allowed, report);
      if (target !== undefined && !files.has(target)) {
        files.add(target);
        queue.push(target);
      }
    }
  }

  // Pass 2: ambient globals, with symbol resolution over a lib-less program of exactly the core
  // files. moduleDetection=force: under "type": "module" every file is a module at runtime, so a
  // top-level declaration in one file must not be taken to shadow a global in another.
  const byName = new Map(parsed.map((sf) => [sf.fileName, sf]));
  const program = ts.createProgram({
    rootNames: [...byName.keys()],
    options: {
      noLib: true,
      noResolve: true,
      types: [],
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      moduleDetection: ts.ModuleDetectionKind.Force,
    },
    host: reuseHost(byName),
  });
  const checker = program.getTypeChecker();
  const coreFiles = new Set(byName.keys());
  for (const sf of program.getSourceFiles()) {
    if (!coreFiles.has(sf.fileName)) continue;
    // A file that does not parse cannot be trusted to have been walked fully: fail closed.
    for (const d of program.getSyntacticDiagnostics(sf)) {
      violations.push(at(sf, d.start ?? 0, "parse-error", `does not parse: ${ts.flattenDiagnosticMessageText(d.messageText, " ")}`));
    }
    checkGlobals(sf, checker, coreFiles, violations);
  }

  violations.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line || a.column - b.column || a.rule.localeCompare(b.rule));
  return { files: [...files].sort(), violations };
}

/** `file:line:column [rule] message`, with `file` relative to `base` when given. */
export function formatViolation(v: Violation, base?: string): string {
  const file = base === undefined ? v.file : path.relative(base, v.file);
  return `${file}:${v.line}:${v.column} [${v.rule}] ${v.message}`;
}

// ---------------------------------------------------------------------------------------------
// Files

function listSources(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      // Symlinks are followed only if they stay inside the root (a link out is not core code).
      const real = entry.isSymbolicLink() ? fs.realpathSync(full) : full;
      if (!isInside(root, real)) continue;
      const stat = entry.isSymbolicLink() ? fs.statSync(real) : entry;
      if (stat.isDirectory()) {
        if (entry.name !== "node_modules") walk(full);
      } else if (stat.isFile() && TS_SOURCE.test(entry.name) && !TEST_FILE.test(entry.name)) {
        out.push(real);
      }
    }
  };
  walk(root);
  return [...new Set(out)].sort();
}

function isInside(root: string, file: string): boolean {
  const rel = path.relative(root, file);
  return rel !== "" && !rel.startsWith("..") && !path.isAbsolute(rel);
}

function scriptKind(file: string): ts.ScriptKind {
  return file.endsWith(".tsx") ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
}

function isFile(p: string): boolean {
  try {
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

function reuseHost(byName: ReadonlyMap<string, ts.SourceFile>): ts.CompilerHost {
  return {
    getSourceFile: (name) => byName.get(name),
    getDefaultLibFileName: () => "lib.d.ts",
    writeFile: () => undefined,
    getCurrentDirectory: () => "/",
    getCanonicalFileName: (f) => f,
    useCaseSensitiveFileNames: () => true,
    getNewLine: () => "\n",
    fileExists: (f) => byName.has(f),
    readFile: (f) => byName.get(f)?.text,
  };
}

function at(sf: ts.SourceFile, where: ts.Node | number, rule: Rule, message: string): Violation {
  const pos = sf.getLineAndCharacterOfPosition(typeof where === "number" ? where : where.getStart(sf));
  return { file: sf.fileName, line: pos.line + 1, column: pos.character + 1, rule, message };
}

// ---------------------------------------------------------------------------------------------
// Imports

interface ImportRef {
  /** Node to report at. */
  node: ts.Node;
  /** Overrides the position of `node` (triple-slash directives are trivia, not nodes). */
  pos?: number;
  specifier: string;
  how: string;
  typeOnly: boolean;
  sf: ts.SourceFile;
}

/** Reports at a node (its first token) or at a position. */
type Report = (where: ts.Node | number, rule: Rule, message: string) => void;

function literalText(node: ts.Node | undefined): string | undefined {
  return node !== undefined && (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) ? node.text : undefined;
}

function collectImports(sf: ts.SourceFile, report: Report): ImportRef[] {
  const out: ImportRef[] = [];
  const add = (node: ts.Node, spec: ts.Node | undefined, how: string, typeOnly: boolean): void => {
    const specifier = literalText(spec);
    if (specifier === undefined) {
      report(node, "import:non-literal", `${how} with a non-literal specifier cannot be checked (fail closed)`);
    } else {
      out.push({ node: spec ?? node, specifier, how, typeOnly, sf });
    }
  };

  // Triple-slash directives pull in files or ambient declarations.
  for (const ref of sf.referencedFiles) out.push(directive(sf, ref, ref.fileName, "/// <reference path>"));
  for (const ref of sf.typeReferenceDirectives) out.push(directive(sf, ref, ref.fileName, "/// <reference types>"));
  for (const ref of sf.libReferenceDirectives) {
    report(ref.pos, "import:package", `/// <reference lib="${ref.fileName}"> changes the core's ambient globals (fail closed)`);
  }

  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      const typeOnly = node.importClause?.phaseModifier === ts.SyntaxKind.TypeKeyword;
      add(node, node.moduleSpecifier, "import", typeOnly);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier !== undefined) {
      add(node, node.moduleSpecifier, "export ... from", node.isTypeOnly);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      add(node, node.moduleReference.expression, "import = require()", node.isTypeOnly);
    } else if (ts.isImportTypeNode(node)) {
      const arg = ts.isLiteralTypeNode(node.argument) ? node.argument.literal : undefined;
      add(node, arg, 'import("...") type', true);
    } else if (ts.isModuleDeclaration(node) && ts.isStringLiteral(node.name)) {
      add(node, node.name, 'declare module "..."', true);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      add(node, node.arguments[0], "dynamic import()", false);
    } else if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === "require") {
      // Whether `require` is the global is decided in the globals pass (which reports it); here
      // only the specifier is checked. A local function named `require` taking a string is rare
      // enough that checking its argument as a specifier is an acceptable false positive.
      const spec = literalText(node.arguments[0]);
      if (spec !== undefined) out.push({ node: node.arguments[0]!, specifier: spec, how: "require()", typeOnly: false, sf });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

function directive(sf: ts.SourceFile, ref: ts.FileReference, specifier: string, how: string): ImportRef {
  return { node: sf, pos: ref.pos, specifier, how, typeOnly: true, sf };
}

/** Package name of a bare specifier: `@scope/name/sub` -> `@scope/name`, `name/sub` -> `name`. */
function packageName(spec: string): string {
  const parts = spec.split("/");
  return spec.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
}

/**
 * Checks one specifier and returns the in-root file it resolves to, if any.
 *
 * Type-only imports get the same rules as value imports. Of a core file they are fine (they pass
 * the in-root rule); of an allowlisted package they are fine. Of any other package they FAIL
 * CLOSED: they are erased at runtime, but they tie the core's types to a package nobody reviewed
 * (e.g. `import type { Buffer } from "node:buffer"` puts Node into the core's API, which breaks a
 * workerd build), and deleting the `type` keyword later silently turns them into runtime imports.
 * Reviewing the package once and adding it to ALLOWED_PACKAGES is the way in.
 */
function checkSpecifier(imp: ImportRef, root: string, allowed: ReadonlySet<string>, report: Report): string | undefined {
  const { specifier: spec, how } = imp;
  const what = `${imp.typeOnly ? "type-only " : ""}${how} "${spec}"`;
  const isRelative = spec.startsWith("./") || spec.startsWith("../") || spec === "." || spec === "..";

  if (spec.startsWith("node:") || (!isRelative && !path.isAbsolute(spec) && NODE_BUILTINS.has(spec))) {
    report(imp.pos ?? imp.node, "import:node-builtin", `${what}: Node builtins are not allowed in core`);
    return undefined;
  }
  if (!isRelative && !path.isAbsolute(spec)) {
    if (/^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(spec)) {
      report(imp.pos ?? imp.node, "import:url", `${what}: URL imports are not allowed in core`);
    } else if (spec.startsWith("#")) {
      report(imp.pos ?? imp.node, "import:package", `${what}: package.json subpath imports can map anywhere (fail closed)`);
    } else if (NODE_BUILTINS.has(packageName(spec))) {
      report(imp.pos ?? imp.node, "import:node-builtin", `${what}: Node builtins are not allowed in core`);
    } else if (!allowed.has(packageName(spec))) {
      report(imp.pos ?? imp.node, "import:package", `${what}: package "${packageName(spec)}" is not on the reviewed core allowlist`);
    }
    return undefined;
  }

  const from = path.dirname(imp.sf.fileName);
  const target = path.resolve(from, spec);
  if (!isInside(root, target)) {
    report(imp.pos ?? imp.node, "import:outside-core", `${what} resolves outside the core root (${path.relative(root, target)})`);
    return undefined;
  }
  if (how.startsWith("///")) {
    // `/// <reference path>` names the file itself (no .js -> .ts mapping).
    return resolveExisting(imp, root, [target], report);
  }
  // NodeNext: a `.js` specifier is written for the `.ts` source next to it. Extensionless and
  // directory specifiers do not resolve under NodeNext ESM, so they fail closed.
  const ext = path.extname(target);
  const candidates =
    ext === ".js"
      ? [target.slice(0, -3) + ".ts", target.slice(0, -3) + ".tsx"]
      : ext === ".mjs"
        ? [target.slice(0, -4) + ".mts"]
        : ext === ".cjs"
          ? [target.slice(0, -4) + ".cts"]
          : TS_SOURCE.test(target) && !target.endsWith(".d.ts")
            ? [target]
            : [];
  return resolveExisting(imp, root, candidates, report);
}

function resolveExisting(imp: ImportRef, root: string, candidates: string[], report: Report): string | undefined {
  const what = `${imp.typeOnly ? "type-only " : ""}${imp.how} "${imp.specifier}"`;
  const found = candidates.find(isFile);
  if (found === undefined) {
    report(imp.pos ?? imp.node, "import:unresolved", `${what} does not resolve to an existing TypeScript source file in the core (fail closed)`);
    return undefined;
  }
  const real = fs.realpathSync(found);
  if (!isInside(root, real)) {
    report(imp.pos ?? imp.node, "import:outside-core", `${what} resolves through a symlink outside the core root`);
    return undefined;
  }
  return real;
}

// ---------------------------------------------------------------------------------------------
// Globals

/** Unwraps `(x)`, `x as T`, `x!`, `x satisfies T`, `<T>x`: returns the outermost wrapper of `node`. */
function outermost(node: ts.Expression): ts.Expression {
  let n = node;
  for (;;) {
    const p = n.parent;
    if ((ts.isParenthesizedExpression(p) || ts.isAsExpression(p) || ts.isNonNullExpression(p) || ts.isSatisfiesExpression(p) || ts.isTypeAssertionExpression(p)) && p.expression === n) {
      n = p;
    } else {
      return n;
    }
  }
}

/** For `x.name` / `x["name"]` / `x[expr]` around `node`: the member and whether it is static. */
function memberOf(node: ts.Expression): { access: ts.Expression; name: string | undefined } | undefined {
  const p = node.parent;
  if (ts.isPropertyAccessExpression(p) && p.expression === node) return { access: p, name: p.name.text };
  if (ts.isElementAccessExpression(p) && p.expression === node) return { access: p, name: literalText(p.argumentExpression) };
  return undefined;
}

/** True when `id` is only a name (declaration name, property key, label, ...), not a value reference. */
function isNameOnly(id: ts.Identifier): boolean {
  const p = id.parent;
  if ((ts.isPropertyAccessExpression(p) || ts.isPropertyAssignment(p)) && p.name === id) return true;
  if (ts.isQualifiedName(p) && p.right === id) return true;
  if ((ts.isBindingElement(p) || ts.isImportSpecifier(p)) && p.propertyName === id) return true;
  // `export { a as b }`: linking to an undeclared (global) binding is an ESM SyntaxError anyway.
  if (ts.isExportSpecifier(p) || ts.isNamespaceExport(p) || ts.isMetaProperty(p)) return true;
  if (ts.isLabeledStatement(p) || ts.isBreakOrContinueStatement(p)) return true;
  if (
    (ts.isMethodDeclaration(p) ||
      ts.isPropertyDeclaration(p) ||
      ts.isGetAccessorDeclaration(p) ||
      ts.isSetAccessorDeclaration(p) ||
      ts.isPropertySignature(p) ||
      ts.isMethodSignature(p) ||
      ts.isEnumMember(p) ||
      ts.isModuleDeclaration(p) || // includes the `global` of `declare global`
      ts.isImportAttribute(p) ||
      ts.isJsxAttribute(p)) &&
    p.name === id
  ) {
    return true;
  }
  return false;
}

function isGlobalReference(id: ts.Identifier, checker: ts.TypeChecker, coreFiles: ReadonlySet<string>): boolean {
  const symbol = ts.isShorthandPropertyAssignment(id.parent) && id.parent.name === id ? checker.getShorthandAssignmentValueSymbol(id.parent) : checker.getSymbolAtLocation(id);
  const decls = symbol?.declarations ?? [];
  // No symbol: nothing in the core declares it (no lib is loaded), so it is a runtime global.
  // Only ambient declarations (`declare const process: ...`, `declare global`): still the global.
  return !decls.some((d) => !isAmbient(d) && coreFiles.has(d.getSourceFile().fileName));
}

/** In a `.d.ts`, or under a `declare` modifier (`declare const`, `declare global { ... }`, ...). */
function isAmbient(node: ts.Node): boolean {
  if (node.getSourceFile().isDeclarationFile) return true;
  for (let n: ts.Node | undefined = node; n !== undefined; n = n.parent) {
    if (ts.canHaveModifiers(n) && ts.getModifiers(n)?.some((m) => m.kind === ts.SyntaxKind.DeclareKeyword)) return true;
  }
  return false;
}

/** Is `node` in a type position (erased at runtime)? `class C extends X` is a value position. */
function isTypeOnlyNode(node: ts.Node): boolean {
  if (ts.isExpressionWithTypeArguments(node)) {
    const clause = node.parent;
    return !(ts.isHeritageClause(clause) && clause.token === ts.SyntaxKind.ExtendsKeyword && ts.isClassLike(clause.parent));
  }
  return ts.isTypeNode(node) || ts.isInterfaceDeclaration(node) || ts.isTypeAliasDeclaration(node);
}

function checkGlobals(sf: ts.SourceFile, checker: ts.TypeChecker, coreFiles: ReadonlySet<string>, out: Violation[]): void {
  const report: Report = (where, rule, message) => {
    out.push(at(sf, where, rule, message));
  };

  const visit = (node: ts.Node): void => {
    if (isTypeOnlyNode(node)) return;
    if (ts.isMetaProperty(node) && node.keywordToken === ts.SyntaxKind.ImportKeyword) {
      report(node, "import:meta", "import.meta exposes the module's location and host; core must not depend on it");
    }
    if (ts.isIdentifier(node) && !isNameOnly(node) && isGlobalReference(node, checker, coreFiles)) {
      checkGlobalUse(node.text, node, report);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
}

/** Applies the rules to a reference `ref` (an identifier or `globalThis.X`) to the global `name`. */
function checkGlobalUse(name: string, ref: ts.Expression, report: Report): void {
  const outer = outermost(ref);
  const parent = outer.parent;

  if (GLOBAL_OBJECTS.has(name)) {
    const member = memberOf(outer);
    if (member?.name === undefined) {
      report(ref, "global:globalThis", `${name} used other than as ${name}.<static name> (fail closed: computed or aliased global object)`);
    } else {
      checkGlobalUse(member.name, member.access, report);
    }
    return;
  }

  const banned = BANNED_GLOBALS.get(name);
  if (banned !== undefined) {
    report(ref, `global:${name}`, `ambient global ${name}: ${banned}`);
    return;
  }

  const isInstanceofTarget = ts.isBinaryExpression(parent) && parent.operatorToken.kind === ts.SyntaxKind.InstanceOfKeyword && parent.right === outer;

  if (name === "Function") {
    if (!isInstanceofTarget) report(ref, "global:Function", "the Function constructor evaluates code outside the import graph");
    return;
  }

  if (name === "Date") {
    if (isInstanceofTarget) return;
    if (ts.isNewExpression(parent) && parent.expression === outer) {
      const args = parent.arguments ?? [];
      if (args.length === 0) report(ref, "global:new Date()", "new Date() reads the current time; use the Clock port (new Date(ms) is fine)");
      else if (args.some(ts.isSpreadElement)) report(ref, "global:new Date()", "new Date(...spread) may read the current time (an empty spread); pass explicit arguments");
      return;
    }
    if (ts.isCallExpression(parent) && parent.expression === outer) {
      report(ref, "global:Date()", "Date(...) called as a function returns the current time; use the Clock port");
      return;
    }
    const member = memberOf(outer);
    if (member?.name === "now") report(ref, "global:Date.now", "Date.now reads the current time; use the Clock port");
    else if (member?.name === undefined || !DATE_PURE_MEMBERS.has(member.name)) {
      report(ref, "global:Date", `Date used other than new Date(x), Date.UTC, Date.parse or instanceof (fail closed)`);
    }
    return;
  }

  const members = BANNED_MEMBERS.get(name);
  if (members !== undefined) {
    const member = memberOf(outer);
    if (member?.name === undefined) {
      report(ref, `global:${name}`, `${name} used other than as ${name}.<static name> (fail closed)`);
    } else {
      const reason = members.get(member.name);
      if (reason !== undefined) report(ref, `global:${name}.${member.name}`, `${name}.${member.name} ${reason}`);
    }
  }
}
