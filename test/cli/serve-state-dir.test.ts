// Two `serve` workers started at the same moment on one state dir: one of
// them serves it, the other is refused before it writes anything. Before
// the state dir was claimed at start, both ran (each with its own children)
// and their journals' seqs collided.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { fixtureCommand } from '../fixtures/index.js';
import { BIN } from '../support/cli.js';
import { cleanEnv } from '../support/env.js';
import { until } from '../support/wait.js';

function serve(dir: string): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [BIN, 'serve', '--state-dir', dir, '--port', '0'], { env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

test('of two workers started together on one state dir, one serves and the other is refused, writing nothing', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-two-serves-'));
  writeFileSync(join(dir, 'mcp_servers.json'), JSON.stringify({ servers: { one: { type: 'local', command: fixtureCommand('healthy.mjs') } } }));
  const workers = [serve(dir), serve(dir)];
  try {
    const refused = await Promise.race(workers.map(async (worker, index) => ({ index, code: await worker.exited })));
    expect(refused.code, workers[refused.index]!.output()).toBe(1);
    expect(workers[refused.index]!.output()).toMatch(/^error: a worker \(pid \d+\) already serves .+/m);
    const serving = workers[1 - refused.index]!;
    await until(() => serving.output().includes('1 of 1 enabled servers ready'), 'the other worker to serve');
    // One run in the journal: one worker.started, no seq twice.
    const lines = readdirSync(join(dir, 'journal', 'segments')).flatMap((file) =>
      readFileSync(join(dir, 'journal', 'segments', file), 'utf8').split('\n').filter((line) => line !== ''),
    );
    const events = lines.map((line) => JSON.parse(line) as { seq: number; type: string });
    expect(events.filter((event) => event.type === 'worker.started')).toHaveLength(1);
    expect(new Set(events.map((event) => event.seq)).size).toBe(events.length);
    serving.child.kill('SIGTERM');
    expect(await serving.exited).toBe(0);
    expect(readdirSync(dir)).not.toContain('worker.lock');
  } finally {
    for (const worker of workers) if (worker.child.exitCode === null) worker.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
