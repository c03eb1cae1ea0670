// Nothing lost on disk (issue 7, item 4): concurrent API writes are serialized
// and none is lost; a worker SIGKILLed at random moments while it saves always
// leaves the old or the new file, owner-only.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { createMcpHost } from '../../src/host.js';
import { serve, TOKEN } from '../http/helpers.js';
import { BIN } from '../support/cli.js';
import { cleanEnv } from '../support/env.js';
const dirs: string[] = [];
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** `count` cheap (disabled) servers: a PATCH restarts them without spawning anything. */
function stateDir(count: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-disk-'));
  dirs.push(dir);
  const servers = Object.fromEntries(
    Array.from({ length: count }, (_, i) => [`s${i}`, { type: 'local', command: ['node', `server-${i}.js`], enabled: false }]),
  );
  writeFileSync(join(dir, 'mcp_servers.json'), JSON.stringify({ servers }, null, 2), { mode: 0o600 });
  return dir;
}

const readServers = (dir: string): Record<string, { timeout_seconds?: number; env?: Record<string, string> }> =>
  JSON.parse(readFileSync(join(dir, 'mcp_servers.json'), 'utf8')).servers;

test('twenty parallel PATCHes to different servers all land', async () => {
  const dir = stateDir(20);
  const host = createMcpHost({ stateDir: dir, persistJournal: false });
  const served = await serve(host);
  await host.start();
  try {
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        served.request(`/api/mcp/servers/s${i}`, {
          method: 'PATCH',
          body: { timeout_seconds: 100 + i, env: { ORDER: `value-${i}` } },
        }),
      ),
    );
    expect(replies.map((reply) => reply.status)).toEqual(Array(20).fill(200));
    const servers = readServers(dir);
    for (let i = 0; i < 20; i += 1) {
      expect(servers[`s${i}`]).toMatchObject({ timeout_seconds: 100 + i, env: { ORDER: `value-${i}` } });
    }
    expect(statSync(join(dir, 'mcp_servers.json')).mode & 0o777).toBe(0o600);
  } finally {
    await served.close();
    await host.shutdown();
  }
});

/** Starts `serve` and resolves with its URL once its servers are through startup (the startup summary is out). */
function startWorker(dir: string): Promise<{ child: ChildProcess; url: string; exited: Promise<unknown> }> {
  const child = spawn(process.execPath, [BIN, 'serve', '--state-dir', dir, '--port', '0'], {
    env: cleanEnv({ MCP_FLEET_API_TOKEN: TOKEN }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const exited = new Promise((done) => child.once('exit', done));
  return new Promise((resolveUrl, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /API\s+(http:\/\/127\.0\.0\.1:\d+)\//.exec(out);
      if (match && /enabled servers ready/.test(out)) resolveUrl({ child, url: match[1]!, exited });
    });
    child.stderr!.resume();
    child.on('exit', () => reject(new Error(`worker exited before listening: ${out}`)));
  });
}

test('a worker SIGKILLed at random moments while it saves leaves the old or the new file, mode 0600', async () => {
  const dir = stateDir(3);
  let landed = 0;
  // The kills come at random moments over three times what the three saves take on this machine (measured
  // in the first round, which lets them land): before, during and after saves, however busy the machine.
  let window = 500;
  for (let round = 0; round < 8; round += 1) {
    const { child, url, exited } = await startWorker(dir);
    const before = readServers(dir);
    const next = round % 2 === 0 ? 7 : 9;
    const patch = (name: string) =>
      fetch(`${url}/api/mcp/servers/${name}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ timeout_seconds: next }),
      }).catch(() => undefined);
    const started = Date.now();
    const writes = Promise.all(['s0', 's1', 's2'].map(patch));
    if (round === 0) {
      await writes;
      window = Math.max(window, 3 * (Date.now() - started));
    } else {
      await new Promise((r) => setTimeout(r, Math.random() * window));
    }
    child.kill('SIGKILL');
    await writes;
    await exited;

    const after = readServers(dir);
    for (const name of ['s0', 's1', 's2']) {
      if (round === 0) expect(after[name]?.timeout_seconds).toBe(next);
      expect([before[name]?.timeout_seconds, next]).toContain(after[name]?.timeout_seconds);
      if (round > 0 && after[name]?.timeout_seconds === next && before[name]?.timeout_seconds !== next) landed += 1;
    }
    expect(statSync(join(dir, 'mcp_servers.json')).mode & 0o777).toBe(0o600);
  }
  // Some saves did land between kills: the kills really hit a saving worker.
  expect(landed).toBeGreaterThan(0);
  // Eight workers started one after another: minutes on a busy machine.
}, 240_000);
