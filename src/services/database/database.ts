/**
 * The connection to the PostgreSQL that several workers share
 * (`--database-url`, docs/several-workers.md): a pool, the errors that say "the database is away" as
 * opposed to "this query is wrong", and the one way to run a transaction.
 */
import pg from 'pg';


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
  /** Told when an idle connection breaks (the server restarted, the network dropped). */
  onIdleError?: (error: Error) => void;
}

/** How long a connect may take before the pool gives up: without it an unreachable host hangs a query forever. */
const CONNECT_TIMEOUT_MS = 10_000;

/** Opens a pool; no connection is made until the first query. */
export function openDatabase(url: string, options: OpenDatabaseOptions = {}): Database {
  const pool = new pg.Pool({
    connectionString: url,
    application_name: options.applicationName,
    max: options.max,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  });
  // An idle client whose connection drops emits 'error' on the pool; unheard,
  // that crashes the process. The pool already threw the client away, and the
  // next query opens a fresh one or reports its own failure.
  pool.on('error', function onIdleClientError(error) {
    options.onIdleError?.(error);
  });
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

export { DATABASE_URL_ENV, databaseAddress, DatabaseUnavailableError, isConnectionError, redactUrl } from './errors.js';

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
