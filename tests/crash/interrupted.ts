/** What the interrupted-key crash test and its child share: the actions and the PostgreSQL application name. */
import { z } from "zod";
import { defineAction } from "../../src/index.js";
import { MODES, ONE_STEP, TWO_STEP } from "./workload.js";

/** The name `CrashTarget.quiesce(0)` waits on (see targets.ts). */
export const INTERRUPTED_APP = "writ-crash-0";

const params = z.object({ mode: z.enum(MODES), run: z.number(), caller: z.number(), n: z.number() });
export const INTERRUPTED_ACTIONS = [
  defineAction({ id: ONE_STEP, version: "1", params, idempotent: true, steps: [{ name: "only", connector: "crash", operation: "last" }] }),
  defineAction({
    id: TWO_STEP,
    version: "1",
    params,
    idempotent: true,
    steps: [
      { name: "prepare", connector: "crash", operation: "first" },
      { name: "commit", connector: "crash", operation: "last" },
    ],
  }),
];
