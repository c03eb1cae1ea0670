// Resource subscriptions and per_user completions at `/mcp`, with real clients
// (the SDK v2 client in both eras, the v1 client) and real servers: two
// processes of the conformance fixture over HTTP (their URIs clash; its
// `touch_subscribed` tool names what the worker's connection subscribed to and
// tells it they changed), the apps fixture and the completions fixture as
// per_user servers over stdio. Also what a user is shown of a server's config.
import { basename } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { startFleet, untilState, type Fleet } from '../http/fleet.js';
import { TOKEN } from '../http/helpers.js';
import { fixtureCommand, startHttpFixture, type HttpFixture } from '../fixtures/index.js';
import { until, untilValue } from '../support/wait.js';

let fleet: Fleet;
let watchedHttp: HttpFixture;
let twinHttp: HttpFixture;
const keys: Record<string, string> = {};
const open: Array<{ close(): Promise<void> }> = [];

const WATCHED = 'test://watched-resource';
const clash = (server: string, uri: string) => `mcp-fleet://${server}/${encodeURIComponent(uri)}`;
const APP = 'ui://fixture/app.html';

beforeAll(async () => {
  [watchedHttp, twinHttp] = await Promise.all([startHttpFixture('conformance-server'), startHttpFixture('conformance-server')]);
  fleet = await startFleet((dir) => ({
    // Pinned to 2025: a 2026-era connection has no resources/subscribe.
    watched: { type: 'remote', url: watchedHttp.url, protocol: '2025', timeout_seconds: 15 },
    twin: { type: 'remote', url: twinHttp.url, protocol: '2025', timeout_seconds: 15 },
    apps: {
      type: 'local',
      command: fixtureCommand('apps-server'),
      protocol: '2025',
      scope: 'per_user',
      env: { USER_TOKEN: '${user.TOKEN}' },
      user_inputs: { TOKEN: { description: 'your token' } },
      cwd: dir,
      timeout_seconds: 15,
    },
    colors: {
      type: 'local',
      command: fixtureCommand('completions'),
      scope: 'per_user',
      env: { USER_TOKEN: '${user.TOKEN}' },
      user_inputs: { TOKEN: { description: 'your token' } },
      timeout_seconds: 15,
    },
  }));
  await Promise.all(['watched', 'twin'].map((name) => untilState(fleet, name, 'ready')));
  for (const name of ['alice', 'bob']) {
    const reply = await fleet.request('/api/mcp/users', { method: 'POST', body: { name, groups: [] } });
    expect(reply.status).toBe(201);
    keys[name] = reply.json.key;
    for (const server of ['apps', 'colors']) {
      const inputs = await fleet.request(`/api/mcp/servers/${server}/inputs`, { method: 'PUT', body: { TOKEN: `token-of-${name}` }, headers: { authorization: `Bearer ${keys[name]}` } });
      expect(inputs.status).toBe(200);
    }
  }
}, 60_000);
afterAll(async () => {
  await Promise.allSettled(open.map((client) => client.close()));
  await fleet?.close();
  await Promise.all([watchedHttp?.stop(), twinHttp?.stop()]);
});

const auth = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });

/** A v2 client on `/mcp` (or `path`), and the resources/updated URIs it is told, in order. */
async function v2(key: string, era: 'legacy' | 'modern', path = '/mcp'): Promise<{ client: Client; transport: StreamableHTTPClientTransport; updated: string[] }> {
  const client = new Client({ name: 'subscriptions-test', version: '1.0.0' }, { versionNegotiation: { mode: era === 'legacy' ? 'legacy' : { pin: '2026-07-28' } } });
  const updated: string[] = [];
  client.setNotificationHandler('notifications/resources/updated', (notification) => void updated.push(notification.params.uri));
  const transport = new StreamableHTTPClientTransport(new URL(path, fleet.served.url), { requestInit: auth(key) });
  await client.connect(transport);
  open.push(client);
  return { client, transport, updated };
}

/** What the worker's connection to `server` (a conformance fixture) is subscribed to; tells it those changed. */
async function touch(server: 'watched' | 'twin'): Promise<string[]> {
  const { client } = await v2(TOKEN, 'legacy', `/mcp/servers/${server}`);
  const result = await client.callTool({ name: 'touch_subscribed', arguments: {} });
  await client.close();
  return JSON.parse((result.content as Array<{ text: string }>)[0]!.text) as string[];
}

describe('resources/subscribe at /mcp (2025 sessions)', () => {
  it('offers subscribe in both eras', async () => {
    expect((await v2(keys.alice!, 'legacy')).client.getServerCapabilities()?.resources).toEqual({ listChanged: true, subscribe: true });
    expect((await v2(keys.alice!, 'modern')).client.getServerCapabilities()?.resources).toEqual({ listChanged: true, subscribe: true });
  });

  it('routes a clash URI to its server and tells exactly the sessions that subscribed, under the URI they used', async () => {
    const alice = await v2(keys.alice!, 'legacy');
    const bob = await v2(keys.bob!, 'legacy');
    await alice.client.subscribeResource({ uri: clash('watched', WATCHED) });
    await bob.client.subscribeResource({ uri: clash('twin', WATCHED) });
    // Each backend was subscribed through the worker's connection to it, and to nothing else.
    expect(await touch('watched')).toEqual([WATCHED]);
    await until(() => alice.updated.length === 1, 'alice to be told watched changed');
    expect(alice.updated).toEqual([clash('watched', WATCHED)]);
    expect(await touch('twin')).toEqual([WATCHED]);
    await until(() => bob.updated.length === 1, 'bob to be told twin changed');
    // Bob heard twin's change and nothing of watched's, which came first; alice nothing of twin's.
    expect(bob.updated).toEqual([clash('twin', WATCHED)]);
    expect(alice.updated).toEqual([clash('watched', WATCHED)]);
    await alice.client.unsubscribeResource({ uri: clash('watched', WATCHED) });
    await bob.client.unsubscribeResource({ uri: clash('twin', WATCHED) });
    expect(await touch('watched')).toEqual([]);
    expect(await touch('twin')).toEqual([]);
  });

  it('the bare URI two servers offer is refused, naming every server’s clash URI', async () => {
    const { client } = await v2(keys.alice!, 'legacy');
    const expected = `ask for ${clash('watched', WATCHED)} or ${clash('twin', WATCHED)}`;
    await expect(client.subscribeResource({ uri: WATCHED })).rejects.toThrow(expected);
    await expect(client.readResource({ uri: WATCHED })).rejects.toThrow(expected);
  });

  it('is held once at the server for every session and /mcp/servers/<name> client that holds it, and dropped by the last', async () => {
    const first = await v2(keys.alice!, 'legacy');
    const second = await v2(keys.bob!, 'legacy');
    const direct = await v2(keys.alice!, 'legacy', '/mcp/servers/watched');
    await first.client.subscribeResource({ uri: clash('watched', WATCHED) });
    await second.client.subscribeResource({ uri: clash('watched', WATCHED) });
    await direct.client.subscribeResource({ uri: WATCHED });
    expect(await touch('watched')).toEqual([WATCHED]);
    await until(() => first.updated.length === 1 && second.updated.length === 1 && direct.updated.length === 1, 'all three to be told');
    expect(direct.updated).toEqual([WATCHED]);
    // Unsubscribing one, ending another's session (DELETE) and closing the direct client: only the last lets the server go.
    await first.client.unsubscribeResource({ uri: clash('watched', WATCHED) });
    expect(await touch('watched')).toEqual([WATCHED]);
    await second.transport.terminateSession();
    await second.client.close();
    expect(await touch('watched')).toEqual([WATCHED]);
    await direct.transport.terminateSession();
    await direct.client.close();
    await untilValue(async () => (await touch('watched')).length === 0, 'the server to be unsubscribed once nobody holds it');
  });

  it('a server that leaves ready drops the subscription; subscribing again holds it on the new connection', async () => {
    const alice = await v2(keys.alice!, 'legacy');
    await alice.client.subscribeResource({ uri: clash('twin', WATCHED) });
    expect(await touch('twin')).toEqual([WATCHED]);
    expect((await fleet.request('/api/mcp/servers/twin/restart', { method: 'POST' })).status).toBeLessThan(300);
    await untilState(fleet, 'twin', 'ready');
    expect(await touch('twin')).toEqual([]);
    const before = alice.updated.length;
    await alice.client.subscribeResource({ uri: clash('twin', WATCHED) });
    expect(await touch('twin')).toEqual([WATCHED]);
    await until(() => alice.updated.length === before + 1, 'alice to be told again');
    await alice.client.unsubscribeResource({ uri: clash('twin', WATCHED) });
  });

  it("a per_user server's resource goes through the caller's own session", async () => {
    const alice = await v2(keys.alice!, 'legacy');
    const bob = await v2(keys.bob!, 'legacy');
    await alice.client.subscribeResource({ uri: APP });
    const touched = (client: Client) => client.callTool({ name: 'apps__touch', arguments: {} }).then((result) => JSON.parse((result.content as Array<{ text: string }>)[0]!.text) as { subscribed: boolean });
    // Alice's own process was subscribed; bob's was not.
    expect((await touched(alice.client)).subscribed).toBe(true);
    await until(() => alice.updated.includes(APP), 'alice to be told her app changed');
    expect((await touched(bob.client)).subscribed).toBe(false);
    await alice.client.unsubscribeResource({ uri: APP });
    expect((await touched(alice.client)).subscribed).toBe(false);
  });

  it('a server that offers no subscriptions is a clear error', async () => {
    const { client } = await v2(keys.alice!, 'legacy');
    await expect(client.subscribeResource({ uri: 'color://red' })).rejects.toThrow(/colors does not offer resource subscriptions/);
    await expect(client.subscribeResource({ uri: 'nowhere://at-all' })).rejects.toThrow(/no server offers the resource nowhere:\/\/at-all/);
  });

  it('v1 client: subscribes and is told', async () => {
    const client = new V1Client({ name: 'subscriptions-test-v1', version: '1.0.0' });
    const updated: string[] = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => void updated.push(notification.params.uri));
    const transport = new V1Transport(new URL('/mcp', fleet.served.url), { requestInit: auth(keys.bob!) });
    await client.connect(transport);
    open.push(client);
    await client.subscribeResource({ uri: clash('watched', WATCHED) });
    expect(await touch('watched')).toEqual([WATCHED]);
    await until(() => updated.length === 1, 'the v1 client to be told');
    expect(updated).toEqual([clash('watched', WATCHED)]);
    await transport.terminateSession();
    await client.close();
    await untilValue(async () => (await touch('watched')).length === 0, 'its ended session to let the server go');
  });
});

describe('resourceSubscriptions of a subscriptions/listen stream at /mcp (2026-07-28)', () => {
  it('holds the URIs it can at their servers, acknowledges only those, and tells only the streams that named them', async () => {
    // Each bare URI is looked up in every per_user session's listings at once: not all on the stream's one signal.
    const warnings: string[] = [];
    const onWarning = (warning: Error) => void warnings.push(`${warning.name}: ${warning.message}`);
    process.on('warning', onWarning);
    onTestFinished(() => void process.off('warning', onWarning));
    const alice = await v2(keys.alice!, 'modern');
    const bob = await v2(keys.bob!, 'modern');
    const mine = await alice.client.listen({ resourceSubscriptions: [clash('watched', WATCHED), 'nowhere://at-all', 'color://red', WATCHED] });
    // A URI no server offers, one of a server without subscriptions and the bare shared URI are not honored.
    expect(mine.honoredFilter).toEqual({ resourceSubscriptions: [clash('watched', WATCHED)] });
    const his = await bob.client.listen({ resourceSubscriptions: [clash('twin', WATCHED)] });
    expect(his.honoredFilter).toEqual({ resourceSubscriptions: [clash('twin', WATCHED)] });
    expect(await touch('watched')).toEqual([WATCHED]);
    await until(() => alice.updated.length === 1, 'alice’s stream to be told watched changed');
    expect(await touch('twin')).toEqual([WATCHED]);
    await until(() => bob.updated.length === 1, 'bob’s stream to be told twin changed');
    expect(alice.updated).toEqual([clash('watched', WATCHED)]);
    expect(bob.updated).toEqual([clash('twin', WATCHED)]);
    // Closing a stream lets its server go.
    await mine.close();
    await untilValue(async () => (await touch('watched')).length === 0, 'watched to be unsubscribed once alice’s stream closed');
    await his.close();
    await untilValue(async () => (await touch('twin')).length === 0, 'twin to be unsubscribed once bob’s stream closed');
    expect(warnings.filter((warning) => warning.startsWith('MaxListenersExceededWarning'))).toEqual([]);
  });

  it("a per_user server's resource is held through the caller's own session, and only its caller's stream is told", async () => {
    const alice = await v2(keys.alice!, 'modern');
    const bob = await v2(keys.bob!, 'modern');
    const carol = await v2(keys.alice!, 'modern');
    const touched = (client: Client) => client.callTool({ name: 'apps__touch', arguments: {} }).then((result) => JSON.parse((result.content as Array<{ text: string }>)[0]!.text) as { subscribed: boolean });
    // Nobody listens yet: neither session is subscribed.
    expect((await touched(carol.client)).subscribed).toBe(false);
    const stream = await alice.client.listen({ resourceSubscriptions: [APP] });
    expect(stream.honoredFilter).toEqual({ resourceSubscriptions: [APP] });
    const his = await bob.client.listen({ resourceSubscriptions: [APP] });
    // The same URI on both streams, each held through its caller's own session: alice's change is hers alone.
    expect((await touched(alice.client)).subscribed).toBe(true);
    await until(() => alice.updated.length === 1, 'alice’s stream to be told her app changed');
    expect((await touched(bob.client)).subscribed).toBe(true);
    await until(() => bob.updated.length === 1, 'bob’s stream to be told his app changed');
    expect(alice.updated).toEqual([APP]);
    expect(bob.updated).toEqual([APP]);
    await stream.close();
    await his.close();
    await untilValue(async () => !(await touched(alice.client)).subscribed, 'her session to be unsubscribed once the stream closed');
    await untilValue(async () => !(await touched(bob.client)).subscribed, 'his session to be unsubscribed once the stream closed');
  });

  it('a server that leaves ready ends the stream, so the client listens again', async () => {
    const alice = await v2(keys.alice!, 'modern');
    const stream = await alice.client.listen({ resourceSubscriptions: [clash('twin', WATCHED)] });
    expect(await touch('twin')).toEqual([WATCHED]);
    expect((await fleet.request('/api/mcp/servers/twin/restart', { method: 'POST' })).status).toBeLessThan(300);
    expect(await stream.closed).toBe('remote');
    await untilState(fleet, 'twin', 'ready');
    const again = await alice.client.listen({ resourceSubscriptions: [clash('twin', WATCHED)] });
    expect(await touch('twin')).toEqual([WATCHED]);
    await again.close();
  });
});

describe("completions of a per_user server's prompts and templates at /mcp", () => {
  it.each(['legacy', 'modern'] as const)("go through the caller's own session (%s)", async (era) => {
    for (const name of ['alice', 'bob']) {
      const { client } = await v2(keys[name]!, era);
      const prompt = await client.complete({ ref: { type: 'ref/prompt', name: 'colors:paint' }, argument: { name: 'color', value: 'to' } });
      expect(prompt.completion.values).toEqual([`token-of-${name}`]);
      const template = await client.complete({ ref: { type: 'ref/resource', uri: 'color://{name}' }, argument: { name: 'name', value: 'gr' } });
      expect(template.completion.values).toEqual(['green', 'grey']);
    }
  });

  it('a prompt or template nobody offers completes to nothing', async () => {
    const { client } = await v2(keys.alice!, 'legacy');
    expect((await client.complete({ ref: { type: 'ref/prompt', name: 'colors:nothing' }, argument: { name: 'x', value: '' } })).completion.values).toEqual([]);
    expect((await client.complete({ ref: { type: 'ref/resource', uri: 'none://{x}' }, argument: { name: 'x', value: '' } })).completion.values).toEqual([]);
  });
});

describe("what a user is shown of a server's config", () => {
  it('a user sees no working directory, arguments, environment or headers; the admin sees the config as stored', async () => {
    const user = await fleet.request('/api/mcp/servers/apps', auth(keys.alice!));
    expect(user.status).toBe(200);
    expect(user.json.config).toMatchObject({ type: 'local', command: [basename(process.execPath)], cwd: null, env: {}, inherit_env: [], scope: 'per_user', user_inputs: { TOKEN: { description: 'your token' } } });
    expect(user.text).not.toContain(fleet.dir);
    expect(user.text).not.toContain('apps-server');
    const remote = await fleet.request('/api/mcp/servers/watched', auth(keys.alice!));
    expect(remote.json.config).toMatchObject({ type: 'remote', url: watchedHttp.url, headers: {} });
    const listed = await fleet.request('/api/mcp/servers', auth(keys.alice!));
    expect(JSON.stringify(listed.json)).not.toContain(fleet.dir);

    const admin = await fleet.request('/api/mcp/servers/apps');
    expect(admin.json.config).toMatchObject({ command: fixtureCommand('apps-server'), cwd: fleet.dir, env: { USER_TOKEN: { has_value: true } } });
  });
});
