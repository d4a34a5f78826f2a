/** The pure core: no I/O, no ambient time or entropy. Ports bring them in. */
export * from "./action.js";
export * from "./boundary.js";
export * from "./canonical.js";
export * from "./decision.js";
export * from "./digest.js";
export * from "./encoding.js";
export * from "./errors.js";
export * from "./journal.js";
export * from "./keyring.js";
export type * from "./ports.js";
export * from "./redact.js";
export * from "./reply.js";
export * from "./standard-schema.js";
export * from "./store.js";
export type * from "./types.js";
export * from "./types.js";
export * from "./validate.js";
export * from "./manual-clock.js";
