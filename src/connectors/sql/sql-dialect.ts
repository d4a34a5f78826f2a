/**
 * What the SQL connector needs from a database: the step transaction in the database's dialect
 * (the sequence is the same everywhere, see sql-connector.ts), and how to read its errors.
 */
import type { ResolvedSqlOperation, SqlParams, SqlResult } from "./sql-options.js";

/** A step key's recorded answer. */
export interface DedupeRow {
  connector: string;
  operation: string;
  externalRef: string | null;
  result: string | null;
}

/** How a failure is read: `transient` when running again may succeed. Text carries no secret. */
export interface SqlFailure {
  kind: "permanent" | "transient";
  text: string;
}

/** One step's transaction: what to run and the connector's hooks inside it. */
export interface StepPlan {
  stepKey: string;
  connector: string;
  op: ResolvedSqlOperation;
  params: SqlParams;
  /** Epoch ms recorded in the dedupe row. */
  at: number;
  /** Time left before the step deadline (bounds each statement where the database can). */
  budgetMs: number;
  /** After the statement, inside the transaction: the external reference (throws to roll back). */
  settle(result: SqlResult): string;
  /** Just before COMMIT (throws to roll back). */
  beforeCommit(): void;
}

/** How a step's transaction ended. */
export type StepOutcome =
  /** No connection (or file) could be had: nothing started. */
  | { kind: "not_started"; error: unknown }
  /** The step key was already recorded (its row, or undefined when it vanished); nothing ran. */
  | { kind: "recorded"; row: DedupeRow | undefined }
  | { kind: "committed"; externalRef: string; result: SqlResult }
  /** Rolled back (or never committed): nothing applied. */
  | { kind: "rolled_back"; error: unknown; during: "transaction" | "commit" }
  /** COMMIT failed in a way that leaves open whether it committed. */
  | { kind: "commit_unknown"; error: unknown };

export interface SqlDialect {
  /** Names the target in reasons (`postgres`, `sqlite`). */
  readonly name: string;
  /** Creates the dedupe table when missing (idempotent, safe when several callers race). */
  ensureTable(): Promise<void>;
  /**
   * BEGIN; claim the step key (INSERT … ON CONFLICT DO NOTHING); if it was there, read its row and
   * ROLLBACK; else run the statement, `settle`, record the reference and result in the row,
   * `beforeCommit`, COMMIT. Never rejects: every ending is a {@link StepOutcome}.
   */
  runStep(plan: StepPlan): Promise<StepOutcome>;
  classify(e: unknown): SqlFailure;
  close(): Promise<void>;
}
