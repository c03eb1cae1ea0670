// The embedded-fleet example of docs/several-workers.md, run as written
// (not runnable in the docs suite, which has no database) against a real PostgreSQL: it settles, lists
// itself in the fleet, calls a tool, shuts down, and its process exits.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { generateSecretKeyText } from '../../src/fleet.js';
import { newDatabase, startPostgres, type PgCluster } from '../support/postgres.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

let cluster: PgCluster;
beforeAll(async () => {
  cluster = await startPostgres();
});
afterAll(async () => {
  await cluster?.destroy();
});

/** The first ```js block under the heading "An embedded host in the fleet" of docs/several-workers.md. */
function example(): string {
  const doc = readFileSync(join(root, 'docs/several-workers.md'), 'utf8');
  const section = doc.split('\n## An embedded host in the fleet\n')[1];
  if (section === undefined) throw new Error('docs/several-workers.md has no "## An embedded host in the fleet" section');
  const block = /^```js\n([\s\S]*?)^```$/m.exec(section.split('\n## ')[0]!);
  if (!block) throw new Error('docs/several-workers.md: "An embedded host in the fleet" has no ```js block');
  return block[1]!;
}

test('the embedded-fleet example runs as written, twice, and its process exits on its own', { timeout: 120_000 }, async () => {
  const url = await newDatabase(cluster);
  // Inside the package, so `mcp-fleet` resolves to this package (its dist/) as it would for a user.
  const dir = mkdtempSync(join(root, 'test/examples/.run-'));
  const file = join(dir, 'embed.mjs');
  writeFileSync(file, example());
  const env = { ...process.env, MCP_FLEET_DATABASE_URL: url, MCP_FLEET_SECRET_KEY: generateSecretKeyText(), MCP_FLEET_STATE_DIR: '' };
  try {
    // The second run finds the server its first run stored.
    for (let round = 0; round < 2; round += 1) {
      const { stdout } = await promisify(execFile)(process.execPath, [file], { cwd: root, env, timeout: 60_000 });
      expect(stdout).toContain("[ 'everything: ready' ]");
      expect(stdout).toContain("fleet: [ 'agent-1' ]");
      expect(stdout).toContain("text: 'Echo: hello'");
    }
    // Off the fleet's list after each shutdown.
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      expect((await admin.query('select id from workers')).rows).toEqual([]);
    } finally {
      await admin.end();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('without a database URL the example says what to set and exits 2', async () => {
  const dir = mkdtempSync(join(root, 'test/examples/.run-'));
  const file = join(dir, 'embed.mjs');
  writeFileSync(file, example());
  try {
    const failed = await promisify(execFile)(process.execPath, [file], {
      cwd: root,
      env: { ...process.env, MCP_FLEET_DATABASE_URL: '' },
      timeout: 30_000,
    }).catch((error: { code: number; stderr: string }) => error);
    expect(failed).toMatchObject({ code: 2 });
    expect((failed as { stderr: string }).stderr).toContain('set MCP_FLEET_DATABASE_URL=postgres://');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
