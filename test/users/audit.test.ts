// Audit: calls, approvals (who asked, who decided) and consents are journal
// events carrying the principal, made by real requests against a real
// fixture server and a real OAuth authorization server; a user's events, as
// a page and as the SSE stream, hold only their own.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { healthy, startFleet, untilState, type Fleet } from '../http/fleet.js';
import type { Reply, RequestOptions } from '../http/helpers.js';
import { until, untilValue } from '../support/wait.js';
import type { JournalEvent } from '../../src/journal/events.js';
import { startAuthorizationServer, startMcpResourceServer, type AuthorizationServer, type McpResourceServer } from '../oauth/servers.js';

let fleet: Fleet;
let as: AuthorizationServer;
let mcp: McpResourceServer;
const keys: Record<string, string> = {};
const OWNED = new Set(['tool.called', 'approval.requested', 'approval.decided', 'consent.begun', 'inputs.changed']);

beforeAll(async () => {
  as = await startAuthorizationServer({ accessTokenTtl: 600 });
  mcp = await startMcpResourceServer(as.issuer);
  fleet = await startFleet((dir) => ({
    open: healthy(dir, 'open', { tools: { approval: { add: 'ask' } } }),
    remote: { type: 'remote', url: mcp.url, transport: 'streamable_http', timeout_seconds: 15, auth: { kind: 'oauth' } },
  }));
  await untilState(fleet, 'open', 'ready');
  await untilState(fleet, 'remote', 'needs_reauth');
  for (const name of ['alice', 'bob']) {
    const reply = await fleet.request('/api/mcp/users', { method: 'POST', body: { name } });
    keys[name] = reply.json.key;
  }
});
afterAll(async () => {
  await fleet?.close();
  await mcp?.close();
  await as?.close();
});

const asUser = (user: string, path: string, options: RequestOptions = {}): Promise<Reply> =>
  fleet.request(path, { ...options, headers: { authorization: `Bearer ${keys[user]}`, ...options.headers } });
const eventsOf = async (user: string | null): Promise<JournalEvent[]> =>
  (user === null ? await fleet.request('/api/mcp/events') : await asUser(user, '/api/mcp/events')).json.events;

describe('audit events', () => {
  it('an approval records who asked and who decided: the admin for one call, the user herself for another', async () => {
    const call = () => asUser('alice', '/api/mcp/tools/open__add/call', { method: 'POST', body: { arguments: { a: 1, b: 2 } } });
    const waiting = async () => (await asUser('alice', '/api/mcp/approvals')).json.approvals[0] as { id: string } | undefined;

    const first = call();
    const one = await untilValue(waiting, "alice's first call to wait");
    expect((await fleet.request(`/api/mcp/approvals/${one.id}`, { method: 'POST', body: { decision: 'deny' } })).status).toBe(200);
    expect((await first).json.details.is_error).toBe(true);

    const second = call();
    const two = await untilValue(waiting, "alice's second call to wait");
    expect((await asUser('alice', `/api/mcp/approvals/${two.id}`, { method: 'POST', body: { decision: 'allow' } })).status).toBe(200);
    expect((await second).json.content).toEqual([{ type: 'text', text: '3' }]);

    const decided = (await eventsOf(null)).filter((event) => event.type === 'approval.decided');
    expect(decided).toMatchObject([
      { id: one.id, principal: 'alice', decision: 'deny', by: 'api', decided_by: 'admin' },
      { id: two.id, principal: 'alice', decision: 'allow', by: 'api', decided_by: 'alice' },
    ]);
    const requested = (await eventsOf(null)).filter((event) => event.type === 'approval.requested');
    expect(requested.map((event) => event.type === 'approval.requested' && event.principal)).toEqual(['alice', 'alice']);
  });

  it('a consent records who began it: the admin over the API, a user through the library', async () => {
    const begun = await fleet.request('/api/mcp/servers/remote/auth', { method: 'POST' });
    expect(begun.status, begun.text).toBe(200);
    expect(new URL(begun.json.authorization_url).origin).toBe(as.issuer);
    // Asked again while it waits, the same consent answers, and is not journaled again.
    expect((await fleet.host.beginAuth('remote', { principal: { id: 'bob', groups: [] } })).authorization_url).toBe(begun.json.authorization_url);
    // A restart ends the consent under way; the next one is bob's, begun through the library.
    expect((await fleet.request('/api/mcp/servers/remote/restart', { method: 'POST' })).status).toBe(200);
    await untilState(fleet, 'remote', 'needs_reauth');
    await fleet.host.beginAuth('remote', { principal: { id: 'bob', groups: [] } });
    const consents = (await eventsOf(null)).filter((event) => event.type === 'consent.begun');
    expect(consents).toMatchObject([
      { server: 'remote', principal: 'admin' },
      { server: 'remote', principal: 'bob' },
    ]);
  });

  it("each user's events hold only what they did, and everything of servers they may see besides", async () => {
    await asUser('bob', '/api/mcp/tools/open__echo/call', { method: 'POST', body: { arguments: { text: 'bob was here' } } });
    await fleet.request('/api/mcp/tools/open__echo/call', { method: 'POST', body: { arguments: { text: 'admin was here' } } });

    const all = await eventsOf(null);
    const owners = (events: JournalEvent[]) => new Set(events.filter((event) => OWNED.has(event.type)).map((event) => (event as { principal?: string }).principal));
    expect(owners(all)).toEqual(new Set(['alice', 'bob', 'admin']));
    expect(all.filter((event) => event.type === 'tool.called').map((event) => event.type === 'tool.called' && [event.principal, event.tool])).toEqual([
      ['alice', 'open__add'],
      ['alice', 'open__add'],
      ['bob', 'open__echo'],
      ['admin', 'open__echo'],
    ]);

    const alice = await eventsOf('alice');
    expect(owners(alice)).toEqual(new Set(['alice']));
    expect(alice.filter((event) => event.type === 'approval.decided')).toHaveLength(2);
    expect(alice.some((event) => event.type === 'server.transitioned' && event.server === 'remote')).toBe(true);
    const bob = await eventsOf('bob');
    expect(owners(bob)).toEqual(new Set(['bob']));
    expect(bob.filter((event) => OWNED.has(event.type)).map((event) => event.type)).toEqual(['consent.begun', 'tool.called']);
  });

  it("a user's SSE stream, replayed and live, carries only their own", async () => {
    const received: string[] = [];
    const port = fleet.served.port;
    const stream = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = http.get(
        { host: '127.0.0.1', port, path: '/api/mcp/events/stream?since=0', headers: { host: `127.0.0.1:${port}`, authorization: `Bearer ${keys.bob}` } },
        resolve,
      );
      req.on('error', reject);
    });
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => received.push(chunk));
    try {
      await asUser('alice', '/api/mcp/tools/open__echo/call', { method: 'POST', body: { arguments: { text: 'alice live' } } });
      await asUser('bob', '/api/mcp/tools/open__echo/call', { method: 'POST', body: { arguments: { text: 'bob live' } } });
      await until(() => received.join('').split('"principal":"bob"').length - 1 >= 3, "the stream to carry bob's consent and both his calls");
      const text = received.join('');
      expect(text).not.toContain('"principal":"alice"');
      expect(text).not.toContain('"principal":"admin"');
      expect(text).not.toContain('"decided_by"');
    } finally {
      stream.destroy();
    }
  });
});
