// The 2025-era sessions of `/mcp` and `/mcp/servers/:name` are bounded
// together: a cap per principal and per worker over both endpoints, DELETE
// ends one, an idle one ends by itself; a session belongs to the worker and
// the endpoint that opened it (another answers 404), while 2026-era requests
// are stateless and any worker serves them. Two apps on one host stand for two
// workers behind one load balancer.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { Gateway } from '../../src/gateway/index.js';
import { closeMcpEndpoints, createManagementApp, mcpSessionsOf } from '../../src/http/app.js';
import type { SessionPool } from '../../src/gateway/sessions.js';
import { listen, type Listening } from '../../src/http/bind.js';
import { healthy, startFleet, type Fleet } from '../http/fleet.js';
import { TOKEN } from '../http/helpers.js';
import { until } from '../support/wait.js';

let fleet: Fleet;
/** Two workers' apps on one host. */
let one: Worker;
let other: Worker;
/** A third, for `/mcp/servers/:name`'s sessions beside `/mcp`'s. */
let third: Worker;
interface Worker extends Listening {
  gateway: Gateway;
  pool: SessionPool;
}
const keys: Record<string, string> = {};
const limits = { idleMs: 400, maxSessions: 4, maxPerPrincipal: 2 };

beforeAll(async () => {
  // `wait_for_cancel` notes each call as it arrives: a call is known to be under way.
  fleet = await startFleet((dir) => ({ one: healthy(dir, 'one', { env: { FIXTURE_WAIT_LOG: join(dir, 'one.waiting') } }) }));
  [one, other, third] = await Promise.all([worker(), worker(), worker()]);
  await until(() => fleet.host.server('one')?.state === 'ready', 'the server ready');
  for (const name of ['alice', 'bob']) {
    const reply = await fleet.request('/api/mcp/users', { method: 'POST', body: { name } });
    expect(reply.status).toBe(201);
    keys[name] = reply.json.key;
  }
}, 60_000);

afterAll(async () => {
  await Promise.all([one?.close(), other?.close(), third?.close()]);
  await fleet?.close();
});

async function worker(): Promise<Worker> {
  const app = createManagementApp(fleet.host, { token: TOKEN, gatewaySessions: limits });
  return { ...(await listen(app, { port: 0 })), gateway: app.locals.gateway as Gateway, pool: mcpSessionsOf(app) };
}

/** A raw 2025 `initialize` on `port` (at `/mcp`, or `path`) as `token`: its status and session id. */
async function initialize(port: number, token: string, path = '/mcp'): Promise<{ status: number; session: string | null }> {
  const answer = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
  });
  await answer.body?.cancel();
  return { status: answer.status, session: answer.headers.get('mcp-session-id') };
}

async function end(port: number, token: string, session: string, path = '/mcp'): Promise<number> {
  const answer = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${token}`, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' },
  });
  await answer.body?.cancel();
  return answer.status;
}

describe('/mcp sessions', () => {
  it('caps sessions per principal and per worker; DELETE frees a place', async () => {
    const port = one.port;
    const first = await initialize(port, keys.alice!);
    const second = await initialize(port, keys.alice!);
    expect([first.status, second.status]).toEqual([200, 200]);
    const third = await initialize(port, keys.alice!);
    expect(third.status).toBe(429);
    // Others still get theirs, up to the worker's cap.
    expect((await initialize(port, keys.bob!)).status).toBe(200);
    expect((await initialize(port, TOKEN)).status).toBe(200);
    expect((await initialize(port, keys.bob!)).status).toBe(503);
    expect(await end(port, keys.alice!, first.session!)).toBe(200);
    expect((await initialize(port, keys.bob!)).status).toBe(200);
  });

  it('ends a session left idle', async () => {
    const gateway = other.gateway;
    const opened = await initialize(other.port, keys.alice!);
    expect(opened.status).toBe(200);
    expect(gateway.sessions.count('alice')).toBe(1);
    await until(() => gateway.sessions.count('alice') === 0, 'the idle session to end', 5_000);
    expect(await end(other.port, keys.alice!, opened.session!)).toBe(404);
  });

  it('answers another worker’s session 404, and serves a 2026 client on any worker', async () => {
    const opened = await initialize(other.port, keys.bob!);
    expect(opened.status).toBe(200);
    expect(await end(one.port, keys.bob!, opened.session!)).toBe(404);
    expect(await end(other.port, keys.bob!, opened.session!)).toBe(200);

    for (const port of [one.port, other.port]) {
      const client = new Client({ name: 'any-worker', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
      await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), { requestInit: { headers: { authorization: `Bearer ${keys.bob}` } } }));
      try {
        expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
        const result = await client.callTool({ name: 'one__echo', arguments: { text: `via ${port}` } });
        expect(result.content).toEqual([{ type: 'text', text: `via ${port}` }]);
      } finally {
        await client.close();
      }
    }
  });

  it('refuses a cross-origin browser request', async () => {
    const answer = await fetch(`http://127.0.0.1:${other.port}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, origin: 'http://evil.example', 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(answer.status).toBe(403);
  });
});

describe('/mcp/servers/:name sessions', () => {
  const server = '/mcp/servers/one';

  it('counts against the same caps as /mcp; DELETE frees a place; a session answers on its own endpoint only', async () => {
    const port = third.port;
    const gatewayOne = await initialize(port, keys.alice!);
    const serverOne = await initialize(port, keys.alice!, server);
    expect([gatewayOne.status, serverOne.status]).toEqual([200, 200]);
    expect(third.pool.count('alice')).toBe(2);
    // Alice holds her two, one on each endpoint: a third is refused on either.
    expect((await initialize(port, keys.alice!, server)).status).toBe(429);
    expect((await initialize(port, keys.alice!)).status).toBe(429);
    // A session id is its endpoint's, its owner's and its worker's.
    expect(await end(port, keys.alice!, gatewayOne.session!, server)).toBe(404);
    expect(await end(port, keys.alice!, serverOne.session!)).toBe(404);
    expect(await end(port, keys.bob!, serverOne.session!, server)).toBe(404);
    expect(await end(one.port, keys.alice!, serverOne.session!, server)).toBe(404);
    // The worker's cap (4) counts both endpoints.
    expect((await initialize(port, keys.bob!, server)).status).toBe(200);
    expect((await initialize(port, TOKEN, server)).status).toBe(200);
    expect((await initialize(port, keys.bob!, server)).status).toBe(503);
    expect(await end(port, keys.alice!, serverOne.session!, server)).toBe(200);
    expect(await end(port, keys.alice!, serverOne.session!, server)).toBe(404);
    expect((await initialize(port, keys.alice!, server)).status).toBe(200);
    await until(() => third.pool.count() === 0, 'every idle session to end', 5_000);
  });

  it('ends a session left idle, and its id is then unknown', async () => {
    const opened = await initialize(third.port, keys.bob!, server);
    expect(opened.status).toBe(200);
    expect(third.pool.count('bob', server)).toBe(1);
    await until(() => third.pool.count('bob') === 0, 'the idle session to end', 5_000);
    expect(await end(third.port, keys.bob!, opened.session!, server)).toBe(404);
  });

  it('keeps a session with an open stream; closing the pool ends both endpoints’ sessions and their streams', async () => {
    const client = new Client({ name: 'held', version: '1.0.0' }, { versionNegotiation: { mode: 'legacy' } });
    const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${third.port}${server}`), { requestInit: { headers: { authorization: `Bearer ${keys.alice}` } } });
    await client.connect(transport);
    const gateway = await initialize(third.port, keys.bob!);
    expect(gateway.status).toBe(200);
    expect(third.pool.count('alice', server)).toBe(1);
    // Its GET stream is a request that stays open: the idle clock does not run.
    await until(() => third.pool.count('bob') === 0, 'the streamless session to end', 5_000);
    expect(third.pool.count('alice', server)).toBe(1);
    expect((await client.callTool({ name: 'echo', arguments: { text: 'still here' } })).content).toEqual([{ type: 'text', text: 'still here' }]);
    await third.pool.close();
    expect(third.pool.count()).toBe(0);
    await expect(client.callTool({ name: 'echo', arguments: { text: 'gone' } })).rejects.toThrow(/404|Session not found/);
    await client.close();
  });
});

describe('a worker that stops', () => {
  it.each([
    ['/mcp', 'one__wait_for_cancel'],
    ['/mcp/servers/one', 'wait_for_cancel'],
  ])('answers the calls still under way at %s, a 2025 session’s and a 2026 request’s, rather than leaving their clients waiting', async (path, tool) => {
    const app = createManagementApp(fleet.host, { token: TOKEN });
    const stopping = await listen(app, { port: 0 });
    const url = new URL(`http://127.0.0.1:${stopping.port}${path}`);
    const connect = async (mode: 'legacy' | 'auto') => {
      const client = new Client({ name: `stopping-${mode}`, version: '1.0.0' }, { versionNegotiation: { mode } });
      await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } }));
      return client;
    };
    const clients = [await connect('legacy'), await connect('auto')];
    expect(clients.map((client) => client.getNegotiatedProtocolVersion())).toEqual(['2025-11-25', '2026-07-28']);
    const log = join(fleet.dir, 'one.waiting');
    const arrived = () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter((line) => line.startsWith('waiting')).length : 0);
    const before = arrived();
    try {
      const calls = clients.map((client) =>
        client.callTool({ name: tool, arguments: {} }, { timeout: 20_000 }).then(
          () => 'a result',
          (error: Error) => error.message,
        ),
      );
      await until(() => arrived() === before + 2, 'both calls at the server');
      await closeMcpEndpoints(app);
      // Answered at once, not at the client's timeout (nor when the port closes).
      const outcomes = await Promise.race([Promise.all(calls), new Promise((done) => setTimeout(() => done('no answer within 5s'), 5_000))]);
      expect(outcomes).toEqual([expect.stringMatching(/this worker is shutting down/), expect.stringMatching(/this worker is shutting down/)]);
    } finally {
      await Promise.allSettled(clients.map((client) => client.close()));
      await stopping.close();
    }
  });
});

describe('a worker whose shutdown has begun', () => {
  it('refuses a request that arrives now, a 2026 one and a 2025 initialize, on /mcp and /mcp/servers/:name, that the worker is shutting down', async () => {
    const app = createManagementApp(fleet.host, { token: TOKEN });
    const stopping = await listen(app, { port: 0 });
    const base = `http://127.0.0.1:${stopping.port}`;
    const headers = { authorization: `Bearer ${TOKEN}` };
    const connect = async (path: string, mode: 'legacy' | 'auto') => {
      const client = new Client({ name: `late-${mode}`, version: '1.0.0' }, { versionNegotiation: { mode } });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${base}${path}`), { requestInit: { headers } }));
      return client;
    };
    // Connected (the era negotiated) before the shutdown: a 2026 client's next request is a new POST of its own.
    const modern = [await connect('/mcp', 'auto'), await connect('/mcp/servers/one', 'auto')];
    expect(modern.map((client) => client.getNegotiatedProtocolVersion())).toEqual(['2026-07-28', '2026-07-28']);
    try {
      await closeMcpEndpoints(app);
      const [gateway, endpoint] = await Promise.all([
        modern[0]!.callTool({ name: 'one__echo', arguments: { text: 'late' } }, { timeout: 5_000 }).then(() => 'a result', (error: Error) => error.message),
        modern[1]!.callTool({ name: 'echo', arguments: { text: 'late' } }, { timeout: 5_000 }).then(() => 'a result', (error: Error) => error.message),
      ]);
      expect([gateway, endpoint]).toEqual([expect.stringMatching(/this worker is shutting down/), expect.stringMatching(/this worker is shutting down/)]);
      // On the wire: what a call cut off by the close gets (-32000, HTTP 503), and a 2025 initialize the same.
      const late = async (path: string, body: object, version?: string) => {
        const answer = await fetch(`${base}${path}`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(version && { 'mcp-protocol-version': version }) },
          body: JSON.stringify(body),
        });
        // A session opened or a request served answers with a stream: kept as text, for the diff.
        const text = await answer.text();
        return { status: answer.status, body: answer.headers.get('content-type')?.startsWith('application/json') ? JSON.parse(text) : text };
      };
      const refused = { status: 503, body: { jsonrpc: '2.0', id: 7, error: { code: -32000, message: 'this worker is shutting down' } } };
      const call = { jsonrpc: '2.0', id: 7, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } };
      const initialize = { jsonrpc: '2.0', id: 7, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } };
      for (const path of ['/mcp', '/mcp/servers/one']) {
        expect(await late(path, call, '2026-07-28'), path).toEqual(refused);
        expect(await late(path, initialize), path).toEqual(refused);
      }
    } finally {
      await Promise.allSettled(modern.map((client) => client.close()));
      await stopping.close();
    }
  });
});
