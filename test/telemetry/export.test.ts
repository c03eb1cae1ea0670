// The worker's OpenTelemetry export: a real `mcp-fleet serve` with OTEL_*
// set exports OTLP/HTTP to a local receiver; a tool call made through the
// HTTP API arrives as spans whose trace id is the one the MCP server saw in
// the request's `_meta`, and the server's life arrives as a span tree when the
// worker stops. Without OTEL_* nothing is set up.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { requestedExporters, startTelemetryExport } from '../../src/cli/telemetry.js';
import { fixtureCommand } from '../fixtures/index.js';
// @ts-expect-error a plain .mjs fixture without types
import { startOtlpReceiver } from '../fixtures/otlp-receiver.mjs';
import { until } from '../support/wait.js';
import { cleanEnv } from '../support/env.js';
import { BIN } from '../support/cli.js';


interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Array<{ key: string; value: Record<string, unknown> }>;
  events?: Array<{ name: string; attributes: Array<{ key: string; value: Record<string, unknown> }> }>;
  resource: { attributes: Array<{ key: string; value: Record<string, unknown> }> };
}

/** The value of OTLP/JSON attribute `key`. */
function attr(list: OtlpSpan['attributes'] | undefined, key: string): unknown {
  const value = list?.find((entry) => entry.key === key)?.value;
  return value === undefined ? undefined : Object.values(value)[0];
}

/** OTLP/JSON ids are hex in the JS exporter's JSON encoding. */
function hex(id: string): string {
  return /^[0-9a-f]+$/.test(id) ? id : Buffer.from(id, 'base64').toString('hex');
}

const children: ChildProcess[] = [];
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

describe('mcp-fleet serve with OTEL_* set', () => {
  it('exports the span tree of a tool call made through the HTTP API, its trace id the one the server saw', { timeout: 90_000 }, async () => {
    const receiver = await startOtlpReceiver();
    cleanups.push(() => receiver.close());
    const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-otel-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const metaFile = join(dir, 'meta.jsonl');
    writeFileSync(
      join(dir, 'mcp_servers.json'),
      JSON.stringify({ servers: { rec: { type: 'local', command: fixtureCommand('trace-recorder'), env: { FIXTURE_META_FILE: metaFile } } } }),
    );
    const child = spawn(process.execPath, [BIN, 'serve', '--state-dir', dir, '--port', '0'], {
      env: cleanEnv({
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_SERVICE_NAME: 'fleet-under-test',
        OTEL_BSP_SCHEDULE_DELAY: '100',
        OTEL_METRIC_EXPORT_INTERVAL: '500',
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk) => (stdout += chunk));
    child.stderr!.on('data', (chunk) => (stderr += chunk));
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    await until(() => /servers ready/.test(stdout), `the startup summary (stdout: ${stdout}, stderr: ${stderr})`);
    expect(stdout).toContain('telemetry  exporting traces (otlp http/json), metrics (otlp http/json)');

    const info = JSON.parse(readFileSync(join(dir, 'worker.json'), 'utf8')) as { url: string };
    const token = readFileSync(join(dir, 'api_token'), 'utf8').trim();
    const response = await fetch(new URL('api/mcp/tools/rec__traced/call', info.url), {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ arguments: { note: 'through the API' } }),
    });
    expect(response.status).toBe(200);

    await until(() => receiver.spans().some((span: OtlpSpan) => span.name === 'tools/call traced'), 'the call span at the receiver');
    const call = receiver.spans().find((span: OtlpSpan) => span.name === 'tools/call traced') as OtlpSpan;
    const [seen] = readFileSync(metaFile, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { traceparent: string });
    const [, traceId, spanId] = seen!.traceparent.split('-');
    expect(hex(call.traceId)).toBe(traceId);
    expect(hex(call.spanId)).toBe(spanId);
    expect(call.kind).toBe(3); // SPAN_KIND_CLIENT
    expect(attr(call.attributes, 'gen_ai.tool.name')).toBe('traced');
    expect(attr(call.attributes, 'mcp.method.name')).toBe('tools/call');
    expect(attr(call.resource.attributes, 'service.name')).toBe('fleet-under-test');
    await until(() => receiver.metricNames().includes('mcp.client.operation.duration'), 'the call duration metric');

    // Stopping flushes: the server's lifecycle span arrives with its events, and connect hangs under it.
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const spans = receiver.spans() as OtlpSpan[];
    const life = spans.find((span) => span.name === 'server rec');
    expect(life).toBeDefined();
    expect(life!.events?.map((event) => attr(event.attributes, 'mcp_fleet.server.state'))).toEqual(expect.arrayContaining(['pending', 'ready', 'stopped']));
    const connect = spans.find((span) => span.name === 'connect rec');
    expect(connect?.parentSpanId && hex(connect.parentSpanId)).toBe(hex(life!.spanId));
    const children2 = spans.filter((span) => span.parentSpanId && hex(span.parentSpanId) === hex(connect!.spanId)).map((span) => span.name);
    expect(children2).toContain('tools/list');
  });

  it('exports OTLP/HTTP protobuf by default', { timeout: 60_000 }, async () => {
    const receiver = await startOtlpReceiver();
    cleanups.push(() => receiver.close());
    const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-otel-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, 'mcp_servers.json'), JSON.stringify({ servers: { rec: { type: 'local', command: fixtureCommand('trace-recorder') } } }));
    const child = spawn(process.execPath, [BIN, 'serve', '--state-dir', dir, '--port', '0'], {
      env: cleanEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_METRICS_EXPORTER: 'none' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let stdout = '';
    child.stdout!.on('data', (chunk) => (stdout += chunk));
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    await until(() => /servers ready/.test(stdout), 'the startup summary');
    expect(stdout).toContain('telemetry  exporting traces (otlp http/protobuf)\n');
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const traces = receiver.requests.filter((request: { path: string }) => request.path === '/v1/traces');
    expect(traces.length).toBeGreaterThan(0);
    expect(traces[0].contentType).toBe('application/x-protobuf');
    expect(receiver.requests.some((request: { path: string }) => request.path === '/v1/metrics')).toBe(false);
    expect(existsSync(join(dir, 'worker.json'))).toBe(false);
  });
});

describe('which OTEL_* turn export on', () => {
  it('an endpoint or a named exporter does; none, OTEL_SDK_DISABLED or nothing does not', async () => {
    expect(requestedExporters({}, 'traces')).toEqual([]);
    expect(requestedExporters({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }, 'traces')).toEqual(['otlp']);
    expect(requestedExporters({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' }, 'metrics')).toEqual([]);
    expect(requestedExporters({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_TRACES_EXPORTER: 'none' }, 'traces')).toEqual([]);
    expect(requestedExporters({ OTEL_METRICS_EXPORTER: 'console,otlp' }, 'metrics')).toEqual(['console', 'otlp']);
    expect(requestedExporters({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_SDK_DISABLED: 'true' }, 'traces')).toEqual([]);
    expect(await startTelemetryExport({})).toBeNull();
  });
});
