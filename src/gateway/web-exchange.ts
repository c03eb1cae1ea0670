/**
 * One HTTP exchange of the MCP SDK's web-standard servers on a Node response,
 * in as few socket writes as it can: the gateway's own hop costs mostly
 * syscalls on a loaded machine, not JavaScript.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { toWebRequest } from '@modelcontextprotocol/node';
import type { AuthInfo, McpHttpHandler } from '@modelcontextprotocol/server';

/** What a request still under way when the worker stops is answered with (-32000), on both endpoints and in both eras. */
export const SHUTTING_DOWN = 'this worker is shutting down';

/** A request as the web-standard servers take it, with a signal that aborts when the client goes away before the answer is written. */
export interface WebExchange {
  request: globalThis.Request;
  /** Writes the answer to the Node response (see `writeWebResponse`). */
  respond(response: globalThis.Response, options?: { whole?: boolean }): Promise<void>;
}

/** The web `Request` of `req` (`body` parsed already), converted once for every step that reads it. */
export async function webExchange(req: IncomingMessage, res: ServerResponse, body: unknown, maxRequestBodySize: number): Promise<WebExchange> {
  const abort = new AbortController();
  let written = false;
  res.once('close', () => {
    if (!written) abort.abort();
  });
  const request = await toWebRequest(req, body, { signal: abort.signal, maxRequestBodySize });
  return {
    request,
    async respond(response, options) {
      try {
        await writeWebResponse(res, response, abort.signal, options?.whole);
      } finally {
        written = true;
      }
    },
  };
}

/** A JSON-RPC error answering the request `body` (its id, when it has one). */
function errorAnswer(body: unknown, status: number, code: number, message: string): globalThis.Response {
  const id = (body as { id?: unknown } | undefined)?.id;
  return Response.json({ jsonrpc: '2.0', error: { code, message }, id: typeof id === 'string' || typeof id === 'number' ? id : null }, { status });
}

/**
 * A request that arrives once its endpoint is closing (the worker stops), of either era:
 * answered `SHUTTING_DOWN` (-32000, HTTP 503) at once, as one the close cuts off is, rather
 * than handed to a 2026 handler that is closed (or made anew, which no close would end) or
 * opening a 2025 session after the sessions were ended.
 */
export function refuseShuttingDown(exchange: WebExchange, body: unknown): Promise<void> {
  return exchange.respond(errorAnswer(body, 503, -32000, SHUTTING_DOWN));
}

/**
 * One 2026-era request to a web-standard MCP handler, answered on `exchange`. A handler
 * that throws is answered as a JSON-RPC internal error (500). A request cut off by the
 * handler's `close()` while its endpoint is `closing` (the worker stops), which the SDK
 * answers with a bodyless 499, is answered `SHUTTING_DOWN` (-32000, HTTP 503) as a 2025
 * session's is (sessions.ts), so its client fails at once rather than on its own timeout.
 */
export async function answerModern(
  handler: McpHttpHandler,
  exchange: WebExchange,
  body: unknown,
  options: { authInfo?: AuthInfo; closing(): boolean; onerror(error: Error): void },
): Promise<void> {
  const answer = (status: number, code: number, message: string) => errorAnswer(body, status, code, message);
  let response: globalThis.Response;
  try {
    response = await handler.fetch(exchange.request, { ...(options.authInfo && { authInfo: options.authInfo }), ...(body !== undefined && { parsedBody: body }) });
  } catch (error) {
    options.onerror(error instanceof Error ? error : new Error(String(error)));
    response = answer(500, -32603, 'Internal server error');
  }
  if (options.closing() && response.status === 499) response = answer(503, -32000, SHUTTING_DOWN);
  await exchange.respond(response);
}

/** An SSE stream that holds one message and nothing else, as the SDK writes it: that message's JSON. */
const ONE_EVENT = /^event: message\ndata: ([^\n]*)\n\n$/;

/**
 * Writes `response` to `res`. With `whole` (the caller knows nothing in the
 * stream needs to arrive before its end), a stream is read to its end first:
 * one that carries only the result is answered as that result in one
 * `application/json` body, anything else as the stream it was, in one write.
 * A JSON answer (its length known once read) goes
 * out with its headers in one write; a stream's chunks that come in the same
 * turn share one write, so a stream that opens, carries one event and ends
 * (an SSE answer with nothing before its result) is one write as well, while a
 * stream that carries progress still reaches the client as it happens.
 */
export async function writeWebResponse(res: ServerResponse, response: globalThis.Response, aborted: AbortSignal, whole = false): Promise<void> {
  const headers: Record<string, string> = {};
  for (const [name, value] of response.headers) headers[name] = value;
  if (response.body === null) {
    res.writeHead(response.status, headers).end();
    return;
  }
  if (!(headers['content-type'] ?? '').startsWith('text/event-stream')) {
    const bytes = Buffer.from(await response.arrayBuffer());
    headers['content-length'] = String(bytes.byteLength);
    res.writeHead(response.status, headers).end(bytes);
    return;
  }
  if (whole === true) {
    const text = await response.text();
    const single = ONE_EVENT.exec(text)?.[1];
    const bytes = Buffer.from(single ?? text);
    if (single !== undefined) {
      headers['content-type'] = 'application/json';
      delete headers['cache-control'];
      delete headers['x-accel-buffering'];
    }
    headers['content-length'] = String(bytes.byteLength);
    res.writeHead(response.status, headers).end(bytes);
    return;
  }
  res.writeHead(response.status, headers);
  let corked = false;
  const uncork = () => {
    corked = false;
    res.uncork();
  };
  let drained: (() => void) | undefined;
  const onDrain = () => drained?.();
  res.on('drain', onDrain);
  const reader = response.body.getReader();
  const stop = () => {
    drained?.();
    void reader.cancel().catch(() => {});
  };
  aborted.addEventListener('abort', stop, { once: true });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done || aborted.aborted) break;
      if (!corked) {
        corked = true;
        res.cork();
        process.nextTick(uncork);
      }
      if (!res.write(value)) await new Promise<void>((resolve) => (drained = resolve));
    }
  } catch {
    // A stream that failed ends the answer where it got to.
  } finally {
    aborted.removeEventListener('abort', stop);
    res.off('drain', onDrain);
    res.end();
  }
}
