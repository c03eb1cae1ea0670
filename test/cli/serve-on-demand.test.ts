// A real `mcp-fleet serve` with an `on_demand` server whose catalog an earlier
// run learnt: that server waits in `pending` with no process until a tool of
// it is called, and the startup summary still comes, counting it as ready.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { expect, test } from 'vitest';
import { fixtureCommand } from '../fixtures/index.js';
import { TOKEN } from '../http/helpers.js';
import { spawnServe } from '../support/cli.js';
import { until } from '../support/wait.js';

const servers = {
  eager: { type: 'local', command: fixtureCommand('healthy'), timeout_seconds: 15 },
  lazy: { type: 'local', command: fixtureCommand('healthy'), start: 'on_demand', timeout_seconds: 15 },
};

/** Runs `serve` on `dir` until its summary, then stops it: what it printed. */
async function serveUntilSummary(dir: string): Promise<string> {
  // Started from the dir above the state dir, named relatively: the banner still names it absolutely.
  const { child: worker, stdout, exited } = spawnServe(['--state-dir', basename(dir), '--port', '0', '--apps-port', '0'], {
    env: { MCP_FLEET_API_TOKEN: TOKEN },
    cwd: dirname(dir),
  });
  try {
    await until(() => /servers ready/.test(stdout()) || worker.exitCode !== null, 'the startup summary', 60_000);
    return stdout();
  } finally {
    worker.kill('SIGTERM');
    await exited;
  }
}

test('prints the summary while an on_demand server waits for its first call', { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-on-demand-'));
  try {
    writeFileSync(join(dir, 'mcp_servers.json'), JSON.stringify({ servers }));
    // The first run connects it once to learn its catalog.
    expect(await serveUntilSummary(dir)).toContain('2 of 2 enabled servers ready');
    // The second knows it: no process, and the summary says so.
    const second = await serveUntilSummary(dir);
    expect(second).toContain(`  state dir  ${dir}\n`);
    expect(second).toContain('2 of 2 enabled servers ready, 1 of them on_demand (each starts on its first call)');
    expect(second).toMatch(/eager\s+pending → ready/);
    expect(second).not.toMatch(/lazy\s+pending → ready/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
