/**
 * Where users live: an interface with a file implementation
 * (`<state_dir>/users.json`, written atomically and owner-only, one write at
 * a time) and a PostgreSQL one (pg-users-store.ts). Only a hash of each key
 * is stored (keys.ts).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { createSerialQueue, writeOwnerOnly } from '../files/index.js';
import { Quota } from './quota.js';

/** A user as stored: no key, only its hash. */
export const StoredUser = z.object({
  name: z.string(),
  groups: z.array(z.string()),
  key_hash: z.string(),
  created_at: z.string(),
  /** The user's own quota over the worker's defaults; absent: the defaults. */
  quota: Quota.optional(),
});
export type StoredUser = z.infer<typeof StoredUser>;

/** A user as every listing shows it, with their own limits when they have any (else the worker's defaults apply). */
export type UserView = { name: string; groups: string[] } & Quota;

/** A user of that name exists already. */
export class UserExistsError extends Error {
  override readonly name = 'UserExistsError';
  constructor(readonly user: string) {
    super(`a user named "${user}" already exists`);
  }
}

export interface UsersStore {
  /** Every user, by name. */
  list(): Promise<StoredUser[]>;
  /** The user whose key has this hash. */
  byKeyHash(hash: string): Promise<StoredUser | undefined>;
  get(name: string): Promise<StoredUser | undefined>;
  /** Rejects with {@link UserExistsError} when the name is taken. */
  add(user: StoredUser): Promise<void>;
  /** Replaces the user's key hash; false for an unknown user. */
  setKeyHash(name: string, hash: string): Promise<boolean>;
  /** Replaces the user's own quota (undefined: the worker's defaults again); false for an unknown user. */
  setQuota(name: string, quota: Quota | undefined): Promise<boolean>;
  /** False for an unknown user. */
  remove(name: string): Promise<boolean>;
}

/** `<stateDir>/users.json`. */
export function usersPath(stateDir: string): string {
  return path.join(stateDir, 'users.json');
}

const UsersFile = z.strictObject({
  users: z.record(z.string(), StoredUser.omit({ name: true })),
});

/**
 * Users in `<stateDir>/users.json`. The worker is the file's only writer (the
 * CLI goes through its API), so it is read once and kept; each change writes
 * the whole file. A file that does not parse is an error, never overwritten.
 */
export function createFileUsersStore(stateDir: string): UsersStore {
  // Named on first use: an app made on a host is not refused for a users file it never reads.
  let named: string | undefined;
  const fileName = (): string => (named ??= usersPath(stateDir));
  const writes = createSerialQueue();
  let loaded: Promise<Map<string, StoredUser>> | undefined;

  async function read(): Promise<Map<string, StoredUser>> {
    let text: string;
    try {
      text = await readFile(fileName(), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
      throw err;
    }
    const parsed = UsersFile.safeParse(JSON.parse(text));
    if (!parsed.success) throw new Error(`${fileName()} is not a users file: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    return new Map(Object.entries(parsed.data.users).map(([name, user]) => [name, { name, ...user }]));
  }

  const users = (): Promise<Map<string, StoredUser>> => {
    loaded ??= read().catch((err: unknown) => {
      loaded = undefined;
      throw err;
    });
    return loaded;
  };

  /** Applies `change` to a copy, writes it, then makes it the kept map: a failed write changes nothing. */
  function change<T>(apply: (next: Map<string, StoredUser>) => T): Promise<T> {
    return writes.run('users', async () => {
      const next = new Map(await users());
      const result = apply(next);
      const body = Object.fromEntries([...next].map(([name, { name: _name, ...rest }]) => [name, rest]));
      await writeOwnerOnly(fileName(), `${JSON.stringify({ users: body }, null, 2)}\n`);
      loaded = Promise.resolve(next);
      return result;
    });
  }

  return {
    list: async () => [...(await users()).values()].sort((a, b) => a.name.localeCompare(b.name)),
    byKeyHash: async (hash) => [...(await users()).values()].find((user) => user.key_hash === hash),
    get: async (name) => (await users()).get(name),
    add: (user) =>
      change((next) => {
        if (next.has(user.name)) throw new UserExistsError(user.name);
        next.set(user.name, { ...user, groups: [...user.groups] });
      }),
    setKeyHash: (name, hash) =>
      change((next) => {
        const user = next.get(name);
        if (user === undefined) return false;
        next.set(name, { ...user, key_hash: hash });
        return true;
      }),
    setQuota: (name, quota) =>
      change((next) => {
        const user = next.get(name);
        if (user === undefined) return false;
        const { quota: _old, ...rest } = user;
        next.set(name, quota === undefined ? rest : { ...rest, quota });
        return true;
      }),
    remove: (name) => change((next) => next.delete(name)),
  };
}
