// `mcp-fleet/fleet`: the PostgreSQL side of mcp-fleet, for a host that embeds
// the library and shares servers, credentials and history with other
// workers (README, "Several workers"). Kept out of the main entry so a host
// on the state dir never loads the database driver.
export { openSharedStores } from './services/fleet/shared-stores.js';
export type { SharedStores, SharedStoresOptions } from './services/fleet/shared-stores.js';
export { databasePresence, defaultWorkerId, FleetView, FleetWorker, localPresence } from './services/fleet/presence.js';
export type { Presence } from './services/fleet/presence.js';
export { createPgConfigStore } from './services/config/pg-config-store.js';
export { createPgEventStore } from './services/journal/pg-event-store.js';
export type { PgEventStore } from './services/journal/pg-event-store.js';
export { createPgCredentialsStore } from './services/oauth/pg-credentials-store.js';
export { pgPendingConsents } from './services/oauth/pending-consents.js';
export { DATABASE_URL_ENV, openDatabase, withTransaction } from './services/database/database.js';
export type { Database } from './services/database/database.js';
export { migrate } from './services/database/migrations.js';
export { generateSecretKeyText, loadSecretKey, SecretKeyError } from './services/secrets/secret-key.js';
export type { SecretKey } from './services/secrets/secret-key.js';
