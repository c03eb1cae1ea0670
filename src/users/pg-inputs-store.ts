/**
 * Each user's inputs in the PostgreSQL a fleet shares (table `user_inputs`,
 * migration 3): one row per server, principal and name, the value sealed with
 * the fleet's secret key, so every worker connects a user's session with the
 * values they set on any of them.
 */
import { reportingUnavailable, withTransaction, type Database } from '../fleet/database.js';
import { open, seal, SealedValue } from '../config/secrets/sealed.js';
import type { SecretKey } from '../config/secrets/secret-key.js';
import { inputContext, type UserInputsStore } from './inputs-store.js';

export function createPgInputsStore({ db, key }: { db: Database; key: SecretKey }): UserInputsStore {
  return reportingUnavailable(db, {
    async get(server, principal) {
      const { rows } = await db.pool.query('select name, value from user_inputs where server = $1 and principal = $2', [server, principal]);
      return Object.fromEntries(
        rows.map((row: { name: string; value: unknown }) => [row.name, open(key, SealedValue.parse(row.value), inputContext(server, principal, row.name))]),
      );
    },
    set(server, principal, patch) {
      return withTransaction(db.pool, async (client) => {
        for (const [name, value] of Object.entries(patch)) {
          if (value === null) {
            await client.query('delete from user_inputs where server = $1 and principal = $2 and name = $3', [server, principal, name]);
          } else {
            await client.query(
              `insert into user_inputs (server, principal, name, value) values ($1, $2, $3, $4)
               on conflict (server, principal, name) do update set value = excluded.value, updated_at = now()`,
              [server, principal, name, JSON.stringify(seal(key, value, inputContext(server, principal, name)))],
            );
          }
        }
        const { rows } = await client.query('select name from user_inputs where server = $1 and principal = $2 order by name', [server, principal]);
        return rows.map((row: { name: string }) => row.name);
      });
    },
    async forget(of) {
      if (of.server === undefined && of.principal === undefined) return;
      await db.pool.query('delete from user_inputs where ($1::text is null or server = $1) and ($2::text is null or principal = $2)', [
        of.server ?? null,
        of.principal ?? null,
      ]);
    },
  });
}
