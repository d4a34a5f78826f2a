/**
 * The database clock of the PostgreSQL store (src/stores/postgres/postgres-clock.ts): the process
 * clock corrected by sampled offsets of the server's, with scripted local clocks and server reads,
 * then once against the test server.
 *
 * Invariants: `now()` is the process clock plus the server's offset measured at the middle of the
 * sample's round trip; a sample with a long round trip never replaces a better one; `ready()`
 * resolves only after a successful sample and rejects when the attempt fails (the next call tries
 * again); a stepped wall clock triggers a new sample at once; on the real store, `now()` agrees
 * with the server's `clock_timestamp()` to within a round trip, and a host built on the store
 * without a clock runs on it.
 */
import { afterAll, describe, expect, it } from "vitest";
import { CLOCK_SQL, databaseClock } from "../../src/stores/postgres/postgres-clock.js";
import { postgresStore } from "../../src/stores/postgres/index.js";
import pg from "pg";
import { pgServerOrNull } from "../helpers/pg.js";
import { createHost } from "../../src/host/index.js";
import { KEYS } from "../boundary/fixture.js";

/** A scripted process: wall and monotonic clocks we move by hand. */
function local(): { wall(): number; mono(): number; advance(ms: number): void; stepWall(ms: number): void } {
  let wall = 1_000_000;
  let mono = 0;
  return {
    wall: () => wall,
    mono: () => mono,
    advance(ms) {
      wall += ms;
      mono += ms;
    },
    stepWall(ms) {
      wall += ms;
    },
  };
}

describe("databaseClock", () => {
  it("applies the server's offset measured at the middle of the round trip", async () => {
    const l = local();
    // The server is 5 minutes ahead; the read takes 40 ms and the server reads its clock after 20.
    const clock = databaseClock({
      everyMs: 10_000,
      local: l,
      read: async () => {
        l.advance(20);
        const server = l.wall() + 300_000;
        l.advance(20);
        return server;
      },
    });
    expect(clock.sample()).toBeNull();
    await clock.ready();
    expect(clock.sample()).toMatchObject({ offsetMs: 300_000, rttMs: 40 });
    expect(clock.now()).toBe(l.wall() + 300_000);
    l.advance(1_234);
    expect(clock.now()).toBe(l.wall() + 300_000);
    clock.stop();
  });

  it("keeps a good sample over a slower one, and takes the slow first one until a good one arrives", async () => {
    const l = local();
    const rtts = [3_000, 40, 2_000];
    const offsets = [-120_000, -60_000, 999_999];
    let i = 0;
    const clock = databaseClock({
      everyMs: 10_000,
      local: l,
      read: async () => {
        const k = i++;
        l.advance(rtts[k]! / 2);
        const server = l.wall() + offsets[k]!;
        l.advance(rtts[k]! / 2);
        return server;
      },
    });
    await clock.ready();
    expect(clock.sample()?.offsetMs).toBe(-120_000); // the only one so far, however slow
    clock.now();
    l.stepWall(10_000); // a stepped wall clock: sampled again at once
    clock.now();
    await new Promise((r) => setTimeout(r, 0));
    expect(clock.sample()).toMatchObject({ offsetMs: -60_000, rttMs: 40 });
    l.stepWall(-10_000);
    clock.now();
    await new Promise((r) => setTimeout(r, 0));
    expect(i).toBe(3);
    expect(clock.sample()?.offsetMs, "a 2 s sample does not replace a 40 ms one").toBe(-60_000);
    clock.stop();
  });

  it("ready() rejects when the sample fails, and the next call samples again", async () => {
    const l = local();
    let fail = true;
    const clock = databaseClock({
      everyMs: 10_000,
      local: l,
      read: async () => {
        if (fail) throw new Error("connection refused");
        return l.wall() + 7;
      },
    });
    await expect(clock.ready()).rejects.toThrow("connection refused");
    expect(clock.sample()).toBeNull();
    expect(clock.now(), "before a sample: the process clock").toBe(l.wall());
    fail = false;
    await clock.ready();
    expect(clock.now()).toBe(l.wall() + 7);
    clock.stop();
  });

  it("refuses a server answer that is not a number", async () => {
    const clock = databaseClock({ everyMs: 10_000, read: async () => Number.NaN });
    await expect(clock.ready()).rejects.toThrow("non-number");
    clock.stop();
  });
});

const server = await pgServerOrNull();
describe.skipIf(server === null)("the PostgreSQL store's clock", () => {
  const store = postgresStore({ url: server?.adminUrl ?? "postgres://unused@127.0.0.1/x" }, { clockSampleMs: 100, autoMigrate: false });
  afterAll(() => store.close());

  it("agrees with the server's clock_timestamp() to within a round trip, and a host on the store runs on it", async () => {
    await store.clock.ready();
    const c = new pg.Client({ connectionString: server!.adminUrl });
    await c.connect();
    try {
      for (let i = 0; i < 3; i++) {
        const before = store.clock.now();
        const { rows } = await c.query<{ ms: number }>(CLOCK_SQL);
        const after = store.clock.now();
        expect(rows[0]!.ms).toBeGreaterThanOrEqual(before - 50);
        expect(rows[0]!.ms).toBeLessThanOrEqual(after + 50);
      }
    } finally {
      await c.end();
    }
    const s = store.clock.sample();
    expect(s).not.toBeNull();
    const host = createHost({ store, actions: [], connectors: [], policy: { evaluate: async () => ({ result: "DENY", reasons: ["test"], policyRef: "p" }), acceptedPolicyRefs: () => ["p"] }, signingKey: KEYS.trusted });
    expect(host.context.o.clock, "a host on the store without a clock of its own").toBe(store.clock);
  });
});
