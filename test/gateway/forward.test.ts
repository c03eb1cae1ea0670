// A backend's requests to its client (sampling, elicitation) during a call a
// gateway client made reach that client, through `/mcp` and
// `/mcp/servers/:name`, with real clients (SDK v2 in the 2025 era, SDK v1)
// and real backends: a stdio server (client-requests fixture) and the
// conformance fixture over Streamable HTTP, connected in each era.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { startFleet, untilState, type Fleet } from '../http/fleet.js';
import { TOKEN } from '../http/helpers.js';
import { fixtureCommand, startHttpFixture, type HttpFixture } from '../fixtures/index.js';
import { until } from '../support/wait.js';
import { answerWith, declared, promptOf, reply, text, type Handlers } from './client-answers.js';

let fleet: Fleet;
let http: HttpFixture;
const open: Array<{ close(): Promise<void> }> = [];
/** The host's own elicitation handler: it answers once `hostMayAnswer` resolves. */
const hostAsked: string[] = [];
let hostMayAnswer: Promise<void> = Promise.resolve();

beforeAll(async () => {
  http = await startHttpFixture('conformance-server');
  const remote = { type: 'remote', url: http.url, timeout_seconds: 15 };
  fleet = await startFleet(
    () => ({
      asks: { type: 'local', command: fixtureCommand('client-requests'), timeout_seconds: 15 },
      modern: { type: 'local', command: fixtureCommand('modern'), protocol: '2026', timeout_seconds: 15 },
      http2025: { ...remote, protocol: '2025' },
      http2026: { ...remote, protocol: '2026' },
    }),
    {},
    {
      samplingForCallers: true,
      roots: [{ uri: 'file:///host/root', name: 'the host' }],
      async elicitation(request) {
        hostAsked.push(request.message);
        await hostMayAnswer;
        return { action: 'accept', content: { name: 'the host' } };
      },
    },
  );
  await Promise.all(['asks', 'modern', 'http2025', 'http2026'].map((name) => untilState(fleet, name, 'ready')));
}, 60_000);
// Each test's clients end with it: the worker bounds a principal's sessions (20), and this file opens more than that.
afterEach(async () => {
  await Promise.all(open.splice(0).map((client) => client.close().catch(() => {})));
});
afterAll(async () => {
  await fleet?.close();
  await http?.stop();
});

/** A 2025-era v2 client of `path` that answers sampling with `sample` (and declares it only then) and elicitation with `elicit`. */
async function v2(path: string, handlers: Handlers = {}): Promise<Client> {
  const client = new Client(
    { name: 'forward-test', version: '1.0.0' },
    {
      versionNegotiation: { mode: 'legacy' },
      capabilities: declared(handlers),
    },
  );
  answerWith(client, handlers);
  const transport = new StreamableHTTPClientTransport(new URL(path, fleet.served.url), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } });
  await client.connect(transport);
  // Ended as a client should (DELETE), so the session leaves the worker's bounded pool.
  open.push({ close: () => transport.terminateSession().finally(() => client.close()) });
  return client;
}


describe('a stdio backend: its request goes to the one call in flight', () => {
  it.each([
    ['/mcp', 'asks__sample'],
    ['/mcp/servers/asks', 'sample'],
  ])('%s: sampling reaches the calling client, and its answer the backend', async (path, tool) => {
    const asked: string[] = [];
    const client = await v2(path, { sample: (params) => (asked.push(promptOf(params)), reply(`sampled: ${promptOf(params)}`)) });
    const result = await client.callTool({ name: tool, arguments: { prompt: `what via ${path}?` } });
    expect(result.isError).not.toBe(true);
    expect(asked).toEqual([`what via ${path}?`]);
    expect(JSON.parse(text(result))).toEqual({ result: reply(`sampled: what via ${path}?`) });
  });

  it('elicitation reaches the calling client, its content the backend', async () => {
    const client = await v2('/mcp/servers/asks', { elicit: { name: 'Ada' } });
    const result = await client.callTool({ name: 'elicit', arguments: { timeoutMs: 10_000 } });
    expect(JSON.parse(text(result))).toEqual({ result: { action: 'accept', content: { name: 'Ada' } } });
  });

  it('roots: the calling client\'s when it declared them, else the host\'s', async () => {
    const declared = await v2('/mcp/servers/asks', { roots: ['file:///client/work'] });
    expect(JSON.parse(text(await declared.callTool({ name: 'list_roots', arguments: {} })))).toEqual({ roots: [{ uri: 'file:///client/work' }] });
    const silent = await v2('/mcp/servers/asks');
    expect(JSON.parse(text(await silent.callTool({ name: 'list_roots', arguments: {} })))).toEqual({ roots: [{ uri: 'file:///host/root', name: 'the host' }] });
  });

  it('a v1 client is asked as well', async () => {
    const client = new V1Client({ name: 'forward-test-v1', version: '1.0.0' }, { capabilities: { sampling: {} } });
    client.setRequestHandler(CreateMessageRequestSchema, (request) => reply(`v1 saw ${JSON.stringify(request.params.messages[0]?.content)}`));
    const transport = new V1Transport(new URL('/mcp', fleet.served.url), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } });
    await client.connect(transport);
    open.push({ close: () => transport.terminateSession().finally(() => client.close()) });
    const result = (await client.callTool({ name: 'asks__sample', arguments: { prompt: 'v1?' } })) as { content: unknown };
    expect(JSON.parse(text(result)).result.content.text).toBe('v1 saw {"type":"text","text":"v1?"}');
  });

  it('a client that did not declare sampling is not asked: the host answers (here: it has no model)', async () => {
    const client = await v2('/mcp');
    const result = await client.callTool({ name: 'asks__sample', arguments: { prompt: 'anyone?' } });
    expect(result.isError).toBe(true);
    expect(JSON.parse(text(result)).error.data).toEqual({ reason: 'no_host_model' });
  });

  it('two calls in flight on the server: nobody can tell whose it is, and the host answers', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const asked: string[] = [];
    const waiting = await v2('/mcp', {
      async sample(params) {
        asked.push(promptOf(params));
        await gate;
        return reply('waiting client');
      },
    });
    const other = await v2('/mcp', { sample: (params) => (asked.push(promptOf(params)), reply('other client')) });
    // The first call is alone when its backend asks; it is answered only after the second call.
    const held = waiting.callTool({ name: 'asks__sample', arguments: { prompt: 'first' } });
    await until(() => asked.length === 1, 'the first call to be asked');
    const result = await other.callTool({ name: 'asks__sample', arguments: { prompt: 'second' } });
    expect(JSON.parse(text(result)).error.data).toEqual({ reason: 'no_host_model' });
    release();
    expect(JSON.parse(text(await held))).toEqual({ result: reply('waiting client') });
    expect(asked).toEqual(['first']);
  });

  it("the host's own call in flight beside a gateway client's: the host answers both", async () => {
    let release!: () => void;
    hostMayAnswer = new Promise<void>((resolve) => (release = resolve));
    const asked: string[] = [];
    const client = await v2('/mcp', { sample: (params) => (asked.push(promptOf(params)), reply('client')) });
    // The host's call is alone when its backend asks: the host's handler answers, once released.
    const own = fleet.host.callTool('asks__elicit', { timeoutMs: 10_000 });
    await until(() => hostAsked.length === 1, "the host's call to be asked");
    const result = await client.callTool({ name: 'asks__sample', arguments: { prompt: 'mine?' } });
    expect(JSON.parse(text(result)).error.data).toEqual({ reason: 'no_host_model' });
    expect(asked).toEqual([]);
    release();
    expect((await own).details.is_error).toBe(false);
  });
});

describe('a request that rides the call it belongs to: two clients at once, each asked its own', () => {
  it.each([
    ['/mcp', 'http2025__test_sampling', 'LLM response: '],
    ['/mcp/servers/http2025', 'test_sampling', 'LLM response: '],
    // A 2026-era server's input_required round is answered inside the call, whatever the transport.
    ['/mcp', 'modern__sample', ''],
    ['/mcp/servers/modern', 'sample', ''],
  ])('%s %s: each client is asked only its own call\'s request', async (path, tool, prefix) => {
    const arrived: string[] = [];
    const make = (who: string) =>
      v2(path, {
        async sample(params) {
          arrived.push(`${who}: ${promptOf(params)}`);
          // Both requests are out before either is answered: the calls overlap.
          await until(() => arrived.length === 2, 'both clients to be asked');
          return reply(`${who} answers ${promptOf(params)}`);
        },
      });
    const [alice, bob] = await Promise.all([make('alice'), make('bob')]);
    const [fromAlice, fromBob] = await Promise.all([
      alice.callTool({ name: tool, arguments: { prompt: 'prompt of alice' } }),
      bob.callTool({ name: tool, arguments: { prompt: 'prompt of bob' } }),
    ]);
    expect(arrived.sort()).toEqual(['alice: prompt of alice', 'bob: prompt of bob']);
    expect(text(fromAlice)).toBe(`${prefix}alice answers prompt of alice`);
    expect(text(fromBob)).toBe(`${prefix}bob answers prompt of bob`);
  });

  it('a 2026-era backend: its input_required round is answered by the calling client', async () => {
    const client = await v2('/mcp', { sample: (params) => reply(`sampled ${promptOf(params)}`), elicit: { username: 'ada', email: 'ada@example.com' } });
    expect(text(await client.callTool({ name: 'http2026__test_sampling', arguments: { prompt: 'modern?' } }))).toBe('LLM response: sampled modern?');
    expect(text(await client.callTool({ name: 'http2026__test_elicitation', arguments: { message: 'who?' } }))).toBe(
      'User response: action=accept, content={"username":"ada","email":"ada@example.com"}',
    );
  });
});

describe('resources/subscribe through /mcp/servers/:name', () => {
  it('each subscribed client is told of an update; the server stays subscribed until the last one lets go', async () => {
    const uri = 'test://watched-resource';
    const updates = { alice: [] as string[], bob: [] as string[] };
    const make = async (who: 'alice' | 'bob') => {
      const client = await v2('/mcp/servers/http2025');
      client.setNotificationHandler('notifications/resources/updated', (notification) => void updates[who].push(notification.params.uri));
      return client;
    };
    const [alice, bob] = await Promise.all([make('alice'), make('bob')]);
    const touch = async () => JSON.parse(text(await alice.callTool({ name: 'touch_subscribed', arguments: {} }))) as string[];

    await alice.subscribeResource({ uri });
    expect(await touch()).toEqual([uri]);
    await until(() => updates.alice.length === 1, 'alice to be told');
    await bob.subscribeResource({ uri });
    await alice.unsubscribeResource({ uri });
    // Bob still holds it: the server is still subscribed, and only Bob is told.
    expect(await touch()).toEqual([uri]);
    await until(() => updates.bob.length === 1, 'bob to be told');
    expect(updates.alice).toEqual([uri]);
    // The last holder ends its session (DELETE): the server is unsubscribed.
    await (bob.transport as StreamableHTTPClientTransport).terminateSession();
    await bob.close();
    await until(async () => (await touch()).length === 0, 'the server to be unsubscribed');
    expect(updates.alice).toEqual([uri]);
  });
});
