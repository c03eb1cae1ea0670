/**
 * One HTTP exchange of the MCP SDK's web-standard servers on a Node response,
 * in as few socket writes as it can: the gateway's own hop costs mostly
 * syscalls on a loaded machine, not JavaScript.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { toWebRequest } from '@modelcontextprotocol/node';

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
