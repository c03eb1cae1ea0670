/**
 * The journal: domain events, the event stores (segment files, PostgreSQL),
 * the journal itself, and its projection into the views every API shows
 * (`ServerView`, the visible tools).
 */
// The public surface: what the rest of src/ uses of this domain.
export { createMemoryEventStore, type EventStore } from './event-store.js';
export { promptsListed, resourcesListed, type JournalEvent, type JournalEventInput, type OfferedKind, type ServerState, type ToolEntry } from './events.js';
export { createFileEventStore } from './file-event-store.js';
export { createJournal, type Journal } from './journal.js';
export { createPgEventStore, type PgEventStore } from './pg-event-store.js';
export { namespaceOwner, shadowedByRegistration, type ProjectedServer, type ProjectionContext, type RegisteredServer } from './projection.js';
export { createSelectors, type Selectors } from './selectors.js';
export { type ServerView } from './server-view.js';
