/**
 * What a worker on a shared PostgreSQL (`serve --database-url`) keeps there:
 * the config, the OAuth credentials, the users and the journal, each behind the same
 * interface as its file store, plus the heartbeat that makes the fleet view.
 * The secret key is loaded first: a worker that could not read or write a
 * secret refuses to start. The database may be away at start; `reach()`
 * retries with backoff until the schema is in place.
 */
import type { ConfigStore } from '../config/index.js';
import { createPgConfigStore } from '../config/pg-config-store.js';
import { assertDatabaseUrl } from './database-errors.js';
import { isConnectionError, openDatabase, redactUrl, type Database } from './database.js';
import { migrate } from './migrations.js';
import { createPgEventStore, type PgEventStore } from '../journal/pg-event-store.js';
import type { CredentialsStore } from '../auth/index.js';
import { createPgCredentialsStore } from '../auth/pg-credentials-store.js';
import { loadSecretKey } from '../config/secrets/secret-key.js';
import { claimWorkerId, databasePresence, type Presence } from './presence.js';
import { createPgUsersStore } from '../users/pg-users-store.js';
import { checkSealingKey } from './sealing-key.js';
import type { UsersStore } from '../users/store.js';
import type { UserInputsStore } from '../users/inputs-store.js';
import { createPgInputsStore } from '../users/pg-inputs-store.js';

export interface SharedStoresOptions {
  url: string;
  workerId: string;
  /** Where `secret_key` may be (beside the config: the state dir). */
  stateDir: string;
  env?: NodeJS.ProcessEnv;
  /** This worker's servers and their states, for its heartbeat (default: those of the host given `presence`). */
  states?: () => Record<string, string>;
  logger: { info(message: string): void; warn(message: string): void };
}

export interface SharedStores {
  db: Database;
  config: ConfigStore;
  credentials: CredentialsStore;
  events: PgEventStore;
  /** The users and their key hashes: a key made on one worker is let in by every other. */
  users: UsersStore;
  /** Each user's inputs of per_user servers, sealed with the fleet's key. */
  userInputs: UserInputsStore;
  presence: Presence;
  /**
   * Resolves once the database answers and its schema is current; retries (one
   * log line per attempt) until then. `onWait` is told each time an attempt
   * failed and a retry is waited for.
   */
  reach(signal?: AbortSignal, onWait?: () => void): Promise<void>;
  /** Whether `reach` has succeeded. */
  readonly reached: boolean;
  /** Stops the heartbeat and closes the pool (after the host shut down). */
  close(): Promise<void>;
}

/** Retry delays of `reach`: doubling from 0.5 s, at most 10 s. */
const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 10_000;

/**
 * Opens the stores; throws `DatabaseUrlError` for a bad URL (before the key is
 * read, as `serve` checks it), `SecretKeyError` without a key. No connection
 * is made until `reach`.
 */
export function openSharedStores(options: SharedStoresOptions): SharedStores {
  assertDatabaseUrl(options.url);
  const key = loadSecretKey({ env: options.env, configDir: options.stateDir });
  const { workerId, logger } = options;
  const where = redactUrl(options.url);
  const db = openDatabase(options.url, {
    applicationName: `mcp-fleet ${workerId}`.slice(0, 63),
    onConnectionError: (error) => logger.warn(`database ${where}: a connection dropped (${error.message})`),
  });
  let reached = false;
  return {
    db,
    config: createPgConfigStore({ db, key, workerId, logger }),
    credentials: createPgCredentialsStore({ db, key, workerId }),
    users: createPgUsersStore(db),
    userInputs: createPgInputsStore({ db, key }),
    events: createPgEventStore({ db, workerId, onError: (error) => logger.warn(`journal: ${error.message}`) }),
    presence: databasePresence(db, {
      workerId,
      ...(options.states && { states: options.states }),
      onError: (error) => logger.warn(`database ${where}: heartbeat failed (${error.message})`),
    }),
    get reached() {
      return reached;
    },
    async reach(signal, onWait) {
      let delay = FIRST_RETRY_MS;
      for (let attempt = 1; ; attempt += 1) {
        try {
          const { applied } = await migrate(db.pool);
          if (applied.length > 0) logger.info(`database ${where}: schema migrated (${applied.join(', ')})`);
          await checkSealingKey(db.pool, key);
          await claimWorkerId(db, workerId);
          reached = true;
          return;
        } catch (error) {
          if (!isConnectionError(error)) throw error;
          logger.warn(`database ${where}: attempt ${attempt} failed (${(error as Error).message}); retrying in ${delay / 1000} s`);
        }
        onWait?.();
        await new Promise((resolve) => setTimeout(resolve, delay));
        if (signal?.aborted) throw signal.reason;
        delay = Math.min(delay * 2, MAX_RETRY_MS);
      }
    },
    async close() {
      await this.presence.stop();
      await db.close();
    },
  };
}
