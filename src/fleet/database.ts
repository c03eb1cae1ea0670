/**
 * The connection to the PostgreSQL that several workers share
 * (`--database-url`, docs/several-workers.md): a pool, the errors that say "the database is away" as
 * opposed to "this query is wrong", and the one way to run a transaction.
 */
import { createRequire } from 'node:module';
import type pg from 'pg';
import { assertDatabaseUrl, DatabaseUnavailableError, isConnectionError } from './database-errors.js';


export interface Database {
  pool: pg.Pool;
  /** The URL as given, password included: log `redactUrl(url)`, never this. */
  url: string;
  /** Ends every connection of the pool; later calls wait for the first. */
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  /** Shown in `pg_stat_activity.application_name`, e.g. the worker id. */
  applicationName?: string;
  /** Most connections the pool opens at once (pg's default: 10). */
  max?: number;
  /**
   * Told when a connection of the pool breaks, idle or checked out (the
   * server restarted, the network dropped): once per connection.
   */
  onConnectionError?: (error: Error) => void;
}

// The module itself, as Node's own module cache would keep it.
let loaded: typeof pg | undefined;

/**
 * pg, loaded when the first database is opened rather than by
 * `import('mcp-fleet')`: a host on its state dir never needs it, and pg with
 * its dependencies is ~4 MiB of a fresh process. pg is CommonJS, so it loads
 * synchronously and `openDatabase` stays synchronous.
 */
export function loadPg(): typeof pg {
  loaded ??= createRequire(import.meta.url)('pg') as typeof pg;
  return loaded;
}

/** How long a connect may take before the pool gives up: without it an unreachable host hangs a query forever. */
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * Opens a pool; no connection is made until the first query. A URL pg would
 * not take as meant (a port that is no number, an sslmode it does not act on)
 * throws `DatabaseUrlError` here, naming the problem, not at the first query
 * with pg's own unrelated words.
 */
export function openDatabase(url: string, options: OpenDatabaseOptions = {}): Database {
  assertDatabaseUrl(url);
  const pool = new (loadPg().Pool)({
    connectionString: url,
    application_name: options.applicationName,
    max: options.max,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  });
  // A client whose connection drops emits 'error'; unheard, that ends the
  // process. pg-pool listens only while a client is idle, not while it is
  // checked out (a transaction, an advisory lock held across a refresh), so
  // every client gets a listener of its own for its whole life. Its next query
  // then fails with a connection error, and withTransaction discards it.
  pool.on('connect', function listenForConnectionErrors(client) {
    client.on('error', function onConnectionError(error) {
      options.onConnectionError?.(error);
    });
  });
  // The pool re-emits an idle client's error; the client's own listener told it already.
  pool.on('error', function onIdleClientError() {});
  let closing: Promise<void> | undefined;
  return {
    pool,
    url,
    close: function closeDatabase() {
      closing ??= pool.end();
      return closing;
    },
  };
}

export { DATABASE_URL_ENV, databaseAddress, DatabaseUnavailableError, DatabaseUrlError, isConnectionError, redactUrl } from './database-errors.js';

/**
 * `store` with every method's connection error turned into
 * `DatabaseUnavailableError`, which the API answers as `503
 * database_unavailable` (a driver's bare ECONNREFUSED was a 500, or a tool
 * error quoting the driver). Other errors pass as they are.
 */
export function reportingUnavailable<T extends object>(db: Database, store: T): T {
  const away = (error: unknown) => {
    throw isConnectionError(error) && !(error instanceof DatabaseUnavailableError) ? new DatabaseUnavailableError(db.url, { cause: error }) : error;
  };
  return Object.fromEntries(
    Object.entries(store).map(([name, member]) => [
      name,
      typeof member === 'function' ? (...args: unknown[]) => Promise.resolve().then(() => member.apply(store, args)).catch(away) : member,
    ]),
  ) as T;
}

/**
 * Runs `fn` in one transaction on one client: BEGIN, COMMIT when `fn`
 * resolves, ROLLBACK when it throws (then its error is rethrown). The client
 * always goes back to the pool; one whose ROLLBACK failed is discarded, as
 * its connection is in an unknown state.
 */
export async function withTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('begin');
    const result = await fn(client);
    await client.query('commit');
    return result;
  } catch (error) {
    try {
      await client.query('rollback');
    } catch (rollbackError) {
      broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    }
    throw error;
  } finally {
    client.release(broken);
  }
}
