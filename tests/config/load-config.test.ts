/**
 * Loading a TypeScript config without tsx (src/config/load-config.ts): the config and its local
 * imports are bundled once into the cache and reused while every input is unchanged; an edit to an
 * imported file rebuilds; `import.meta.url` keeps naming each file; an absolute `file:` URL import is
 * a local file like any other; errors name file:line:col.
 */
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/load-config.js";
import { REPO } from "../cli/helpers.js";

const dir = mkdtempSync(join(tmpdir(), "writ-load-config-"));
const cacheDir = join(dir, "state", "cache");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const defineConfig = JSON.stringify(join(REPO, "src/config/define-config.ts"));
const memoryPolicy = `{ evaluate: () => ({ result: "ALLOW", reasons: [], policyRef: "p" }), acceptedPolicyRefs: () => ["p"] }`;

function write(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

describe("loadConfig", () => {
  it("bundles a TypeScript config with its local imports, caches it, and rebuilds when an input changes", async () => {
    write("part.ts", `export const port: number = 1111;\nexport const here: string = import.meta.url;\n`);
    const path = write(
      "writ.config.ts",
      `import { defineConfig } from ${defineConfig};\nimport { port, here } from "./part.js";\ninterface T { n: number }\nconst t: T = { n: port };\nexport default defineConfig({ actions: [], connectors: [], policy: ${memoryPolicy}, server: { port: t.n, host: here } });\n`,
    );
    const first = await loadConfig(path, { cacheDir });
    expect(first.server?.port).toBe(1111);
    // import.meta.url inside the imported file names that file, not the bundle in the cache.
    expect(first.server?.host).toBe(`file://${join(dir, "part.ts")}`);
    const cached = join(cacheDir, "config");
    const bundles = readdirSync(cached).filter((f) => f.endsWith(".mjs"));
    expect(bundles).toHaveLength(1);
    const mtime = statSync(join(cached, bundles[0]!)).mtimeMs;
    await loadConfig(path, { cacheDir });
    // Reused: no second bundle, the first untouched.
    expect(readdirSync(cached).filter((f) => f.endsWith(".mjs"))).toEqual(bundles);
    expect(statSync(join(cached, bundles[0]!)).mtimeMs).toBe(mtime);
    // An imported file changes (the config itself does not): rebuilt, and the new value is seen.
    write("part.ts", `export const port: number = 2222;\nexport const here: string = import.meta.url;\n`);
    const second = await loadConfig(path, { cacheDir });
    expect(second.server?.port).toBe(2222);
    expect(readdirSync(cached).filter((f) => f.endsWith(".mjs"))).toHaveLength(2);
  });

  // Invariant: a pure ES module package is inlined into the bundle (one file to load, its own
  // import.meta.url kept); a CommonJS package and a native addon stay imports of their files; a
  // change to an inlined package's file rebuilds the bundle like a change to a local file.
  it("inlines pure ES module packages; CommonJS packages and native addons stay imports", async () => {
    const pkg = (name: string, json: object, file: string, text: string): void => {
      const d = join(dir, "node_modules", name);
      mkdirSync(d, { recursive: true });
      writeFileSync(join(d, "package.json"), JSON.stringify({ name, version: "1.0.0", ...json }));
      writeFileSync(join(d, file), text);
    };
    pkg("esm-pkg", { type: "module", exports: "./index.js" }, "index.js", `export const esm = "esm-marker-1"; export const esmUrl = import.meta.url;\n`);
    pkg("cjs-pkg", { main: "index.js" }, "index.js", `module.exports = { cjs: "cjs-marker" };\n`);
    pkg("native-pkg", { type: "module", exports: "./index.js", gypfile: true }, "index.js", `export const native = "native-marker";\n`);
    const path = write(
      "packages.config.ts",
      `import { defineConfig } from ${defineConfig};\nimport { esm, esmUrl } from "esm-pkg";\nimport cjsPkg from "cjs-pkg";\nimport { native } from "native-pkg";\n` +
        `export default defineConfig({ actions: [], connectors: [], policy: ${memoryPolicy}, server: { host: [esm, esmUrl, cjsPkg.cjs, native].join(" ") } });\n`,
    );
    const cfg = await loadConfig(path, { cacheDir });
    expect(cfg.server?.host).toBe(`esm-marker-1 file://${join(dir, "node_modules/esm-pkg/index.js")} cjs-marker native-marker`);
    const cached = join(cacheDir, "config");
    const newest = (): string => readdirSync(cached).filter((f) => f.endsWith(".mjs")).map((f) => join(cached, f)).sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0]!;
    const text = readFileSync(newest(), "utf8");
    expect(text).toContain("esm-marker-1");
    expect(text).not.toContain("cjs-marker");
    expect(text).not.toContain("native-marker");
    expect(text).toContain(JSON.stringify(`file://${join(dir, "node_modules/cjs-pkg/index.js")}`));
    expect(text).toContain(JSON.stringify(`file://${join(dir, "node_modules/native-pkg/index.js")}`));
    // A patched package file (package.json unchanged) rebuilds.
    pkg("esm-pkg", { type: "module", exports: "./index.js" }, "index.js", `export const esm = "esm-marker-2"; export const esmUrl = import.meta.url;\n`);
    expect((await loadConfig(path, { cacheDir })).server?.host).toMatch(/^esm-marker-2 /);
  });

  it("a syntax error is named with file:line:column", async () => {
    const path = write("broken.config.ts", `const a = 1;\nexport default defineConfig({ actions: [] );\n`);
    await expect(loadConfig(path, { cacheDir })).rejects.toThrow(`config ${path} failed to load: ${path}:2:43: Expected "}" but found ")"`);
  });

  it("an error thrown while the config runs is named with the line of the throw", async () => {
    const path = write("throws.config.ts", `const x: number = 1;\nfunction f(): void {\n  throw new Error("boom " + x);\n}\nf();\nexport default {};\n`);
    await expect(loadConfig(path, { cacheDir })).rejects.toThrow(`config ${path} failed to load: boom 1 (at ${path}:3:9)`);
  });

  it("an import written as an absolute file: URL is bundled like the file it names", async () => {
    mkdirSync(join(dir, "elsewhere"), { recursive: true });
    const mod = join(dir, "elsewhere", "url-part.ts");
    writeFileSync(mod, `export const port: number = 2222;\nexport const here: string = import.meta.url;\n`);
    const path = write(
      "url.config.ts",
      `import { defineConfig } from ${defineConfig};\nimport { port, here } from ${JSON.stringify(pathToFileURL(mod).href)};\nexport default defineConfig({ actions: [], connectors: [], policy: ${memoryPolicy}, server: { port, host: here } });\n`,
    );
    const config = await loadConfig(path, { cacheDir });
    expect(config.server).toEqual({ port: 2222, host: pathToFileURL(mod).href });
    // An edit of the file the URL names rebuilds the bundle, as for any input.
    writeFileSync(mod, `export const port: number = 3333;\nexport const here: string = "x";\n`);
    expect((await loadConfig(path, { cacheDir })).server?.port).toBe(3333);
  });

  it("a file: URL import naming no file is a load error that names it", async () => {
    const missing = pathToFileURL(join(dir, "nowhere", "gone.ts")).href;
    const path = write("url-missing.config.ts", `import { x } from ${JSON.stringify(missing)};\nexport default { x };\n`);
    await expect(loadConfig(path, { cacheDir })).rejects.toThrow(`${path}:1:19: ${missing} names no file`);
  });

  it("a config whose default export is not a config is refused as before", async () => {
    const path = write("empty.config.ts", `export default { actions: "none" };\n`);
    await expect(loadConfig(path, { cacheDir })).rejects.toMatchObject({ code: "INVALID_OPTION" });
  });
});
