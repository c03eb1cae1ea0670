// The users stores, file and PostgreSQL, held to one contract: add (a taken
// name refused), look up by key hash, rotate (the old hash finds nobody),
// remove; only hashes are stored; the file is owner-only and read back by a
// new store; a PostgreSQL user is seen by every worker's store at once.
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/fleet/database.js';
import { migrate } from '../../src/fleet/migrations.js';
import {
  createFileUsersStore,
  createPgUsersStore,
  createUsers,
  keyHash,
  USER_KEY_PREFIX,
  UserExistsError,
  usersPath,
  type UsersStore,
} from '../../src/users/index.js';
import { newDatabase, startPostgres, type PgCluster } from '../support/postgres.js';

let cluster: PgCluster;
const dirs: string[] = [];
const dbs: Database[] = [];
beforeAll(async () => {
  cluster = await startPostgres();
});
afterAll(async () => {
  for (const db of dbs) await db.close();
  await cluster?.destroy();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function fileStore(): { store: UsersStore; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-users-'));
  dirs.push(dir);
  return { store: createFileUsersStore(dir), dir };
}

async function pgStores(count: number): Promise<UsersStore[]> {
  const url = await newDatabase(cluster);
  const opened = Array.from({ length: count }, () => openDatabase(url));
  dbs.push(...opened);
  await migrate(opened[0]!.pool);
  return opened.map((db) => createPgUsersStore(db));
}

const kinds: Array<[string, () => Promise<UsersStore>]> = [
  ['file', async () => fileStore().store],
  ['postgres', async () => (await pgStores(1))[0]!],
];

describe.each(kinds)('users store (%s)', (_kind, make) => {
  it('adds, finds by key, rotates, removes; a taken name is refused', async () => {
    const users = createUsers(await make());
    const alice = await users.add('alice', ['eng', 'ops', 'eng']);
    expect(alice).toMatchObject({ name: 'alice', groups: ['eng', 'ops'] });
    expect(alice.key.startsWith(USER_KEY_PREFIX)).toBe(true);
    expect(alice.key.length).toBe(USER_KEY_PREFIX.length + 43);
    const bob = await users.add('bob', []);
    await expect(users.add('alice', [])).rejects.toBeInstanceOf(UserExistsError);

    expect(await users.list()).toEqual([
      { name: 'alice', groups: ['eng', 'ops'] },
      { name: 'bob', groups: [] },
    ]);
    expect(await users.authenticate(alice.key)).toEqual({ id: 'alice', groups: ['eng', 'ops'] });
    expect(await users.authenticate(bob.key)).toEqual({ id: 'bob', groups: [] });
    expect(await users.authenticate(`${alice.key}x`)).toBeUndefined();
    expect(await users.authenticate('not-a-user-key')).toBeUndefined();

    const rotated = await users.rotate('alice');
    expect(rotated?.key).not.toBe(alice.key);
    expect(await users.authenticate(alice.key)).toBeUndefined();
    expect(await users.authenticate(rotated!.key)).toEqual({ id: 'alice', groups: ['eng', 'ops'] });
    expect(await users.rotate('nobody')).toBeUndefined();

    expect(await users.remove('bob')).toBe(true);
    expect(await users.remove('bob')).toBe(false);
    expect(await users.authenticate(bob.key)).toBeUndefined();
    expect((await users.list()).map((user) => user.name)).toEqual(['alice']);
  });

  it("keeps a user's own quota: listed flat, carried by their principal, rotation keeps it", async () => {
    const users = createUsers(await make());
    const svc = await users.add('svc', [], { calls_per_minute: null, max_concurrent_calls: 4 });
    expect(svc).toMatchObject({ name: 'svc', calls_per_minute: null, max_concurrent_calls: 4 });
    // An empty quota, or one of absent fields, is the worker's defaults: nothing is stored.
    const plain = await users.add('plain', [], { calls_per_minute: undefined });
    expect(plain).toEqual({ name: 'plain', groups: [], key: plain.key });
    expect(await users.list()).toEqual([
      { name: 'plain', groups: [] },
      { name: 'svc', groups: [], calls_per_minute: null, max_concurrent_calls: 4 },
    ]);
    expect(await users.authenticate(svc.key)).toEqual({ id: 'svc', groups: [], quota: { calls_per_minute: null, max_concurrent_calls: 4 } });
    const rotated = await users.rotate('svc');
    expect(rotated).toMatchObject({ calls_per_minute: null, max_concurrent_calls: 4 });
    expect((await users.authenticate(rotated!.key))?.quota).toEqual({ calls_per_minute: null, max_concurrent_calls: 4 });

    // Replaced whole: a field left out is the default again; nothing at all, no quota.
    expect(await users.setQuota('svc', { calls_per_minute: 7 })).toEqual({ name: 'svc', groups: [], calls_per_minute: 7 });
    expect((await users.authenticate(rotated!.key))?.quota).toEqual({ calls_per_minute: 7 });
    expect(await users.setQuota('svc', {})).toEqual({ name: 'svc', groups: [] });
    expect(await users.authenticate(rotated!.key)).toEqual({ id: 'svc', groups: [] });
    expect(await users.setQuota('nobody', { calls_per_minute: 1 })).toBeUndefined();
  });
});

describe('file users store', () => {
  it('keeps only key hashes, owner-only, and a new store reads them back', async () => {
    const { store, dir } = fileStore();
    const users = createUsers(store);
    const { key } = await users.add('alice', ['eng']);
    const text = readFileSync(usersPath(dir), 'utf8');
    expect(text).not.toContain(key);
    expect(text).toContain(keyHash(key));
    expect(statSync(usersPath(dir)).mode & 0o777).toBe(0o600);
    expect(await createUsers(createFileUsersStore(dir)).authenticate(key)).toEqual({ id: 'alice', groups: ['eng'] });
  });
});

describe('PostgreSQL users store', () => {
  it('a user added on one worker is let in by another, and a rotation there shuts the old key out here', async () => {
    const [one, two] = (await pgStores(2)).map(createUsers);
    const { key } = await one!.add('alice', ['eng']);
    expect(await two!.authenticate(key)).toEqual({ id: 'alice', groups: ['eng'] });
    await expect(two!.add('alice', [])).rejects.toBeInstanceOf(UserExistsError);
    const rotated = await two!.rotate('alice');
    expect(await one!.authenticate(key)).toBeUndefined();
    expect(await one!.authenticate(rotated!.key)).toEqual({ id: 'alice', groups: ['eng'] });
  });
});
