// Many users against real servers: three healthy fixture servers behind a
// management app, two users in different groups (and a third in one of them),
// each request made with the user's own key. Every surface answers with what
// the access policy lets the caller see, and nothing about the rest.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { healthy, startFleet, untilState, type Fleet } from '../http/fleet.js';
import { request, type Reply, type RequestOptions } from '../http/helpers.js';
import { until, untilValue } from '../support/wait.js';
import type { JournalEvent } from '../../src/journal/events.js';
import type { ServerConfigInput } from '../../src/config/schema.js';
import { fixtureCommand } from '../fixtures/index.js';

let fleet: Fleet;
const keys: Record<string, string> = {};

beforeAll(async () => {
  fleet = await startFleet((dir) => ({
    // Every user.
    open: healthy(dir, 'open', { tools: { approval: { add: 'ask' } } }),
    // The eng group; of its tools, `add` for alice alone.
    team: healthy(dir, 'team', { access: { groups: ['eng'] }, tools: { access: { add: { users: ['alice'] } } } }),
    // bob alone.
    private: healthy(dir, 'private', { access: { users: ['bob'] } }),
  }));
  await Promise.all(['open', 'team', 'private'].map((name) => untilState(fleet, name, 'ready')));
  for (const [name, groups] of [['alice', ['eng']], ['bob', []], ['carol', ['eng']]] as const) {
    const reply = await fleet.request('/api/mcp/users', { method: 'POST', body: { name, groups } });
    expect(reply.status).toBe(201);
    keys[name] = reply.json.key;
  }
});
afterAll(async () => {
  await fleet?.close();
});

/** A request with `user`'s key instead of the admin token. */
function as(user: string, path: string, options: RequestOptions = {}): Promise<Reply> {
  return fleet.request(path, { ...options, headers: { authorization: `Bearer ${keys[user]}`, ...options.headers } });
}

const names = (items: Array<{ name: string }>) => items.map((item) => item.name).sort();
const call = (user: string, tool: string, args: Record<string, unknown>) =>
  as(user, `/api/mcp/tools/${tool}/call`, { method: 'POST', body: { arguments: args } });

describe('who is calling', () => {
  it('GET /api/mcp/me names the admin and each user with their groups', async () => {
    expect((await fleet.request('/api/mcp/me')).json).toEqual({ principal: 'admin', groups: [], admin: true });
    expect((await as('alice', '/api/mcp/me')).json).toEqual({ principal: 'alice', groups: ['eng'], admin: false });
    expect((await as('bob', '/api/mcp/me')).json).toEqual({ principal: 'bob', groups: [], admin: false });
  });

  it('a wrong key is a 401 like a wrong token', async () => {
    const reply = await fleet.request('/api/mcp/me', { headers: { authorization: `Bearer ${keys.alice}x` } });
    expect(reply.status).toBe(401);
    expect(reply.json.error.code).toBe('unauthorized');
  });
});

describe('servers', () => {
  it('each user lists the servers they may see, without the policy; the admin lists all with it', async () => {
    const admin = await fleet.request('/api/mcp/servers');
    expect(names(admin.json.servers)).toEqual(['open', 'private', 'team']);
    expect(admin.json.servers.find((s: { name: string }) => s.name === 'team').config.access).toEqual({ users: [], groups: ['eng'] });

    const alice = await as('alice', '/api/mcp/servers');
    expect(names(alice.json.servers)).toEqual(['open', 'team']);
    // The policy names other users: a user never reads it.
    expect(alice.text).not.toContain('private');
    expect(alice.text).not.toContain('"access"');
    expect(names((await as('bob', '/api/mcp/servers')).json.servers)).toEqual(['open', 'private']);
  });

  it("a user's tool_count counts the tools they may see, in every view of the server", async () => {
    const countOf = (servers: Array<{ name: string; tool_count: number }>, name: string) => servers.find((s) => s.name === name)?.tool_count;
    const all = countOf((await fleet.request('/api/mcp/servers')).json.servers, 'team')!;
    const open = countOf((await fleet.request('/api/mcp/servers')).json.servers, 'open')!;
    expect(all).toBeGreaterThan(1);
    // Carol is in eng but not alice: `add` is hidden from her, and its count with it.
    for (const [user, expected] of [['alice', all], ['carol', all - 1]] as const) {
      expect(countOf((await as(user, '/api/mcp/servers')).json.servers, 'team'), user).toBe(expected);
      expect((await as(user, '/api/mcp/servers/team')).json.tool_count, user).toBe(expected);
      const entry = (await as(user, '/api/mcp/catalog')).json.servers.find((s: { name: string }) => s.name === 'team');
      expect([entry.tool_count, entry.tools.length], user).toEqual([expected, expected]);
      // A server with no tool policy counts as for the admin.
      expect(countOf((await as(user, '/api/mcp/servers')).json.servers, 'open'), user).toBe(open);
    }
  });

  it("a server a user may not see is a 404 exactly like one that does not exist", async () => {
    const hidden = await as('alice', '/api/mcp/servers/private');
    const missing = await as('alice', '/api/mcp/servers/nothing');
    expect(hidden.status).toBe(404);
    expect(hidden.json.error.code).toBe(missing.json.error.code);
    expect(hidden.json.error.message).toBe('no server named "private"');
    expect((await as('bob', '/api/mcp/servers/private')).status).toBe(200);
  });

  it('management stays with the admin: a user key gets 403 forbidden', async () => {
    const attempts: Array<[string, RequestOptions]> = [
      ['/api/mcp/servers', { method: 'POST', body: { name: 'x', type: 'local', command: ['node'] } }],
      ['/api/mcp/servers/open', { method: 'PATCH', body: { timeout_seconds: 5 } }],
      ['/api/mcp/servers/open', { method: 'DELETE' }],
      ['/api/mcp/servers/private', { method: 'DELETE' }],
      ['/api/mcp/servers/open/restart', { method: 'POST' }],
      ['/api/mcp/servers/open/refresh', { method: 'POST' }],
      ['/api/mcp/users', {}],
      ['/api/mcp/users', { method: 'POST', body: { name: 'mallory' } }],
      ['/api/mcp/users/bob/rotate', { method: 'POST' }],
      ['/api/mcp/registry/servers?search=x', {}],
      ['/api/mcp/fleet', {}],
      ['/api/mcp/catalog/diff', {}],
    ];
    for (const [path, options] of attempts) {
      const reply = await as('alice', path, options);
      expect(reply.status, `${options.method ?? 'GET'} ${path}`).toBe(403);
      expect(reply.json.error.code).toBe('forbidden');
    }
    expect(names((await fleet.request('/api/mcp/servers')).json.servers)).toEqual(['open', 'private', 'team']);
  });

  it("the catalog shows a user their servers and tools only", async () => {
    const reply = await as('carol', '/api/mcp/catalog');
    expect(names(reply.json.servers)).toEqual(['open', 'team']);
    const team = reply.json.servers.find((s: { name: string }) => s.name === 'team');
    expect(team.tools.map((t: { name: string }) => t.name)).not.toContain('team__add');
    expect(team.tools.map((t: { name: string }) => t.name)).toContain('team__echo');
  });
});

describe('tools', () => {
  it('GET /api/mcp/tools holds the tools of the servers and tools each user may see', async () => {
    const toolsOf = async (user: string) => names((await as(user, '/api/mcp/tools')).json.tools);
    const alice = await toolsOf('alice');
    expect(alice).toContain('team__add');
    expect(alice).toContain('team__echo');
    expect(alice).toContain('open__echo');
    expect(alice.some((name) => name.startsWith('private__'))).toBe(false);
    const carol = await toolsOf('carol');
    expect(carol).toContain('team__echo');
    expect(carol).not.toContain('team__add');
    const bob = await toolsOf('bob');
    expect(bob).toContain('private__echo');
    expect(bob.some((name) => name.startsWith('team__'))).toBe(false);
    expect(names((await fleet.request('/api/mcp/tools')).json.tools).filter((n) => n.endsWith('__add'))).toEqual([
      'open__add',
      'private__add',
      'team__add',
    ]);
  });

  it('search finds only what the user may see', async () => {
    const found = async (user: string) =>
      (await as(user, '/api/mcp/tools/search?q=echo&limit=20')).json.tools.map((tool: { name: string }) => tool.name).sort();
    expect(await found('alice')).toEqual(['open__echo', 'team__echo']);
    expect(await found('bob')).toEqual(['open__echo', 'private__echo']);
  });

  it('a user calls what they may see; a hidden tool is exactly a missing one', async () => {
    const echoed = await call('bob', 'private__echo', { text: 'hi' });
    expect(echoed.json.content).toEqual([{ type: 'text', text: 'hi' }]);
    const hidden = await call('alice', 'private__echo', { text: 'hi' });
    const missing = await call('alice', 'private__nothing', { text: 'hi' });
    expect(hidden.status).toBe(404);
    expect(hidden.json.error.code).toBe(missing.json.error.code);
    expect((await call('carol', 'team__add', { a: 1, b: 2 })).status).toBe(404);
    expect((await call('alice', 'team__add', { a: 1, b: 2 })).json.content).toEqual([{ type: 'text', text: '3' }]);
  });

  it('the library filters by the principal it is given, and no principal is the admin', async () => {
    const { host } = fleet;
    const bob = { id: 'bob', groups: [] };
    expect(host.tools({ principal: bob }).some((tool) => tool.server === 'team')).toBe(false);
    expect(host.tools().some((tool) => tool.server === 'team')).toBe(true);
    expect(host.searchTools('add', { principal: bob, limit: 20 }).map((tool) => tool.server).sort()).toEqual(['open', 'private']);
    // The server of a tool, as the principal's list names it: the gateway's lookup, without the list.
    for (const tool of host.tools({ principal: bob })) expect(host.toolServer(tool.name, { principal: bob })).toBe(tool.server || undefined);
    expect(host.toolServer('team__echo', { principal: bob })).toBeUndefined();
    expect(host.toolServer('team__echo')).toBe('team');
    expect(host.toolServer('nobody__echo')).toBeUndefined();
    const refused = await host.callTool('team__echo', { text: 'x' }, { principal: bob });
    expect(refused.details.is_error).toBe(true);
    expect(refused.content).toEqual([{ type: 'text', text: 'unknown tool "team__echo"' }]);
    const deferred = host.tools({ loading: 'deferred', principal: bob });
    const search = deferred.find((tool) => tool.name === 'search_tools')!;
    const text = JSON.stringify(await search.execute({ query: 'echo' }));
    expect(text).toContain('private__echo');
    expect(text).not.toContain('team__echo');
  });
});

describe('events', () => {
  it("each call is journaled with its principal; a user's events hold their own calls and their servers only", async () => {
    await call('alice', 'team__echo', { text: 'a' });
    await call('bob', 'open__echo', { text: 'b' });
    await fleet.request('/api/mcp/tools/open__echo/call', { method: 'POST', body: { arguments: { text: 'c' } } });

    const calls = (events: JournalEvent[]) => events.filter((event) => event.type === 'tool.called');
    const admin = calls((await fleet.request('/api/mcp/events')).json.events);
    expect(admin.map((event) => [event.server, event.principal])).toEqual(
      expect.arrayContaining([
        ['team', 'alice'],
        ['open', 'bob'],
        ['open', 'admin'],
      ]),
    );
    const teamCall = admin.find((event) => event.tool === 'team__echo' && event.principal === 'alice')!;
    expect(teamCall).toMatchObject({ tool: 'team__echo', outcome: 'ok' });
    expect(teamCall.duration_ms).toBeGreaterThanOrEqual(0);
    // No arguments, no result: they may hold secrets.
    expect(JSON.stringify(teamCall)).not.toContain('"a"');

    const alice: JournalEvent[] = (await as('alice', '/api/mcp/events')).json.events;
    expect(calls(alice).every((event) => event.principal === 'alice')).toBe(true);
    expect(calls(alice).length).toBeGreaterThan(0);
    expect(alice.some((event) => 'server' in event && event.server === 'private')).toBe(false);
    expect(JSON.stringify(alice)).not.toContain('"access"');

    const paged: JournalEvent[] = (await as('alice', '/api/mcp/events?since=0&limit=5')).json.events;
    expect(paged).toHaveLength(5);
    expect(paged.some((event) => 'server' in event && event.server === 'private')).toBe(false);
  });

  it("the SSE stream replays and follows only what the user may see", async () => {
    const received: string[] = [];
    const port = fleet.served.port;
    const stream = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = http.get(
        { host: '127.0.0.1', port, path: '/api/mcp/events/stream?since=0', headers: { host: `127.0.0.1:${port}`, authorization: `Bearer ${keys.alice}` } },
        resolve,
      );
      req.on('error', reject);
    });
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => received.push(chunk));
    try {
      await call('bob', 'private__echo', { text: 'secret-of-bob' });
      await call('alice', 'open__echo', { text: 'sentinel' });
      await until(() => /"tool":"open__echo","principal":"alice"/.test(received.join('')), 'the stream to carry alice\'s call');
      const text = received.join('');
      expect(text).not.toContain('"server":"private"');
      expect(text).not.toContain('"principal":"bob"');
      expect(text).toContain('"server":"team"');
    } finally {
      stream.destroy();
    }
  });
});

describe('the library', () => {
  it('refuses a principal named "admin": a user so named would be journaled as the admin with a user\'s access', async () => {
    const { host } = fleet;
    const admin = { principal: { id: 'admin' } };
    expect(() => host.tools(admin)).toThrow('"admin" is the admin\'s: pass no principal to act as the admin');
    expect(() => host.searchTools('add', admin)).toThrow('"admin" is the admin\'s');
    // A call answers as every failed call does: an error result, never a throw.
    const refused = await host.callTool('open__add', { a: 1, b: 2 }, admin);
    expect(refused.details.is_error).toBe(true);
    expect((refused.content[0] as { text: string }).text).toContain('"admin" is the admin\'s');
    expect(host.events().some((event) => event.type === 'tool.called' && event.principal === 'admin' && event.tool === 'add')).toBe(false);
  });
});

describe('approvals', () => {
  it('a user lists and decides only their own waiting calls', async () => {
    const { host } = fleet;
    const result = host.callTool('open__add', { a: 20, b: 22 }, { principal: { id: 'alice', groups: ['eng'] } });
    const pending = await untilValue(async () => host.approvals().find((approval) => approval.principal === 'alice'), 'alice\'s call to wait');
    expect((await as('bob', '/api/mcp/approvals')).json.approvals).toEqual([]);
    const decideAs = (user: string) => as(user, `/api/mcp/approvals/${pending.id}`, { method: 'POST', body: { decision: 'allow' } });
    expect((await decideAs('bob')).status).toBe(404);
    expect((await as('alice', '/api/mcp/approvals')).json.approvals.map((a: { id: string }) => a.id)).toEqual([pending.id]);
    expect((await decideAs('alice')).status).toBe(200);
    expect((await result).content).toEqual([{ type: 'text', text: '42' }]);
    const decided = host.events().filter((event) => event.type === 'approval.decided' && event.id === pending.id);
    expect(decided).toMatchObject([{ principal: 'alice', decision: 'allow', by: 'api' }]);
  });
});

describe('the policy changes while running', () => {
  it('a PATCH of access applies without a restart and at once', async () => {
    const before = (await fleet.request('/api/mcp/servers/private')).json;
    const patched = await fleet.request('/api/mcp/servers/private', { method: 'PATCH', body: { access: { groups: ['eng'] } } });
    expect(patched.status).toBe(200);
    await until(async () => (await as('alice', '/api/mcp/servers/private')).status === 200, 'alice to see private');
    const after = (await fleet.request('/api/mcp/servers/private')).json;
    expect(after.since).toBe(before.since);
    expect(after.state).toBe('ready');
    // `access` merges field by field, as every object of a PATCH but the secret maps and `auth`.
    expect(patched.json.config.access).toEqual({ users: ['bob'], groups: ['eng'] });
    await fleet.request('/api/mcp/servers/private', { method: 'PATCH', body: { access: null } });
    await until(async () => (await as('carol', '/api/mcp/servers/private')).status === 200, 'everyone to see private');
  });
});

describe('the page signs a user in with their key', () => {
  it('a user key gets a session cookie acting as that user, ended by a rotation', async () => {
    const port = fleet.served.port;
    const origin = `http://127.0.0.1:${port}`;
    const signIn = await request(port, '/ui/session', { method: 'POST', noAuth: true, body: { token: keys.carol }, headers: { origin } });
    expect(signIn.status).toBe(204);
    const cookie = String(signIn.headers['set-cookie']).split(';')[0]!;
    expect(cookie).not.toContain(keys.carol!);
    const me = await request(port, '/api/mcp/me', { noAuth: true, headers: { cookie } });
    expect(me.json).toEqual({ principal: 'carol', groups: ['eng'], admin: false });
    expect((await request(port, '/ui/session', { noAuth: true, headers: { cookie } })).json).toEqual({ signed_in: true, oidc: false });

    const rotated = await fleet.request('/api/mcp/users/carol/rotate', { method: 'POST' });
    expect(rotated.status).toBe(200);
    expect((await request(port, '/api/mcp/me', { noAuth: true, headers: { cookie } })).status).toBe(401);
    expect((await as('carol', '/api/mcp/me')).status).toBe(401);
    keys.carol = rotated.json.key;
    expect((await as('carol', '/api/mcp/me')).json.principal).toBe('carol');

    const wrong = await request(port, '/ui/session', { method: 'POST', noAuth: true, body: { token: 'mcpf_nope' }, headers: { origin } });
    expect(wrong.status).toBe(401);
  });
});

describe('a shadowing names two servers', () => {
  it("a user is not told of one whose other server is hidden from them", async () => {
    // Names are capped at 64 by shortening the server part: these two share their first 58 characters.
    const hidden = `${'s'.repeat(60)}_1`;
    const shown = `${'s'.repeat(60)}_2`;
    const two = await startFleet((dir) => ({
      [hidden]: healthy(dir, 'hidden', { access: { users: ['bob'] }, tools: { include: ['echo'], exclude: [] } }),
    }));
    try {
      await untilState(two, hidden, 'ready');
      await two.host.addServer(shown, healthy(two.dir, 'shown', { tools: { include: ['echo'], exclude: [] } }) as ServerConfigInput);
      const key = (await two.request('/api/mcp/users', { method: 'POST', body: { name: 'alice' } })).json.key;
      const admin: JournalEvent[] = (await two.request('/api/mcp/events')).json.events;
      expect(admin.some((event) => event.type === 'tool.shadowed' && event.shadowed_server === hidden)).toBe(true);
      const events: JournalEvent[] = (await two.request('/api/mcp/events', { headers: { authorization: `Bearer ${key}` } })).json.events;
      expect(events.some((event) => event.type === 'tools.registered' && event.server === shown)).toBe(true);
      expect(JSON.stringify(events)).not.toContain(hidden);
    } finally {
      await two.close();
    }
  });
});

describe('events name only the tools a user may see', () => {
  it('tools.unregistered and catalog.changed leave out a tool tools.access hides from them; a change of only such tools is not shown', async () => {
    const moving = await startFleet(() => ({
      moving: {
        type: 'local',
        command: fixtureCommand('changing-catalog'),
        timeout_seconds: 15,
        tools: { access: { secret_tool: { users: ['alice'] } } },
      },
    }));
    try {
      await untilState(moving, 'moving', 'ready');
      const userKeys: Record<string, string> = {};
      for (const name of ['alice', 'bob']) userKeys[name] = (await moving.request('/api/mcp/users', { method: 'POST', body: { name } })).json.key;
      const eventsOf = async (user?: string): Promise<JournalEvent[]> =>
        (await moving.request('/api/mcp/events', user === undefined ? {} : { headers: { authorization: `Bearer ${userKeys[user]}` } })).json.events;
      const adminSaw = (holds: (event: JournalEvent) => boolean) => until(async () => (await eventsOf()).some(holds), 'the event');

      await moving.host.callTool('moving__add_tool', { name: 'secret_tool' });
      await adminSaw((event) => event.type === 'catalog.changed' && event.kind === 'tools' && event.added.includes('secret_tool'));
      await moving.host.callTool('moving__add_tool', { name: 'open_tool' });
      await adminSaw((event) => event.type === 'catalog.changed' && event.kind === 'tools' && event.added.includes('open_tool'));
      const restarted = await moving.request('/api/mcp/servers/moving/restart', { method: 'POST' });
      expect(restarted.status).toBeLessThan(300);
      await adminSaw((event) => event.type === 'tools.unregistered' && event.tools.includes('moving__secret_tool'));

      const bob = await eventsOf('bob');
      expect(JSON.stringify(bob)).not.toContain('secret_tool');
      // What they may see is still there: the other tool's change, the unregistration of the rest.
      expect(bob.some((event) => event.type === 'catalog.changed' && event.kind === 'tools' && event.added.includes('open_tool'))).toBe(true);
      expect(bob.find((event) => event.type === 'tools.unregistered')).toMatchObject({ tools: expect.arrayContaining(['moving__open_tool', 'moving__echo']) });
      // Alice may see it: hers name it.
      const alice = await eventsOf('alice');
      expect(alice.some((event) => event.type === 'catalog.changed' && event.kind === 'tools' && event.added.includes('secret_tool'))).toBe(true);
      expect(alice.some((event) => event.type === 'tools.unregistered' && event.tools.includes('moving__secret_tool'))).toBe(true);
      // The change that added only the hidden tool is not shown to bob at all (not as an empty change).
      const toolChanges = (events: JournalEvent[]) => events.filter((event) => event.type === 'catalog.changed' && event.kind === 'tools').length;
      expect(toolChanges(bob)).toBe(toolChanges(alice) - 1);
    } finally {
      await moving.close();
    }
  });
});
