// per_user servers against real parts: a `whoami` fixture that answers with
// the token it was given (an env var over stdio, a header over HTTP), two
// users with their own values, through a real management app. Each call
// carries only its caller's value, over stdio each user has a process of
// their own, sessions end after their idle timeout and by eviction (a
// process exits, an HTTP session is deleted), an HTTP session holds no
// standalone GET stream, and no value is ever answered or journaled.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFleet, type Fleet } from '../http/fleet.js';
import type { Reply, RequestOptions } from '../http/helpers.js';
import { startHttpFixture, type HttpFixture, whoamiPerUser } from '../fixtures/index.js';
import { allGone, isAlive } from '../support/processes.js';
import { until, untilValue } from '../support/wait.js';

/** Each user's value; none may appear in an answer, an event or the inputs file. */
const TOKENS = { alice: 'alice-token-SECRET-7101', bob: 'bob-token-SECRET-7202' } as const;
/** Another server's key, which the leaky server's process also prints. */
const OTHER_KEY = 'sk-another-servers-key-7303';
type User = keyof typeof TOKENS;

let fleet: Fleet;
let remote: HttpFixture;
const keys: Record<string, string> = {};

const perUser = whoamiPerUser;

beforeAll(async () => {
  remote = await startHttpFixture('whoami', ['--http']);
  fleet = await startFleet(() => ({
    mine: perUser({}),
    brief: perUser({ idle_timeout_seconds: 0.5 }),
    capped: perUser({ max_sessions: 1 }),
    alices: perUser({ access: { users: ['alice'] } }),
    // Listed by a user's refresh, before any call.
    listed: perUser({}),
    keyed: { type: 'local', command: [process.execPath, '-e', '0'], env: { API_KEY: OTHER_KEY }, enabled: false },
    // A user's input in the command, and another server's key, which its process prints as it fails to start.
    leaky: {
      type: 'local',
      command: [process.execPath, '-e', `console.error('my token is ' + process.argv[1] + ', theirs ${OTHER_KEY}'); process.exit(3)`, '${user.TOKEN}'],
      scope: 'per_user',
      user_inputs: { TOKEN: { description: 'your token' } },
    },
    web: {
      type: 'remote',
      url: remote.url,
      transport: 'streamable_http',
      headers: { 'x-user-token': '${user.TOKEN}' },
      scope: 'per_user',
      max_sessions: 1,
      user_inputs: { TOKEN: { description: 'your token' } },
    },
  }));
  for (const name of ['alice', 'bob']) {
    const reply = await fleet.request('/api/mcp/users', { method: 'POST', body: { name } });
    expect(reply.status).toBe(201);
    keys[name] = reply.json.key;
  }
});
afterAll(async () => {
  await fleet?.close();
  await remote?.stop();
});

/** A request with the user's key, whose answer must hold no user's value. */
async function as(user: User, path: string, options: RequestOptions = {}): Promise<Reply> {
  const reply = await fleet.request(path, { ...options, headers: { authorization: `Bearer ${keys[user]}`, ...options.headers } });
  for (const token of Object.values(TOKENS)) expect(reply.text, `${path} answered a user's value`).not.toContain(token);
  return reply;
}

const setToken = (user: User, servers: string[]) =>
  Promise.all(servers.map((server) => as(user, `/api/mcp/servers/${server}/inputs`, { method: 'PUT', body: { TOKEN: TOKENS[user] } })));

/** Calls `server__whoami` as `user`; the fixture's answer, parsed. */
async function whoami(user: User, server: string): Promise<{ token: string | null; pid?: number; session?: string; count: number }> {
  const reply = await fleet.served.request(`/api/mcp/tools/${server}__whoami/call`, {
    method: 'POST',
    body: { arguments: {} },
    headers: { authorization: `Bearer ${keys[user]}` },
  });
  expect(reply.status).toBe(200);
  expect(reply.json.details.is_error, reply.text).toBe(false);
  return JSON.parse(reply.json.content[0].text);
}

const sessionsOf = async (user?: User) =>
  (user === undefined ? await fleet.request('/api/mcp/sessions') : await as(user, '/api/mcp/sessions')).json.sessions as Array<{
    server: string;
    principal: string;
    state: string;
    since: string;
  }>;

describe('inputs', () => {
  it('a call before the caller set their inputs fails at once, naming them and the route', async () => {
    const reply = await as('alice', '/api/mcp/tools/mine__whoami/call', { method: 'POST', body: { arguments: {} } });
    expect(reply.json.details.is_error).toBe(true);
    expect(reply.json.content[0].text).toContain('TOKEN');
    expect(reply.json.content[0].text).toContain('PUT /api/mcp/servers/mine/inputs');
    expect(await sessionsOf('alice')).toEqual([]);
  });

  it("a user lists a per_user server's tools through their own session before any call, once their inputs are set", async () => {
    const refresh = (user: User) => as(user, '/api/mcp/servers/listed/refresh', { method: 'POST' });
    const missing = await refresh('bob');
    expect(missing.status).toBe(409);
    expect(missing.json.error).toMatchObject({ code: 'missing_inputs', message: expect.stringContaining('TOKEN') });
    await setToken('bob', ['listed']);
    const counted = await refresh('bob');
    expect(counted.status, counted.text).toBe(200);
    expect(counted.json).toEqual({ tools: 2, resources: 1, prompts: 1 });
    expect((await sessionsOf('bob')).filter((s) => s.server === 'listed')).toEqual([expect.objectContaining({ principal: 'bob', state: 'ready' })]);
    const tools = (await as('bob', '/api/mcp/tools')).json.tools.map((tool: { name: string }) => tool.name);
    expect(tools).toContain('listed__whoami');
    // Listed again through the session now open, not a second one; alice's is not opened by it.
    expect((await refresh('bob')).json).toEqual({ tools: 2, resources: 1, prompts: 1 });
    expect((await sessionsOf('bob')).filter((s) => s.server === 'listed')).toHaveLength(1);
    expect((await sessionsOf('alice')).filter((s) => s.server === 'listed')).toEqual([]);
  });

  it('each caller sees which inputs they set, never a value; an undeclared name is refused', async () => {
    expect((await as('alice', '/api/mcp/servers/mine/inputs')).json).toEqual({
      inputs: { TOKEN: { set: false, secret: true, description: 'your token' } },
    });
    const [put] = await setToken('alice', ['mine']);
    expect(put!.status).toBe(200);
    expect(put!.json.inputs.TOKEN.set).toBe(true);
    // Bob's view of the same server is his own.
    expect((await as('bob', '/api/mcp/servers/mine/inputs')).json.inputs.TOKEN.set).toBe(false);
    const wrong = await as('alice', '/api/mcp/servers/mine/inputs', { method: 'PUT', body: { OTHER: 'x' } });
    expect(wrong.status).toBe(400);
    expect(wrong.json.error.field).toBe('OTHER');
    const proto = await as('alice', '/api/mcp/servers/mine/inputs', { method: 'PUT', body: '{"__proto__":"x"}', headers: { 'content-type': 'application/json' } });
    expect([proto.status, proto.json.error.field, proto.json.error.message]).toEqual([400, '__proto__', 'server "mine" declares no user input "__proto__"']);
    // What the OS or fetch would refuse at connect, quoting the value, is refused now, naming the input.
    const nul = await as('alice', '/api/mcp/servers/mine/inputs', { method: 'PUT', body: { TOKEN: 'nul\u0000SECRET-1' } });
    expect([nul.status, nul.json.error.field, nul.json.error.message]).toEqual([400, 'TOKEN', 'must not contain a NUL character']);
    const broken = await as('alice', '/api/mcp/servers/web/inputs', { method: 'PUT', body: { TOKEN: 'line\nSECRET-2' } });
    expect([broken.status, broken.json.error.field]).toEqual([400, 'TOKEN']);
    expect(broken.json.error.message).toBe('is sent in an HTTP header: must not contain a line break');
    // A line break is fine where no header carries the input (an env value may span lines).
    const multiline = await as('bob', '/api/mcp/servers/mine/inputs', { method: 'PUT', body: { TOKEN: 'line\nbreak' } });
    expect(multiline.status).toBe(200);
    // An empty value removes it, as null does: read back, journaled and stored as removed.
    const emptied = await as('bob', '/api/mcp/servers/mine/inputs', { method: 'PUT', body: { TOKEN: '' } });
    expect(emptied.json.inputs.TOKEN.set).toBe(false);
    const changed = fleet.host.events().filter((event) => event.type === 'inputs.changed' && event.principal === 'bob').at(-1);
    expect(changed).toMatchObject({ set: [], removed: ['TOKEN'] });
  });

  it('a server the access policy hides: its inputs are a 404 and its tools unknown, no session starts', async () => {
    expect((await as('bob', '/api/mcp/servers/alices/inputs')).status).toBe(404);
    expect((await as('bob', '/api/mcp/servers/alices/inputs', { method: 'PUT', body: { TOKEN: 'x' } })).status).toBe(404);
    expect((await as('bob', '/api/mcp/tools/alices__whoami/call', { method: 'POST', body: { arguments: {} } })).status).toBe(404);
    expect(fleet.host.hasTool('alices__whoami', { principal: { id: 'bob' } })).toBe(false);
    expect((await fleet.host.callTool('alices__whoami', {}, { principal: { id: 'bob' } })).content[0]).toMatchObject({
      text: 'unknown tool "alices__whoami"',
    });
    await setToken('alice', ['alices']);
    expect((await whoami('alice', 'alices')).token).toBe(TOKENS.alice);
    expect((await sessionsOf()).filter((s) => s.server === 'alices').map((s) => s.principal)).toEqual(['alice']);
    const bobsTools = (await as('bob', '/api/mcp/tools')).json.tools.map((tool: { name: string }) => tool.name);
    expect(bobsTools).not.toContain('alices__whoami');
    expect((await as('alice', '/api/mcp/tools')).json.tools.map((tool: { name: string }) => tool.name)).toContain('alices__whoami');
  });

  it("a removed user's values go with them, and a removed server's: a new one of the same name starts with none", async () => {
    const addCarol = async () => {
      const added = await fleet.request('/api/mcp/users', { method: 'POST', body: { name: 'carol' } });
      expect(added.status).toBe(201);
      return { authorization: `Bearer ${added.json.key}` };
    };
    const inputsOf = async (headers: Record<string, string>, server: string) =>
      (await fleet.request(`/api/mcp/servers/${server}/inputs`, { headers })).json.inputs.TOKEN.set as boolean;
    let carol = await addCarol();
    await fleet.host.addServer('passing', perUser({}) as Parameters<typeof fleet.host.addServer>[1]);
    for (const server of ['mine', 'passing']) {
      expect((await fleet.request(`/api/mcp/servers/${server}/inputs`, { method: 'PUT', body: { TOKEN: 'carol-value' }, headers: carol })).status).toBe(200);
    }
    const call = () => fleet.request('/api/mcp/tools/mine__whoami/call', { method: 'POST', body: { arguments: {} }, headers: carol });
    expect(JSON.parse((await call()).json.content[0].text).token).toBe('carol-value');

    // The server goes, and comes back under its name: nobody's values came back with it.
    await fleet.host.removeServer('passing');
    await fleet.host.addServer('passing', perUser({}) as Parameters<typeof fleet.host.addServer>[1]);
    expect(await inputsOf(carol, 'passing')).toBe(false);

    // The user goes, and a new carol is added: she has none of the old one's values, her call connects with nothing.
    expect((await fleet.request('/api/mcp/users/carol', { method: 'DELETE' })).status).toBe(204);
    carol = await addCarol();
    expect(await inputsOf(carol, 'mine')).toBe(false);
    const refused = await call();
    expect(refused.json.details.is_error).toBe(true);
    expect(refused.json.content[0].text).toContain('needs your own input TOKEN');
    expect(readFileSync(join(fleet.dir, 'user_inputs.json'), 'utf8')).not.toContain('"carol"');
    await fleet.host.removeServer('passing');
    expect((await fleet.request('/api/mcp/users/carol', { method: 'DELETE' })).status).toBe(204);
  });

  it('values are sealed at rest: the inputs file holds none of them', async () => {
    await setToken('bob', ['mine']);
    const stored = readFileSync(join(fleet.dir, 'user_inputs.json'), 'utf8');
    expect(stored).toContain('"$sealed"');
    for (const token of Object.values(TOKENS)) expect(stored).not.toContain(token);
  });
});

describe('sessions', () => {
  it('each call carries only its caller\'s value, each user through a process of their own', async () => {
    const alice = await whoami('alice', 'mine');
    const bob = await whoami('bob', 'mine');
    expect(alice.token).toBe(TOKENS.alice);
    expect(bob.token).toBe(TOKENS.bob);
    expect(alice.pid).not.toBe(bob.pid);
    // While their sessions are open, the worker's log redaction knows their values.
    expect(fleet.host.secrets()).toEqual(expect.arrayContaining([TOKENS.alice, TOKENS.bob]));
    // The same session again: its process counts on.
    expect(await whoami('alice', 'mine')).toEqual({ token: TOKENS.alice, pid: alice.pid, count: 2 });

    const all = await sessionsOf();
    expect(all.filter((s) => s.server === 'mine').map((s) => [s.principal, s.state]).sort()).toEqual([
      ['alice', 'ready'],
      ['bob', 'ready'],
    ]);
    // A user sees their own sessions only.
    expect(new Set((await sessionsOf('alice')).map((s) => s.principal))).toEqual(new Set(['alice']));
  });

  it('the tools of a per_user server are listed to its users once a session listed them', async () => {
    const tools = (await as('bob', '/api/mcp/tools')).json.tools.map((tool: { name: string }) => tool.name);
    expect(tools).toContain('mine__whoami');
  });

  it('their tools are found by a search and listed in the catalog, within the access policy', async () => {
    // `alices` (alice only) and `mine` have each had a session by now: both listed `whoami`.
    const found = async (user: User) =>
      ((await as(user, '/api/mcp/tools/search?q=which+user+token')).json.tools as Array<{ name: string; available: boolean }>)
        .filter((tool) => tool.available)
        .map((tool) => tool.name);
    expect(await found('alice')).toEqual(expect.arrayContaining(['mine__whoami', 'alices__whoami']));
    expect(await found('bob')).toContain('mine__whoami');
    expect(await found('bob')).not.toContain('alices__whoami');
    // The library, and deferred loading's `search_tools` as the model calls it.
    expect(fleet.host.searchTools('which user token', { principal: { id: 'bob' } }).map((tool) => tool.name)).not.toContain('alices__whoami');
    const meta = await fleet.host.callTool('search_tools', { query: 'which user token' }, { principal: { id: 'bob' } });
    const text = JSON.stringify(meta.content);
    expect(text).toContain('mine__whoami');
    expect(text).not.toContain('alices__whoami');
    // The catalog lists them under their server; a user's only those they may see.
    const catalogOf = async (user: User) =>
      new Map(
        ((await as(user, '/api/mcp/catalog')).json.servers as Array<{ name: string; tools: Array<{ name: string; original: string }> }>).map(
          (entry) => [entry.name, entry.tools],
        ),
      );
    const alices = await catalogOf('alice');
    expect(alices.get('mine')).toEqual([
      expect.objectContaining({ name: 'mine__whoami', original: 'whoami' }),
      expect.objectContaining({ name: 'mine__hold', original: 'hold' }),
    ]);
    expect(alices.get('alices')?.map((tool) => tool.name)).toEqual(['alices__whoami', 'alices__hold']);
    expect((await catalogOf('bob')).has('alices')).toBe(false);
    expect(fleet.host.catalog().find((entry) => entry.name === 'mine')?.tools.map((tool) => tool.name)).toEqual(['mine__whoami', 'mine__hold']);
  });

  it('a changed input ends the session: the next call connects with the new value', async () => {
    const before = await whoami('bob', 'mine');
    await as('bob', '/api/mcp/servers/mine/inputs', { method: 'PUT', body: { TOKEN: `${TOKENS.bob}-2` } });
    expect(await allGone([before.pid!])).toBe(true);
    const after = await whoami('bob', 'mine');
    expect(after.token).toBe(`${TOKENS.bob}-2`);
    expect(after.pid).not.toBe(before.pid);
    await setToken('bob', ['mine']);
  });

  it('a session ends after idle_timeout_seconds with no call: its process exits', async () => {
    await setToken('alice', ['brief']);
    await setToken('bob', ['brief']);
    // The first may be gone already once the second has connected: each had its own process.
    const pids = [(await whoami('alice', 'brief')).pid!, (await whoami('bob', 'brief')).pid!];
    expect(new Set(pids).size).toBe(2);
    await until(async () => (await sessionsOf()).every((s) => s.server !== 'brief'), 'the brief sessions to end');
    expect(await allGone(pids)).toBe(true);
  });

  it('max_sessions 1: a second user evicts the first, whose process exits', async () => {
    await setToken('alice', ['capped']);
    await setToken('bob', ['capped']);
    const alice = await whoami('alice', 'capped');
    const bob = await whoami('bob', 'capped');
    expect(bob.token).toBe(TOKENS.bob);
    expect(await allGone([alice.pid!])).toBe(true);
    expect(isAlive(bob.pid!)).toBe(true);
    expect((await sessionsOf()).filter((s) => s.server === 'capped').map((s) => s.principal)).toEqual(['bob']);
  });

  it('max_sessions 1: a session with a call in flight is never evicted; the other caller is told why and may try again', async () => {
    await setToken('alice', ['capped']);
    await setToken('bob', ['capped']);
    const holding = fleet.served.request('/api/mcp/tools/capped__hold/call', {
      method: 'POST',
      body: { arguments: { ms: 3000 } },
      headers: { authorization: `Bearer ${keys.alice}` },
    });
    await until(async () => (await sessionsOf()).some((s) => s.server === 'capped' && s.principal === 'alice' && s.state === 'ready'), "alice's session");
    const refused = await as('bob', '/api/mcp/tools/capped__whoami/call', { method: 'POST', body: { arguments: {} } });
    expect(refused.json.details.is_error).toBe(true);
    expect(refused.json.content[0].text).toContain('server "capped" has max_sessions 1 and its session is busy with a call: try again when one finishes');
    const held = await holding;
    expect(held.json.details.is_error, held.text).toBe(false);
    expect(JSON.parse(held.json.content[0].text)).toMatchObject({ token: TOKENS.alice, held: 3000 });
    // Idle again, alice's session makes room.
    expect((await whoami('bob', 'capped')).token).toBe(TOKENS.bob);
  });

  it('over HTTP each call carries its caller\'s header, and an evicted session ends with DELETE', async () => {
    await setToken('alice', ['web']);
    await setToken('bob', ['web']);
    const alice = await whoami('alice', 'web');
    expect(alice.token).toBe(TOKENS.alice);
    const bob = await whoami('bob', 'web');
    expect(bob.token).toBe(TOKENS.bob);
    expect(bob.session).not.toBe(alice.session);
    const deleted = await untilValue(async () => {
      const list = (await (await fetch(new URL('/deleted', remote.url))).json()) as Array<{ session: string; token: string }>;
      return list.length > 0 ? list : undefined;
    }, 'the evicted session to be deleted');
    expect(deleted).toEqual([{ session: alice.session, token: TOKENS.alice }]);
    // Nothing of a session listens outside its calls: neither opened a standalone GET stream (alice's ended, long after her initialize).
    const streams = (await (await fetch(new URL('/streams', remote.url))).json()) as string[];
    expect(streams).toEqual([]);
  });

  it('a library call without a principal goes through the admin\'s own session, with the admin\'s inputs', async () => {
    const first = await fleet.host.callTool('mine__whoami', {});
    expect(first.details.is_error).toBe(true);
    expect(first.content[0]).toMatchObject({ text: expect.stringContaining('PUT /api/mcp/servers/mine/inputs') });
    await fleet.host.setInputs('mine', { TOKEN: 'admin-token' });
    const result = await fleet.host.callTool('mine__whoami', {});
    expect(JSON.parse((result.content[0] as { text: string }).text).token).toBe('admin-token');
    expect(fleet.host.sessions().some((s) => s.server === 'mine' && s.principal === 'admin' && s.state === 'ready')).toBe(true);
  });

  it('a per_user OAuth server without the caller\'s own grant fails at once, naming the Connect button and the route', async () => {
    await fleet.host.addServer('grants', { type: 'remote', url: remote.url, scope: 'per_user', auth: { kind: 'oauth' } });
    const result = await fleet.host.callTool('grants__whoami', {});
    expect(result.details.is_error).toBe(true);
    expect(result.content[0]).toMatchObject({ text: expect.stringContaining('needs your own authorization') });
    expect(result.content[0]).toMatchObject({ text: expect.stringContaining('POST /api/mcp/servers/grants/auth') });
    // No session was started for it, and a consent is begun only where a browser can be bound to it.
    expect(fleet.host.sessions().some((s) => s.server === 'grants')).toBe(false);
    await expect(fleet.host.beginAuth('grants')).rejects.toThrow(/binds the consent to their browser/);
    await fleet.host.removeServer('grants');
  });

  it("an input put in the command, and another server's secret, are redacted from the failure its process prints", async () => {
    await setToken('alice', ['leaky']);
    const reply = await as('alice', '/api/mcp/tools/leaky__anything/call', { method: 'POST', body: { arguments: {} } });
    expect(reply.json.details.is_error).toBe(true);
    expect(reply.text).toContain('my token is ••••, theirs ••••');
    const failed = fleet.host.events().filter((event) => event.type === 'session.changed' && event.server === 'leaky' && event.state === 'failed');
    expect(failed.length).toBeGreaterThan(0);
    expect(JSON.stringify(failed)).not.toContain(OTHER_KEY);
  });

  it('sessions are journaled with their principal, and no event holds a value', async () => {
    const events = fleet.host.events();
    const text = JSON.stringify(events);
    for (const token of Object.values(TOKENS)) expect(text).not.toContain(token);
    const changes = events.filter((event) => event.type === 'session.changed');
    expect(changes.some((event) => event.principal === 'alice' && event.state === 'ready')).toBe(true);
    expect(changes.some((event) => event.type === 'session.changed' && event.reason === 'evicted')).toBe(true);
    expect(changes.some((event) => event.type === 'session.changed' && event.reason === 'idle')).toBe(true);
    expect(events.some((event) => event.type === 'inputs.changed' && event.principal === 'bob')).toBe(true);
    // A user's events are their own.
    const bobs = (await as('bob', '/api/mcp/events')).json.events as Array<{ type: string; principal?: string }>;
    expect(bobs.filter((event) => event.type === 'session.changed').every((event) => event.principal === 'bob')).toBe(true);
  });
});
