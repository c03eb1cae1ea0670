// `mcp-fleet/fleet` as a library: a host embedded in an agent, on the shared
// database, through the same public entry a user imports.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { generateSecretKeyText, openSharedStores } from '../../src/fleet.js';
import { createMcpHost } from '../../src/index.js';
import { fixtureCommand } from '../fixtures/index.js';
import { newDatabase, startPostgres, type PgCluster } from '../support/postgres.js';

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
  expect(second.embedded.server('echo')).toMatchObject({ state: 'ready', version: view.version });
  const events = await second.embedded.readEvents(0, 1000);
  expect(Array.isArray(events) && events.some((event) => event.worker === 'lib-1' && event.type === 'server.configured')).toBe(true);
  await second.embedded.shutdown();
  await second.stores.close();
});

it('settled() on the shared stores resolves once every server has left pending in the views, as on the file store', async () => {
  const url = await newDatabase(cluster);
  const env = { MCP_FLEET_SECRET_KEY: generateSecretKeyText() };
  const quiet = { info: () => {}, warn: () => {} };
  const names = ['s1', 's2', 's3', 's4', 's5'];
  const seedDir = mkdtempSync(join(tmpdir(), 'mcp-fleet-lib-'));
  const seed = openSharedStores({ url, workerId: 'seed', stateDir: seedDir, env, logger: quiet });
  await seed.reach();
  const seeding = createMcpHost({ stateDir: seedDir, workerId: 'seed', configStore: seed.config, eventStore: seed.events, credentialsStore: seed.credentials, logger: quiet });
  await seeding.start();
  for (const name of names) await seeding.addServer(name, { type: 'local', command: fixtureCommand('healthy.mjs') });
  await seeding.shutdown();
  await seed.close();

  // Each run is a worker starting on that config: the last server's `ready` must be in its views when settled() resolves.
  for (const workerId of ['run-1', 'run-2', 'run-3']) {
    const stateDir = mkdtempSync(join(tmpdir(), 'mcp-fleet-lib-'));
    const stores = openSharedStores({ url, workerId, stateDir, env, logger: quiet });
    await stores.reach();
    const host = createMcpHost({ stateDir, workerId, configStore: stores.config, eventStore: stores.events, credentialsStore: stores.credentials, logger: quiet });
    await host.start();
    expect(host.status().map((view) => view.name).sort()).toEqual(names);
    await host.settled();
    expect(host.status().map((view) => [view.name, view.state])).toEqual(names.map((name) => [name, 'ready']));
    await host.shutdown();
    await stores.close();
  }
});

it('an embedded host given the presence is a member of the fleet until it shuts down', async () => {
  const url = await newDatabase(cluster);
  const env = { MCP_FLEET_SECRET_KEY: generateSecretKeyText() };
  const quiet = { info: () => {}, warn: () => {} };
  const stateDir = mkdtempSync(join(tmpdir(), 'mcp-fleet-lib-'));
  const stores = openSharedStores({ url, workerId: 'agent-1', stateDir, env, logger: quiet });
  // Another worker's view of the fleet, as its GET /api/mcp/fleet answers.
  const observer = openSharedStores({ url, workerId: 'observer', stateDir, env, logger: quiet });
  await stores.reach();
  const host = createMcpHost({
    stateDir,
    workerId: 'agent-1',
    publicUrl: 'https://agent-1.example.com/',
    configStore: stores.config,
    eventStore: stores.events,
    credentialsStore: stores.credentials,
    presence: stores.presence,
    logger: quiet,
  });
  try {
    expect((await observer.presence.view()).workers).toEqual([]);
    await host.start();
    await host.addServer('echo', { type: 'local', command: fixtureCommand('healthy.mjs') });
    // Its heartbeat row: id, the public URL, alive, and its own server's state (rewritten soon after a change).
    await expect
      .poll(async () => (await observer.presence.view()).workers.map(({ id, url, alive, servers }) => ({ id, url, alive, servers })), {
        timeout: 10_000,
        interval: 50,
      })
      .toEqual([{ id: 'agent-1', url: 'https://agent-1.example.com/', alive: true, servers: { echo: 'ready' } }]);
    expect((await observer.presence.view()).servers).toEqual([{ name: 'echo', states: { 'agent-1': 'ready' } }]);
  } finally {
    await host.shutdown();
  }
  // Off the list once it shut down, before its stores are closed.
  expect((await observer.presence.view()).workers).toEqual([]);
  await stores.close();
  await observer.close();
});
