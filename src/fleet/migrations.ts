/**
 * The database schema, as versioned migrations applied in order. Several
 * workers may start at once on one database: an advisory lock lets one of
 * them migrate while the others wait, then find nothing left to do.
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { z } from 'zod';

export interface Migration {
  /** Its place in the order; recorded in `mcp_fleet_migrations` once applied. */
  version: number;
  name: string;
  sql: string;
}

/** Every migration, oldest first. Append only: an applied one is never edited. */
export const migrations: readonly Migration[] = [
  {
    version: 1,
    name: 'initial',
    sql: `
      -- The config's version, bumped by every change of any server; servers.version takes the new value.
      create table config_versions (id int primary key check (id = 1), version bigint not null);
      insert into config_versions values (1, 0);
      -- One row per server ever configured; a delete leaves a tombstone (config null)
      -- so a worker catching up by version sees it.
      create table servers (
        name text primary key,
        position bigint not null,
        config jsonb,
        version bigint not null,
        updated_at timestamptz not null default now(),
        updated_by text not null
      );
      create index servers_version on servers (version);
      create table credentials (
        server text primary key,
        record jsonb not null,
        updated_at timestamptz not null default now(),
        updated_by text not null
      );
      create table consents (
        state text primary key,
        server text not null,
        record jsonb not null,
        created_at timestamptz not null default now()
      );
      create table events (seq bigint primary key, worker text not null, at timestamptz not null, event jsonb not null);
      create table snapshots (worker text primary key, seq bigint not null, at timestamptz not null, state jsonb not null);
      create table workers (
        id text primary key,
        url text,
        host text not null,
        pid int not null,
        started_at timestamptz not null,
        last_seen timestamptz not null,
        servers jsonb not null default '{}'::jsonb
      );
    `,
  },
  {
    version: 2,
    name: 'users',
    sql: `
      -- Users of the API: only a SHA-256 of each key is kept (src/users/keys.ts).
      create table users (
        name text primary key,
        groups jsonb not null default '[]'::jsonb,
        key_hash text not null unique,
        created_at timestamptz not null default now(),
        -- The user's own calls_per_minute and max_concurrent_calls (src/users/quota.ts); null: the worker's defaults.
        quota jsonb
      );
    `,
  },
  {
    version: 3,
    name: 'user inputs',
    sql: `
      -- Each user's values of a per_user server's user_inputs, sealed (src/users/pg-inputs-store.ts).
      create table user_inputs (
        server text not null,
        principal text not null,
        name text not null,
        value jsonb not null,
        updated_at timestamptz not null default now(),
        primary key (server, principal, name)
      );
    `,
  },
];

/** The newest schema version this code knows. */
export const latestVersion = migrations.reduce((latest, migration) => Math.max(latest, migration.version), 0);

/**
 * The advisory lock key: the first 8 bytes of sha256('mcp-fleet:migrations')
 * as a signed bigint, so it is fixed and unlikely to meet another app's key.
 */
export const MIGRATION_LOCK_KEY: string = createHash('sha256')
  .update('mcp-fleet:migrations')
  .digest()
  .readBigInt64BE(0)
  .toString();

/** The database was migrated by a newer mcp-fleet; this one must not write to it. */
export class SchemaTooNewError extends Error {
  override readonly name = 'SchemaTooNewError';
  readonly code = 'schema_too_new';
  constructor(
    readonly databaseVersion: number,
    readonly knownVersion: number,
  ) {
    super(
      `database schema version ${databaseVersion} is newer than this mcp-fleet knows (${knownVersion}); upgrade mcp-fleet`,
    );
  }
}

/** A migration's SQL failed; it was rolled back and nothing after it ran. */
export class MigrationError extends Error {
  override readonly name = 'MigrationError';
  constructor(
    readonly migration: Pick<Migration, 'version' | 'name'>,
    cause: unknown,
  ) {
    super(`migration ${migration.version} (${migration.name}) failed: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
    });
  }
}

const AppliedRow = z.object({ version: z.number().int() });

/**
 * Brings the schema up to `latestVersion`: each missing migration in its own
 * transaction, recorded with it. Safe when several workers call it at once.
 * `list` is for tests; production uses `migrations`.
 */
export async function migrate(pool: pg.Pool, list: readonly Migration[] = migrations): Promise<{ applied: number[] }> {
  // Session-level advisory locks belong to one connection: lock, work and
  // unlock on the same client, never through pool.query.
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('select pg_advisory_lock($1::bigint)', [MIGRATION_LOCK_KEY]);
    try {
      return { applied: await applyMissing(client, list) };
    } finally {
      await client.query('select pg_advisory_unlock($1::bigint)', [MIGRATION_LOCK_KEY]).catch((error: unknown) => {
        // The connection broke: the server dropped the lock with the session.
        broken = error instanceof Error ? error : new Error(String(error));
      });
    }
  } finally {
    client.release(broken);
  }
}

async function applyMissing(lockHolder: pg.PoolClient, list: readonly Migration[]): Promise<number[]> {
  // Created under the lock: two concurrent `create table if not exists` can
  // still collide on the catalog.
  await lockHolder.query(`
    create table if not exists mcp_fleet_migrations (
      version int primary key,
      name text not null,
      applied_at timestamptz not null default now()
    )`);
  const { rows } = await lockHolder.query('select version from mcp_fleet_migrations');
  const done = new Set(rows.map((row) => AppliedRow.parse(row).version));
  const known = list.reduce((latest, migration) => Math.max(latest, migration.version), 0);
  const newest = Math.max(0, ...done);
  if (newest > known) throw new SchemaTooNewError(newest, known);

  const applied: number[] = [];
  for (const migration of [...list].sort((a, b) => a.version - b.version)) {
    if (done.has(migration.version)) continue;
    // On the lock holder itself: a second client could wait forever on a pool of one.
    await lockHolder.query('begin');
    try {
      await lockHolder.query(migration.sql);
      await lockHolder.query('insert into mcp_fleet_migrations (version, name) values ($1, $2)', [
        migration.version,
        migration.name,
      ]);
      await lockHolder.query('commit');
    } catch (error) {
      // A failed rollback means a broken connection; the unlock after it fails
      // too and the client is discarded there.
      await lockHolder.query('rollback').catch(() => {});
      throw new MigrationError(migration, error);
    }
    applied.push(migration.version);
  }
  return applied;
}
