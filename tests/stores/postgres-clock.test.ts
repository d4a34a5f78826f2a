/**
 * The database clock of the PostgreSQL store (src/stores/postgres/postgres-clock.ts): the process
 * clock corrected by sampled offsets of the server's, with scripted local clocks and server reads,
 * then once against the test server.
 *
 * Invariants: `now()` is the process clock plus the server's offset measured at the middle of the
 * sample's round trip, timed from the statement's send (connecting and pool waits excluded); a
 * sampling keeps its shortest read; a sample replaces the one in use when its error bound (half
 * its round trip) is no larger than that one's aged by 1,000 ppm of drift, when the two disagree
 * beyond both bounds, or when a stepped wall clock made that one stale; a step moves the offset
 * in use by the step at once; a read whose round trip comes out negative is refused; `ready()`
 * resolves only after a successful sample and rejects when the attempt fails (the next call tries
 * again); a stepped wall clock triggers a new sample at once, a sampling it overlapped is
 * followed by another at once, and while the sample in use is stale a failed sampling is retried
 * within a second; on the real store, `now()` agrees
 * with the server's `clock_timestamp()` to within a round trip, a host built on the store without a
 * clock runs on it, and a slow checkout of a connection neither lengthens the sample's round trip
 * nor shifts its offset.
 */
import { afterAll, describe, expect, it } from "vitest";
import { CLOCK_SQL, databaseClock } from "../../src/stores/postgres/postgres-clock.js";
import { postgresStore } from "../../src/stores/postgres/index.js";
import pg from "pg";
import { pgServerOrNull, testPool } from "../helpers/pg.js";
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

/** A read on `l` whose round trip takes `rttMs`, the server reading its clock, `offsetMs` ahead, halfway through. */
function readHalfway(l: ReturnType<typeof local>, rttMs: number, offsetMs: number): number {
  l.advance(rttMs / 2);
  const server = l.wall() + offsetMs;
  l.advance(rttMs / 2);
  return server;
}

describe("databaseClock", () => {
  it("applies the server's offset measured at the middle of the round trip", async () => {
    const l = local();
    // The server is 5 minutes ahead; the read takes 40 ms and the server reads its clock after 20.
    const clock = databaseClock({
      everyMs: 10_000,
      local: l,
      read: async () => readHalfway(l, 40, 300_000),
    });
    expect(clock.sample()).toBeNull();
    await clock.ready();
    expect(clock.sample()).toMatchObject({ offsetMs: 300_000, rttMs: 40 });
    expect(clock.now()).toBe(l.wall() + 300_000);
    l.advance(1_234);
    expect(clock.now()).toBe(l.wall() + 300_000);
    clock.stop();
  });

  it("uses a slow first sample until a better one; a stepped wall clock voids the sample in use", async () => {
    const l = local();
    const rtts = [3_000, 40, 2_000];
    const offsets = [-120_000, -60_000, 999_999];
    let i = 0;
    const clock = databaseClock({
      everyMs: 10_000,
      probes: 1,
      local: l,
      read: async () => {
        const k = i++;
        return readHalfway(l, rtts[k]!, offsets[k]!);
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
    // The 40 ms sample was measured against the wall clock before the step: void, so even a 2 s
    // sample replaces it.
    expect(clock.sample()).toMatchObject({ offsetMs: 999_999, rttMs: 2_000 });
    clock.stop();
  });

  it("times the round trip from the statement's send, not from connecting or waiting for the pool", async () => {
    const l = local();
    // 600 ms to get a connection, then a 4 ms round trip; the server is exactly 1 s ahead.
    const clock = databaseClock({
      everyMs: 10_000,
      local: l,
      read: async (sent) => {
        l.advance(600);
        sent();
        l.advance(2);
        const server = l.wall() + 1_000;
        l.advance(2);
        return server;
      },
    });
    await clock.ready();
    // Timed from the read's start, the offset would be off by 300 ms (half the wait).
    expect(clock.sample()).toMatchObject({ offsetMs: 1_000, rttMs: 4 });
    clock.stop();
  });

  it("takes the read with the shortest round trip of a sampling; a later read's failure keeps the earlier ones", async () => {
    const l = local();
    // Each read's round trip and where in it the server read its clock (the server is 50 ms ahead).
    const script: Array<{ rtt: number; at: number } | "fail"> = [
      { rtt: 30, at: 29 },
      { rtt: 2, at: 1 },
      { rtt: 12, at: 1 },
      { rtt: 8, at: 0 },
      "fail",
      { rtt: 1, at: 0 },
    ];
    let i = 0;
    const read = async (): Promise<number> => {
      const step = script[i++]!;
      if (step === "fail") throw new Error("connection reset");
      l.advance(step.at);
      const server = l.wall() + 50;
      l.advance(step.rtt - step.at);
      return server;
    };
    const first = databaseClock({ everyMs: 10_000, local: l, read });
    await first.ready();
    expect(i).toBe(3);
    expect(first.sample(), "the 2 ms read of three").toMatchObject({ rttMs: 2, offsetMs: 50 });
    first.stop();
    const second = databaseClock({ everyMs: 10_000, local: l, read });
    await second.ready();
    expect(i, "the second read failed: no third").toBe(5);
    expect(second.sample(), "read at the start of its round trip: off by half of it, within its bound").toMatchObject({ rttMs: 8, offsetMs: 46 });
    second.stop();
  });

  it("keeps the sample with the smaller error bound, the one in use aged by 1,000 ppm, unless the two disagree beyond both bounds", async () => {
    const l = local();
    let next = { rtt: 10, offset: 100 };
    let reads = 0;
    const clock = databaseClock({
      everyMs: 1,
      probes: 1,
      local: l,
      read: async () => {
        reads++;
        return readHalfway(l, next.rtt, next.offset);
      },
    });
    const sampled = async (): Promise<void> => {
      const r = reads;
      while (reads === r) await new Promise((res) => setTimeout(res, 2));
      await new Promise((res) => setTimeout(res, 0));
    };
    await clock.ready();
    expect(clock.sample()).toMatchObject({ rttMs: 10, offsetMs: 100 });
    // 9 s later a 30 ms sample that agrees: its bound (15 ms) is above the one in use, aged
    // (5 + 9,000 x 1,000e-6 = 14 ms): kept. At 500 ppm it would be kept at 11 s too.
    next = { rtt: 30, offset: 103 };
    l.advance(9_000);
    await sampled();
    expect(clock.sample()?.offsetMs).toBe(100);
    // 11 s after it (16 ms), the 15-ms sample replaces it.
    l.advance(2_000);
    await sampled();
    expect(clock.sample()).toMatchObject({ rttMs: 30, offsetMs: 103 });
    // An equally good sample replaces one of the same bound (the newer measurement).
    next = { rtt: 30, offset: 104 };
    await sampled();
    expect(clock.sample()?.offsetMs).toBe(104);
    // A better one replaces it at once.
    next = { rtt: 4, offset: 106 };
    await sampled();
    expect(clock.sample()).toMatchObject({ rttMs: 4, offsetMs: 106 });
    // A worse one that disagrees beyond both bounds (2 + 15 ms) replaces it too: the server's
    // clock moved (stepped, or another server after a failover), and the old offset is wrong.
    next = { rtt: 30, offset: 500 };
    await sampled();
    expect(clock.sample()).toMatchObject({ rttMs: 30, offsetMs: 500 });
    clock.stop();
  });

  it("moves the offset by a wall-clock step at once, and samples again as soon as a sampling the step overlapped ends", async () => {
    const l = local();
    const serverNow = (): number => 1_000_000 + l.mono() + 50; // the server's clock never steps
    let hold: (() => void) | null = null;
    let reads = 0;
    const clock = databaseClock({
      everyMs: 10_000,
      probes: 1,
      local: l,
      read: async () => {
        reads++;
        if (reads === 2) await new Promise<void>((r) => (hold = r)); // the second read hangs until released
        l.advance(1);
        const server = serverNow();
        l.advance(1);
        return server;
      },
    });
    await clock.ready();
    expect(clock.now()).toBe(serverNow());
    l.stepWall(1_000);
    expect(clock.now(), "moved by the step before any sample").toBe(serverNow());
    await new Promise((r) => setTimeout(r, 0));
    expect(reads, "a step starts a sampling").toBe(2);
    l.stepWall(2_000); // a second step while that sampling's read hangs
    expect(clock.now()).toBe(serverNow());
    hold!();
    for (let i = 0; i < 5 && reads < 3; i++) await new Promise((r) => setTimeout(r, 0));
    expect(reads, "the overlapped sampling is followed by another at once, not after the retry delay").toBe(3);
    await new Promise((r) => setTimeout(r, 0));
    expect(clock.sample()?.offsetMs).toBe(50 - 3_000);
    expect(clock.now()).toBe(serverNow());
    clock.stop();
  });

  it("after a step, a failed sampling is retried within a second (the sample in use is stale), not after everyMs", async () => {
    const l = local();
    let reads = 0;
    const clock = databaseClock({
      everyMs: 60_000,
      probes: 1,
      local: l,
      read: async () => {
        reads++;
        if (reads === 2) throw new Error("connection reset");
        return l.wall() + 25;
      },
    });
    await clock.ready();
    clock.now();
    l.stepWall(5_000);
    clock.now(); // the step: a sampling at once, which fails
    await new Promise((r) => setTimeout(r, 0));
    expect(reads).toBe(2);
    expect(clock.sample()?.offsetMs, "moved by the step meanwhile").toBe(25 - 5_000);
    // Retried after 1 s; waited for up to 5 s (a loaded machine's timers run late), far short of
    // the 60-s everyMs a good sample would wait.
    for (let waited = 0; reads < 3 && waited < 5_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
    expect(reads, "the stale sample is sampled again within seconds, not after everyMs").toBe(3);
    expect(clock.sample()?.offsetMs).toBe(25);
    clock.stop();
  });

  it("starts no further read of a sampling once stopped (a store closing mid-sampling)", async () => {
    const l = local();
    let reads = 0;
    const clock = databaseClock({
      everyMs: 10_000,
      local: l,
      read: async () => {
        reads++;
        clock.stop(); // the store closes while its first read is out
        return readHalfway(l, 2, 5);
      },
    });
    await clock.ready();
    expect(reads, "no second or third read after stop()").toBe(1);
    expect(clock.sample(), "the read that was out still counts").toMatchObject({ offsetMs: 5, rttMs: 2 });
  });

  it("refuses a read whose round trip came out negative (the monotonic clock went back)", async () => {
    let mono = 10_000;
    const clock = databaseClock({
      everyMs: 10_000,
      local: { wall: () => 5_000_000, mono: () => mono },
      read: async () => {
        mono -= 300;
        return 5_000_000;
      },
    });
    await expect(clock.ready()).rejects.toThrow("negative");
    expect(clock.sample()).toBeNull();
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

  it("leaves a slow wait for a connection out of the sample: the offset is right to within the statement's own round trip", async () => {
    // Every checkout of this store's pool waits 200 ms first (a busy pool, a slow connect).
    const pool = testPool({ connectionString: server!.adminUrl, max: 2 });
    const connect = pool.connect.bind(pool) as () => Promise<pg.PoolClient>;
    (pool as unknown as { connect: () => Promise<pg.PoolClient> }).connect = async () => {
      await new Promise((r) => setTimeout(r, 200));
      return connect();
    };
    const slow = postgresStore({ pool }, { autoMigrate: false });
    const c = new pg.Client({ connectionString: server!.adminUrl });
    await c.connect();
    try {
      await slow.clock.ready();
      const s = slow.clock.sample()!;
      expect(s.rttMs, "the 200 ms wait is not in the round trip").toBeLessThan(200);
      // The server's offset from this process, measured directly on a connected client: the
      // shortest of five reads.
      let truth = { offsetMs: 0, rttMs: Infinity };
      for (let i = 0; i < 5; i++) {
        const w0 = Date.now();
        const m0 = performance.now();
        const { rows } = await c.query<{ ms: number }>(CLOCK_SQL);
        const rttMs = performance.now() - m0;
        if (rttMs < truth.rttMs) truth = { offsetMs: rows[0]!.ms - (w0 + rttMs / 2), rttMs };
      }
      // Both are right to within half their round trips (and 1 ms of rounding); counted from the
      // checkout, the sample would be off by about 100 ms.
      expect(Math.abs(s.offsetMs - truth.offsetMs)).toBeLessThanOrEqual(s.rttMs / 2 + truth.rttMs / 2 + 1);
    } finally {
      await c.end();
      await slow.close();
      await pool.end();
    }
  });
});
