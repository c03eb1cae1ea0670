/**
 * The OAuth credentials in the PostgreSQL every worker of a fleet shares
 * (table `credentials`, migration 1): one row per server, its record sealed
 * with the worker's secret key (secrets/seal-credentials.ts), so no token,
 * client secret, PKCE verifier or DPoP private key is stored readable.
 *
 * A server's lock is a transaction-scoped advisory lock on its name: taken by
 * every write, released by the commit, so a refresh re-reads the row inside
 * it and its rotated refresh token is committed before anyone can use it. An
 * advisory lock rather than `select … for update`: a server without a row yet
 * (its first registration) locks the same way.
 */
import type pg from 'pg';
import {
  DatabaseUnavailableError,
  isConnectionError,
  withTransaction,
  type Database,
} from '../fleet/database.js';
import { listen } from '../fleet/pg-listen.js';
import { openCredentialsRecord, sealCredentialsRecord } from '../config/secrets/seal-credentials.js';
import { SecretOpenError } from '../config/secrets/sealed.js';
import type { SecretKey } from '../config/index.js';
import { FleetError } from '../errors.js';
import { describeZodError } from '../config/zod-errors.js';
import { boundRecord, CredentialsRecord, emptyRecord } from './credentials-file.js';
import { BINDING_KEY_LABEL, grantKeyPattern, type CredentialsStore, type LockedChange } from './credentials-store.js';
import { derivedKey } from '../config/secrets/secret-key.js';

export interface PgCredentialsStoreOptions {
  /** The fleet's database (`openDatabase`), migrated. */
  db: Database;
  /** Seals every record written and opens every record read. */
  key: SecretKey;
  /** Recorded as `updated_by` of the rows this worker writes. */
  workerId: string;
}

/**
 * The lock of one server's credentials: the two-key form (its own key space,
 * apart from the migrations' one-key lock), namespaced by the first key.
 */
const LOCK_SQL = "select pg_advisory_xact_lock(hashtext('mcp-fleet:credentials'), hashtext($1))";
/**
 * How long a worker waits for another's lock: longer than a refresh may take
 * (provider.ts bounds it at 30 s), so only a stuck holder makes it give up.
 */
const LOCK_TIMEOUT = '60s';
/** Notified on every commit that stores tokens: `{server, by}`. */
export const TOKENS_CHANNEL = 'mcp_fleet_tokens';
/** Notified when a pending consent ended without tokens (refused, timed out, cancelled): `{server, consent, error, by}`. */
export const CONSENTS_CHANNEL = 'mcp_fleet_consents';
/** A notification's payload is at most 8000 bytes: the reason is cut well short of that. */
const MAX_REASON = 1000;

export function createPgCredentialsStore({ db, key, workerId }: PgCredentialsStoreOptions): CredentialsStore {
  /** The record of `stored` (a row's jsonb, or undefined for no row), opened, checked and bound as `load` promises. */
  function opened(server: string, stored: unknown, serverUrl: string, configuredClientId: string | null): CredentialsRecord {
    if (stored === undefined) return emptyRecord(serverUrl, configuredClientId);
    let json: unknown;
    try {
      json = openCredentialsRecord(key, server, stored);
    } catch (err) {
      // Not a consent matter: a consent would overwrite what the other workers can still open.
      if (err instanceof SecretOpenError) {
        throw new FleetError('config', `cannot open the OAuth credentials of server "${server}" in the database: ${err.message}`, {
          cause: err,
        });
      }
      throw err;
    }
    const parsed = CredentialsRecord.safeParse(json);
    if (!parsed.success) {
      const { message } = describeZodError(parsed.error);
      throw new FleetError('auth', `the OAuth credentials of server "${server}" in the database are not valid (${message}): delete them`);
    }
    return boundRecord(parsed.data, serverUrl, configuredClientId);
  }

  async function readRow(client: pg.Pool | pg.PoolClient, server: string): Promise<unknown> {
    const { rows } = await client.query<{ record: unknown }>('select record from credentials where server = $1', [server]);
    return rows[0]?.record;
  }

  async function writeRow(client: pg.PoolClient, server: string, record: CredentialsRecord): Promise<void> {
    await client.query(
      `insert into credentials (server, record, updated_at, updated_by) values ($1, $2::jsonb, clock_timestamp(), $3)
       on conflict (server) do update set record = excluded.record, updated_at = clock_timestamp(), updated_by = excluded.updated_by`,
      [server, JSON.stringify(sealCredentialsRecord(key, server, record)), workerId],
    );
    // Workers waiting on a consent (or in needs_reauth) learn on commit that tokens are there.
    if (record.tokens !== null) await client.query('select pg_notify($1, $2)', [TOKENS_CHANNEL, JSON.stringify({ server, by: workerId })]);
  }

  /**
   * Runs `task` in one transaction holding `server`'s lock. A failure of the
   * database becomes DatabaseUnavailableError; what the caller's own code
   * threw (FromCaller: an authorization server that is down, say) passes
   * through as it is, connection error or not.
   */
  async function locked<T>(server: string, task: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    try {
      return await withTransaction(db.pool, async (client) => {
        await client.query("select set_config('lock_timeout', $1, true)", [LOCK_TIMEOUT]);
        await client.query(LOCK_SQL, [server]);
        return task(client);
      });
    } catch (error) {
      if (error instanceof FromCaller) throw error.error;
      throw unavailable(error);
    }
  }

  /** The database's clock now; null when it cannot be read (then a catch-up reads every row). */
  async function databaseNow(): Promise<Date | null> {
    try {
      const { rows } = await db.pool.query<{ now: Date }>('select now() as now');
      return rows[0]!.now;
    } catch {
      return null;
    }
  }

  /**
   * The servers whose row holds tokens and was written since `at` (every row
   * holding tokens when `at` is null). A write stamps the row just before its
   * commit, which notifies: the margin covers a commit that came a little later.
   */
  async function storedSince(at: Date | null): Promise<string[]> {
    const { rows } = await db.pool.query<{ server: string; record: unknown }>(
      "select server, record from credentials where $1::timestamptz is null or updated_at >= $1::timestamptz - interval '10 seconds'",
      [at],
    );
    return rows.flatMap(({ server, record }) => {
      try {
        const parsed = CredentialsRecord.safeParse(openCredentialsRecord(key, server, record));
        return parsed.success && parsed.data.tokens !== null ? [server] : [];
      } catch {
        // A row this worker cannot open is said so where it is loaded.
        return [];
      }
    });
  }

  /** `error` as DatabaseUnavailableError when it says the database is away (its message names host:port, never the password). */
  function unavailable(error: unknown): unknown {
    if (error instanceof DatabaseUnavailableError || !isConnectionError(error)) return error;
    return new DatabaseUnavailableError(db.url, { cause: error });
  }

  return {
    watchTokens(onTokens) {
      /** The database's time when nothing stored since could have been missed: the last (re)start of the LISTEN. */
      let since = databaseNow();
      return listen(
        db,
        TOKENS_CHANNEL,
        (payload) => {
          const { server, by } = JSON.parse(payload) as { server: string; by: string };
          if (by !== workerId) onTokens(server);
        },
        {
          // Notifications sent while the connection was down are lost: the rows stored since say what they were.
          onReconnect() {
            const from = since;
            since = databaseNow();
            void from.then((at) => storedSince(at)).then((servers) => servers.forEach(onTokens), () => undefined);
          },
        },
      );
    },

    async tellConsentEnded(server, consent, error) {
      const payload = JSON.stringify({ server, consent, error: error.slice(0, MAX_REASON), by: workerId });
      try {
        await db.pool.query('select pg_notify($1, $2)', [CONSENTS_CHANNEL, payload]);
      } catch (failure) {
        throw unavailable(failure);
      }
    },

    watchConsents(onEnded) {
      // Only while a consent waits here (server-auth.ts opens it then): a notification lost to an outage leaves
      // that worker waiting until its own deadline, which is the consent's, as before.
      return listen(db, CONSENTS_CHANNEL, (payload) => {
        const { server, consent, error, by } = JSON.parse(payload) as { server: string; consent: string; error: string; by: string };
        if (by !== workerId) onEnded(server, consent, error);
      });
    },

    async load(server, serverUrl, configuredClientId) {
      let stored: unknown;
      try {
        stored = await readRow(db.pool, server);
      } catch (error) {
        throw unavailable(error);
      }
      return opened(server, stored, serverUrl, configuredClientId);
    },

    save: (server, record) => locked(server, (client) => writeRow(client, server, record)),

    delete: (server) =>
      locked(server, async (client) => {
        await client.query('delete from credentials where server = $1', [server]);
      }),

    async deleteGrants(of) {
      try {
        await db.pool.query("delete from credentials where server like $1 escape '\\'", [grantKeyPattern(of)]);
      } catch (error) {
        throw unavailable(error);
      }
    },

    bindingKey: async () => derivedKey(key, BINDING_KEY_LABEL),

    lockForRefresh<T>(
      server: string,
      serverUrl: string,
      configuredClientId: string | null,
      fn: (current: CredentialsRecord) => Promise<LockedChange<T>>,
    ): Promise<T> {
      return locked(server, async function refreshUnderLock(client) {
        const current = opened(server, await readRow(client, server), serverUrl, configuredClientId);
        let change: LockedChange<T>;
        try {
          change = await fn(current);
        } catch (error) {
          throw new FromCaller(error);
        }
        if (change.record !== null) await writeRow(client, server, change.record);
        return change.result;
      });
    },
  };
}

/** What the function given to `lockForRefresh` threw, carried out of the transaction untouched. */
class FromCaller {
  constructor(readonly error: unknown) {}
}
