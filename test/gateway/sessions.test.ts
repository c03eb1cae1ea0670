// The 2025-era sessions of `/mcp` are bounded: a cap per principal and per
// worker, DELETE ends one, an idle one ends by itself; a session belongs to
// the worker that opened it (another answers 404), while 2026-era requests are
// stateless and any worker serves them. Two apps on one host stand for two
// workers behind one load balancer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { Gateway } from '../../src/gateway/index.js';
import { createManagementApp } from '../../src/http/app.js';
import { listen, type Listening } from '../../src/http/bind.js';
import { healthy, startFleet, type Fleet } from '../http/fleet.js';
import { TOKEN } from '../http/helpers.js';
import { until } from '../support/wait.js';

let fleet: Fleet;
/** Two workers' apps on one host. */
let one: Worker;
let other: Worker;
interface Worker extends Listening {
  gateway: Gateway;
}
const keys: Record<string, string> = {};
const limits = { idleMs: 400, maxSessions: 4, maxPerPrincipal: 2 };

beforeAll(async () => {
  fleet = await startFleet((dir) => ({ one: healthy(dir, 'one') }));
  [one, other] = await Promise.all([worker(), worker()]);
  await until(() => fleet.host.server('one')?.state === 'ready', 'the server ready');
  for (const name of ['alice', 'bob']) {
    const reply = await fleet.request('/api/mcp/users', { method: 'POST', body: { name } });
    expect(reply.status).toBe(201);
    keys[name] = reply.json.key;
  }
}, 60_000);

afterAll(async () => {
  await Promise.all([one?.close(), other?.close()]);
  await fleet?.close();
});

async function worker(): Promise<Worker> {
  const app = createManagementApp(fleet.host, { token: TOKEN, gatewaySessions: limits });
  return { ...(await listen(app, { port: 0 })), gateway: app.locals.gateway as Gateway };
}

/** A raw 2025 `initialize` on `port` as `token`: its status and session id. */
async function initialize(port: number, token: string): Promise<{ status: number; session: string | null }> {
  const answer = await fetch(`http://127.0.0.1:${port}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
  });
  await answer.body?.cancel();
  return { status: answer.status, session: answer.headers.get('mcp-session-id') };
}

async function end(port: number, token: string, session: string): Promise<number> {
  const answer = await fetch(`http://127.0.0.1:${port}/mcp`, {
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
