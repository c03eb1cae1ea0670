// `/mcp/servers/:name` with real clients: the SDK v2 client in both eras and
// the v1 client, against real stdio fixture servers behind a real host. What a
// client sees is the server's own (names, serverInfo, instructions,
// capabilities); what a principal may do is still theirs (404, tools.access,
// quota, `tool.called`).
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, ProtocolError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { healthy, startFleet, untilState, type Fleet } from '../http/fleet.js';
import { TOKEN } from '../http/helpers.js';
import { fixtureCommand, whoamiPerUser } from '../fixtures/index.js';
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
      changing: { type: 'local', command: fixtureCommand('changing-catalog'), timeout_seconds: 15 },
      waiting: healthy(dir, 'waiting', { env: { FIXTURE_WAIT_LOG: join(dir, 'wait.log'), FIXTURE_CANCEL_LOG: join(dir, 'cancel.log') } }),
      mine: whoamiPerUser(),
    }),
    {},
    { userQuota: { calls_per_minute: 3 } },
  );
  await Promise.all(['open', 'private', 'modern', 'changing', 'waiting'].map((name) => untilState(fleet, name, 'ready')));
  for (const [name, groups] of [['alice', []], ['bob', []], ['carol', []]] as const) {
    const reply = await fleet.request('/api/mcp/users', { method: 'POST', body: { name, groups } });
    expect(reply.status).toBe(201);
    keys[name] = reply.json.key;
    const inputs = await fleet.request('/api/mcp/servers/mine/inputs', {
      method: 'PUT',
      body: { TOKEN: `token-of-${name}` },
      headers: { authorization: `Bearer ${keys[name]}` },
    });
    expect(inputs.status).toBe(200);
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

  it('refuses a tools/list cursor it did not issue with invalid params, in both eras, rather than listing from the start', async () => {
    for (const era of ['legacy', 'modern'] as const) {
      const client = await v2('open', era);
      const refused = await client.listTools({ cursor: 'nonsense' }).then(
        () => 'listed',
        (error: { code?: number; message?: string }) => [error.code, error.message],
      );
      expect(refused, era).toEqual([-32602, expect.stringMatching(/invalid cursor "nonsense"/)]);
    }
  });

  it('refuses a prompt argument that is not a string with invalid params naming it, in both eras', async () => {
    for (const era of ['legacy', 'modern'] as const) {
      const client = await v2('modern', era);
      // Raw, as a client that does not check its own request would send it.
      const refused = await client.request({ method: 'prompts/get', params: { name: 'greet', arguments: { name: 5 } } } as never).then(
        () => 'rendered',
        (error: { code?: number; message?: string }) => [error.code, error.message],
      );
      expect(refused, era).toEqual([-32602, 'prompts/get: argument "name" must be a string, not number']);
    }
  });

  it('progress of a call reaches the calling client', async () => {
    const client = await v2('open', 'legacy');
    const seen: number[] = [];
    const result = await client.callTool({ name: 'slow', arguments: { ms: 100, steps: 3 } }, { onprogress: (progress) => seen.push(progress.progress) });
    expect(result.isError).not.toBe(true);
    // In order, as the server sent them. The host's own client may take the last one in after the
    // result that follows it at once, and then drops it: a prefix is what can be promised.
    expect(seen.length).toBeGreaterThanOrEqual(2);
    expect(seen).toEqual([1, 2, 3].slice(0, seen.length));
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

describe('what the server says on its own reaches the client', () => {
  it.each(['legacy', 'modern'] as const)('%s era: a list change is announced (tools/list_changed), and the new tool listed', async (era) => {
    const client = await v2('changing', era);
    let changed = 0;
    client.setNotificationHandler('notifications/tools/list_changed', () => {
      changed += 1;
    });
    // A 2026-era client hears of changes on a subscriptions/listen stream it opens.
    const subscription = era === 'modern' ? await client.listen({ toolsListChanged: true }) : undefined;
    await client.callTool({ name: 'add_tool', arguments: { name: `new_${era}` } });
    await until(() => changed > 0, 'notifications/tools/list_changed');
    await until(async () => (await client.listTools()).tools.some((tool) => tool.name === `new_${era}`), 'the new tool listed');
    await subscription?.close();
  });

  it('a log message of the server during a call reaches the calling client at the level it asked for', async () => {
    const client = await v2('changing', 'legacy');
    const messages: unknown[] = [];
    client.setNotificationHandler('notifications/message', (notification) => {
      messages.push(notification.params.data);
    });
    await client.setLoggingLevel('warning');
    await client.callTool({ name: 'log', arguments: { level: 'info', data: 'too quiet' } });
    await client.callTool({ name: 'log', arguments: { level: 'error', data: 'loud enough' } });
    await until(() => messages.some((data) => String(data).includes('loud enough')), 'the error log message');
    expect(messages.some((data) => String(data).includes('too quiet'))).toBe(false);
  });

  it('cancelling a call cancels it at the server', async () => {
    const client = await v2('waiting', 'legacy');
    const controller = new AbortController();
    const call = client.callTool({ name: 'wait_for_cancel', arguments: {} }, { signal: controller.signal });
    const waitLog = join(fleet.dir, 'wait.log');
    await until(() => existsSync(waitLog), 'the call to reach the server');
    controller.abort();
    await expect(call).rejects.toThrow();
    const cancelLog = join(fleet.dir, 'cancel.log');
    await until(() => existsSync(cancelLog) && readFileSync(cancelLog, 'utf8').includes('cancelled'), 'the server to hear of the cancellation');
  });
});

describe('a per_user server', () => {
  it("is the caller's own session: each user's process gets their own input", async () => {
    const answer = async (user: string) => {
      const client = await v2('mine', 'legacy', keys[user]!);
      return JSON.parse(text(await client.callTool({ name: 'whoami', arguments: {} }))) as { token: string; pid: number };
    };
    // (bob has used up his quota above.)
    const alice = await answer('alice');
    const carol = await answer('carol');
    expect(alice.token).toBe('token-of-alice');
    expect(carol.token).toBe('token-of-carol');
    expect(alice.pid).not.toBe(carol.pid);
  });
});

describe('a per_user server without the caller\'s inputs', () => {
  it('is a 409 that names what to set', async () => {
    const added = await fleet.request('/api/mcp/users', { method: 'POST', body: { name: 'dave', groups: [] } });
    const reply = await fetch(url('mine'), {
      method: 'POST',
      headers: { authorization: `Bearer ${added.json.key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } } }),
    });
    expect(reply.status).toBe(409);
    const body = (await reply.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('inputs_missing');
    expect(body.error.message).toContain('TOKEN');
  });
});

describe('the MCP Inspector CLI', () => {
  const require = createRequire(import.meta.url);
  const build = join(dirname(require.resolve('@modelcontextprotocol/inspector-cli/package.json')), 'build');
  const inspect = (args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
      // Its cwd is its build folder: it finds its own package.json relative to the working directory.
      execFile(process.execPath, [join(build, 'index.js'), url('open').href, '--transport', 'http', '--header', `Authorization: Bearer ${keys.carol}`, ...args], { cwd: build, timeout: 60_000 }, (error, stdout, stderr) =>
        done({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
    });

  it('lists and calls tools of the server as the user it authenticates as', async () => {
    const listed = await inspect(['--method', 'tools/list']);
    expect(listed.code, listed.stderr).toBe(0);
    const names = (JSON.parse(listed.stdout) as { tools: Array<{ name: string }> }).tools.map((tool) => tool.name);
    expect(names).toContain('echo');
    // tools.access gives `add` to alice alone.
    expect(names).not.toContain('add');
    const called = await inspect(['--method', 'tools/call', '--tool-name', 'echo', '--tool-arg', 'text=inspected']);
    expect(called.code, called.stderr).toBe(0);
    expect(text(JSON.parse(called.stdout) as { content: unknown })).toBe('inspected');
  });
});
