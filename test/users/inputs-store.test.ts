// The user inputs stores, file and PostgreSQL, held to one contract: a
// principal's values per server, merged (null deletes), kept apart from every
// other principal's and server's; sealed at rest (no value in the file or the
// table, and a value moved to another principal does not open); a file store
// makes its key on first use, owner-only, and a new store reads its values
// back; a PostgreSQL value set on one worker is read by another at once.
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/fleet/database.js';
import { migrate } from '../../src/fleet/migrations.js';
import { secretKeyFrom, generateSecretKeyText } from '../../src/config/secrets/secret-key.js';
import { createFileInputsStore, createPgInputsStore, inputsPath, type UserInputsStore } from '../../src/users/index.js';
import { newDatabase, startPostgres, type PgCluster } from '../support/postgres.js';

const VALUE = 'input-value-SECRET-5150';
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

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-inputs-'));
  dirs.push(dir);
  return dir;
}

const key = secretKeyFrom(generateSecretKeyText(), 'test');
async function pgStores(count: number): Promise<{ stores: UserInputsStore[]; db: Database }> {
  const url = await newDatabase(cluster);
  const opened = Array.from({ length: count }, () => openDatabase(url));
  dbs.push(...opened);
  await migrate(opened[0]!.pool);
  return { stores: opened.map((db) => createPgInputsStore({ db, key })), db: opened[0]! };
}

const kinds: Array<[string, () => Promise<UserInputsStore>]> = [
  ['file', async () => createFileInputsStore({ stateDir: tempDir(), env: {} })],
  ['postgres', async () => (await pgStores(1)).stores[0]!],
];

describe.each(kinds)('%s store', (_kind, make) => {
  it('keeps each principal\'s values per server, merged, null deleting', async () => {
    const store = await make();
    expect(await store.get('mine', 'alice')).toEqual({});
    expect(await store.set('mine', 'alice', { TOKEN: VALUE, ORG: 'acme' })).toEqual(['ORG', 'TOKEN']);
    expect(await store.set('mine', 'alice', { ORG: null })).toEqual(['TOKEN']);
    await store.set('mine', 'bob', { TOKEN: 'bob-value' });
    await store.set('other', 'alice', { TOKEN: 'other-value' });
    expect(await store.get('mine', 'alice')).toEqual({ TOKEN: VALUE });
    expect(await store.get('mine', 'bob')).toEqual({ TOKEN: 'bob-value' });
    expect(await store.get('other', 'alice')).toEqual({ TOKEN: 'other-value' });
    expect(await store.set('mine', 'bob', { TOKEN: null })).toEqual([]);
    expect(await store.get('mine', 'bob')).toEqual({});
  });

  it("forgets a principal's values on every server, a server's for every principal, and nothing else", async () => {
    const store = await make();
    await store.set('mine', 'alice', { TOKEN: VALUE });
    await store.set('other', 'alice', { TOKEN: 'other-value' });
    await store.set('mine', 'bob', { TOKEN: 'bob-value' });
    await store.set('other', 'bob', { TOKEN: 'bob-other' });
    await store.forget({ principal: 'alice' });
    expect(await store.get('mine', 'alice')).toEqual({});
    expect(await store.get('other', 'alice')).toEqual({});
    expect(await store.get('mine', 'bob')).toEqual({ TOKEN: 'bob-value' });
    await store.forget({ server: 'other' });
    expect(await store.get('other', 'bob')).toEqual({});
    expect(await store.get('mine', 'bob')).toEqual({ TOKEN: 'bob-value' });
    await store.forget({});
    expect(await store.get('mine', 'bob')).toEqual({ TOKEN: 'bob-value' });
  });
});

describe('file store', () => {
  it('seals values with a key it makes owner-only, and a new store reads them back', async () => {
    const dir = tempDir();
    await createFileInputsStore({ stateDir: dir, env: {} }).set('mine', 'alice', { TOKEN: VALUE });
    const text = readFileSync(inputsPath(dir), 'utf8');
    expect(text).not.toContain(VALUE);
    expect(text).toContain('"$sealed"');
    expect(statSync(inputsPath(dir)).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'secret_key')).mode & 0o777).toBe(0o600);
    expect(await createFileInputsStore({ stateDir: dir, env: {} }).get('mine', 'alice')).toEqual({ TOKEN: VALUE });
  });

  it("a value moved to another principal does not open there", async () => {
    const dir = tempDir();
    const store = createFileInputsStore({ stateDir: dir, env: {} });
    await store.set('mine', 'alice', { TOKEN: VALUE });
    const file = JSON.parse(readFileSync(inputsPath(dir), 'utf8'));
    file.inputs.mine.mallory = file.inputs.mine.alice;
    writeFileSync(inputsPath(dir), JSON.stringify(file));
    await expect(createFileInputsStore({ stateDir: dir, env: {} }).get('mine', 'mallory')).rejects.toThrow(/failed authentication/);
  });
});

describe('postgres store', () => {
  it('holds no value in the table, and one worker reads what another set', async () => {
    const { stores, db } = await pgStores(2);
    await stores[0]!.set('mine', 'alice', { TOKEN: VALUE });
    expect(await stores[1]!.get('mine', 'alice')).toEqual({ TOKEN: VALUE });
    const { rows } = await db.pool.query('select value::text as value from user_inputs');
    expect(rows).toHaveLength(1);
    expect(rows[0].value).not.toContain(VALUE);
  });
});
