// `mcp-fleet/fleet` as a library: a host embedded in an agent, on the shared
// database, through the same public entry a user imports.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { generateSecretKeyText, openSharedStores } from '../../src/fleet.js';
import { createMcpHost } from '../../src/index.js';
import { fixtureCommand } from '../fixtures/index.js';
import { newDatabase, startPostgres, type PgCluster } from '../helpers/postgres.js';

let cluster: PgCluster;
beforeAll(async () => {
  cluster = await startPostgres();
});
afterAll(async () => {
  await cluster?.destroy();
});

it('a host on openSharedStores keeps its config, journal and versions in the database', async () => {
  const url = await newDatabase(cluster);
  const env = { MCP_FLEET_SECRET_KEY: generateSecretKeyText() };
  const open = (workerId: string) => {
    const stateDir = mkdtempSync(join(tmpdir(), 'mcp-fleet-lib-'));
    const stores = openSharedStores({ url, workerId, stateDir, env, states: () => ({}), logger: { info: () => {}, warn: () => {} } });
    return { stores, embedded: createMcpHost({
      stateDir,
      workerId,
      configStore: stores.config,
      eventStore: stores.events,
      credentialsStore: stores.credentials,
      logger: { info: () => {}, warn: () => {} },
    }) };
  };
  const first = open('lib-1');
  await first.stores.reach();
  await first.embedded.start();
  const view = await first.embedded.addServer('echo', { type: 'local', command: fixtureCommand('healthy.mjs') });
  expect(view).toMatchObject({ name: 'echo', state: 'ready', version: expect.any(Number) });
  await first.embedded.shutdown();
  await first.stores.close();

  // The same worker again: it finds the server and its own history, and once start resolves its views
  // show this run (pending or ready), not the previous run's `stopped`.
  const second = open('lib-1');
  await second.stores.reach();
  await second.embedded.start();
  expect(['pending', 'ready']).toContain(second.embedded.server('echo')?.state);
  expect(second.embedded.server('echo')?.last_run).toMatchObject({ state: 'ready' });
  await second.embedded.settled();
  await expect.poll(() => second.embedded.server('echo')?.state).toBe('ready');
  expect(second.embedded.server('echo')).toMatchObject({ state: 'ready', version: view.version });
  const events = await second.embedded.readEvents(0, 1000);
  expect(Array.isArray(events) && events.some((event) => event.worker === 'lib-1' && event.type === 'server.configured')).toBe(true);
  await second.embedded.shutdown();
  await second.stores.close();
});
