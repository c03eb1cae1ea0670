/**
 * Consents under way whose callback may land on any worker (`serve
 * --public-url`): the authorization request's `state`, and the server it is
 * for. The PKCE verifier is in the server's credentials, which every worker
 * reads. Only a hash of the state is kept: a copy of the table cannot answer
 * a callback. A state is taken once.
 */
import { createHash } from 'node:crypto';
// errors.js, not database.js: the file-store host must not load the database driver (src/fleet.ts).
import type { Database } from '../fleet/index.js';
import { DatabaseUnavailableError, isConnectionError } from '../fleet/database-errors.js';

export interface PendingConsents {
  /** Records that `state` belongs to a consent of `server`, begun by `worker`. */
  add(state: string, server: string, worker: string): Promise<void>;
  /** The server `state` belongs to, if a consent with it is pending; it is no longer pending after. */
  take(state: string): Promise<string | null>;
  /** Forgets `state` (the consent was cancelled or timed out). */
  drop(state: string): Promise<void>;
}

/** How long a pending consent can be answered: as long as a consent may wait. */
const PENDING_FOR = '1 hour';

const hashOf = (state: string) => createHash('sha256').update(state).digest('base64url');

/** Pending consents of this process only (a single worker). */
export function memoryPendingConsents(): PendingConsents {
  const pending = new Map<string, string>();
  return {
    async add(state, server) {
      pending.set(hashOf(state), server);
    },
    async take(state) {
      const key = hashOf(state);
      const server = pending.get(key) ?? null;
      pending.delete(key);
      return server;
    },
    async drop(state) {
      pending.delete(hashOf(state));
    },
  };
}

/** Pending consents in the fleet's database (table `consents`), so the callback may reach any worker. */
export function pgPendingConsents(db: Database): PendingConsents {
  async function query<T extends object>(text: string, values: unknown[]) {
    try {
      return await db.pool.query<T>(text, values);
    } catch (error) {
      throw isConnectionError(error) ? new DatabaseUnavailableError(db.url, { cause: error }) : error;
    }
  }
  return {
    async add(state, server, worker) {
      await query('insert into consents (state, server, record) values ($1, $2, $3)', [hashOf(state), server, { worker }]);
    },
    async take(state) {
      const { rows } = await query<{ server: string }>(
        `delete from consents where state = $1 and created_at > now() - interval '${PENDING_FOR}' returning server`,
        [hashOf(state)],
      );
      return rows[0]?.server ?? null;
    },
    async drop(state) {
      await query('delete from consents where state = $1', [hashOf(state)]);
    },
  };
}
