// Within `serve`, a library's console.warn / console.error (the SDK's own
// warnings) become lines of the worker's pino log, redacted like the others:
// stderr holds JSON lines only.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, expect, test } from 'vitest';
import { BIN } from '../support/cli.js';
import { cleanEnv } from '../support/env.js';
import { until } from '../support/wait.js';
import { logConsoleTo } from '../../src/cli/console-to-log.js';
import { createLogger } from '../../src/telemetry/logger.js';

const { warn, error } = console;
afterEach(() => {
  console.warn = warn;
  console.error = error;
});

test('console.warn and console.error become pino lines, formatted and redacted', () => {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  logConsoleTo(createLogger({ secrets: () => ['sk-console-secret-42'], destination }));
  console.warn('[mcp-sdk] stored credential for %s has no issuer stamp', 'sk-console-secret-42');
  console.error('failed: %d tries', 3);
  const parsed = lines.map((line) => JSON.parse(line) as { level: number; source: string; msg: string });
  expect(parsed.map(({ level, source, msg }) => ({ level, source, msg }))).toEqual([
    { level: 40, source: 'console', msg: '[mcp-sdk] stored credential for •••• has no issuer stamp' },
    { level: 50, source: 'console', msg: 'failed: 3 tries' },
  ]);
});

test('serve logs what a library warns as JSON lines once its logger is up', { timeout: 30_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-console-'));
  // Stands in for a library in the worker's process that warns now and then (the SDK does, through console.warn).
  const preload = join(dir, 'warns.mjs');
  writeFileSync(preload, "setInterval(() => console.warn('a library warns of %s', 'something'), 100).unref();\n");
  writeFileSync(join(dir, 'mcp_servers.json'), JSON.stringify({ servers: {} }));
  const worker = spawn(process.execPath, ['--import', preload, BIN, 'serve', '--state-dir', dir, '--port', '0'], { env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  worker.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  try {
    await until(() => stderr.includes('"source":"console"'), 'a warning logged as JSON');
    const afterFirst = stderr.slice(stderr.indexOf('"source":"console"'));
    const lines = afterFirst.slice(afterFirst.indexOf('\n') + 1).split('\n').filter((line) => line !== '');
    // From then on every line is JSON, the warnings among them.
    for (const line of lines.slice(0, -1)) expect(() => JSON.parse(line), line).not.toThrow();
    expect(stderr).toMatch(/"level":40,"time":\d+,"pid":\d+,"source":"console","msg":"a library warns of something"/);
  } finally {
    worker.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
