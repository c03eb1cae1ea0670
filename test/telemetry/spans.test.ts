// Spans and metrics of a real host with real fixture servers, recorded by an
// in-memory OpenTelemetry SDK registered for this file: the span tree of a
// server's life (lifecycle → connect → initialize / tools/list, catalog
// re-syncs), tool calls as children of the caller's span with their context
// sent in `_meta`, resource reads, prompt renders, and the metrics.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { afterAll, afterEach, describe, expect, test } from 'vitest';
import { createMcpHost, type McpHost } from '../../src/host.js';
import { fixtureCommand } from '../fixtures/index.js';
import { stateDirWith, untilState } from '../host/helpers.js';
import { onlySpan, parentOf, registerTestSdk } from './sdk.js';

const sdk = registerTestSdk();
let host: McpHost | undefined;

afterEach(async () => {
  await host?.shutdown();
  host = undefined;
  sdk.reset();
});
afterAll(() => sdk.shutdown());

async function startHost(servers: Record<string, unknown>): Promise<{ host: McpHost; dir: string }> {
  const dir = stateDirWith(servers);
  host = createMcpHost({ stateDir: dir });
  await host.start();
  return { host, dir };
}

async function until(predicate: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Asserts that the span named `spanName` ended as cancelled (status unset, no
 * `error.type`) and so did its one duration point (the one `ofIt` picks);
 * hands back the metrics for more checks.
 */
async function expectEndedAsCancelled(spanName: string, ofIt: (attributes: Record<string, unknown>) => boolean) {
  const span = onlySpan(sdk.spans(), spanName);
  expect(span.status.code).toBe(SpanStatusCode.UNSET);
  expect(span.attributes).not.toHaveProperty('error.type');
  expect(span.attributes['mcp_fleet.outcome']).toBe('cancelled');
  const data = await sdk.metrics();
  const points = (data.find((metric) => metric.descriptor.name === 'mcp.client.operation.duration')?.dataPoints ?? []).filter((point) =>
    ofIt(point.attributes),
  );
  expect(points.map((point) => point.attributes)).toEqual([expect.objectContaining({ 'mcp_fleet.outcome': 'cancelled' })]);
  expect(points[0]!.attributes).not.toHaveProperty('error.type');
  return data;
}

describe('connecting', () => {
  test('the life of a server is one span tree: lifecycle → connect → initialize and tools/list; transitions are events', async () => {
    const { host: running } = await startHost({ alpha: { type: 'local', command: fixtureCommand('healthy') } });
    await untilState(running, 'alpha', 'ready');
    await running.shutdown();
    host = undefined;
    const spans = sdk.spans();

    const life = onlySpan(spans, 'server alpha');
    expect(life.kind).toBe(SpanKind.INTERNAL);
    expect(parentOf(life)).toBeUndefined();
    expect(life.attributes).toMatchObject({ 'mcp_fleet.server.name': 'alpha', 'mcp_fleet.server.state': 'stopped' });
    const transitions = life.events.filter((event) => event.name === 'mcp_fleet.server.transition').map((event) => event.attributes);
    expect(transitions[0]).toEqual({ 'mcp_fleet.server.state': 'pending' });
    expect(transitions).toContainEqual({ 'mcp_fleet.server.state': 'ready', 'mcp_fleet.server.state.from': 'pending' });
    expect(transitions.at(-1)).toMatchObject({ 'mcp_fleet.server.state': 'stopped' });

    const connect = onlySpan(spans, 'connect alpha');
    expect(parentOf(connect)).toBe(life.spanContext().spanId);
    expect(connect.spanContext().traceId).toBe(life.spanContext().traceId);
    expect(connect.attributes).toMatchObject({
      'mcp_fleet.server.name': 'alpha',
      'network.transport': 'pipe',
      'mcp.protocol.version': expect.any(String),
      'process.pid': expect.any(Number),
      'mcp_fleet.tools.count': expect.any(Number),
    });

    const handshake = spans.find((span) => span.name === 'initialize' || span.name === 'server/discover');
    expect(handshake).toBeDefined();
    expect(handshake!.kind).toBe(SpanKind.CLIENT);
    expect(parentOf(handshake!)).toBe(connect.spanContext().spanId);
    expect(handshake!.attributes).toMatchObject({ 'mcp.method.name': handshake!.name, 'network.transport': 'pipe' });

    const listing = onlySpan(spans, 'tools/list');
    expect(listing.kind).toBe(SpanKind.CLIENT);
    expect(parentOf(listing)).toBe(connect.spanContext().spanId);
    expect(listing.attributes).toMatchObject({ 'mcp.method.name': 'tools/list', 'mcp_fleet.server.name': 'alpha' });
  });

  test('a server that cannot start ends its connect span with error.type', async () => {
    const { host: running } = await startHost({
      broken: { type: 'local', command: fixtureCommand('crash-on-start'), reconnect: { max_attempts: 0 } },
    });
    await untilState(running, 'broken', 'error');
    const connect = sdk.spans().find((span) => span.name === 'connect broken');
    expect(connect?.status.code).toBe(SpanStatusCode.ERROR);
    expect(connect?.attributes['error.type']).toBe('spawn_failed');
    // Its handshake's span too says a kind, not the SDK's class: the connection closed under it.
    const handshake = sdk.spans().find((span) => span.name === 'initialize' && span.attributes['mcp_fleet.server.name'] === 'broken');
    expect(handshake?.attributes['error.type']).toBe('transport_closed');
    const life = running.server('broken');
    expect(life?.state).toBe('error');
  });

  test('a remote server nobody answers at: error.type unreachable on its connect span and its transition', async () => {
    const { host: running } = await startHost({
      gone: { type: 'remote', url: 'http://no-such-host.invalid/mcp', reconnect: { max_attempts: 0 } },
    });
    await untilState(running, 'gone', 'error');
    const connect = sdk.spans().find((span) => span.name === 'connect gone');
    expect(connect?.status.code).toBe(SpanStatusCode.ERROR);
    expect(connect?.attributes['error.type']).toBe('unreachable');
    await running.shutdown();
    host = undefined;
    const transitions = onlySpan(sdk.spans(), 'server gone').events.map((event) => event.attributes);
    expect(transitions).toContainEqual(expect.objectContaining({ 'mcp_fleet.server.state': 'error', 'error.type': 'unreachable' }));
  });
});

describe('tool calls', () => {
  test('a call is a CLIENT span under the active span of the caller, and the server gets its context in _meta', async () => {
    const dir = stateDirWith({});
    const metaFile = join(dir, 'meta.jsonl');
    const { host: running } = await startHost({
      rec: { type: 'local', command: fixtureCommand('trace-recorder'), env: { FIXTURE_META_FILE: metaFile } },
    });
    await untilState(running, 'rec', 'ready');

    const agent = trace.getTracer('test-agent');
    const turn = await agent.startActiveSpan('agent turn', async (span) => {
      await running.callTool('rec__traced', { note: 'hi' });
      span.end();
      return span;
    });

    const call = onlySpan(sdk.spans(), 'tools/call traced');
    expect(call.kind).toBe(SpanKind.CLIENT);
    expect(parentOf(call)).toBe(turn.spanContext().spanId);
    expect(call.spanContext().traceId).toBe(turn.spanContext().traceId);
    expect(call.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'traced',
      'gen_ai.operation.name': 'execute_tool',
      'network.transport': 'pipe',
      'mcp_fleet.server.name': 'rec',
      'mcp.protocol.version': expect.any(String),
    });
    expect(call.attributes).not.toHaveProperty('error.type');
    expect(call.status.code).toBe(SpanStatusCode.UNSET);

    const seen = readFileSync(metaFile, 'utf8').trim().split('\n').map((line) => JSON.parse(line));
    const { traceId, spanId } = call.spanContext();
    expect(seen).toEqual([{ traceparent: `00-${traceId}-${spanId}-01`, tracestate: null }]);
  });

  test('without an active span the call is a root span, still sent in _meta', async () => {
    const dir = stateDirWith({});
    const metaFile = join(dir, 'meta.jsonl');
    const { host: running } = await startHost({
      rec: { type: 'local', command: fixtureCommand('trace-recorder'), env: { FIXTURE_META_FILE: metaFile } },
    });
    await untilState(running, 'rec', 'ready');
    await running.callTool('rec__traced', {});
    const call = onlySpan(sdk.spans(), 'tools/call traced');
    expect(parentOf(call)).toBeUndefined();
    const [seen] = readFileSync(metaFile, 'utf8').trim().split('\n').map((line) => JSON.parse(line));
    expect(seen.traceparent).toBe(`00-${call.spanContext().traceId}-${call.spanContext().spanId}-01`);
  });

  test('an isError result is error.type tool_error; the metrics count it and the in-flight count returns to 0', async () => {
    const { host: running } = await startHost({ rec: { type: 'local', command: fixtureCommand('trace-recorder') } });
    await untilState(running, 'rec', 'ready');
    await running.callTool('rec__fails', {});
    await running.callTool('rec__traced', {});
    const failed = onlySpan(sdk.spans(), 'tools/call fails');
    expect(failed.attributes['error.type']).toBe('tool_error');
    expect(failed.status).toEqual({ code: SpanStatusCode.ERROR, message: 'tool_error' });

    const data = await sdk.metrics();
    const byName = (name: string) => data.find((metric) => metric.descriptor.name === name);
    const duration = byName('mcp.client.operation.duration');
    expect(duration?.descriptor.unit).toBe('s');
    // The handshake's duration is named as its span is (by the era it ended in), with the version it agreed.
    const handshakeSpan = sdk.spans().find((span) => span.name === 'initialize' || span.name === 'server/discover')!;
    const handshakes = (duration?.dataPoints ?? []).filter((point) => point.attributes['mcp.method.name'] === handshakeSpan.name);
    expect(handshakes.length).toBeGreaterThan(0);
    expect(handshakes[0]!.attributes['mcp.protocol.version']).toBe(handshakeSpan.attributes['mcp.protocol.version']);
    expect((duration?.dataPoints ?? []).filter((point) => point.attributes['mcp.method.name'] === (handshakeSpan.name === 'initialize' ? 'server/discover' : 'initialize'))).toEqual([]);
    const calls = (duration?.dataPoints ?? []).filter((point) => point.attributes['mcp.method.name'] === 'tools/call');
    expect(calls.map((point) => [point.attributes['gen_ai.tool.name'], point.attributes['error.type']])).toEqual(
      expect.arrayContaining([
        ['fails', 'tool_error'],
        ['traced', undefined],
      ]),
    );
    const errors = byName('mcp_fleet.tool_calls.errors')!.dataPoints;
    expect(errors).toContainEqual(expect.objectContaining({ value: 1, attributes: expect.objectContaining({ 'error.type': 'tool_error', 'gen_ai.tool.name': 'fails' }) }));
    const inFlight = byName('mcp_fleet.tool_calls.in_flight')!.dataPoints;
    expect(inFlight.length).toBeGreaterThan(0);
    for (const point of inFlight) expect(point.value).toBe(0);
    const servers = byName('mcp_fleet.servers')!.dataPoints;
    expect(servers).toContainEqual(expect.objectContaining({ value: 1, attributes: { 'mcp_fleet.server.state': 'ready' } }));
  });

  test('a call its caller cancelled is not an error: status unset, mcp_fleet.outcome cancelled, not counted in the errors', async () => {
    const dir = stateDirWith({});
    const waitLog = join(dir, 'waiting.log');
    const { host: running } = await startHost({ up: { type: 'local', command: fixtureCommand('healthy'), env: { FIXTURE_WAIT_LOG: waitLog } } });
    await untilState(running, 'up', 'ready');
    const stop = new AbortController();
    const call = running.callTool('up__wait_for_cancel', {}, { signal: stop.signal });
    await until(() => existsSync(waitLog), 'the call to reach the server');
    stop.abort();
    expect((await call).details.is_error).toBe(true);
    await until(() => sdk.spans().some((span) => span.name === 'tools/call wait_for_cancel'), 'the call span to end');

    const data = await expectEndedAsCancelled('tools/call wait_for_cancel', (attributes) => attributes['gen_ai.tool.name'] === 'wait_for_cancel');
    const byName = (name: string) => data.find((metric) => metric.descriptor.name === name);
    const errors = (byName('mcp_fleet.tool_calls.errors')?.dataPoints ?? []).filter((point) => point.attributes['gen_ai.tool.name'] === 'wait_for_cancel');
    expect(errors).toEqual([]);
    for (const point of byName('mcp_fleet.tool_calls.in_flight')!.dataPoints) expect(point.value).toBe(0);
  });
});

describe('resources, prompts and catalog re-syncs', () => {
  test('a prompt render its caller cancelled is not an error: status unset, mcp_fleet.outcome cancelled', async () => {
    const dir = stateDirWith({});
    const waitLog = join(dir, 'waiting.log');
    const { host: running } = await startHost({
      cat: { type: 'local', command: [...fixtureCommand('changing-catalog'), '--hang-prompt'], env: { FIXTURE_WAIT_LOG: waitLog } },
    });
    await untilState(running, 'cat', 'ready');
    await until(() => running.prompts().some((prompt) => prompt.command === '/cat:hang'), 'the prompts to be listed');
    const stop = new AbortController();
    const render = running.renderPrompt('/cat:hang', {}, { signal: stop.signal });
    await until(() => existsSync(waitLog), 'the render to reach the server');
    stop.abort();
    await expect(render).rejects.toMatchObject({ name: 'AbortError' });
    await until(() => sdk.spans().some((span) => span.name === 'prompts/get hang'), 'the render span to end');

    await expectEndedAsCancelled('prompts/get hang', (attributes) => attributes['mcp.method.name'] === 'prompts/get');
  });

  test('a resource read, a prompt render and a re-sync after list_changed are spans under the right parents', async () => {
    const { host: running } = await startHost({ cat: { type: 'local', command: fixtureCommand('changing-catalog') } });
    await untilState(running, 'cat', 'ready');
    await until(() => running.prompts().some((prompt) => prompt.command === '/cat:greet'), 'the prompts to be listed');

    const read = await running.callTool('cat__read_resource', { uri: 'fixture://static' });
    expect(read.details.is_error).toBe(false);
    const readSpan = onlySpan(sdk.spans(), 'resources/read');
    expect(readSpan.kind).toBe(SpanKind.CLIENT);
    expect(readSpan.attributes).toMatchObject({
      'mcp.method.name': 'resources/read',
      'mcp.resource.uri': 'fixture://static',
      'mcp_fleet.server.name': 'cat',
      'network.transport': 'pipe',
    });

    await running.renderPrompt('/cat:greet', { name: 'Ada' });
    const render = onlySpan(sdk.spans(), 'prompts/get greet');
    expect(render.kind).toBe(SpanKind.CLIENT);
    expect(render.attributes).toMatchObject({ 'mcp.method.name': 'prompts/get', 'gen_ai.prompt.name': 'greet' });
    // Prompt arguments are not recorded.
    expect(JSON.stringify(render.attributes)).not.toContain('Ada');

    await running.callTool('cat__add_tool', { name: 'extra' });
    await until(() => running.tools().some((tool) => tool.name === 'cat__extra'), 'the added tool');
    await until(() => sdk.spans().some((span) => span.name === 'catalog.sync tools'), 'the re-sync span');
    const resync = sdk.spans().find((span) => span.name === 'catalog.sync tools' && span.attributes['mcp_fleet.catalog.changed'] === true);
    expect(resync).toBeDefined();
    expect(resync!.attributes).toMatchObject({ 'mcp_fleet.catalog.kind': 'tools', 'mcp_fleet.catalog.trigger': 'list_changed', 'mcp_fleet.server.name': 'cat' });
    const relisting = sdk.spans().find((span) => span.name === 'tools/list' && parentOf(span) === resync!.spanContext().spanId);
    expect(relisting?.kind).toBe(SpanKind.CLIENT);
    // The first listings of resources and prompts, at connect, are syncs too.
    expect(sdk.spans().filter((span) => span.attributes['mcp_fleet.catalog.trigger'] === 'connect').map((span) => span.name).sort()).toEqual([
      'catalog.sync prompts',
      'catalog.sync resources',
    ]);

    const data = await sdk.metrics();
    const syncs = data.find((metric) => metric.descriptor.name === 'mcp_fleet.catalog.sync.duration');
    expect(syncs?.dataPoints).toContainEqual(
      expect.objectContaining({ attributes: expect.objectContaining({ 'mcp_fleet.catalog.kind': 'tools', 'mcp_fleet.catalog.changed': true }) }),
    );

    // The lifecycle span, ended at shutdown, is the parent of the re-sync.
    await running.shutdown();
    host = undefined;
    const life = onlySpan(sdk.spans(), 'server cat');
    expect(parentOf(resync!)).toBe(life.spanContext().spanId);
    const sessions = (await sdk.metrics()).find((metric) => metric.descriptor.name === 'mcp.client.session.duration');
    expect(sessions?.dataPoints).toContainEqual(expect.objectContaining({ attributes: expect.objectContaining({ 'mcp_fleet.server.name': 'cat' }) }));
  });
});
