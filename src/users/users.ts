/**
 * The users of one worker (or fleet): adding one makes a key shown once,
 * rotating replaces it (the old one stops working at once), and a presented
 * key is answered with its principal.
 */
import { isUserKey, keyHash, newUserKey } from './keys.js';
import type { Principal } from './principal.js';
import type { StoredUser, UsersStore, UserView } from './store.js';

export interface Users {
  list(): Promise<UserView[]>;
  /** Adds a user; resolves with the key, the only time it is seen. Rejects with `UserExistsError`. */
  add(name: string, groups: readonly string[]): Promise<UserView & { key: string }>;
  /** A new key for the user (the old one stops working); undefined for an unknown user. */
  rotate(name: string): Promise<(UserView & { key: string }) | undefined>;
  /** False for an unknown user. */
  remove(name: string): Promise<boolean>;
  /** The principal of a user key; undefined for anything else. */
  authenticate(key: string): Promise<Principal | undefined>;
  /** The user of that name, with its key's hash (what a page session is bound to). */
  get(name: string): Promise<StoredUser | undefined>;
}

const view = (user: StoredUser): UserView => ({ name: user.name, groups: [...user.groups] });

export function createUsers(store: UsersStore): Users {
  return {
    list: async () => (await store.list()).map(view),
    async add(name, groups) {
      const key = newUserKey();
      const unique = [...new Set(groups)];
      await store.add({ name, groups: unique, key_hash: keyHash(key), created_at: new Date().toISOString() });
      return { name, groups: unique, key };
    },
    async rotate(name) {
      const key = newUserKey();
      if (!(await store.setKeyHash(name, keyHash(key)))) return undefined;
      const user = await store.get(name);
      return { name, groups: user?.groups ?? [], key };
    },
    remove: (name) => store.remove(name),
    async authenticate(key) {
      if (!isUserKey(key)) return undefined;
      const user = await store.byKeyHash(keyHash(key));
      return user === undefined ? undefined : { id: user.name, groups: [...user.groups] };
    },
    get: (name) => store.get(name),
  };
}
