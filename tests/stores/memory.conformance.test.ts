import { memoryStore } from "../../src/stores/memory/index.js";
import { defineStoreConformance } from "./conformance-harness.js";

defineStoreConformance("memory", async () => memoryStore());
