/**
 * The examples an agent developer pastes stay true: the first ```ts block of docs/client.md and
 * the one under "## Example" of each adapter page compile against the sources (with `writ/…`
 * pointed at src/client), under the project's compiler options.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { afterAll, describe, expect, it } from "vitest";
import { REPO } from "../cli/helpers.js";

const ENTRIES: Record<string, string> = {
  "writ/client": "src/client/index.js",
  "writ/ai-sdk": "src/client/adapters/ai-sdk.js",
  "writ/openai-agents": "src/client/adapters/openai-agents.js",
  "writ/langchain": "src/client/adapters/langchain.js",
};

/** The first ```ts block of `doc`, under the heading `section` when given. */
export function exampleOf(doc: string, section?: string): string {
  const text = readFileSync(join(REPO, "docs", doc), "utf8");
  const part = section === undefined ? text : text.split(/^## /m).find((s) => s.startsWith(section));
  const code = part ? /```ts\n([\s\S]*?)```/.exec(part)?.[1] : undefined;
  if (!code) throw new Error(`docs/${doc} has no \`\`\`ts block${section ? ` under "## ${section}"` : ""}`);
  return code;
}

const dir = mkdtempSync(join(REPO, "tests", "client", ".examples-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const EXAMPLES: Array<[string, string | undefined]> = [
  ["client.md", undefined],
  ["ai-sdk.md", "Example"],
  ["openai-agents.md", "Example"],
  ["langchain.md", "Example"],
];

describe("docs examples compile", () => {
  it("docs/client.md and each adapter page's example type-check (one program)", { timeout: 120_000 }, () => {
    const files = EXAMPLES.map(([doc, section]) => {
      let code = exampleOf(doc, section);
      for (const [entry, file] of Object.entries(ENTRIES)) code = code.replaceAll(`"${entry}"`, JSON.stringify(join(REPO, file)));
      expect(code, doc).not.toMatch(/from "writ\//);
      const file = join(dir, doc.replace(/\.md$/, ".ts"));
      writeFileSync(file, code);
      return file;
    });
    const config = ts.getParsedCommandLineOfConfigFile(join(REPO, "tsconfig.json"), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined })!;
    const program = ts.createProgram(files, { ...config.options, noEmit: true });
    // The program is the real one: it reads the examples and the adapters they import.
    expect(program.getSourceFiles().map((f) => f.fileName)).toEqual(expect.arrayContaining([...files, join(REPO, "src/client/adapters/langchain.ts")]));
    const problems = ts.getPreEmitDiagnostics(program).map((d) => `${d.file ? `${d.file.fileName.slice(REPO.length + 1)}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}` : ""} ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`);
    expect(problems).toEqual([]);
  });
});
