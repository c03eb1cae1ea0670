// A response stream (a subscriptions/listen or SSE stream) ends when the signal
// its request was sent with aborts, even after a garbage collection: undici
// follows the signal only through the Request object fetch made, which nothing
// holds once the response has arrived.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { uncopiedFetch, withStreamsEndingOnAbort } from '../../src/connection/remote-transport.js';
import { collectGarbage } from '../support/gc.js';
import { until } from '../support/wait.js';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  server = undefined;
});

/** A server whose every answer is an event stream that never ends; `open` counts the requests still open. */
async function eventStreamServer(): Promise<{ url: string; open: () => number }> {
  const requests = new Set<IncomingMessage>();
  server = createServer((req, res) => {
    requests.add(req);
    req.on('close', () => requests.delete(req));
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(': open\n\n');
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}/mcp`, open: () => requests.size };
}

it('an event stream ends when its signal aborts after a garbage collection', async () => {
  const { url, open } = await eventStreamServer();
  const fetch = withStreamsEndingOnAbort(uncopiedFetch());
  const transport = new AbortController();
  const request = new AbortController();
  // As the SDK sends a request: the transport's signal and the request's, joined.
  const response = await fetch(url, { method: 'POST', body: '{}', signal: AbortSignal.any([transport.signal, request.signal]) });
  expect(response.headers.get('content-type')).toBe('text/event-stream');
  const reader = response.body!.getReader();
  const ended = (async () => {
    try {
      while (!(await reader.read()).done);
      return 'ended';
    } catch (error) {
      return (error as Error).name;
    }
  })();
  await until(() => open() === 1, 'the stream to be open');

  await collectGarbage();
  request.abort();

  const unanswered = new Promise((resolve) => setTimeout(() => resolve('still open 2 s after the abort'), 2000).unref());
  expect(await Promise.race([ended, unanswered])).toBe('AbortError');
  await until(() => open() === 0, 'the server to see the stream closed', 2000);
});
