/**
 * The server config in PostgreSQL, shared by every worker on the database
 * (`serve --database-url`). One row per server ever configured: a delete
 * leaves a tombstone (`config` null), so a worker catching up after an
 * outage sees it. Every write is one transaction under one lock, bumps the
 * global `config_versions` counter and stamps each changed row with it, and
 * tells every worker with `NOTIFY mcp_fleet_config`. Secrets are sealed
 * (AES-256-GCM) with the worker's key; what a reader gets is validated as a
 * file entry is.
 */
import { isDeepStrictEqual } from 'node:util';
import type pg from 'pg';
import { DatabaseUnavailableError, isConnectionError, redactUrl, withTransaction, type Database } from '../fleet/database.js';
import { listen } from '../fleet/pg-listen.js';
import { openServerConfig, sealServerConfig } from './secrets/seal-config.js';
import type { SecretKey } from './secrets/secret-key.js';
import { ConfigError } from '../errors.js';
import type { ServerConfig } from './schema.js';
import {
  entriesOf,
  type ConfigStore,
  type ConfigStoreLogger,
  type LoadedConfig,
  type ServerList,
  type ServersMutator,
  type StoredConfig,
  type StoredEntry,
} from './store.js';
import { shortForm } from './short-form.js';
import { entryField, parseServerConfig } from './validate.js';

/** The channel every config write notifies; the payload is the new global version. */
export const CONFIG_CHANNEL = 'mcp_fleet_config';
/** Held by each write's transaction, so writes from every worker apply one after another (none lost). */
const WRITE_LOCK = "hashtext('mcp-fleet:config')";

export interface PgConfigStoreOptions {
  db: Database;
  key: SecretKey;
  /** Stamped on each row it writes (`updated_by`). */
  workerId: string;
  logger?: ConfigStoreLogger;
}

interface Row {
  name: string;
  position: string;
  config: unknown;
  version: string;
}

export function createPgConfigStore(options: PgConfigStoreOptions): ConfigStore {
  const { db, key, workerId } = options;
  const logger = options.logger ?? { warn: (message: string) => console.warn(message) };
  const where = `the database at ${redactUrl(db.url)}`;
  let known = new Map<string, StoredEntry>();

  /** Runs a query; a database that cannot be reached is one clear error, not a driver's. */
  async function guarded<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (isConnectionError(error)) throw new DatabaseUnavailableError(db.url, { cause: error });
      throw error;
    }
  }

  /** The rows as servers: opened, validated; an entry that does not validate is skipped and named. */
  function interpret(rows: readonly Row[]): LoadedConfig {
    const servers: Array<[string, ServerConfig]> = [];
    const warnings: string[] = [];
    const invalid: LoadedConfig['invalid'] = [];
    const versions: Record<string, number> = {};
    for (const row of rows) {
      if (row.config === null) continue;
      try {
        servers.push([row.name, parseServerConfig(row.name, openServerConfig(key, row.name, row.config))]);
        versions[row.name] = Number(row.version);
      } catch (error) {
        // A row that cannot be opened (no ConfigError) is wrong as a whole: its field is the entry's.
        const field = error instanceof ConfigError ? entryField(row.name, error) : `servers.${row.name}`;
        invalid.push({ name: row.name, problem: (error as Error).message, field });
        warnings.push(`${where}: server "${row.name}" skipped: ${(error as Error).message}`);
      }
    }
    return { servers, warnings, invalid, broken: null, versions };
  }

  async function readRows(client: pg.Pool | pg.PoolClient, lock = false): Promise<Row[]> {
    const result = await client.query<Row>(
      `select name, position, config, version from servers order by position, name${lock ? ' for update' : ''}`,
    );
    return result.rows;
  }

  /**
   * Writes `next` (validated) in one transaction: changed and new servers
   * get the next global version and are stored as the file stores them
   * (short-form.ts: no defaults, nested ones included), `removed` ones a
   * tombstone; a row not named in either stays as it is.
   */
  async function write(client: pg.PoolClient, rows: readonly Row[], current: LoadedConfig, next: Map<string, ServerConfig>, removed: readonly string[]) {
    const live = new Map(current.servers);
    const changed = [...next].filter(([name, config]) => !isDeepStrictEqual(live.get(name), config));
    if (changed.length === 0 && removed.length === 0) return;
    const bumped = await client.query<{ version: string }>('update config_versions set version = version + 1 where id = 1 returning version');
    const version = bumped.rows[0]!.version;
    let position = rows.reduce((highest, row) => Math.max(highest, Number(row.position)), 0);
    const positions = new Map(rows.filter((row) => row.config !== null).map((row) => [row.name, row.position]));
    for (const [name, config] of changed) {
      await client.query(
        `insert into servers (name, position, config, version, updated_at, updated_by) values ($1, $2, $3, $4, now(), $5)
         on conflict (name) do update set position = excluded.position, config = excluded.config, version = excluded.version,
           updated_at = now(), updated_by = excluded.updated_by`,
        [name, positions.get(name) ?? String((position += 1)), sealServerConfig(key, name, shortForm(config)), version, workerId],
      );
    }
    for (const name of removed) {
      await client.query('update servers set config = null, version = $2, updated_at = now(), updated_by = $3 where name = $1', [
        name,
        version,
        workerId,
      ]);
    }
    // Delivered to every listener when the transaction commits, never before.
    await client.query('select pg_notify($1, $2)', [CONFIG_CHANNEL, version]);
  }

  /** Runs `change` on the rows as they are now, under the write lock; returns the servers and versions it committed. */
  function transaction(change: (client: pg.PoolClient, rows: Row[], current: LoadedConfig) => Promise<void>): Promise<StoredConfig> {
    return guarded(() =>
      withTransaction(db.pool, async (client) => {
        await client.query(`select pg_advisory_xact_lock(${WRITE_LOCK})`);
        const rows = await readRows(client, true);
        await change(client, rows, interpret(rows));
        const after = interpret(await readRows(client));
        known = entriesOf(after.servers, after.versions);
        return { servers: after.servers, versions: after.versions };
      }),
    );
  }

  function parsedList(servers: ServerList): Map<string, ServerConfig> {
    const entries = Array.isArray(servers) ? servers : Object.entries(servers);
    const parsed = new Map<string, ServerConfig>();
    for (const [name, config] of entries) {
      if (parsed.has(name)) throw new ConfigError(`servers.${name}: duplicate name`, `servers.${name}`);
      parsed.set(name, parseServerConfig(name, config, { fieldPrefix: `servers.${name}` }));
    }
    return parsed;
  }

  const store: ConfigStore = {
    file: () => `${redactUrl(db.url)} (table servers)`,

    async load() {
      const loaded = interpret(await guarded(() => readRows(db.pool)));
      for (const warning of loaded.warnings) logger.warn(warning);
      known = entriesOf(loaded.servers, loaded.versions);
      return { ...loaded, versions: { ...loaded.versions } };
    },

    async save(servers) {
      const next = parsedList(servers);
      // The whole list is replaced: a row that did not validate goes too, unless `servers` names it.
      await transaction((client, rows, current) => {
        const stored = rows.filter((row) => row.config !== null).map((row) => row.name);
        return write(client, rows, current, next, stored.filter((name) => !next.has(name)));
      });
    },

    update(mutator: ServersMutator) {
      return transaction(async (client, rows, current) => {
        const copy = Object.fromEntries(current.servers.map(([name, config]) => [name, structuredClone(config)]));
        const invalidNames = current.invalid.map((entry) => entry.name);
        const discarded = new Set<string>();
        const next = parsedList(await mutator(copy, { invalidNames, versions: current.versions, discard: (name) => discarded.add(name) }));
        // As in the file: an entry that does not validate is kept unless the mutator names or discards it.
        const removed = [
          ...current.servers.map(([name]) => name).filter((name) => !next.has(name)),
          ...invalidNames.filter((name) => discarded.has(name) && !next.has(name)),
        ];
        await write(client, rows, current, next, removed);
      });
    },

    stored: (name) => known.get(name),

    watch(onChange) {
      // A reconnect after an outage also calls onChange: the worker catches up by reading the rows, not the missed notifications.
      return listen(db, CONFIG_CHANNEL, onChange, {
        onReconnect: onChange,
        onError: (error) => logger.warn(`${where}: config notifications: ${error.message}`),
      });
    },
  };
  return store;
}
