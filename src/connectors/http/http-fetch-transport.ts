/**
 * A transport on a `fetch` function. `fetch` does not say whether a connection was made, so a
 * failure counts as unsent only when its error codes prove it (the name did not resolve, the
 * connection was refused or could not be opened); an abort, a reset or anything unknown counts
 * as sent. Redirects are not followed.
 */
import { describeError, errorCodes, type HttpBody, type HttpTransport } from "./http-transport.js";

/** Codes that prove no connection was made, so nothing of the request left. */
export const NOT_SENT_CODES: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EAI_NONAME",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EHOSTDOWN",
  "ENETDOWN",
  "EADDRNOTAVAIL",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/** True when every code found in `e` proves the request was not sent (and there is one). */
export function provablyNotSent(e: unknown): boolean {
  const codes = errorCodes(e);
  return codes.length > 0 && codes.every((c) => NOT_SENT_CODES.has(c));
}

async function readBody(res: Response, maxBytes: number): Promise<HttpBody> {
  if (res.body === null) return { ok: true, text: "" };
  const reader = res.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await reader.cancel().catch(() => undefined);
        return { ok: false, problem: `response body larger than ${maxBytes} bytes` };
      }
      parts.push(value);
    }
  } catch (e) {
    return { ok: false, problem: describeError(e) };
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.byteLength;
  }
  return { ok: true, text: new TextDecoder().decode(all) };
}

/** A transport sending with `fetchFn`. */
export function fetchTransport(fetchFn: typeof fetch): HttpTransport {
  return async (call, signal, maxBytes) => {
    if (signal.aborted) return { kind: "failed", sent: false, problem: "aborted" };
    let res: Response;
    try {
      res = await fetchFn(call.url, { method: call.method, headers: call.headers, body: call.body, signal, redirect: "manual" });
    } catch (e) {
      return { kind: "failed", sent: !provablyNotSent(e), problem: describeError(e) };
    }
    const head = { status: res.status, statusText: res.statusText, header: (name: string) => res.headers.get(name) ?? undefined };
    return { kind: "response", response: { ...head, body: await readBody(res, maxBytes) } };
  };
}
