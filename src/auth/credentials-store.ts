/**
 * Where the OAuth credentials of each server live: files under the state dir
 * (one worker, credentials-file.ts) or rows of the PostgreSQL several workers
 * share (pg-credentials-store.ts). The provider reads and writes them only
 * through this interface.
 *
 * Every change of a server's record is a read-modify-write under that
 * server's lock, so a worker holding an older copy never writes it back over
 * what another one stored since; a token refresh is one such change, holding
 * the lock across the request to the authorization server (one refresh at a
 * time, fleet-wide: docs/several-workers.md). Nothing may call the store from inside a
 * locked change: the lock is not re-entrant, and that call would wait forever.
 */
import { createHash } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { derivedKey, loadOrMakeSecretKey } from '../config/secrets/secret-key.js';
import { createSerialQueue } from '../files/serial-queue.js';
import { credentialsPath, deleteCredentials, loadCredentials, saveCredentials, type CredentialsRecord } from './credentials-file.js';

/** What a locked change gives back: the record to store (`null`: store nothing) and its caller's result. */
export interface LockedChange<T> {
  record: CredentialsRecord | null;
  result: T;
}

export interface CredentialsStore {
  /**
   * The record stored for `server` if it belongs to `serverUrl` and the
   * configured client; otherwise an empty one keeping only `redirect_port`
   * (a changed URL never receives another server's token).
   */
  load(server: string, serverUrl: string, configuredClientId: string | null): Promise<CredentialsRecord>;
  /** Replaces the stored record whatever it holds now (under the lock; prefer a locked change, which reads it first). */
  save(server: string, record: CredentialsRecord): Promise<void>;
  /** Deletes the stored record (a removed server). */
  delete(server: string): Promise<void>;
  /**
   * Runs `fn` holding the fleet-wide lock of `server`'s credentials (the one
   * every change and every refresh takes). `fn` gets the record as stored now
   * (re-read inside the lock, as `load` reads it: another worker may have
   * refreshed already) and returns the record to commit, or `null` to commit
   * nothing; it is committed before the lock is released and before this
   * resolves with `result`. When `fn` throws, nothing is committed.
   */
  lockForRefresh<T>(
    server: string,
    serverUrl: string,
    configuredClientId: string | null,
    fn: (current: CredentialsRecord) => Promise<LockedChange<T>>,
  ): Promise<T>;
  /**
   * Calls `onTokens(server)` whenever another hand (another worker) stored
   * tokens for a server; returns the stop function. Absent for a store only
   * this process writes.
   */
  watchTokens?(onTokens: (server: string) => void): () => void;
  /**
   * Tells every other worker sharing this store that the pending consent of `server` named `consent` (the
   * hash of its `state`, `CredentialsRecord.consent.state_hash`) ended without tokens: refused, timed out
   * or cancelled; `error` says why. Absent for a store only this process writes.
   */
  tellConsentEnded?(server: string, consent: string, error: string): Promise<void>;
  /**
   * Calls `onEnded` whenever another worker tells that a pending consent ended (`tellConsentEnded`);
   * returns the stop function. Absent for a store only this process writes.
   */
  watchConsents?(onEnded: (server: string, consent: string, error: string) => void): () => void;
  /**
   * Deletes the per-user grants (records under `grantKey`) of one server, of
   * one principal, or of that principal on that server. Absent for a store
   * that keeps no grants.
   */
  deleteGrants?(of: { server?: string; principal?: string }): Promise<void>;
  /**
   * The key that signs a consent's browser binding (consent-binding.ts): the
   * same on every worker sharing this store, derived from the worker's secret
   * key. Absent for a store that keeps no grants.
   */
  bindingKey?(): Promise<Buffer>;
}

/** Marks a grant's record key: server names never hold a dot, so `<server>.u-<hash>` is no server's own key. */
const GRANT_MARK = '.u-';

/** The principal's part of a grant key: a hash, so any principal id makes a safe file name and column value. */
function principalTag(principal: string): string {
  return createHash('sha256').update(principal).digest('hex').slice(0, 40);
}

/**
 * The key of `principal`'s own grant for `server` (a `per_user` OAuth
 * server), under which the store keeps it beside the servers' own records.
 * The record inside keeps the issuer its tokens came from, so tokens are
 * never sent to another authorization server.
 */
export function grantKey(server: string, principal: string): string {
  return `${server}${GRANT_MARK}${principalTag(principal)}`;
}

/** Whether the record key `key` is a grant matching `of` (every grant when `of` is empty). */
export function isGrantOf(key: string, of: { server?: string; principal?: string }): boolean {
  const at = key.indexOf(GRANT_MARK);
  if (at < 0) return false;
  if (of.server !== undefined && key.slice(0, at) !== of.server) return false;
  return of.principal === undefined || key.slice(at + GRANT_MARK.length) === principalTag(of.principal);
}

/** A `like` pattern of the grant keys matching `of` (server names hold only `[A-Za-z0-9_-]`: `_` is escaped). */
export function grantKeyPattern(of: { server?: string; principal?: string }): string {
  const server = of.server === undefined ? '%' : of.server.replaceAll('_', '\\_');
  const principal = of.principal === undefined ? '%' : principalTag(of.principal);
  return `${server}${GRANT_MARK}${principal}`;
}

/** The label the binding key is derived under. */
export const BINDING_KEY_LABEL = 'consent binding';

/**
 * Changes the stored record of `server` under its lock: `change` gets it as
 * stored now and returns the new one. Resolves with the record as stored.
 */
export function changeCredentials(
  store: CredentialsStore,
  server: string,
  serverUrl: string,
  configuredClientId: string | null,
  change: (current: CredentialsRecord) => CredentialsRecord,
): Promise<CredentialsRecord> {
  return store.lockForRefresh(server, serverUrl, configuredClientId, async function applyChange(current) {
    const record = change(current);
    return { record, result: record };
  });
}

/**
 * Locks of the credentials files, by resolved path: shared by every store
 * and provider of this process (a connect, a refresh and a consent each make
 * their own provider). One worker per state dir, so this is the whole fleet.
 */
const fileLocks = createSerialQueue();

/** Credentials as `<stateDir>/oauth/<server>.json`, owner-only and written atomically (credentials-file.ts). */
export function createFileCredentialsStore(stateDir: string): CredentialsStore {
  const fileOf = (server: string) => credentialsPath(stateDir, server);
  const locked = <T>(server: string, task: (file: string) => Promise<T>): Promise<T> => {
    const file = fileOf(server);
    return fileLocks.run(path.resolve(file), () => task(file));
  };

  return {
    load: (server, serverUrl, configuredClientId) => loadCredentials(fileOf(server), serverUrl, configuredClientId),
    save: (server, record) => locked(server, (file) => saveCredentials(file, record)),
    delete: (server) => locked(server, (file) => deleteCredentials(file)),
    lockForRefresh: (server, serverUrl, configuredClientId, fn) =>
      locked(server, async function refreshUnderFileLock(file) {
        const { record, result } = await fn(await loadCredentials(file, serverUrl, configuredClientId));
        if (record !== null) await saveCredentials(file, record);
        return result;
      }),
    async deleteGrants(of) {
      let names: string[];
      try {
        names = await readdir(path.join(stateDir, 'oauth'));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw err;
      }
      const keys = names.flatMap((name) => (name.endsWith('.json') ? [name.slice(0, -'.json'.length)] : []));
      await Promise.all(keys.filter((key) => isGrantOf(key, of)).map((key) => locked(key, (file) => deleteCredentials(file))));
    },
    bindingKey: async () => derivedKey(await loadOrMakeSecretKey({ configDir: stateDir }), BINDING_KEY_LABEL),
  };
}
