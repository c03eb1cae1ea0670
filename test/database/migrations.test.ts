// The schema on a real PostgreSQL (test/support/postgres.ts): migrations run
// once even when three workers start together, a newer schema is refused, and
// the connection helpers tell "the database is away" from "the query is wrong".
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, test, vi } from 'vitest';
import {
  DatabaseUnavailableError,
  isConnectionError,
  openDatabase,
  redactUrl,
  withTransaction,
  type Database,
} from '../../src/fleet/database.js';
import { databaseUrlProblem } from '../../src/fleet/database-errors.js';
import { DatabaseUrlError, generateSecretKeyText, openSharedStores } from '../../src/fleet.js';
import { latestVersion, migrate, MigrationError, migrations, SchemaTooNewError } from '../../src/fleet/migrations.js';
import { newDatabase, postgresAvailable, startPostgres, type PgCluster } from '../support/postgres.js';

const TABLES = ['config_versions', 'consents', 'credentials', 'events', 'mcp_fleet_migrations', 'servers', 'snapshots', 'user_inputs', 'users', 'workers'];

let cluster: PgCluster;
const opened: Database[] = [];

beforeAll(async () => {
  if (!postgresAvailable) console.error("initdb/pg_ctl not found: install Debian's postgresql package");
  cluster = await startPostgres();
});
afterEach(async () => {
  await Promise.all(opened.splice(0).map((database) => database.close()));
});
afterAll(async () => {
  await cluster?.destroy();
});

/** A fresh, empty database in the shared cluster, with `poolCount` pools on it (as many workers). */
async function freshDatabase(poolCount = 1): Promise<Database[]> {
  const url = await newDatabase(cluster);
  const pools = Array.from({ length: poolCount }, (_, index) => openDatabase(url, { applicationName: `worker-${index}` }));
  opened.push(...pools);
  return pools;
}

const first = <T>(items: T[]): T => {
  const item = items[0];
  if (item === undefined) throw new Error('expected at least one item');
  return item;
};

async function tablesOf(database: Database): Promise<string[]> {
  const { rows } = await database.pool.query<{ table_name: string }>(
    "select table_name from information_schema.tables where table_schema = 'public' order by table_name",
  );
  return rows.map((row) => row.table_name);
}

async function recorded(database: Database): Promise<number[]> {
  const { rows } = await database.pool.query<{ version: number }>('select version from mcp_fleet_migrations order by version');
  return rows.map((row) => row.version);
}

describe('migrations', () => {
  test('are numbered in order, without gaps, the latest being latestVersion', () => {
    expect(migrations.map((migration) => migration.version)).toEqual(migrations.map((_, index) => index + 1));
    expect(latestVersion).toBe(migrations.length);
  });

  test('a fresh database gets every migration once, and its tables', async () => {
    const database = first(await freshDatabase());
    expect(await migrate(database.pool)).toEqual({ applied: migrations.map((migration) => migration.version) });
    expect(await tablesOf(database)).toEqual(TABLES);
    expect(await recorded(database)).toEqual(migrations.map((migration) => migration.version));
    const { rows } = await database.pool.query('select id, version from config_versions');
    expect(rows).toEqual([{ id: 1, version: '0' }]); // bigint comes back as text
  });

  test('running migrate again applies nothing', async () => {
    const database = first(await freshDatabase());
    await migrate(database.pool);
    expect(await migrate(database.pool)).toEqual({ applied: [] });
    expect(await recorded(database)).toEqual(migrations.map((migration) => migration.version));
  });

  test('three workers migrating at once apply each migration exactly once', async () => {
    const databases = await freshDatabase(3);
    const results = await Promise.all(databases.map((database) => migrate(database.pool)));
    const applied = results.flatMap((result) => result.applied).sort((a, b) => a - b);
    expect(applied).toEqual(migrations.map((migration) => migration.version));
    const { rows } = await first(databases).pool.query<{ version: number; count: string }>(
      'select version, count(*) from mcp_fleet_migrations group by version order by version',
    );
    expect(rows).toEqual(migrations.map((migration) => ({ version: migration.version, count: '1' })));
    expect(await tablesOf(first(databases))).toEqual(TABLES);
  });

  test('a database migrated by a newer mcp-fleet is refused with a clear message', async () => {
    const database = first(await freshDatabase());
    await migrate(database.pool);
    const future = latestVersion + 7;
    await database.pool.query("insert into mcp_fleet_migrations (version, name) values ($1, 'from the future')", [future]);
    const refusal = await migrate(database.pool).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(SchemaTooNewError);
    expect((refusal as Error).message).toBe(
      `database schema version ${future} is newer than this mcp-fleet knows (${latestVersion}); upgrade mcp-fleet`,
    );
  });

  test('a failing migration is rolled back, not recorded, and the lock is let go', async () => {
    const database = first(await freshDatabase());
    const broken = [
      ...migrations,
      { version: latestVersion + 1, name: 'broken', sql: 'create table half_done (x int); select * from no_such_table;' },
    ];
    const failure = await migrate(database.pool, broken).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(MigrationError);
    expect((failure as Error).message).toMatch(/^migration \d+ \(broken\) failed: relation "no_such_table" does not exist/);
    expect(await recorded(database)).toEqual(migrations.map((migration) => migration.version));
    expect(await tablesOf(database)).not.toContain('half_done');
    // The lock was released: another migrate does not wait forever.
    expect(await migrate(database.pool)).toEqual({ applied: [] });
  });
});

describe('withTransaction', () => {
  test('commits what fn did and returns its result', async () => {
    const database = first(await freshDatabase());
    await database.pool.query('create table t (x int)');
    const result = await withTransaction(database.pool, async (client) => {
      await client.query('insert into t values (1)');
      return 'done';
    });
    expect(result).toBe('done');
    expect((await database.pool.query('select count(*)::int as n from t')).rows).toEqual([{ n: 1 }]);
  });

  test('rolls back when fn throws, rethrows, and gives the client back', async () => {
    const database = first(await freshDatabase());
    await database.pool.query('create table t (x int)');
    const boom = new Error('boom');
    await expect(
      withTransaction(database.pool, async (client) => {
        await client.query('insert into t values (1)');
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect((await database.pool.query('select count(*)::int as n from t')).rows).toEqual([{ n: 0 }]);
    expect(database.pool.idleCount).toBe(database.pool.totalCount);
  });
});

describe('connection errors', () => {
  test('a stopped cluster is a connection error, a syntax error is not; the pool recovers once it is back', async () => {
    const own = await startPostgres({ database: 'stopping' });
    const idleErrors: Error[] = [];
    const database = openDatabase(own.url, { onConnectionError: (error) => idleErrors.push(error) });
    try {
      const syntax = await database.pool.query('selec 1').catch((error: unknown) => error);
      expect(syntax).toBeInstanceOf(pg.DatabaseError);
      expect(isConnectionError(syntax)).toBe(false);

      // An idle client for the shutdown to reach (pg-pool discards the one a query error came on).
      expect((await database.pool.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
      expect(database.pool.idleCount).toBe(1);
      await own.stop();
      // The idle client saw the shutdown (57P01); the pool heard it instead of the process crashing.
      await vi.waitFor(() => expect(idleErrors.length).toBeGreaterThan(0));
      expect(idleErrors.every(isConnectionError)).toBe(true);
      const refused = await database.pool.query('select 1').catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(Error);
      expect(isConnectionError(refused)).toBe(true);

      await own.start();
      expect((await database.pool.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await database.close();
      await own.destroy();
    }
  });

  test('a connection checked out of the pool (a transaction open) that the server drops is heard, not an uncaught error', async () => {
    const own = await startPostgres({ database: 'checked_out' });
    const connectionErrors: Error[] = [];
    const database = openDatabase(own.url, { onConnectionError: (error) => connectionErrors.push(error) });
    try {
      let inside!: () => void;
      const entered = new Promise<void>((resolve) => (inside = resolve));
      // As a refresh holding its lock: the transaction waits on something else while the server goes.
      const held = withTransaction(database.pool, async (client) => {
        inside();
        await vi.waitFor(() => expect(connectionErrors.length).toBeGreaterThan(0), { timeout: 15_000 });
        await client.query('select 1');
      }).catch((error: unknown) => error);
      await entered;
      await own.stop('immediate');
      const failure = await held;
      expect(failure).toBeInstanceOf(Error);
      expect(isConnectionError(failure)).toBe(true);
      expect(connectionErrors.every(isConnectionError)).toBe(true);
      // The broken client was discarded: once the server is back, the pool works.
      await own.start();
      expect((await database.pool.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await database.close();
      await own.destroy();
    }
  });

  test('isConnectionError knows the codes and pg messages that mean "away"', () => {
    const coded = (code: string) => Object.assign(new Error('x'), { code });
    for (const code of ['ECONNREFUSED', 'ECONNRESET', '57P01', '57P03', '08006', '08001']) {
      expect(isConnectionError(coded(code)), code).toBe(true);
    }
    for (const code of ['42601', '23505', '40001']) expect(isConnectionError(coded(code)), code).toBe(false);
    expect(isConnectionError(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isConnectionError(new AggregateError([coded('ECONNREFUSED')], 'connect'))).toBe(true);
    expect(isConnectionError(new DatabaseUnavailableError('postgres://h/db'))).toBe(true);
    expect(isConnectionError('ECONNREFUSED')).toBe(false);
  });

  test('DatabaseUnavailableError names host:port, never the password', () => {
    const cause = Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:6543'), { code: 'ECONNREFUSED' });
    const error = new DatabaseUnavailableError('postgres://fleet:s3cret-pw@10.0.0.5:6543/fleet', { cause });
    expect(error.code).toBe('database_unavailable');
    expect(error.message).toBe('the database at 10.0.0.5:6543 is unavailable: connect ECONNREFUSED 10.0.0.5:6543');
    expect(error.message).not.toContain('s3cret');
    expect(error.cause).toBe(cause);
  });
});

describe('redactUrl', () => {
  test('drops the password, keeps the rest', () => {
    expect(redactUrl('postgres://fleet:s3cret@db.example:5433/fleet?sslmode=require')).toBe(
      'postgres://fleet@db.example:5433/fleet?sslmode=require',
    );
    expect(redactUrl('postgres://fleet@db/fleet?password=s3cret')).not.toContain('s3cret');
    expect(redactUrl('postgres://fleet:s3cret@a:5432,b:5432/fleet')).not.toContain('s3cret');
    expect(redactUrl('postgres://db/fleet')).toBe('postgres://db/fleet');
  });

  test('shows nothing before the last @ of a URL no parser takes (an unencoded / or # in the password, a missing :)', () => {
    for (const url of ['postgres://fleet:pa/s3cret@db/fleet', 'postgres://fleet:pa#s3cret@db/fleet', 'postgres//fleet:s3cret@db/fleet']) {
      expect(redactUrl(url)).not.toContain('s3cret');
      expect(redactUrl(url)).toMatch(/…@db\/fleet$/);
    }
    // An unencoded @ the WHATWG parser takes (the last @ ends the userinfo): its password is dropped as usual.
    expect(redactUrl('postgres://fleet:p@s3cret@db/fleet')).toBe('postgres://fleet@db/fleet');
  });
});

describe('databaseUrlProblem', () => {
  test('takes the socket form PostgreSQL takes, with or without a user', () => {
    expect(databaseUrlProblem('postgresql://fleet@/fleet?host=/var/run/postgresql')).toBeNull();
    expect(databaseUrlProblem('postgresql:///fleet?host=/var/run/postgresql')).toBeNull();
    expect(redactUrl('postgresql://fleet:s3cret@/fleet?host=/var/run/postgresql')).not.toContain('s3cret');
  });

  test('says how to write a password the URL cannot carry as it is', () => {
    expect(databaseUrlProblem('postgres://fleet:pa#ss@db/fleet')).toBe('not a URL (in the password, write / ? # @ : as %2F %3F %23 %40 %3A)');
    expect(databaseUrlProblem('postgres://fleet:pa%23ss@db/fleet')).toBeNull();
    expect(databaseUrlProblem('nope')).toBe('not a URL');
  });

  test('names a bad port as such, without the hint about the password', () => {
    for (const url of ['postgres://u:hunter2pw@h:notaport/db', 'postgres://u:pw@h:99999/db', 'postgres://h:x/db', 'postgres://u:pa/ss@[::1]:x/db']) {
      expect(databaseUrlProblem(url), url).toBe('the port is not a number from 0 to 65535');
    }
    // A URL that parses with a plain password in place of the one given has no password problem.
    expect(databaseUrlProblem('postgres://u:pw@h b/db')).toBe('not a URL');
  });

  test('names a scheme not followed by :// as such, not as a password to encode, and shows no password', () => {
    for (const url of ['postgres//fleet:pass-s3cret@db/fleet', 'postgresql:/fleet:pass-s3cret@db/fleet', 'postgres:fleet:pass-s3cret@db/fleet', 'POSTGRES//db/fleet']) {
      expect(databaseUrlProblem(url), url).toBe('the scheme is not followed by ://');
      expect(redactUrl(url), url).not.toContain('s3cret');
    }
    // Neither postgres:// nor anything like it: no scheme to name, and no password hint either.
    for (const url of ['fleet:pass-s3cret@db/fleet', 'db.example:5432/fleet']) {
      expect(databaseUrlProblem(url), url).toBe('not a URL');
      expect(redactUrl(url), url).not.toContain('s3cret');
    }
  });

  test('refuses an sslmode pg does not know, naming the ones it does', () => {
    const modes = 'disable, prefer, require, verify-ca, verify-full, no-verify';
    expect(databaseUrlProblem('postgres://u:pw@127.0.0.1:5432/db?sslmode=bogus')).toBe(`sslmode is not one of ${modes}`);
    // pg treats these as "SSL, verified", not as libpq would: refused too rather than silently strict.
    expect(databaseUrlProblem('postgres://u:pw@h/db?sslmode=allow')).toBe(`sslmode is not one of ${modes}`);
    expect(databaseUrlProblem('postgres://u:pw@h/db?sslmode=')).toBe(`sslmode is not one of ${modes}`);
    for (const mode of modes.split(', ')) expect(databaseUrlProblem(`postgres://u:pw@h/db?sslmode=${mode}`), mode).toBeNull();
    // In libpq compatibility mode pg does not act on no-verify.
    expect(databaseUrlProblem('postgres://u:pw@h/db?sslmode=no-verify&uselibpqcompat=true')).toBe(
      'sslmode is not one of disable, prefer, require, verify-ca, verify-full',
    );
  });
});

describe('a bad database URL given to the library', () => {
  const bad: Array<[string, string]> = [
    ['postgres://u:hunter2pw@127.0.0.1:5432/db?sslmode=bogus', 'sslmode is not one of disable, prefer, require, verify-ca, verify-full, no-verify'],
    ['postgres://u:hunter2pw@h:notaport/db', 'the port is not a number from 0 to 65535'],
    ['postgres//u:hunter2pw@h/db', 'the scheme is not followed by ://'],
    ['mysql://u:hunter2pw@h/db', 'the scheme is mysql, not postgres'],
    ['', 'empty'],
  ];

  test('openDatabase and openSharedStores refuse it up front with the CLI\'s words, naming no password', () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'mcp-fleet-badurl-'));
    const env = { MCP_FLEET_SECRET_KEY: generateSecretKeyText() };
    for (const [url, problem] of bad) {
      for (const open of [() => openDatabase(url), () => openSharedStores({ url, workerId: 'w', stateDir, env, logger: { info() {}, warn() {} } })]) {
        let thrown: unknown;
        try {
          const opened = open();
          void ('close' in opened ? opened.close() : undefined);
        } catch (error) {
          thrown = error;
        }
        expect(thrown, url).toMatchObject({ name: 'DatabaseUrlError', code: 'invalid_database_url', problem });
        expect(thrown, url).toBeInstanceOf(DatabaseUrlError);
        expect((thrown as Error).message, url).toMatch(/^invalid database URL: /);
        expect((thrown as Error).message, url).toContain(`${problem}: `);
        expect((thrown as Error).message, url).not.toContain('hunter2');
      }
    }
  });
});
