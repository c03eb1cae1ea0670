// `mcp-fleet refresh NAME` as a real child process, talking to a real `serve`
// whose Python SDK server (test/fixtures/python/growing_catalog.py, 2026-07-28
// era) adds a tool and announces it the 2025 way, which never arrives.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pythonCommand } from '../fixtures/index.js';
import { cli, startServe, type ServeWorker } from '../support/cli.js';

let dir: string;
let worker: ServeWorker | undefined;

beforeAll(async () => {
  worker = await startServe('mcp-fleet-cli-refresh-', {
    py: { type: 'local', command: pythonCommand('growing_catalog'), protocol: '2026', timeout_seconds: 20 },
  });
  dir = worker.dir;
}, 40_000);

afterAll(() => worker?.stop());

describe('mcp-fleet refresh', () => {
  it('re-lists the server: a tool it added unannounced becomes callable', { timeout: 60_000 }, async () => {
    const grown = await cli(['call', 'py__add_tool_old', '{"name":"grown"}', '--state-dir', dir]);
    expect(grown.code).toBe(0);
    const before = await cli(['call', 'py__grown', '{"text":"hi"}', '--state-dir', dir]);
    expect(before.stdout + before.stderr).not.toContain('grown says hi');

    const run = await cli(['refresh', 'py', '--state-dir', dir]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^refreshed py: \d+ tools, 1 resource, 1 prompt\n$/);

    const after = await cli(['call', 'py__grown', '{"text":"hi"}', '--state-dir', dir]);
    expect(after.code).toBe(0);
    expect(after.stdout).toContain('grown says hi');
  });

  it('--url and --json: the counts as JSON', async () => {
    const { url } = JSON.parse(readFileSync(join(dir, 'worker.json'), 'utf8')) as { url: string };
    const run = await cli(['refresh', 'py', '--url', url, '--state-dir', dir, '--json']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ tools: expect.any(Number), resources: 1, prompts: 1 });
  });

  it('an unknown server is one line on stderr and exit code 1', async () => {
    const run = await cli(['refresh', 'nope', '--state-dir', dir]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^error: .*nope.*\n$/);
  });
});
