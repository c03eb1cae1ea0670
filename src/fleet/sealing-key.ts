/**
 * Whether a worker's (or an import's) secret key is the fleet's: the one its
 * stored secrets are sealed with. A worker with another key would start,
 * say it is ready, and skip every server whose secrets it cannot open; an
 * import would write rows no other worker can open. Both are refused.
 */
import type pg from 'pg';
import type { SecretKey } from '../config/secrets/secret-key.js';

/** Every stored value that may hold a sealed secret, as text (jsonb prints `"kid": "…"`). */
const SEALED_TEXTS = `
  select config::text as text from servers where config is not null
  union all select record::text from credentials
  union all select value::text from user_inputs`;

/** Thrown when the database holds sealed secrets and none was sealed with this key. */
export class SealingKeyMismatchError extends Error {
  override readonly name = 'SealingKeyMismatchError';
  constructor(readonly storedKeyId: string, readonly keyId: string) {
    super(
      `the database's secrets are sealed with key ${storedKeyId}, but the key in use here is ${keyId}: every worker and import of a fleet needs the same MCP_FLEET_SECRET_KEY`,
    );
  }
}

/** Resolves when `key` sealed some stored secret or none is stored; else throws `SealingKeyMismatchError`. */
export async function checkSealingKey(pool: pg.Pool, key: SecretKey): Promise<void> {
  const { rows } = await pool.query<{ mine: boolean; other: string | null }>(
    `select exists (select 1 from (${SEALED_TEXTS}) t where strpos(t.text, $1) > 0) as mine,
            (select substring(t.text from '"kid": "([0-9a-f]{16})"') from (${SEALED_TEXTS}) t where t.text like '%"$sealed"%' limit 1) as other`,
    [`"kid": "${key.id}"`],
  );
  const found = rows[0];
  if (found !== undefined && !found.mine && found.other !== null) throw new SealingKeyMismatchError(found.other, key.id);
}
