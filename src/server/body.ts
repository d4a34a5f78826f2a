/** Request bodies: read under a size limit, decoded as strict UTF-8, parsed as strict JSON. */
import { parseJsonStrict } from "../core/canonical.js";
import { errorMessage } from "../core/errors.js";
import { ApiError } from "./errors.js";

/** The rest of the body is not read: the connection cannot carry another request, so it closes. */
function tooLarge(limit: number): ApiError {
  return new ApiError("PAYLOAD_TOO_LARGE", `the body is larger than ${limit} bytes`, { limitBytes: limit }, { connection: "close" });
}

/**
 * Reads the whole body, refusing more than `limit` bytes (413). With a Content-Length, the
 * declared size is checked before anything is read (the HTTP parser delivers exactly that many
 * bytes), and the body is read in one piece (on Node, straight from the socket without a web
 * stream). Without one (chunked), bytes are counted as they arrive and reading stops at the limit.
 */
export async function readBody(req: Request, limit: number): Promise<Uint8Array> {
  try {
    return await readBodyUnguarded(req, limit);
  } catch (e) {
    if (e instanceof ApiError) throw e;
    // The stream failed under us: the client disconnected mid-body. Not a server fault.
    throw new ApiError("CLIENT_CLOSED_REQUEST", "the client closed the connection before the body was complete", undefined, { connection: "close" });
  }
}

async function readBodyUnguarded(req: Request, limit: number): Promise<Uint8Array> {
  const declared = req.headers.get("content-length");
  if (declared !== null && /^\d{1,15}$/.test(declared)) {
    if (Number(declared) > limit) throw tooLarge(limit);
    const bytes = new Uint8Array(await req.arrayBuffer());
    if (bytes.byteLength > limit) throw tooLarge(limit);
    return bytes;
  }
  if (!req.body) return new Uint8Array(0);
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      // Stop reading without destroying the connection, so the 413 can still be written; the
      // Node adapter then drains (bounded in bytes and time) or closes the rest.
      reader.releaseLock();
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

const decoder = new TextDecoder("utf-8", { fatal: true });

/** Strict UTF-8: a body that is not valid UTF-8 is malformed (never silently replaced). */
export function decodeUtf8(bytes: Uint8Array): string {
  try {
    return decoder.decode(bytes);
  } catch {
    throw new ApiError("MALFORMED_JSON", "the body is not valid UTF-8");
  }
}

/** `application/json` or `application/<x>+json`, with optional parameters. */
export function isJsonContentType(value: string | undefined): boolean {
  if (value === undefined) return false;
  const type = value.split(";", 1)[0]!.trim().toLowerCase();
  return type === "application/json" || /^application\/[a-z0-9.+-]+\+json$/.test(type);
}

/**
 * Parses a JSON body with the core's strict parser: duplicate keys, `__proto__` keys, nesting
 * deeper than `maxDepth` and trailing garbage are all refused (400 MALFORMED_JSON).
 */
export function parseJsonBody(text: string, maxDepth: number): unknown {
  try {
    return parseJsonStrict(text, maxDepth);
  } catch (e) {
    throw new ApiError("MALFORMED_JSON", `the body is not acceptable JSON: ${errorMessage(e)}`);
  }
}
