// Failed exports are heard: a real `mcp-fleet serve` exporting to a closed
// local port, or to a collector answering 500, logs through its logger one
// line per signal and endpoint (not one per failure), then the count it held back when it
// stops; the endpoint is named without its credentials or query, and no header
// value of OTEL_EXPORTER_OTLP_HEADERS is printed anywhere.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  displayEndpoint,
  ExportFailureLog,
  exportSecrets,
  otlpEndpoint,
  unusableEndpointVariables,
  type ExportFailureFields,
} from '../../src/telemetry/export-failures.js';
import { fixtureCommand } from '../fixtures/index.js';
// @ts-expect-error a plain .mjs fixture without types
import { startOtlpReceiver } from '../fixtures/otlp-receiver.mjs';
import { until } from '../support/wait.js';
import { cleanEnv } from '../support/env.js';
import { BIN } from '../support/cli.js';

const HEADER_SECRET = 'hdr-secret-7f3a9c';
const PASSWORD = 'pw-secret-51b2';
const QUERY_SECRET = 'query-secret-e80d';

/** A port nothing listens on: bound once by the OS, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

interface LogLine {
  level: number;
  msg: string;
  endpoint?: string;
  signal?: string;
  reason?: string;
  suppressed?: number;
}

/** The worker's pino lines on stderr that report export failures. */
function failureLines(stderr: string): LogLine[] {
  return stderr
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine)
    .filter((line) => line.msg.startsWith('telemetry: '));
}

const children: ChildProcess[] = [];
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** Starts a worker with one stdio server and `env`; resolves once its servers are ready. */
async function startWorker(env: Record<string, string>) {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-otel-fail-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'mcp_servers.json'), JSON.stringify({ servers: { rec: { type: 'local', command: fixtureCommand('trace-recorder') } } }));
  const child = spawn(process.execPath, [BIN, 'serve', '--state-dir', dir, '--port', '0'], {
    env: cleanEnv({ OTEL_EXPORTER_OTLP_HEADERS: `x-api-key=${HEADER_SECRET}`, OTEL_EXPORTER_OTLP_TIMEOUT: '500', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const out = { stdout: '', stderr: '' };
  child.stdout!.on('data', (chunk) => (out.stdout += chunk));
  child.stderr!.on('data', (chunk) => (out.stderr += chunk));
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  await until(() => /servers ready/.test(out.stdout), `the startup summary (stdout: ${out.stdout}, stderr: ${out.stderr})`);
  return { child, out, exited };
}

describe('mcp-fleet serve exporting to a collector that is not there', () => {
  it('logs one line per endpoint naming it without credentials, then the count held back, and never a header value', { timeout: 90_000 }, async () => {
    const port = await closedPort();
    const { child, out, exited } = await startWorker({
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://fleet:${PASSWORD}@127.0.0.1:${port}/v1/traces?api_key=${QUERY_SECRET}`,
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `http://127.0.0.1:${port}/v1/metrics`,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
      OTEL_METRIC_EXPORT_INTERVAL: '200',
    });
    const traces = `http://127.0.0.1:${port}/v1/traces`;
    const metrics = `http://127.0.0.1:${port}/v1/metrics`;
    await until(() => failureLines(out.stderr).some((line) => line.endpoint === metrics), `a metrics failure line (stderr: ${out.stderr})`);
    await until(() => failureLines(out.stderr).some((line) => line.endpoint === traces), `a traces failure line (stderr: ${out.stderr})`);
    // Metrics fail every 200 ms: two seconds more of them are held back, not printed. Nothing outside
    // marks a refused connection, so time it is; the count printed at the stop shows they did fail.
    await new Promise((r) => setTimeout(r, 2_000));
    const during = failureLines(out.stderr);
    expect(during.filter((line) => line.endpoint === metrics)).toHaveLength(1);
    expect(during.filter((line) => line.endpoint === traces)).toHaveLength(1);
    const first = during.find((line) => line.endpoint === metrics)!;
    expect(first.level).toBe(40); // warn
    expect(first.signal).toBe('metrics');
    expect(first.suppressed).toBe(0);
    expect(first.msg).toBe(`telemetry: metrics export to ${metrics} failed: ${first.reason}`);
    expect(first.reason).toMatch(/ECONNREFUSED|timed out|Concurrent export limit/);

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const after = failureLines(out.stderr);
    const held = after.filter((line) => line.endpoint === metrics && line.suppressed! > 0);
    expect(held).toHaveLength(1);
    expect(held[0]!.suppressed).toBeGreaterThanOrEqual(3);
    expect(held[0]!.msg).toMatch(new RegExp(`^telemetry: metrics export to ${metrics.replace(/[.?/]/g, '\\$&')} failed \\d+ more times since the last line \\(latest: .+\\)$`));
    // Stopping flushes the server's lifecycle span: that failure is counted too.
    expect(after.filter((line) => line.endpoint === traces && line.suppressed! > 0)).toHaveLength(1);

    const everything = out.stdout + out.stderr;
    for (const secret of [HEADER_SECRET, PASSWORD, QUERY_SECRET, 'fleet:']) expect(everything).not.toContain(secret);
  });
});

describe('mcp-fleet serve exporting to a collector that answers 500', () => {
  it('logs the HTTP status and the endpoint, and not the header the collector was sent', { timeout: 90_000 }, async () => {
    const receiver = await startOtlpReceiver({ status: 500 });
    cleanups.push(() => receiver.close());
    const { child, out, exited } = await startWorker({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: '100',
      OTEL_METRIC_EXPORT_INTERVAL: '200',
    });
    const metrics = `${receiver.url}/v1/metrics`;
    await until(() => failureLines(out.stderr).some((line) => line.endpoint === metrics), `a metrics failure line (stderr: ${out.stderr})`);
    await until(() => receiver.requests.filter((request: { path: string }) => request.path === '/v1/metrics').length >= 4, 'more failed metric exports');
    const lines = failureLines(out.stderr).filter((line) => line.endpoint === metrics);
    expect(lines).toHaveLength(1);
    expect(lines[0]!.reason).toBe('HTTP 500 Internal Server Error');
    expect(lines[0]!.msg).toBe(`telemetry: metrics export to ${metrics} failed: HTTP 500 Internal Server Error`);
    // The header did go out (protobuf, the default protocol): only the log keeps it back.
    const sent = receiver.requests.find((request: { path: string }) => request.path === '/v1/metrics');
    expect(sent.headers['x-api-key']).toBe(HEADER_SECRET);
    expect(sent.contentType).toBe('application/x-protobuf');

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(failureLines(out.stderr).filter((line) => line.endpoint === metrics && line.suppressed! >= 3)).toHaveLength(1);
    expect(out.stdout + out.stderr).not.toContain(HEADER_SECRET);
  });
});

describe('the failure log on its own', () => {
  it('writes one line per endpoint per window, then one line with the count, and masks secrets in reasons', async () => {
    const lines: Array<{ fields: ExportFailureFields; message: string }> = [];
    const log = new ExportFailureLog({ sink: (fields, message) => lines.push({ fields, message }), secrets: ['tok-123456'], windowMs: 150 });
    log.failed('http://a/v1/traces', 'traces', new Error('refused by tok-123456'));
    log.failed('http://a/v1/traces', 'traces', new Error('again'));
    log.failed('http://b/v1/metrics', 'metrics', Object.assign(new Error('Bad Gateway'), { code: 502 }));
    expect(lines.map((line) => line.message)).toEqual([
      'telemetry: traces export to http://a/v1/traces failed: refused by ••••',
      'telemetry: metrics export to http://b/v1/metrics failed: HTTP 502 Bad Gateway',
    ]);
    await new Promise((r) => setTimeout(r, 250));
    // The window closed with one failure held back for a: its count line; b had none, so nothing.
    expect(lines.slice(2).map((line) => line.message)).toEqual(['telemetry: traces export to http://a/v1/traces failed 1 more time since the last line (latest: again)']);
    log.failed('http://a/v1/traces', 'traces', new Error('third'));
    log.failed('http://a/v1/traces', 'traces', new Error('fourth'));
    log.failed('http://a/v1/traces', 'traces', new Error('fifth'));
    expect(lines).toHaveLength(3);
    log.flush();
    expect(lines.slice(3).map((line) => [line.message, line.fields.suppressed])).toEqual([
      ['telemetry: traces export to http://a/v1/traces failed 3 more times since the last line (latest: fifth)', 3],
    ]);
    log.flush();
    expect(lines).toHaveLength(4);
  });

  it('keeps a window per signal: traces and metrics posting to one URL are each told as themselves', () => {
    const lines: string[] = [];
    const log = new ExportFailureLog({ sink: (_fields, message) => lines.push(message), windowMs: 60_000 });
    log.failed('http://c/otlp', 'traces', new Error('refused'));
    log.failed('http://c/otlp', 'metrics', new Error('refused'));
    log.failed('http://c/otlp', 'metrics', new Error('again'));
    log.flush();
    expect(lines).toEqual([
      'telemetry: traces export to http://c/otlp failed: refused',
      'telemetry: metrics export to http://c/otlp failed: refused',
      'telemetry: metrics export to http://c/otlp failed 1 more time since the last line (latest: again)',
    ]);
  });

  it('resolves and shows endpoints as the exporter does, without userinfo, query or fragment', () => {
    expect(otlpEndpoint({}, 'traces')).toBe('http://localhost:4318/v1/traces');
    expect(otlpEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://c.example/otlp' }, 'metrics')).toBe('https://c.example/otlp/v1/metrics');
    expect(otlpEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://c.example/', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://t.example/x' }, 'traces')).toBe('https://t.example/x');
    // Not a URL: the exporter skips it, and so does the name in the log; a warning names the variable.
    const bad = { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://u:p@[bad', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c.example:4318' };
    expect(otlpEndpoint(bad, 'traces')).toBe('http://c.example:4318/v1/traces');
    expect(unusableEndpointVariables(bad, 'traces')).toEqual(['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']);
    expect(otlpEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'nowhere' }, 'metrics')).toBe('http://localhost:4318/v1/metrics');
    expect(unusableEndpointVariables({ OTEL_EXPORTER_OTLP_ENDPOINT: 'nowhere' }, 'metrics')).toEqual(['OTEL_EXPORTER_OTLP_ENDPOINT']);
    expect(displayEndpoint('https://u:p@c.example:4318/v1/traces?key=v#f')).toBe('https://c.example:4318/v1/traces');
    expect(displayEndpoint('not a url')).toBe('(an endpoint that is not a URL)');
    const secrets = exportSecrets(
      { OTEL_EXPORTER_OTLP_HEADERS: 'a=one%20secret,b=two', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://u:pass@c.example/v1/traces?key=qv' },
      'traces',
    );
    expect(secrets).toEqual(expect.arrayContaining(['one%20secret', 'one secret', 'two', 'pass', 'u', 'qv']));
  });
});
