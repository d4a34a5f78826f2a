/** The built-in HTTP connector. */
export { httpConnector } from "./http-connector.js";
export {
  HTTP_DEFAULTS,
  HTTP_METHODS,
  HTTP_STATUS_OUTCOMES,
  type HttpConnectorOptions,
  type HttpExternalRef,
  type HttpHeaders,
  type HttpMethod,
  type HttpOperation,
  type HttpStatusOutcome,
  type HttpStatusOutcomes,
} from "./http-options.js";
export { defaultStatusOutcome } from "./http-mapping.js";
