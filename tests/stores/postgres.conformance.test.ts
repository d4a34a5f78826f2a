/**
 * The shared Store conformance suite against the PostgreSQL store, on a fresh database for this
 * file (tests/helpers/pg.ts). Every case opens its own stores (each with its own pool) over that
 * database and uses scopes of its own.
 */
import { describe } from "vitest";
import { postgresStore } from "../../src/stores/postgres/index.js";
import { freshDatabase, pgServerOrNull } from "../helpers/pg.js";
import { defineStoreConformance } from "./conformance-harness.js";

const server = await pgServerOrNull();
const db = server === null ? null : await freshDatabase();

describe.skipIf(db === null)("postgres", () => {
  defineStoreConformance(
    "postgres",
    async () => postgresStore({ url: db!.url }, { max: 4 }),
    async () => db?.drop(),
    // Two pools over one database: the race cases also race real concurrent transactions.
    { concurrent: true },
  );
});
