/** What the interrupted-key crash test and its child share: the actions and the PostgreSQL application name. */

/** The name `CrashTarget.quiesce(0)` waits on (see targets.ts). */
export const INTERRUPTED_APP = "writ-crash-0";

/** The actions the interrupted-key child registers (the crash workload's). */
export { CRASH_ACTIONS as INTERRUPTED_ACTIONS } from "./workload.js";
