// `/mcp/servers/:name` with real clients: the SDK v2 client in both eras and
// the v1 client, against real stdio fixture servers behind a real host. What a
// client sees is the server's own (names, serverInfo, instructions,
// capabilities); what a principal may do is still theirs (404, tools.access,
// quota, `tool.called`).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, ProtocolError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { healthy, startFleet, untilState, type Fleet } from '../http/fleet.js';
import { TOKEN } from '../http/helpers.js';
import { fixtureCommand } from '../fixtures/index.js';
import { until } from '../support/wait.js';
import type { JournalEvent } from '../../src/journal/events.js';

let fleet: Fleet;
const keys: Record<string, string> = {};
const open: Array<{ close(): Promise<void> }> = [];

beforeAll(async () => {
  fleet = await startFleet(
    (dir) => ({
      open: healthy(dir, 'open', { tools: { access: { add: { users: ['alice'] } } } }),
      private: healthy(dir, 'private', { access: { users: ['bob'] } }),
      modern: { type: 'local', command: fixtureCommand('modern'), protocol: 'auto', timeout_seconds: 15 },
    }),
    {},
    { userQuota: { calls_per_minute: 3 } },
  );
  await Promise.all(['open', 'private', 'modern'].map((name) => untilState(fleet, name, 'ready')));
  for (const [name, groups] of [['alice', []], ['bob', []], ['carol', []]] as const) {
    const reply = await fleet.request('/api/mcp/users', { method: 'POST', body: { name, groups } });
    expect(reply.status).toBe(201);
    keys[name] = reply.json.key;
  }
});
afterAll(async () => {
  await Promise.all(open.map((client) => client.close().catch(() => {})));
  await fleet?.close();
});

const url = (name: string) => new URL(`/mcp/servers/${name}`, fleet.served.url);
const auth = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });

/** A v2 client on `/mcp/servers/<name>`, in the era asked for. */
async function v2(name: string, era: 'legacy' | 'modern', key = TOKEN): Promise<Client> {
  const client = new Client(
    { name: 'test-client', version: '1.0.0' },
    { versionNegotiation: { mode: era === 'legacy' ? 'legacy' : { pin: '2026-07-28' } } },
  );
  await client.connect(new StreamableHTTPClientTransport(url(name), { requestInit: auth(key) }));
  open.push(client);
  return client;
}

async function v1(name: string, key = TOKEN): Promise<V1Client> {
  const client = new V1Client({ name: 'test-client-v1', version: '1.0.0' });
  await client.connect(new V1Transport(url(name), { requestInit: auth(key) }));
  open.push(client);
  return client;
}

const text = (result: { content?: unknown }) => (result.content as Array<{ type: string; text?: string }>).map((part) => part.text).join('');

describe('a client sees the server itself', () => {
  it.each(['legacy', 'modern'] as const)('v2 client, %s era: serverInfo, capabilities, tools by their own names, a call', async (era) => {
    const client = await v2('open', era);
    expect(client.getProtocolEra()).toBe(era);
    expect(client.getServerVersion()).toMatchObject({ name: 'healthy-fixture', version: '1.2.3' });
    expect(client.getServerCapabilities()?.tools).toBeDefined();
    const tools = (await client.listTools()).tools.map((tool) => tool.name);
    expect(tools).toContain('echo');
    expect(tools.every((name) => !name.includes('__'))).toBe(true);
    expect(text(await client.callTool({ name: 'echo', arguments: { text: `hi ${era}` } }))).toBe(`hi ${era}`);
  });

  it('v1 client: the same server, the same answers', async () => {
    const client = await v1('open');
    expect(client.getServerVersion()).toMatchObject({ name: 'healthy-fixture', version: '1.2.3' });
    const tools = (await client.listTools()).tools.map((tool) => tool.name);
    expect(tools).toContain('echo');
    expect(text(await client.callTool({ name: 'echo', arguments: { text: 'from v1' } }) as { content: unknown })).toBe('from v1');
  });

  it('a modern server through both eras: resources and prompts forwarded', async () => {
    for (const era of ['legacy', 'modern'] as const) {
      const client = await v2('modern', era);
      expect(client.getServerVersion()?.name).toBe('modern-fixture');
      const resources = await client.listResources();
      expect(resources.resources.map((resource) => resource.uri)).toContain('fixture://hello');
      const read = await client.readResource({ uri: 'fixture://hello' });
      expect(read.contents.length).toBeGreaterThan(0);
      const prompts = await client.listPrompts();
      expect(prompts.prompts.map((prompt) => prompt.name)).toContain('greet');
    }
  });

  it('progress of a call reaches the calling client', async () => {
    const client = await v2('open', 'legacy');
    const seen: number[] = [];
    const result = await client.callTool({ name: 'slow', arguments: { ms: 100, steps: 3 } }, { onprogress: (progress) => seen.push(progress.progress) });
    expect(result.isError).not.toBe(true);
    expect(seen).toEqual([1, 2, 3]);
  });
});

describe('each call is still the principal\'s', () => {
  it('a server the principal may not see is a 404, like one that does not exist', async () => {
    const hidden = await fetch(url('private'), { method: 'POST', headers: { authorization: `Bearer ${keys.alice}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
    const missing = await fetch(url('nothing'), { method: 'POST', headers: { authorization: `Bearer ${keys.alice}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
    expect(hidden.status).toBe(404);
    expect(missing.status).toBe(404);
    expect(await hidden.text()).toBe((await missing.text()).replace('nothing', 'private'));
    await expect(v2('private', 'legacy', keys.alice!)).rejects.toThrow();
    const bob = await v2('private', 'legacy', keys.bob!);
    expect((await bob.listTools()).tools.length).toBeGreaterThan(0);
  });

  it('no key: 401', async () => {
    const reply = await fetch(url('open'), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(reply.status).toBe(401);
  });

  it('tools.access: a tool not theirs is neither listed nor callable', async () => {
    const carol = await v2('open', 'modern', keys.carol!);
    expect((await carol.listTools()).tools.map((tool) => tool.name)).not.toContain('add');
    await expect(carol.callTool({ name: 'add', arguments: { a: 1, b: 2 } })).rejects.toBeInstanceOf(ProtocolError);
    const alice = await v2('open', 'modern', keys.alice!);
    expect((await alice.listTools()).tools.map((tool) => tool.name)).toContain('add');
    expect(text(await alice.callTool({ name: 'add', arguments: { a: 1, b: 2 } }))).toBe('3');
  });

  it('each call is journaled as tool.called with its principal, and counts against their quota', async () => {
    const bob = await v2('open', 'legacy', keys.bob!);
    const since = fleet.host.events().at(-1)?.seq ?? 0;
    const results = [];
    for (let at = 0; at < 4; at += 1) results.push(await bob.callTool({ name: 'echo', arguments: { text: `n${at}` } }));
    // calls_per_minute: 3, the fourth is refused as any call of bob's over quota would be.
    expect(results.slice(0, 3).every((result) => result.isError !== true)).toBe(true);
    expect(results[3]!.isError).toBe(true);
    let called: Array<Extract<JournalEvent, { type: 'tool.called' }>> = [];
    await until(() => {
      called = fleet.host.events(since).filter((event): event is Extract<JournalEvent, { type: 'tool.called' }> => event.type === 'tool.called' && event.principal === 'bob');
      return called.length === 4;
    }, 'four tool.called of bob');
    expect(called.map((event) => [event.server, event.tool, event.outcome])).toEqual([
      ['open', 'open__echo', 'ok'],
      ['open', 'open__echo', 'ok'],
      ['open', 'open__echo', 'ok'],
      ['open', 'open__echo', 'error'],
    ]);
    expect(called[3]!.refused_by).toBe('calls_per_minute');
  });
});
