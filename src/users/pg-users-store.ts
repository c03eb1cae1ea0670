/**
 * Users in the PostgreSQL every worker of a fleet shares (table `users`,
 * migration 2): a key made on one worker signs in on every other at once.
 * Each request looks its key's hash up by the table's unique index, so while
 * the database is away a user key is answered `503 database_unavailable`.
 */
import { reportingUnavailable, type Database } from '../fleet/database.js';
import { StoredUser, UserExistsError, type UsersStore } from './store.js';

/** Postgres's code for a unique violation. */
const UNIQUE_VIOLATION = '23505';

const COLUMNS = `name, groups, key_hash, quota, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created_at`;

export function createPgUsersStore(db: Database): UsersStore {
  const rows = async (sql: string, params: unknown[] = []): Promise<StoredUser[]> =>
    (await db.pool.query(sql, params)).rows.map(({ quota, ...row }: { quota: unknown }) =>
      StoredUser.parse(quota === null ? row : { ...row, quota }),
    );

  return reportingUnavailable(db, {
    list: () => rows(`select ${COLUMNS} from users order by name`),
    byKeyHash: async (hash) => (await rows(`select ${COLUMNS} from users where key_hash = $1`, [hash]))[0],
    get: async (name) => (await rows(`select ${COLUMNS} from users where name = $1`, [name]))[0],
    async add(user) {
      try {
        await db.pool.query('insert into users (name, groups, key_hash, created_at, quota) values ($1, $2, $3, $4, $5)', [
          user.name,
          JSON.stringify(user.groups),
          user.key_hash,
          user.created_at,
          user.quota === undefined ? null : JSON.stringify(user.quota),
        ]);
      } catch (err) {
        if ((err as { code?: string }).code === UNIQUE_VIOLATION) throw new UserExistsError(user.name);
        throw err;
      }
    },
    async setKeyHash(name, hash) {
      const result = await db.pool.query('update users set key_hash = $2 where name = $1', [name, hash]);
      return result.rowCount === 1;
    },
    async setQuota(name, quota) {
      const result = await db.pool.query('update users set quota = $2 where name = $1', [name, quota === undefined ? null : JSON.stringify(quota)]);
      return result.rowCount === 1;
    },
    async remove(name) {
      const result = await db.pool.query('delete from users where name = $1', [name]);
      return result.rowCount === 1;
    },
  });
}
