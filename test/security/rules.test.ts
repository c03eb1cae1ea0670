// Issue 7 item 6, the rules: each refusal on every route of a real listening
// worker (a real host on real fixture servers), and proof that a refused
// request did nothing — no journal event, the config file byte for byte, the
// same child process. test/http/security.test.ts checks each rule's details
// against a stub host; this file checks that no route slips past one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLiveHost, type LiveHost, type RawReply } from './live-host.js';

interface Route {
  method: string;
  path: string;
  /** A valid body: the request would do real work if it were let through. */
  body?: unknown;
}

const ROUTES: Route[] = [
  { method: 'GET', path: '/api/mcp/servers' },
  { method: 'POST', path: '/api/mcp/servers', body: { name: 'fresh', type: 'local', command: ['node'], enabled: false } },
  { method: 'GET', path: '/api/mcp/servers/ok' },
  { method: 'PATCH', path: '/api/mcp/servers/off', body: { env: { K: 'refused-secret-value' } } },
  { method: 'DELETE', path: '/api/mcp/servers/ok' },
  { method: 'POST', path: '/api/mcp/servers/ok/restart' },
  { method: 'POST', path: '/api/mcp/servers/ok/auth' },
  { method: 'GET', path: '/api/mcp/catalog' },
  { method: 'GET', path: '/api/mcp/catalog/diff' },
  { method: 'GET', path: '/api/mcp/tools' },
  { method: 'POST', path: '/api/mcp/tools/ok__echo/call', body: { arguments: { text: 'hi' } } },
  { method: 'GET', path: '/api/mcp/events?since=0' },
  { method: 'GET', path: '/api/mcp/events/stream?since=0' },
];
const MUTATIONS = ROUTES.filter((route) => route.method !== 'GET');
const WITH_BODY = ROUTES.filter((route) => route.body !== undefined);

let live: LiveHost;
let before: { events: number; config: string; okSince: string | undefined };

beforeAll(async () => {
  live = await startLiveHost();
  before = { events: live.host.events().length, config: live.configText(), okSince: live.host.server('ok')?.since };
});
afterAll(() => live?.close());

function send(route: Route, headers: Record<string, string | undefined>, body?: string | Buffer): Promise<RawReply> {
  const json = route.body === undefined ? undefined : JSON.stringify(route.body);
  return live.send({
    method: route.method,
    path: route.path,
    headers: { ...(json === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body ?? json,
  });
}

function expectRefused(reply: RawReply, status: number, code: string, route: Route): void {
  const label = `${route.method} ${route.path}`;
  expect(reply.status, `${label}: ${reply.text}`).toBe(status);
  expect(JSON.parse(reply.text), label).toEqual({ error: { code, message: expect.any(String) } });
}

describe('every route refuses before doing anything (issue 7 item 6)', () => {
  it('missing or wrong token → 401, on every /api route', async () => {
    for (const route of ROUTES) {
      for (const authorization of [undefined, 'Bearer wrong-token', `Bearer ${'x'.repeat(40)}`, 'Basic c2VjdXJpdHk=']) {
        const reply = await send(route, { authorization });
        expectRefused(reply, 401, 'unauthorized', route);
        expect(reply.headers['www-authenticate']).toBe('Bearer');
      }
    }
  });

  it('a foreign Host → 403, on every route and /healthz, even with the right token', async () => {
    for (const route of [...ROUTES, { method: 'GET', path: '/healthz' }]) {
      for (const host of [`evil.example:${live.port}`, `127.0.0.1:${live.port + 1}`, 'localhost', `127.0.0.1.nip.io:${live.port}`]) {
        expectRefused(await send(route, { host }), 403, 'forbidden_host', route);
      }
    }
  });

  it('a cross-origin mutation → 403, on every mutating route', async () => {
    for (const route of MUTATIONS) {
      for (const origin of ['http://evil.example', 'null', `http://evil.example:${live.port}`, `https://127.0.0.1:${live.port}`]) {
        expectRefused(await send(route, { origin }), 403, 'forbidden_origin', route);
      }
    }
  });

  it('a body over the limit → 413, on every route that takes one', async () => {
    for (const route of WITH_BODY) {
      const oversized = JSON.stringify({ ...(route.body as object), pad: 'x'.repeat(1024 * 1024) });
      expectRefused(await send(route, {}, oversized), 413, 'payload_too_large', route);
    }
  });

  it('a body that is not JSON → 415, on every mutating route', async () => {
    for (const route of MUTATIONS) {
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', undefined]) {
        const reply = await send(route, { 'content-type': type }, JSON.stringify(route.body ?? {}));
        expectRefused(reply, 415, 'unsupported_media_type', route);
      }
    }
  });

  it('nothing was done: no event, the file unchanged, the same ok process', async () => {
    expect(live.host.events().length).toBe(before.events);
    expect(live.configText()).toBe(before.config);
    expect(live.host.server('ok')).toMatchObject({ state: 'ready', since: before.okSince });
    expect(live.host.status().map((view) => view.name)).toEqual(['ok', 'off']);
    // The requests themselves were fine: with the right headers they are answered.
    const reply = await live.send({ path: '/api/mcp/servers/ok' });
    expect(reply.status).toBe(200);
  });
});
