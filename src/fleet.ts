// `mcp-fleet/fleet`: the PostgreSQL side of mcp-fleet, for a host that embeds
// the library and shares servers, credentials and history with other
// workers (README, "Several workers"). Kept out of the main entry so a host
// on the state dir never loads the database driver.
export { openSharedStores } from './fleet/shared-stores.js';
export type { SharedStores, SharedStoresOptions } from './fleet/shared-stores.js';
export { databasePresence, defaultWorkerId, FleetView, FleetWorker, localPresence } from './fleet/presence.js';
export type { Presence } from './fleet/presence.js';
export { createPgConfigStore } from './config/pg-config-store.js';
export { createPgEventStore } from './journal/pg-event-store.js';
export type { PgEventStore } from './journal/pg-event-store.js';
export { createPgCredentialsStore } from './auth/pg-credentials-store.js';
export { createPgUsersStore } from './users/pg-users-store.js';
export { pgPendingConsents } from './auth/pending-consents.js';
export { DATABASE_URL_ENV, DatabaseUrlError, openDatabase, withTransaction } from './fleet/database.js';
export type { Database } from './fleet/database.js';
export { migrate } from './fleet/migrations.js';
export { generateSecretKeyText, loadSecretKey, SecretKeyError } from './config/secrets/secret-key.js';
export type { SecretKey } from './config/secrets/secret-key.js';
