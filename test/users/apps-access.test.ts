// MCP Apps for users, against the apps fixture (a real stdio server) and a
// real ext-apps App on the host's bridge: an app opens only for a tool its
// user may see, calls only the tools of its server they may see, counts
// against their quota and is journaled as theirs. Then the same over HTTP,
// with user keys on the apps routes.
import { connectApp } from '../support/apps.js';
import { InMemoryTransport } from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { createMcpHost, type McpHost } from '../../src/host.js';
import type { JournalEvent } from '../../src/journal/events.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFileUsersStore, createUsers, type PrincipalInput, type UsersStore } from '../../src/users/index.js';
import { listen, type Listening } from '../../src/http/bind.js';
import { createAppFrames, type AppFrames } from '../../src/http/apps/frames.js';
import { fixtureCommand } from '../fixtures/index.js';
import { stateDirWith, untilState } from '../host/helpers.js';
import { startFleet, untilState as untilFleetState, type Fleet } from '../http/fleet.js';
import { untilValue } from '../support/wait.js';

const ALICE: PrincipalInput = { id: 'alice', groups: ['eng'] };
const BOB: PrincipalInput = { id: 'bob', groups: [] };

/** The apps fixture: `show` (its app) for everyone, `app_echo` (app-only) for alice, `bump` for the eng group. */
const appsServer = () => ({
  type: 'local',
  command: fixtureCommand('apps-server'),
  tools: { access: { app_echo: { users: ['alice'] }, bump: { groups: ['eng'] } } },
});

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});


const textOf = (result: { content?: unknown[] }) => (result.content ?? []).map((block) => (block as { text?: string }).text ?? '').join('\n');
const calls = (host: McpHost) => host.events().filter((event): event is Extract<JournalEvent, { type: 'tool.called' }> => event.type === 'tool.called');

describe('the bridge of a user', { timeout: 30_000 }, () => {
  let host: McpHost;
  beforeAll(async () => {
    host = createMcpHost({
      stateDir: stateDirWith({ fx: appsServer(), secret: { ...appsServer(), access: { users: ['alice'] } } }),
      watchConfig: false,
      persistJournal: false,
      logger: { info() {}, warn() {} },
    });
    await host.start();
    await untilState(host, 'fx', 'ready', 30_000);
    await untilState(host, 'secret', 'ready', 30_000);
  }, 30_000);
  afterAll(async () => {
    await host?.shutdown();
  });

  test('opens the app of a tool the user may see; the app of a hidden server is none, exactly like a missing tool', async () => {
    expect(await host.toolUi('fx__show', { principal: BOB })).toMatchObject({ tool: 'fx__show', server: 'fx' });
    expect(await host.toolUi('secret__show', { principal: BOB })).toBeNull();
    expect(await host.toolUi('secret__show', { principal: ALICE })).toMatchObject({ server: 'secret' });
    const [hostSide] = InMemoryTransport.createLinkedPair();
    await expect(host.appBridge('secret__show', hostSide, { principal: BOB })).rejects.toThrow('appBridge: no tool named "secret__show"');
    await expect(host.appBridge('nobody__show', hostSide, { principal: BOB })).rejects.toThrow('appBridge: no tool named "nobody__show"');
  });

  test('the app calls only the tools of its server its user may see, and each call is journaled as theirs', async () => {
    const bobs = (await connectApp(host, 'fx__show', closers, { principal: BOB })).app;
    const refused = await bobs.callServerTool({ name: 'app_echo', arguments: { text: 'hi' } });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toBe('tool "app_echo" is not a tool of server "fx"');
    const shown = await bobs.callServerTool({ name: 'show', arguments: {} });
    expect(shown.isError).toBeFalsy();
    expect(textOf(shown)).toMatch(/^shown v\d+$/);

    const alices = (await connectApp(host, 'fx__show', closers, { principal: ALICE })).app;
    const echoed = await alices.callServerTool({ name: 'app_echo', arguments: { text: 'hi' } });
    expect(textOf(echoed)).toBe('app says hi');

    const journaled = await untilValue(() => {
      const mine = calls(host).filter((event) => event.server === 'fx');
      return mine.length >= 2 ? mine : undefined;
    }, 'the app calls to be journaled');
    // The refused call reached nothing: only the two made are journaled, each with its caller.
    expect(journaled.map(({ tool, principal, outcome }) => ({ tool, principal, outcome }))).toEqual([
      { tool: 'fx__show', principal: 'bob', outcome: 'ok' },
      { tool: 'fx__app_echo', principal: 'alice', outcome: 'ok' },
    ]);
  });

  test("an app's calls count against its user's quota", async () => {
    const limited = { ...ALICE, id: 'dave', quota: { calls_per_minute: 1 } };
    const app = (await connectApp(host, 'fx__show', closers, { principal: limited })).app;
    expect((await app.callServerTool({ name: 'show', arguments: {} })).isError).toBeFalsy();
    const over = await app.callServerTool({ name: 'show', arguments: {} });
    expect(over.isError).toBe(true);
    expect(textOf(over)).toContain('calls_per_minute');
    const daves = await untilValue(() => {
      const mine = calls(host).filter((event) => event.principal === 'dave');
      return mine.length >= 2 ? mine : undefined;
    }, "dave's calls to be journaled");
    expect(daves.map((event) => [event.outcome, event.refused_by])).toEqual([
      ['ok', undefined],
      ['error', 'calls_per_minute'],
    ]);
  });

  test("an app reads its server's resources and calls its tools only while its user may see the server", async () => {
    const app = (await connectApp(host, 'secret__show', closers, { principal: ALICE })).app;
    const read = await app.readServerResource({ uri: 'ui://fixture/app.html' });
    expect(read.contents[0]?.uri).toBe('ui://fixture/app.html');
    // The policy changes under the open app: alice may no longer see the server.
    await host.updateServer('secret', { access: { users: ['bob'] } });
    await expect(app.readServerResource({ uri: 'ui://fixture/app.html' })).rejects.toThrow('the resources of server "secret" are not available');
    const call = await app.callServerTool({ name: 'show', arguments: {} });
    expect(textOf(call)).toBe('tool "show" is not a tool of server "secret"');
  });
});

describe('the app of a per_user server', { timeout: 30_000 }, () => {
  let host: McpHost;
  beforeAll(async () => {
    host = createMcpHost({
      stateDir: stateDirWith({ pu: { ...appsServer(), scope: 'per_user' } }),
      watchConfig: false,
      persistJournal: false,
      logger: { info() {}, warn() {} },
    });
    await host.start();
    await host.settled();
  }, 30_000);
  afterAll(async () => {
    await host?.shutdown();
  });

  test("is read, and served, through its user's own session of the server", async () => {
    // A user's first call opens their session, which lists the server's tools for them.
    for (const principal of [ALICE, BOB]) expect(textOf(await host.callTool('pu__show', {}, { principal }))).toBe('shown v1');
    const alices = await host.toolUi('pu__show', { principal: ALICE });
    expect(alices).toMatchObject({ tool: 'pu__show', server: 'pu', original: 'show', resourceUri: 'ui://fixture/app.html' });
    expect(alices?.html).toContain('<p>v1</p>');

    const app = (await connectApp(host, 'pu__show', closers, { principal: ALICE })).app;
    expect(textOf(await app.callServerTool({ name: 'bump', arguments: {} }))).toBe('v2');
    expect(textOf(await app.callServerTool({ name: 'app_echo', arguments: { text: 'hi' } }))).toBe('app says hi');
    expect((await app.readServerResource({ uri: 'ui://fixture/app.html' })).contents[0]).toMatchObject({ text: expect.stringContaining('<p>v2</p>') });
    // Alice's process changed; Bob's, his own, did not.
    expect((await host.toolUi('pu__show', { principal: ALICE }))?.html).toContain('<p>v2</p>');
    expect((await host.toolUi('pu__show', { principal: BOB }))?.html).toContain('<p>v1</p>');

    // Bob's app calls only what he may see, in his own process.
    const bobs = (await connectApp(host, 'pu__show', closers, { principal: BOB })).app;
    expect(textOf(await bobs.callServerTool({ name: 'app_echo', arguments: { text: 'hi' } }))).toBe('tool "app_echo" is not a tool of server "pu"');
    expect(textOf(await bobs.callServerTool({ name: 'show', arguments: {} }))).toBe('shown v1');
    const journaled = await untilValue(() => {
      const mine = calls(host).filter((event) => event.server === 'pu');
      return mine.length >= 5 ? mine : undefined;
    }, 'the calls of pu to be journaled');
    expect(journaled.map(({ tool, principal }) => `${principal} ${tool}`)).toEqual([
      'alice pu__show',
      'bob pu__show',
      'alice pu__bump',
      'alice pu__app_echo',
      'bob pu__show',
    ]);
  });
});

describe('the apps routes for users', { timeout: 30_000 }, () => {
  let fleet: Fleet;
  let frames: AppFrames;
  let sandbox: Listening;
  let usersDir: string;
  let usersStore: UsersStore;
  const keys: Record<string, string> = {};

  beforeAll(async () => {
    frames = createAppFrames({ bindHost: '127.0.0.1' });
    sandbox = await listen(frames.app, { port: 0 });
    frames.listeningOn(sandbox.port);
    usersDir = mkdtempSync(join(tmpdir(), 'mcp-fleet-users-'));
    usersStore = createFileUsersStore(usersDir);
    // A heartbeat of 200 ms: a stream asks that often whether its key still holds.
    fleet = await startFleet(() => ({ fx: appsServer(), secret: { ...appsServer(), access: { users: ['alice'] } }, pu: { ...appsServer(), scope: 'per_user' } }), {
      apps: frames,
      heartbeatMs: 200,
      users: usersStore,
    });
    await Promise.all([untilFleetState(fleet, 'fx', 'ready', 30_000), untilFleetState(fleet, 'secret', 'ready', 30_000)]);
    for (const [name, groups] of [['alice', ['eng']], ['bob', []]] as const) {
      const reply = await fleet.request('/api/mcp/users', { method: 'POST', body: { name, groups } });
      expect(reply.status).toBe(201);
      keys[name] = reply.json.key;
    }
  }, 30_000);
  afterAll(async () => {
    await frames?.closeAll();
    await sandbox?.close();
    await fleet?.close();
    rmSync(usersDir, { recursive: true, force: true });
  });

  const as = (user: string, path: string, options: Parameters<Fleet['request']>[1] = {}) =>
    fleet.request(path, { ...options, headers: { authorization: `Bearer ${keys[user]}`, ...options?.headers } });

  test('a user opens the app of a tool they may see; of one they may not, a 404 like a tool that does not exist', async () => {
    const opened = await as('bob', '/api/mcp/apps', { method: 'POST', body: { tool: 'fx__show' } });
    expect(opened.status).toBe(201);
    expect(opened.json).toMatchObject({ tool: 'fx__show', server: 'fx' });
    expect(frames.get(opened.json.id)?.opener).toBe('bob');

    const hidden = await as('bob', '/api/mcp/apps', { method: 'POST', body: { tool: 'secret__show' } });
    const missing = await as('bob', '/api/mcp/apps', { method: 'POST', body: { tool: 'nobody__show' } });
    expect(hidden.status).toBe(404);
    expect(missing.status).toBe(404);
    expect(hidden.json.error.message.replace('secret__show', 'X')).toBe(missing.json.error.message.replace('nobody__show', 'X'));
    expect((await as('alice', '/api/mcp/apps', { method: 'POST', body: { tool: 'secret__show' } })).status).toBe(201);

    // Bob's app is his: another user, or the admin, finds no such app.
    const message = { message: { jsonrpc: '2.0', method: 'ui/notifications/initialized' } };
    expect((await as('alice', `/api/mcp/apps/${opened.json.id}/messages`, { method: 'POST', body: message })).status).toBe(404);
    expect((await fleet.request(`/api/mcp/apps/${opened.json.id}/messages`, { method: 'POST', body: message })).status).toBe(404);
    expect((await as('alice', `/api/mcp/apps/${opened.json.id}`, { method: 'DELETE' })).status).toBe(404);
    expect((await as('bob', `/api/mcp/apps/${opened.json.id}/messages`, { method: 'POST', body: message })).status).toBe(202);
    expect((await as('bob', `/api/mcp/apps/${opened.json.id}`, { method: 'DELETE' })).status).toBe(204);
    expect(frames.get(opened.json.id)).toBeUndefined();
  });

  test("a user opens the app of a per_user server's tool, in their own session of it", async () => {
    expect((await as('bob', '/api/mcp/tools/pu__show/call', { method: 'POST', body: { arguments: {} } })).json.details.is_error).toBe(false);
    const ui = await as('bob', '/api/mcp/tools/pu__show/ui');
    expect(ui.status).toBe(200);
    const opened = await as('bob', '/api/mcp/apps', { method: 'POST', body: { tool: 'pu__show' } });
    expect(opened.status).toBe(201);
    expect(opened.json).toMatchObject({ tool: 'pu__show', server: 'pu' });
    expect(fleet.host.sessions({ principal: { id: 'bob' } }).map((session) => session.server)).toEqual(['pu']);
    expect((await as('bob', `/api/mcp/apps/${opened.json.id}`, { method: 'DELETE' })).status).toBe(204);
  });

  test("a user removed here takes their apps with them; a new user of the same name reaches none of it", async () => {
    const added = await fleet.request('/api/mcp/users', { method: 'POST', body: { name: 'wil', groups: ['eng'] } });
    keys.wil = added.json.key;
    const opened = await as('wil', '/api/mcp/apps', { method: 'POST', body: { tool: 'fx__show' } });
    expect(opened.status).toBe(201);
    const stream = await fetch(new URL(`/api/mcp/apps/${opened.json.id}/stream`, fleet.served.url), { headers: { authorization: `Bearer ${keys.wil}` } });
    expect(stream.status).toBe(200);
    const streamEnded = stream.body!.pipeTo(new WritableStream()).then(() => 'ended', () => 'ended');

    expect((await fleet.request('/api/mcp/users/wil', { method: 'DELETE' })).status).toBe(204);
    await untilValue(() => frames.get(opened.json.id) === undefined || undefined, "wil's app to close");
    await expect(streamEnded).resolves.toBe('ended');

    const again = await fleet.request('/api/mcp/users', { method: 'POST', body: { name: 'wil', groups: [] } });
    keys.wil = again.json.key;
    const message = { message: { jsonrpc: '2.0', method: 'ui/notifications/initialized' } };
    expect((await as('wil', `/api/mcp/apps/${opened.json.id}/messages`, { method: 'POST', body: message })).status).toBe(404);
  });

  test('a key rotated on another worker: the stream opened with the old key ends, and the new key reaches none of its apps', async () => {
    const added = await fleet.request('/api/mcp/users', { method: 'POST', body: { name: 'yan', groups: [] } });
    keys.yan = added.json.key;
    const opened = await as('yan', '/api/mcp/apps', { method: 'POST', body: { tool: 'fx__show' } });
    expect(opened.status).toBe(201);
    const stream = await fetch(new URL(`/api/mcp/apps/${opened.json.id}/stream`, fleet.served.url), { headers: { authorization: `Bearer ${keys.yan}` } });
    expect(stream.status).toBe(200);
    const streamEnded = stream.body!.pipeTo(new WritableStream()).then(() => 'ended', () => 'ended');

    // Another worker's hand: the same store (a database, for a fleet), through users of its own, which tell this worker nothing.
    const elsewhere = createUsers(usersStore);
    const rotated = await elsewhere.rotate('yan');
    await expect(streamEnded).resolves.toBe('ended');
    const message = { message: { jsonrpc: '2.0', method: 'ui/notifications/initialized' } };
    const reply = await fleet.request(`/api/mcp/apps/${opened.json.id}/messages`, { method: 'POST', body: message, headers: { authorization: `Bearer ${rotated!.key}` } });
    expect(reply.status).toBe(404);
  });
});
