// A backend's requests to its client (sampling, elicitation, roots) reach a
// 2026-era gateway client as `input_required` rounds of its call, through
// `/mcp` and `/mcp/servers/:name`, with the SDK v2 client in 2026 mode (it
// answers the rounds with its own handlers) against real backends: a 2025
// stdio server (client-requests fixture: the request pends on the live call),
// a 2026 stdio server (modern fixture: its own input_required rounds), and a
// per_user server in both eras. The requestState is refused to another
// principal, forged, expired or on another worker; a client without the
// capability is not asked.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Client, ProtocolError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createManagementApp } from '../../src/http/app.js';
import { listen, type Listening } from '../../src/http/bind.js';
import type { Gateway } from '../../src/gateway/index.js';
import { startFleet, untilState, type Fleet } from '../http/fleet.js';
import { TOKEN } from '../http/helpers.js';
import { fixtureCommand } from '../fixtures/index.js';
import { until } from '../support/wait.js';
import { answerWith, declared, promptOf, reply, text, type Handlers } from './client-answers.js';

let fleet: Fleet;
const keys: Record<string, string> = {};
const open: Array<{ close(): Promise<void> }> = [];
/** Two more workers on the fleet's host: each its own gateway, its own held calls and key; tight bounds. */
const workers: Array<Listening & { gateway: Gateway }> = [];
const TTL_MS = 1500;

beforeAll(async () => {
  fleet = await startFleet(
    () => ({
      asks: { type: 'local', command: fixtureCommand('client-requests'), timeout_seconds: 15 },
      modern: { type: 'local', command: fixtureCommand('modern'), protocol: '2026', timeout_seconds: 15 },
      mine: { type: 'local', command: fixtureCommand('client-requests'), scope: 'per_user', timeout_seconds: 15 },
    }),
    {},
    // Host roots: the worker declares roots to its servers, so a 2026 backend may ask for them at all.
    { samplingForCallers: true, roots: [{ uri: 'file:///host/root', name: 'the host' }] },
  );
  await Promise.all(['asks', 'modern'].map((name) => untilState(fleet, name, 'ready')));
  for (const name of ['alice', 'bob']) {
    const reply = await fleet.request('/api/mcp/users', { method: 'POST', body: { name } });
    expect(reply.status).toBe(201);
    keys[name] = reply.json.key;
  }
  for (let n = 0; n < 2; n += 1) {
    const app = createManagementApp(fleet.host, { token: TOKEN, gatewayRounds: { ttlMs: TTL_MS, maxPerPrincipal: 1 } });
    workers.push({ ...(await listen(app, { port: 0 })), gateway: app.locals.gateway as Gateway });
  }
}, 60_000);
afterEach(async () => {
  await Promise.all(open.splice(0).map((client) => client.close().catch(() => {})));
});
afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.close()));
  await fleet?.close();
});

/** A 2026-era v2 client of `path` (on `base`, as `key`) that declares and answers what `handlers` give; `manual`: it does not answer rounds itself. */
async function v2(path: string, handlers: Handlers = {}, options: { key?: string; base?: string; era?: 'modern' | 'legacy'; manual?: boolean } = {}): Promise<Client> {
  const client = new Client(
    { name: 'rounds-test', version: '1.0.0' },
    {
      versionNegotiation: { mode: options.era === 'legacy' ? 'legacy' : { pin: '2026-07-28' } },
      capabilities: declared(handlers),
      ...(options.manual && { inputRequired: { autoFulfill: false } }),
    },
  );
  answerWith(client, handlers);
  const transport = new StreamableHTTPClientTransport(new URL(path, options.base ?? fleet.served.url), {
    requestInit: { headers: { authorization: `Bearer ${options.key ?? TOKEN}` } },
  });
  await client.connect(transport);
  open.push({ close: () => (options.era === 'legacy' ? transport.terminateSession().finally(() => client.close()) : client.close()) });
  return client;
}


describe('a 2026-era client is asked in input_required rounds', () => {
  it.each([
    ['/mcp', 'asks__sample', (out: string) => JSON.parse(out).result.content.text],
    ['/mcp/servers/asks', 'sample', (out: string) => JSON.parse(out).result.content.text],
    ['/mcp', 'modern__sample', (out: string) => out],
    ['/mcp/servers/modern', 'sample', (out: string) => out],
  ])('%s %s: sampling reaches the calling client, its answer the backend', async (path, tool, answerOf) => {
    const asked: string[] = [];
    const client = await v2(path, { sample: (params) => (asked.push(promptOf(params)), reply(`sampled: ${promptOf(params)}`)) });
    const result = await client.callTool({ name: tool, arguments: { prompt: `what via ${path}?` } });
    expect(result.isError).not.toBe(true);
    expect(asked).toEqual([`what via ${path}?`]);
    expect(answerOf(text(result))).toBe(`sampled: what via ${path}?`);
  });

  it('elicitation and roots, from a 2025 backend and a 2026 one', async () => {
    const client = await v2('/mcp', { elicit: { name: 'Ada' }, roots: ['file:///client/work'] });
    expect(JSON.parse(text(await client.callTool({ name: 'asks__elicit', arguments: { timeoutMs: 10_000 } })))).toEqual({ result: { action: 'accept', content: { name: 'Ada' } } });
    expect(JSON.parse(text(await client.callTool({ name: 'asks__list_roots', arguments: {} })))).toEqual({ roots: [{ uri: 'file:///client/work' }] });
    expect(text(await client.callTool({ name: 'modern__list_roots', arguments: {} }))).toBe('file:///client/work');
    expect(text(await client.callTool({ name: 'modern__ask', arguments: { message: 'who?' } }))).toBe('hello Ada');
  });

  it.each([
    ['/mcp', 'asks__elicit'],
    ['/mcp/servers/asks', 'elicit'],
  ])('%s %s: progress reaches the client in every round, on the request open for the call', async (path, tool) => {
    const client = await v2(path, { elicit: { name: 'Ada' } });
    const told: string[] = [];
    const result = await client.callTool({ name: tool, arguments: { timeoutMs: 10_000 } }, { onprogress: (progress) => void told.push(`${progress.progress}/${progress.total} ${progress.message}`) });
    expect(JSON.parse(text(result))).toEqual({ result: { action: 'accept', content: { name: 'Ada' } } });
    // "answered" is sent in the second round: on the retry's request, not the first one's ended stream.
    // (The SDK client tells its own progress between rounds too: "Fulfilling input required…".)
    expect(told.filter((line) => !line.includes('Fulfilling input required'))).toEqual(['1/2 asking', '2/2 answered']);
  });

  it('a 2026 backend that takes two rounds: its requestState comes back to it intact', async () => {
    const client = await v2('/mcp/servers/modern', { elicit: { name: 'Grace' } });
    expect(text(await client.callTool({ name: 'two_step', arguments: {} }))).toBe('state intact, hello Grace');
  });

  it.each(['/mcp', '/mcp/servers/asks'])('%s: a resource read and a prompt rendered are asked too', async (path) => {
    const client = await v2(path, { elicit: { name: 'Lin' }, sample: (params) => reply(`about ${promptOf(params)}`) });
    // The per_user `mine` offers the same URI: through `/mcp` the shared one reads under its clash URI.
    const uri = path === '/mcp' ? `mcp-fleet://asks/${encodeURIComponent('asks://name')}` : 'asks://name';
    const read = await client.readResource({ uri });
    expect(read.contents).toEqual([{ uri, mimeType: 'text/plain', text: 'named Lin' }]);
    const prompt = await client.getPrompt({ name: path === '/mcp' ? 'asks:sampled' : 'sampled', arguments: { topic: 'tea' } });
    expect(prompt.messages).toEqual([{ role: 'user', content: { type: 'text', text: 'prompt: about tea' } }]);
  });

  it('a client that did not declare sampling is not asked: the host answers (here: it has no model)', async () => {
    const client = await v2('/mcp', { elicit: { name: 'unused' } });
    const result = await client.callTool({ name: 'asks__sample', arguments: { prompt: 'anyone?' } });
    expect(result.isError).toBe(true);
    expect(JSON.parse(text(result)).error.data).toEqual({ reason: 'no_host_model' });
  });
});

describe("a per_user server: its backend's requests reach the calling client", () => {
  it.each([
    ['/mcp', 'mine__sample', 'modern'],
    ['/mcp', 'mine__sample', 'legacy'],
    ['/mcp/servers/mine', 'sample', 'modern'],
    ['/mcp/servers/mine', 'sample', 'legacy'],
  ] as const)('%s %s, %s era', async (path, tool, era) => {
    const client = await v2(path, { sample: (params) => reply(`alice samples ${promptOf(params)}`) }, { key: keys.alice!, era });
    const result = await client.callTool({ name: tool, arguments: { prompt: era } });
    expect(JSON.parse(text(result)).result.content.text).toBe(`alice samples ${era}`);
  });

  it('its resource read through /mcp is asked as well', async () => {
    const client = await v2('/mcp', { elicit: { name: 'Alice' } }, { key: keys.alice! });
    const uris = (await client.listResources()).resources.map((resource) => resource.uri);
    // The shared `asks` offers the same URI: the per_user one reads under its clash URI.
    const uri = uris.find((candidate) => candidate.startsWith('mcp-fleet://mine/'))!;
    expect((await client.readResource({ uri })).contents[0]).toMatchObject({ text: 'named Alice' });
  });

  it('a client that did not declare sampling is not asked: refused, as the session has nobody else to ask', async () => {
    const client = await v2('/mcp/servers/mine', { elicit: { name: 'unused' } }, { key: keys.bob! });
    const result = await client.callTool({ name: 'sample', arguments: { prompt: 'anyone?' } });
    expect(result.isError).toBe(true);
    expect(JSON.parse(text(result)).error.data).toEqual({ reason: 'no_caller' });
  });

  it("a call the host makes (not a gateway client's) is refused as a client without the capability would", async () => {
    const result = await fleet.host.callTool('mine__sample', { prompt: 'host?' }, { principal: { id: 'alice', groups: [] } });
    expect(result.details.is_error).toBe(true);
    expect(JSON.parse(result.content.map((part) => ('text' in part ? part.text : '')).join('')).error.data).toEqual({ reason: 'no_caller' });
  });
});

/** One call's first round by hand: the input_required result, its requestState and requests. */
async function firstRound(client: Client, tool = 'asks__sample', args: Record<string, unknown> = { prompt: 'by hand' }) {
  const round = (await client.request({ method: 'tools/call', params: { name: tool, arguments: args } }, { allowInputRequired: true })) as unknown as {
    resultType?: string;
    requestState: string;
    inputRequests: Record<string, { method: string }>;
  };
  expect(round.resultType).toBe('input_required');
  return round;
}

async function retry(client: Client, requestState: string, inputResponses: Record<string, unknown>, tool = 'asks__sample', args: Record<string, unknown> = { prompt: 'by hand' }) {
  return client.request({ method: 'tools/call', params: { name: tool, arguments: args, requestState, inputResponses } as never }, { allowInputRequired: true });
}

const refusal = async (promise: Promise<unknown>) => {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ProtocolError);
  return error as ProtocolError;
};

describe('the requestState', () => {
  it('answers the call it names, for its principal only; a forged one is refused', async () => {
    const alice = await v2('/mcp', { sample: () => reply('unused') }, { key: keys.alice!, manual: true });
    const bob = await v2('/mcp', { sample: () => reply('unused') }, { key: keys.bob!, manual: true });
    const round = await firstRound(alice);
    const [key] = Object.keys(round.inputRequests);
    expect(round.inputRequests[key!]!.method).toBe('sampling/createMessage');

    const stolen = await refusal(retry(bob, round.requestState, { [key!]: reply('bob answers') }));
    expect(stolen.message).toContain("another caller's call");
    const [version, body, mac] = round.requestState.split('.');
    const forged = `${version}.${body}.${mac!.slice(0, -4)}AAAA`;
    expect((await refusal(retry(alice, forged, { [key!]: reply('forged') }))).message).toContain('not issued by this gateway');

    // Still Alice's, still held: her own retry answers it, and it is one call.
    const done = (await retry(alice, round.requestState, { [key!]: reply('alice answers') })) as { content: unknown };
    expect(JSON.parse(text(done)).result.content.text).toBe('alice answers');
    expect((await refusal(retry(alice, round.requestState, { [key!]: reply('again') }))).message).toContain('is over');
  });

  it('a round that reaches another worker is refused, saying why', async () => {
    const [one, other] = workers;
    const first = await v2('/mcp', { sample: () => reply('unused') }, { key: keys.alice!, base: one!.url, manual: true });
    const second = await v2('/mcp', { sample: () => reply('unused') }, { key: keys.alice!, base: other!.url, manual: true });
    const round = await firstRound(first);
    const key = Object.keys(round.inputRequests)[0]!;
    const error = await refusal(retry(second, round.requestState, { [key]: reply('elsewhere') }));
    expect(error.message).toContain('held by another worker');
    expect(error.data).toEqual({ reason: 'other_worker' });
    // Where it began, the round is answered.
    expect(JSON.parse(text((await retry(first, round.requestState, { [key]: reply('at home') })) as { content: unknown })).result.content.text).toBe('at home');
    expect(one!.gateway.rounds.count()).toBe(0);
  });

  it('a call not answered within the TTL is cancelled; over the cap the host answers instead of holding', async () => {
    const [one] = workers;
    const called: Array<{ tool: string; outcome: string }> = [];
    const stop = fleet.host.subscribe((event) => {
      if (event.type === 'tool.called' && event.principal === 'alice') called.push({ tool: event.tool, outcome: event.outcome });
    });
    const client = await v2('/mcp', { sample: () => reply('unused') }, { key: keys.alice!, base: one!.url, manual: true });
    const round = await firstRound(client);
    expect(one!.gateway.rounds.count('alice')).toBe(1);
    // Alice's one held call is the cap: her second call is not held, the host answers its backend.
    const second = (await client.callTool({ name: 'asks__sample', arguments: { prompt: 'second' } })) as { content: unknown; isError?: boolean };
    expect(JSON.parse(text(second)).error.data).toEqual({ reason: 'no_host_model' });
    await until(() => one!.gateway.rounds.count('alice') === 0, 'the held call to expire', TTL_MS * 4);
    // The held call ends with it, once, recorded as cancelled; the second answered with the host's error.
    await until(() => called.length === 2, 'the expired call to be recorded');
    stop();
    expect(called).toEqual([
      { tool: 'asks__sample', outcome: 'error' },
      { tool: 'asks__sample', outcome: 'cancelled' },
    ]);
    expect((await refusal(retry(client, round.requestState, { [Object.keys(round.inputRequests)[0]!]: reply('late') }))).message).toMatch(/expired|is over/);
  });
});
