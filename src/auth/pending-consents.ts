/**
 * Consents under way whose callback may land on any worker (`serve
 * --public-url`): the authorization request's `state`, and the server it is
 * for. The PKCE verifier is in the server's credentials, which every worker
 * reads. Only a hash of the state is kept: a copy of the table cannot answer
 * a callback. A state is taken once.
 *
 * A user's consent (a `per_user` server) is also bound to whom it is for and
 * to the browser that began it (a hash of its binding, consent-binding.ts),
 * and holds for `ttlMs` only.
 */
import { createHash } from 'node:crypto';
// errors.js, not database.js: the file-store host must not load the database driver (src/fleet.ts).
import type { Database } from '../fleet/index.js';
import { DatabaseUnavailableError, isConnectionError } from '../fleet/database-errors.js';

/** Whom a user's consent is for, and the browser it was begun in. */
export interface ConsentOwner {
  principal: string;
  /** Hash of the browser's binding (consent-binding.ts `bindingHash`). */
  binding: string;
  /** How long the state can be answered, in milliseconds. */
  ttlMs: number;
}

/** What a taken state was for: the server, and for a user's consent whom and which browser. */
export interface PendingConsent {
  server: string;
  owner?: { principal: string; binding: string };
}

export interface PendingConsents {
  /** Records that `state` belongs to a consent of `server`, begun by `worker` (for `owner`, when a user's). */
  add(state: string, server: string, worker: string, owner?: ConsentOwner): Promise<void>;
  /** What `state` belongs to, if a consent with it is pending and not expired; it is no longer pending after. */
  take(state: string): Promise<PendingConsent | null>;
  /** Forgets `state` (the consent was cancelled or timed out). */
  drop(state: string): Promise<void>;
}

/** How long a pending consent can be answered: as long as a consent may wait. */
const PENDING_FOR = '1 hour';
const PENDING_FOR_MS = 3_600_000;

const hashOf = (state: string) => createHash('sha256').update(state).digest('base64url');

/** Pending consents of this process only (a single worker). */
export function memoryPendingConsents(): PendingConsents {
  const pending = new Map<string, PendingConsent & { until: number }>();
  return {
    async add(state, server, _worker, owner) {
      const until = Date.now() + (owner?.ttlMs ?? PENDING_FOR_MS);
      pending.set(hashOf(state), { server, until, ...(owner && { owner: { principal: owner.principal, binding: owner.binding } }) });
    },
    async take(state) {
      const key = hashOf(state);
      const found = pending.get(key);
      pending.delete(key);
      if (found === undefined || Date.now() > found.until) return null;
      return { server: found.server, ...(found.owner && { owner: found.owner }) };
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
    async add(state, server, worker, owner) {
      // The expiry by the database's clock, which every worker reads alike.
      await query(
        `insert into consents (state, server, record) values ($1, $2,
           jsonb_build_object('worker', $3::text, 'owner', $4::jsonb,
             'until', extract(epoch from now() + make_interval(secs => $5::double precision / 1000))))`,
        [hashOf(state), server, worker, owner ? JSON.stringify({ principal: owner.principal, binding: owner.binding }) : null, owner?.ttlMs ?? PENDING_FOR_MS],
      );
    },
    async take(state) {
      const { rows } = await query<{ server: string; owner: { principal: string; binding: string } | null }>(
        `delete from consents where state = $1 and created_at > now() - interval '${PENDING_FOR}'
           and (record->'until' is null or (record->>'until')::double precision >= extract(epoch from now()))
         returning server, record->'owner' as owner`,
        [hashOf(state)],
      );
      // An expired state is gone too: it is never answered.
      if (rows.length === 0) await query('delete from consents where state = $1', [hashOf(state)]);
      const row = rows[0];
      if (row === undefined) return null;
      return { server: row.server, ...(row.owner !== null && row.owner !== undefined && { owner: row.owner }) };
    },
    async drop(state) {
      await query('delete from consents where state = $1', [hashOf(state)]);
    },
  };
}
