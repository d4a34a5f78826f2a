/**
 * The shared Store conformance suite against the SQLite store. Each case gets a fresh database
 * file; the stores a case opens (e.g. two, to migrate concurrently) share that case's file.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeEach } from "vitest";
import { sqliteStore } from "../../src/stores/sqlite/index.js";
import { defineStoreConformance } from "./conformance-harness.js";

const root = mkdtempSync(join(tmpdir(), "writ-sqlite-conformance-"));
let caseNo = 0;
let path = join(root, "unused.db");

beforeEach(() => {
  caseNo += 1;
  path = join(root, `case-${caseNo}.db`);
});

defineStoreConformance(
  "sqlite",
  async () => sqliteStore({ path }),
  async () => rmSync(root, { recursive: true, force: true }),
);
