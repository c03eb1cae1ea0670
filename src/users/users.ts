/**
 * The users of one worker (or fleet): adding one makes a key shown once,
 * rotating replaces it (the old one stops working at once), and a presented
 * key is answered with its principal.
 */
import { isUserKey, keyHash, newUserKey } from './keys.js';
import type { Principal } from './principal.js';
import type { StoredUser, UsersStore, UserView } from './store.js';
import type { Quota } from './quota.js';

export interface Users {
  list(): Promise<UserView[]>;
  /** Adds a user; resolves with the key, the only time it is seen. Rejects with `UserExistsError`. */
  add(name: string, groups: readonly string[], quota?: Quota): Promise<UserView & { key: string }>;
  /** A new key for the user (the old one stops working); undefined for an unknown user. */
  rotate(name: string): Promise<(UserView & { key: string }) | undefined>;
  /** Replaces the user's own quota (fields left out: the worker's defaults); undefined for an unknown user. */
  setQuota(name: string, quota: Quota): Promise<UserView | undefined>;
  /** False for an unknown user. */
  remove(name: string): Promise<boolean>;
  /** The principal of a user key; undefined for anything else. */
  authenticate(key: string): Promise<Principal | undefined>;
  /** The user of that name, with its key's hash (what a page session is bound to). */
  get(name: string): Promise<StoredUser | undefined>;
  /** Calls `listener` with a user's name once their key was rotated or they were removed here; returns the unsubscribe. */
  onSignedOut(listener: (name: string) => void): () => void;
}

const view = (user: StoredUser): UserView => ({ name: user.name, groups: [...user.groups], ...user.quota });

/** The quota without its absent fields (JSON and the stores keep no `undefined`). */
function definedOnly(quota: Quota): Quota {
  return Object.fromEntries(Object.entries(quota).filter(([, value]) => value !== undefined)) as Quota;
}

/** Whether a quota says anything (an empty one is the defaults, as none). */
function hasQuota(quota: Quota | undefined): quota is Quota {
  return quota !== undefined && Object.values(quota).some((value) => value !== undefined);
}

/** The principal a stored user acts as: their groups, and their own quota when they have one. */
export function principalOfUser(user: StoredUser): Principal {
  return { id: user.name, groups: [...user.groups], ...(hasQuota(user.quota) && { quota: { ...user.quota } }) };
}

export function createUsers(store: UsersStore): Users {
  // This instance's own: who holds a stream open for a user hears of their key going.
  const signedOut = new Set<(name: string) => void>();
  const tell = (name: string) => {
    for (const listener of [...signedOut]) listener(name);
  };
  return {
    list: async () => (await store.list()).map(view),
    async add(name, groups, quota) {
      const key = newUserKey();
      const unique = [...new Set(groups)];
      const own = hasQuota(quota) ? { quota: definedOnly(quota) } : {};
      await store.add({ name, groups: unique, key_hash: keyHash(key), created_at: new Date().toISOString(), ...own });
      return { name, groups: unique, ...own.quota, key };
    },
    async rotate(name) {
      const key = newUserKey();
      if (!(await store.setKeyHash(name, keyHash(key)))) return undefined;
      tell(name);
      const user = await store.get(name);
      return { ...(user === undefined ? { name, groups: [] } : view(user)), key };
    },
    async setQuota(name, quota) {
      if (!(await store.setQuota(name, hasQuota(quota) ? definedOnly(quota) : undefined))) return undefined;
      const user = await store.get(name);
      return user === undefined ? undefined : view(user);
    },
    async remove(name) {
      const removed = await store.remove(name);
      if (removed) tell(name);
      return removed;
    },
    async authenticate(key) {
      if (!isUserKey(key)) return undefined;
      const user = await store.byKeyHash(keyHash(key));
      return user === undefined ? undefined : principalOfUser(user);
    },
    get: (name) => store.get(name),
    onSignedOut(listener) {
      signedOut.add(listener);
      return () => signedOut.delete(listener);
    },
  };
}
