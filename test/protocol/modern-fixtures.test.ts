// The modern-era fixtures, proven with the raw v2 client (no mcp-fleet code):
// modern.mjs lands on the 2026-07-28 era over stdio and HTTP, its `--legacy`
// policy refuses or serves 2025 clients, input_required reaches the client's
// handlers, the stdio era probe costs one sibling process (none with a prior
// verdict); rate-limited-http.mjs answers 429 once, and what the client sees.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Client,
  ProtocolError,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  StreamableHTTPClientTransport,
  type CallToolResult,
  type ClientOptions,
  type PriorDiscovery,
} from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterEach, describe, expect, it } from 'vitest';
import { fixture, startHttpFixture, type HttpFixture } from '../fixtures/index.js';
import { allGone } from '../support/processes.js';

const clients: Client[] = [];
const servers: HttpFixture[] = [];
const spawnLogs: string[] = [];

afterEach(async () => {
  await Promise.allSettled(clients.splice(0).map((client) => client.close()));
  await Promise.all(servers.splice(0).map((server) => server.stop()));
  // Every stdio process either connect spawned (probe sibling and session child) must be gone.
  const pids = spawnLogs.splice(0).flatMap(spawned);
  if (!(await allGone(pids))) {
    for (const pid of pids) process.kill(pid, 'SIGKILL');
    throw new Error(`stdio fixture processes left running: ${pids.join(', ')}`);
  }
});

/** The pids fixture processes appended to `log` (FIXTURE_SPAWN_LOG), in start order. */
function spawned(log: string): number[] {
  try {
    return readFileSync(log, 'utf8').split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** A v2 client that answers elicitation (with `name`, or declines), sampling and roots. */
function newClient(mode: 'auto' | 'legacy', name?: string, options: ClientOptions = {}): Client {
  const client = new Client(
    { name: 'modern-fixtures-test', version: '1.0.0' },
    { versionNegotiation: { mode }, capabilities: { elicitation: { form: {} }, sampling: {}, roots: {} }, ...options },
  );
  client.setRequestHandler('elicitation/create', async () =>
    name === undefined ? { action: 'decline' } : { action: 'accept', content: { name } });
  client.setRequestHandler('sampling/createMessage', async (request) => {
    const last = request.params.messages.at(-1)?.content;
    const prompt = last && !Array.isArray(last) && last.type === 'text' ? last.text : '?';
    return { model: 'test-model', role: 'assistant', content: { type: 'text', text: `sampled: ${prompt}` } };
  });
  client.setRequestHandler('roots/list', async () => ({ roots: [{ uri: 'file:///one' }, { uri: 'file:///two' }] }));
  clients.push(client);
  return client;
}

/** modern.mjs over stdio with `args`; the returned log lists every process spawned for it. */
function stdioFixture(...args: string[]): { transport: StdioClientTransport; spawnLog: string } {
  const spawnLog = join(mkdtempSync(join(tmpdir(), 'mcp-fleet-modern-')), 'spawned');
  spawnLogs.push(spawnLog);
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [fixture('modern'), ...args],
    env: { PATH: process.env.PATH ?? '', FIXTURE_SPAWN_LOG: spawnLog },
    stderr: 'ignore',
  });
  return { transport, spawnLog };
}

async function httpFixture(name: string, args: string[] = [], env: Record<string, string> = {}): Promise<string> {
  const server = await startHttpFixture(name, args, env);
  servers.push(server);
  return server.url;
}

async function callText(client: Client, name: string, args: Record<string, unknown> = {}, meta?: Record<string, unknown>): Promise<string> {
  const result = (await client.callTool({ name, arguments: args, ...(meta && { _meta: meta }) })) as CallToolResult;
  const first = result.content[0];
  return first?.type === 'text' ? first.text : JSON.stringify(result.content);
}

function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(() => new Error('expected a rejection'), (error: unknown) => error);
}

describe('modern.mjs', () => {
  it('stdio, auto: lands on the modern era; the probe spawns a sibling, a prior verdict spawns nothing extra', async () => {
    const first = stdioFixture();
    const client = newClient('auto');
    await client.connect(first.transport);
    expect(client.getProtocolEra()).toBe('modern');
    expect(await callText(client, 'echo', { text: 'hi' })).toBe('hi');
    expect(await callText(client, 'era')).toBe('modern');
    // Probe sibling + session child; the sibling is reaped once the era is known.
    const [sibling, child] = spawned(first.spawnLog);
    expect(spawned(first.spawnLog)).toHaveLength(2);
    expect(await allGone([sibling!])).toBe(true);
    expect(child).not.toBe(sibling);

    const discover = client.getDiscoverResult();
    expect(discover?.supportedVersions).toContain('2026-07-28');
    const prior: PriorDiscovery = { kind: 'modern', discover: discover! };
    const second = stdioFixture();
    const again = newClient('auto');
    await again.connect(second.transport, { prior });
    expect(again.getProtocolEra()).toBe('modern');
    // connect() adopted the verdict without a round trip: a call proves the child is up.
    expect(await callText(again, 'add', { a: 2, b: 3 })).toBe('5');
    expect(spawned(second.spawnLog)).toHaveLength(1);
  });

  it('HTTP, auto: lands on the modern era', async () => {
    const client = newClient('auto');
    await client.connect(new StreamableHTTPClientTransport(new URL(await httpFixture('modern', ['--http']))));
    expect(client.getProtocolEra()).toBe('modern');
    expect(await callText(client, 'echo', { text: 'over http' })).toBe('over http');
    expect(await callText(client, 'era')).toBe('modern');
  });

  it('--legacy reject (the default) refuses a default-mode (2025) client on stdio and HTTP', async () => {
    const { transport, spawnLog } = stdioFixture();
    const stdioError = await rejection(newClient('legacy').connect(transport));
    // In band on stdio: -32022 UnsupportedProtocolVersion, naming what the server speaks.
    expect(stdioError).toBeInstanceOf(ProtocolError);
    expect(stdioError).toMatchObject({ code: -32022, data: { supported: ['2026-07-28'] } });
    expect(spawned(spawnLog)).toHaveLength(1); // no probe in legacy mode

    const url = await httpFixture('modern', ['--http']);
    const httpError = await rejection(newClient('legacy').connect(new StreamableHTTPClientTransport(new URL(url))));
    // Over HTTP the same JSON-RPC error arrives as an HTTP 400 the legacy client does not unwrap.
    expect(httpError).toBeInstanceOf(SdkHttpError);
    expect(httpError).toMatchObject({ code: SdkErrorCode.ClientHttpNotImplemented, status: 400 });
    expect((httpError as SdkHttpError).data.text).toContain('-32022');
  });

  it('--legacy stateless serves both eras from one factory, on stdio and HTTP', async () => {
    for (const mode of ['auto', 'legacy'] as const) {
      const client = newClient(mode);
      await client.connect(stdioFixture('--legacy', 'stateless').transport);
      const era = mode === 'auto' ? 'modern' : 'legacy';
      expect(client.getProtocolEra()).toBe(era);
      expect(await callText(client, 'era')).toBe(era);
    }
    const url = await httpFixture('modern', ['--http', '--legacy', 'stateless']);
    for (const mode of ['auto', 'legacy'] as const) {
      const client = newClient(mode);
      await client.connect(new StreamableHTTPClientTransport(new URL(url)));
      const era = mode === 'auto' ? 'modern' : 'legacy';
      expect(client.getProtocolEra()).toBe(era);
      expect(await callText(client, 'era')).toBe(era);
      expect(await callText(client, 'echo', { text: mode })).toBe(mode);
    }
  });

  it('ask: input_required on the modern era, elicitInput on a legacy stdio connection, reach the elicitation handler', async () => {
    const overStdio = newClient('auto', 'Ada');
    await overStdio.connect(stdioFixture().transport);
    expect(await callText(overStdio, 'ask', { message: 'Your name?' })).toBe('hello Ada');

    const overHttp = newClient('auto', 'Grace');
    await overHttp.connect(new StreamableHTTPClientTransport(new URL(await httpFixture('modern', ['--http']))));
    expect(await callText(overHttp, 'ask', { message: 'Your name?' })).toBe('hello Grace');

    const declining = newClient('auto');
    await declining.connect(stdioFixture().transport);
    expect(await callText(declining, 'ask', { message: 'Your name?' })).toBe('declined');

    const legacy = newClient('legacy', 'Linus');
    await legacy.connect(stdioFixture('--legacy', 'stateless').transport);
    expect(legacy.getProtocolEra()).toBe('legacy');
    expect(await callText(legacy, 'ask', { message: 'Your name?' })).toBe('hello Linus');
  });

  it('modern HTTP: sampling, roots, progress, _meta and logLevel, the resource and the prompt', async () => {
    const client = newClient('auto');
    await client.connect(new StreamableHTTPClientTransport(new URL(await httpFixture('modern', ['--http']))));
    expect(await callText(client, 'sample', { prompt: 'a haiku' })).toBe('sampled: a haiku');
    expect(await callText(client, 'list_roots')).toBe('file:///one\nfile:///two');

    const progress: number[] = [];
    await client.callTool({ name: 'slow', arguments: { ms: 30, steps: 3 } }, { onprogress: (update) => progress.push(update.progress) });
    expect(progress).toEqual([1, 2, 3]);

    const seen = JSON.parse(await callText(client, 'whoami', {}, { 'io.modelcontextprotocol/logLevel': 'debug', 'x-test/trace': 'abc' }));
    expect(seen.envelope).toMatchObject({
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'modern-fixtures-test' },
      'io.modelcontextprotocol/logLevel': 'debug',
    });
    expect(seen.meta).toEqual({ 'x-test/trace': 'abc' });
    expect(seen.headers).toMatchObject({ 'mcp-method': 'tools/call', 'mcp-name': 'whoami', 'mcp-protocol-version': '2026-07-28' });

    const resource = await client.readResource({ uri: 'fixture://hello' });
    expect(resource.contents[0]).toMatchObject({ uri: 'fixture://hello', text: 'hello from the modern fixture' });
    const prompt = await client.getPrompt({ name: 'greet', arguments: { name: 'Ada' } });
    expect(prompt.messages[0]?.content).toEqual({ type: 'text', text: 'Say hello to Ada.' });
  });
});

describe('rate-limited-http.mjs', () => {
  const log = () => join(mkdtempSync(join(tmpdir(), 'mcp-fleet-rate-')), 'calls.jsonl');
  const calls = (file: string) =>
    readFileSync(file, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as { tool: string; at: number; status: number });

  for (const mode of ['auto', 'legacy'] as const) {
    it(`${mode}: the first call is refused 429 as an SdkHttpError without Retry-After; the retry succeeds`, async () => {
      const file = log();
      const url = await httpFixture('rate-limited-http', ['--retry-after', '7'], { FIXTURE_CALL_LOG: file });
      // Retry-After is only reachable below the client: through the transport's fetch.
      const retryAfter: Array<string | null> = [];
      const transport = new StreamableHTTPClientTransport(new URL(url), {
        fetch: async (input, init) => {
          const response = await fetch(input, init);
          if (response.status === 429) retryAfter.push(response.headers.get('retry-after'));
          return response;
        },
      });
      const client = newClient(mode);
      await client.connect(transport);

      const error = await rejection(client.callTool({ name: 'read_thing', arguments: {} }));
      expect(error).toBeInstanceOf(SdkHttpError);
      expect(error).toBeInstanceOf(SdkError);
      expect(error).toMatchObject({
        name: 'SdkHttpError',
        code: SdkErrorCode.ClientHttpNotImplemented,
        status: 429,
        data: { status: 429, statusText: 'Too Many Requests', text: 'Too Many Requests' },
      });
      expect(Object.keys((error as SdkHttpError).data).sort()).toEqual(['status', 'statusText', 'text']);
      expect((error as Error).cause).toBeUndefined();
      expect(retryAfter).toEqual(['7']);

      expect(await callText(client, 'read_thing')).toBe('value of thing');
      expect(calls(file).map(({ tool, status }) => [tool, status])).toEqual([['read_thing', 429], ['read_thing', 200]]);
    });
  }

  it('--limit-after 1: one call passes, the next is refused once, then calls pass; annotations as declared', async () => {
    const file = log();
    const client = newClient('auto');
    await client.connect(new StreamableHTTPClientTransport(new URL(
      await httpFixture('rate-limited-http', ['--limit-after', '1'], { FIXTURE_CALL_LOG: file }))));
    const { tools } = await client.listTools();
    expect(Object.fromEntries(tools.map((tool) => [tool.name, tool.annotations?.readOnlyHint]))).toEqual({
      read_thing: true, write_thing: undefined, soft_limited: undefined,
    });

    expect(await callText(client, 'write_thing', { key: 'k', value: 'v' })).toBe('wrote k');
    expect(await rejection(client.callTool({ name: 'write_thing', arguments: {} }))).toMatchObject({ status: 429 });
    expect(await callText(client, 'write_thing')).toBe('wrote thing');
    expect(calls(file).map(({ status }) => status)).toEqual([200, 429, 200]);
  });

  it('soft_limited: an isError result carrying retryAfterSeconds until that time has passed', async () => {
    const client = newClient('auto');
    await client.connect(new StreamableHTTPClientTransport(new URL(await httpFixture('rate-limited-http', ['--retry-after', '2']))));
    const limited = (await client.callTool({ name: 'soft_limited', arguments: {} })) as CallToolResult;
    // The server opened its window before this moment, so the window ends before answered + 2 s.
    const answered = Date.now();
    expect(limited).toMatchObject({
      isError: true,
      structuredContent: { retryAfterSeconds: 2 },
      content: [{ type: 'text', text: 'rate limited, retry after 2 seconds' }],
    });
    expect((await client.callTool({ name: 'soft_limited', arguments: {} })).isError).toBe(true);
    // Waiting out the server's own retry-after is the behaviour under test, not a guess at an event.
    await new Promise((resolve) => setTimeout(resolve, answered + 2_000 + 20 - Date.now()));
    expect(await callText(client, 'soft_limited')).toBe('ok');
  });
});
