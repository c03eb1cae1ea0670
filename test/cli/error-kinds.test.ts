// What the CLI says about a remote server nobody answers at: `add` refuses it
// as `unreachable` (not `protocol`) and saves nothing, and `list` shows the
// kind of a configured one, against a real `mcp-fleet serve`.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deadPort } from '../security/processes.js';
import { cli, startServe, type ServeWorker } from '../support/cli.js';

let worker: ServeWorker;
let port: number;

beforeAll(async () => {
  port = await deadPort();
  worker = await startServe('mcp-fleet-kinds-', {
    gone: { type: 'remote', url: `http://127.0.0.1:${port}/mcp`, reconnect: { max_attempts: 0 } },
  });
}, 60_000);

afterAll(async () => {
  await worker?.stop();
});

describe('mcp-fleet and a server that cannot be reached', () => {
  it('add --url to a port nothing answers on fails as unreachable, in one line, and is not saved', async () => {
    const add = await cli(['add', 'r2', '--url', 'http://127.0.0.1:1/mcp', '--state-dir', worker.dir]);
    expect(add).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'error: server "r2" failed to start (unreachable): could not reach http://127.0.0.1:1: fetch does not connect to this port (bad port)\n',
    });
    const oauth = await cli(['add', 'o2', '--config', JSON.stringify({ type: 'remote', url: `http://127.0.0.1:${port}/mcp`, auth: { kind: 'oauth' } }), '--state-dir', worker.dir]);
    expect(oauth.code).toBe(1);
    expect(oauth.stderr).toBe(`error: server "o2" failed to start (unreachable): could not reach http://127.0.0.1:${port}: connection refused (ECONNREFUSED)\n`);
    const saved = JSON.parse(readFileSync(join(worker.dir, 'mcp_servers.json'), 'utf8')).servers;
    expect(Object.keys(saved)).toEqual(['gone']);
  });

  it('list shows the kind of a configured server that cannot be reached', async () => {
    const list = await cli(['list', '--state-dir', worker.dir]);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(new RegExp(`^gone\\s+error\\s+0\\s+unreachable: could not reach http://127\\.0\\.0\\.1:${port}: connection refused \\(ECONNREFUSED\\)$`, 'm'));
  });
});
