/**
 * Several workers on one PostgreSQL: the database (pool, errors, migrations,
 * `LISTEN` with its backoff), presence of the workers, and the shared stores
 * a worker opens on it.
 */
// The public surface: what the rest of src/ uses of this domain.
export { DATABASE_URL_ENV, DatabaseUnavailableError, databaseUrlProblem, isConnectionError, redactUrl } from './database-errors.js';
export { withTransaction, type Database } from './database.js';
export { createRetry, listen, type Listening } from './pg-listen.js';
export { defaultWorkerId, localPresence, statesByServer, type Presence } from './presence.js';
export { type SharedStores } from './shared-stores.js';
