/** Action globs live in the core (the boundary checks them too); re-exported for the policy engine. */
export { globMatch, globsCover } from "../core/glob.js";
