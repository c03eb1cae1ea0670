// `mcp-fleet search` as a real child process, talking to a real `serve`
// (itself a child process) with a real stdio fixture server.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatSearchTable } from '../../src/cli/search.js';
import { fixtureCommand } from '../fixtures/index.js';
import { cli, startServe, type ServeWorker } from '../support/cli.js';

let dir: string;
let worker: ServeWorker | undefined;

beforeAll(async () => {
  worker = await startServe('mcp-fleet-cli-search-', { alpha: { type: 'local', command: fixtureCommand('healthy'), timeout_seconds: 15 } });
  dir = worker.dir;
}, 30_000);

afterAll(() => worker?.stop());

describe('mcp-fleet search', () => {
  it('prints a table, best match first: score, tool, available, first line of the description', async () => {
    const run = await cli(['search', 'add two numbers', '--state-dir', dir]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^SCORE\s+TOOL\s+AVAILABLE\s+DESCRIPTION$/);
    expect(lines[1]).toMatch(/^\d+\.\d\d\s+alpha__add\s+yes\s+Adds two numbers$/);
  });

  it('takes the query as several words too, and --limit', async () => {
    const all = await cli(['search', 'text', 'numbers', 'fails', 'slow', '--state-dir', dir]);
    expect(all.code).toBe(0);
    expect(all.stdout.trimEnd().split('\n').length).toBeGreaterThan(3);
    const one = await cli(['search', 'text', 'numbers', 'fails', 'slow', '--limit', '1', '--state-dir', dir]);
    expect(one.code).toBe(0);
    const rows = one.stdout.trimEnd().split('\n');
    expect(rows).toHaveLength(2);
    // The same best match (the columns are as wide as their widest cell, so compare cells).
    const cells = (line: string | undefined) => line?.split(/\s{2,}/);
    expect(cells(rows[1])).toEqual(cells(all.stdout.split('\n')[1]));
  });

  it('--json prints the API answer', async () => {
    const run = await cli(['search', 'echo', '--json', '--limit', '3', '--state-dir', dir]);
    expect(run.code).toBe(0);
    const body = JSON.parse(run.stdout);
    expect(Object.keys(body)).toEqual(['tools']);
    expect(body.tools.length).toBeLessThanOrEqual(3);
    expect(body.tools[0]).toMatchObject({ name: 'alpha__echo', server: 'alpha', original: 'echo', available: true });
    expect(body.tools[0].score).toEqual(expect.any(Number));
  });

  it('says so when nothing matches', async () => {
    const run = await cli(['search', 'zyxwvutsrq', '--state-dir', dir]);
    expect(run).toEqual({ code: 0, stdout: 'no tool matches "zyxwvutsrq"\n', stderr: '' });
  });

  it('a bad --limit or a blank query is one line on stderr, exit 2 (a usage error)', async () => {
    expect(await cli(['search', 'echo', '--limit', 'many', '--state-dir', dir])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'error: --limit: not an integer from 1 to 100: "many"\n',
    });
    expect(await cli(['search', 'echo', '--limit', '500', '--state-dir', dir])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'error: --limit: not an integer from 1 to 100: "500"\n',
    });
    expect(await cli(['search', '  ', '--state-dir', dir])).toMatchObject({ code: 2, stdout: '' });
  });

  it('with no running worker, says how to start one', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'mcp-fleet-cli-search-none-'));
    try {
      const run = await cli(['search', 'echo', '--state-dir', empty]);
      expect(run).toEqual({
        code: 1,
        stdout: '',
        stderr: `error: no running worker for ${empty}: start one with \`node bin/mcp-fleet.js serve --state-dir ${empty}\`, or pass --url\n`,
      });
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

describe('formatSearchTable', () => {
  const hit = (name: string, score: number, available: boolean, description: string, denied = false) => ({
    name,
    server: 'files',
    original: name.replace(/^files__/, ''),
    description,
    parameters: {},
    score,
    available,
    denied,
    matched: ['name'],
  });

  it('marks a tool that cannot be called now, and keeps the first line of a long description', () => {
    const table = formatSearchTable(
      [
        hit('files__read_file', 12.3456, true, 'Read a file\nfrom the sandbox'),
        hit('files__write_file', 3, false, 'x'.repeat(100)),
        hit('files__rm', 2, false, 'Delete a file', true),
      ],
      'file',
    );
    expect(table.split('\n')).toEqual([
      'SCORE  TOOL               AVAILABLE  DESCRIPTION',
      '12.35  files__read_file   yes        Read a file',
      `3.00   files__write_file  no         ${'x'.repeat(69)}…`,
      '2.00   files__rm          denied     Delete a file',
    ]);
  });
});
