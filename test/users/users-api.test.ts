// `GET/POST/DELETE /api/mcp/users` and key rotation on a real host, once with
// the users in the state dir and once in PostgreSQL: the key is answered once
// and never listed, names follow the server-name rule, duplicates are 409,
// unknown names 404, and a removed or rotated key is refused at once.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/fleet/database.js';
import { migrate } from '../../src/fleet/migrations.js';
import { createPgUsersStore, type UsersStore } from '../../src/users/index.js';
import { healthy, startFleet, untilState, type Fleet } from '../http/fleet.js';
import { newDatabase, startPostgres, type PgCluster } from '../support/postgres.js';

let cluster: PgCluster;
let db: Database;
beforeAll(async () => {
  cluster = await startPostgres();
  db = openDatabase(await newDatabase(cluster));
  await migrate(db.pool);
});
afterAll(async () => {
  await db?.close();
  await cluster?.destroy();
});

const stores: Array<[string, () => UsersStore | undefined]> = [
  ['file', () => undefined],
  ['postgres', () => createPgUsersStore(db)],
];

describe.each(stores)('users API (%s store)', (_kind, store) => {
  let fleet: Fleet;
  beforeAll(async () => {
    const users = store();
    // A short heartbeat: a stream asks again at each whether its user's key still holds.
    fleet = await startFleet((dir) => ({ open: healthy(dir, 'open') }), { heartbeatMs: 100, ...(users === undefined ? {} : { users }) });
    await untilState(fleet, 'open', 'ready');
  });
  afterAll(async () => {
    await fleet?.close();
  });

  const withKey = (key: string, path: string) => fleet.request(path, { headers: { authorization: `Bearer ${key}` } });

  it('adds a user and answers the key once; the list never holds a key', async () => {
    const added = await fleet.request('/api/mcp/users', { method: 'POST', body: { name: 'dana', groups: ['eng', 'ops'] } });
    expect(added.status).toBe(201);
    expect(added.headers.location).toBe('/api/mcp/users/dana');
    expect(added.json).toEqual({ name: 'dana', groups: ['eng', 'ops'], key: expect.stringMatching(/^mcpf_[A-Za-z0-9_-]{43}$/) });
    const listed = await fleet.request('/api/mcp/users');
    expect(listed.json).toEqual({ users: [{ name: 'dana', groups: ['eng', 'ops'] }] });
    expect(listed.text).not.toContain(added.json.key);
    expect(listed.text).not.toContain('hash');
    expect((await withKey(added.json.key, '/api/mcp/me')).json).toEqual({ principal: 'dana', groups: ['eng', 'ops'], admin: false });
    // A user's tools: `open` has no policy, so every user sees it.
    expect((await withKey(added.json.key, '/api/mcp/tools')).json.tools.length).toBeGreaterThan(0);
  });

  it('refuses a taken name (409), a bad name or the admin\'s (400), and answers 404 for an unknown user', async () => {
    const taken = await fleet.request('/api/mcp/users', { method: 'POST', body: { name: 'erin' } });
    expect(taken.status).toBe(201);
    const again = await fleet.request('/api/mcp/users', { method: 'POST', body: { name: 'erin' } });
    expect(again.status).toBe(409);
    expect(again.json.error).toMatchObject({ code: 'conflict', field: 'name' });
    for (const name of ['with space', 'admin', '', 'x'.repeat(65)]) {
      const bad = await fleet.request('/api/mcp/users', { method: 'POST', body: { name } });
      expect(bad.status, name).toBe(400);
      expect(bad.json.error.field).toBe('name');
    }
    const emptyGroup = await fleet.request('/api/mcp/users', { method: 'POST', body: { name: 'g', groups: [''] } });
    // Said once: empty, not also "control characters".
    expect([emptyGroup.status, emptyGroup.json.error.message]).toEqual([400, 'groups.0: must not be empty']);
    expect((await fleet.request('/api/mcp/users/nobody', { method: 'DELETE' })).status).toBe(404);
    expect((await fleet.request('/api/mcp/users/nobody/rotate', { method: 'POST' })).status).toBe(404);
  });

  it('rotation and removal shut the old key out at once', async () => {
    const { key } = (await fleet.request('/api/mcp/users', { method: 'POST', body: { name: 'finn' } })).json;
    const rotated = await fleet.request('/api/mcp/users/finn/rotate', { method: 'POST' });
    expect(rotated.json).toEqual({ name: 'finn', groups: [], key: expect.stringMatching(/^mcpf_/) });
    expect((await withKey(key, '/api/mcp/me')).status).toBe(401);
    expect((await withKey(rotated.json.key, '/api/mcp/me')).status).toBe(200);
    expect((await fleet.request('/api/mcp/users/finn', { method: 'DELETE' })).status).toBe(204);
    expect((await withKey(rotated.json.key, '/api/mcp/me')).status).toBe(401);
  });

  const streamOf = (key: string) => eventStream(fleet.served.port, key);

  it("a user may not force a shared server's re-list: the admin's (a per_user one's goes through their own session)", async () => {
    const { key } = (await fleet.request('/api/mcp/users', { method: 'POST', body: { name: 'jo' } })).json as { key: string };
    const refused = await fleet.request('/api/mcp/servers/open/refresh', { method: 'POST', headers: { authorization: `Bearer ${key}` } });
    expect(refused.status).toBe(403);
    expect((await fleet.request('/api/mcp/servers/open/refresh', { method: 'POST' })).status).toBe(200);
  });

  it("an open event stream ends once its user's key is rotated or the user removed", async () => {
    for (const [name, change] of [
      ['gus', (user: string) => fleet.request(`/api/mcp/users/${user}/rotate`, { method: 'POST' })],
      ['hal', (user: string) => fleet.request(`/api/mcp/users/${user}`, { method: 'DELETE' })],
    ] as const) {
      const { key } = (await fleet.request('/api/mcp/users', { method: 'POST', body: { name } })).json as { key: string };
      const stream = streamOf(key);
      // Open and live: a heartbeat passes and it goes on.
      const early = await Promise.race([stream.ended.then(() => 'ended'), new Promise((resolve) => setTimeout(() => resolve('open'), 300))]);
      expect(early).toBe('open');
      expect((await change(name)).status).toBeLessThan(300);
      await stream.ended;
      stream.close();
    }
  });
});

/** An event stream opened with `key`; `ended` resolves once the worker ends it. */
function eventStream(port: number, key: string): { ended: Promise<void>; close(): void } {
  const request = http.get({ host: '127.0.0.1', port, path: '/api/mcp/events/stream', headers: { host: `127.0.0.1:${port}`, authorization: `Bearer ${key}` } });
  const ended = new Promise<void>((resolve, reject) => {
    request.on('response', (response) => {
      if (response.statusCode !== 200) reject(new Error(`stream answered ${response.statusCode}`));
      response.resume().on('end', () => resolve());
    });
    request.on('error', reject);
  });
  return { ended, close: () => request.destroy() };
}

describe('users in PostgreSQL, another worker', () => {
  it("a stream ends at its next heartbeat once another worker removed its user", async () => {
    const fleet = await startFleet((dir) => ({ open: healthy(dir, 'open') }), { heartbeatMs: 100, users: createPgUsersStore(db) });
    try {
      const { key } = (await fleet.request('/api/mcp/users', { method: 'POST', body: { name: 'ivy' } })).json as { key: string };
      const stream = eventStream(fleet.served.port, key);
      await new Promise((resolve) => setTimeout(resolve, 300));
      // Another worker's change: only the shared store knows of it, not this worker's users.
      expect(await createPgUsersStore(db).remove('ivy')).toBe(true);
      await stream.ended;
      stream.close();
    } finally {
      await fleet.close();
    }
  });
});
