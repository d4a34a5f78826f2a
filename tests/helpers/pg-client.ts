/**
 * A test file of the store's SQL functions: a fresh migrated database and a plain client on it,
 * opened before the file's tests when a PostgreSQL server runs (`freshDatabase`), dropped after.
 */
import pg from "pg";
import { afterAll, beforeAll } from "vitest";
import { freshDatabase, type PgServer } from "./pg.js";

/** Registers the file's hooks; `use` receives the client once it is connected. */
export function clientPerFile(server: PgServer | null, use: (client: pg.Client) => void): void {
  let close: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    if (server === null) return;
    const db = await freshDatabase();
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    close = async () => {
      await client.end();
      await db.drop();
    };
    use(client);
  });
  afterAll(() => close?.());
}
