/**
 * Management transactions (docs/lifecycle.md, Management): add, change, restart, remove a
 * server and begin its consent. Each sends an event to the server's existing
 * actor (only a deleted server's actor is replaced), waits for the outcome,
 * and persists only what did not end in `error`; a change that does is
 * rolled back to the previous config. One transaction per server at a time.
 */
import { isDeepStrictEqual } from 'node:util';
import { waitFor } from 'xstate';
import type { ServerActorRef } from '../machines/registry.machine.js';
import { settled } from '../machines/server.queries.js';
import type { RegistryEvent } from '../machines/registry.events.js';
import { mergePatch } from '../services/config/merge-patch.js';
import type { ServerConfig, ServerConfigInput } from '../services/config/schema.js';
import type { ConfigStore, StoredConfig } from '../services/config/store.js';
import { parseServerConfig } from '../services/config/validate.js';
import { isOAuthConfig } from '../services/oauth/provider.js';
import { AuthNotApplicableError, type AuthBegun } from '../services/oauth/server-auth.js';
import { ConflictError, FleetError, NotFoundError, PreconditionFailedError, StartFailedError } from '../services/support/errors.js';
import { createSerialQueue } from '../services/support/serial-queue.js';
import type { ServerView } from '../services/journal/server-view.js';
import { configChangeEvent } from './config-change.js';

export interface ManagementDeps {
  store: ConfigStore;
  /** The running registry (throws when the host is not started or is shutting down). */
  registry(): { send(event: RegistryEvent): void };
  current(name: string): ServerActorRef | undefined;
  /** The server's view once every event so far is projected. */
  view(name: string): Promise<ServerView>;
  /** Deletes a removed server's OAuth credentials. */
  forgetCredentials(name: string): Promise<void>;
}

export interface UpdateOptions {
  /** Change only if the stored config is still at this version (HTTP `If-Match`); else `PreconditionFailedError`. */
  ifMatch?: number;
}

export interface Management {
  add(name: string, input: ServerConfigInput): Promise<ServerView>;
  update(name: string, patch: Record<string, unknown>, options?: UpdateOptions): Promise<ServerView>;
  remove(name: string): Promise<void>;
  restart(name: string): Promise<ServerView>;
  beginAuth(name: string): Promise<AuthBegun>;
  /** Whether a transaction on `name` is under way (a hand edit of it then waits for the next read). */
  busy(name: string): boolean;
  /** Resolves once no transaction on `name` is under way. */
  idle(name: string): Promise<void>;
}

export function createManagement(deps: ManagementDeps): Management {
  const { store } = deps;
  const queue = createSerialQueue();

  async function persisted(name: string): Promise<ServerConfig | undefined> {
    const loaded = await store.load();
    return loaded.servers.find(([candidate]) => candidate === name)?.[1];
  }

  /** The server's actor; throws when the host is not running (never started, or shutting down). */
  function actorOf(name: string): ServerActorRef {
    deps.registry();
    const ref = deps.current(name);
    if (!ref) throw new NotFoundError(name);
    return ref;
  }

  /** Sends the event that moves `ref` to `config`, and waits for its outcome (bounded by its timeout). */
  async function apply(ref: ServerActorRef, config: ServerConfig): Promise<void> {
    const event = configChangeEvent(ref.getSnapshot().context.config, config) ?? { type: 'server.restart' as const };
    ref.send(event);
    await settled(ref, config.timeout_seconds * 1000);
  }

  function failureOf(name: string, ref: ServerActorRef): StartFailedError | null {
    const snapshot = ref.getSnapshot();
    if (!snapshot.matches('error')) return null;
    const { error, errorKind } = snapshot.context;
    return new StartFailedError(name, errorKind ?? 'protocol', error ?? 'unknown error');
  }

  /** Stops and forgets `name`'s actor; resolves once its process is gone. */
  async function uninstall(name: string): Promise<void> {
    const ref = deps.current(name);
    deps.registry().send({ type: 'server.uninstall', name });
    if (ref) await waitFor(ref, (snapshot) => snapshot.status !== 'active', { timeout: Infinity });
  }

  /**
   * The view after a write, with the version that write committed. Read from
   * the store later, the version may already be another worker's next one, of
   * a config this worker has not applied yet: the answer would then have none.
   * The view's config is the written one, as no other change of `name` is
   * applied while its transaction runs.
   */
  async function viewAt(name: string, written: StoredConfig): Promise<ServerView> {
    const view = await deps.view(name);
    return { ...view, version: written.versions[name] ?? view.version };
  }

  return {
    busy: (name) => queue.busy(name),
    idle: (name) => queue.idle(name),

    add(name, input) {
      return queue.run(name, async () => {
        const config = parseServerConfig(name, input);
        deps.registry();
        if (deps.current(name) || (await persisted(name))) throw new ConflictError(name);
        deps.registry().send({ type: 'server.install', name, config });
        const ref = actorOf(name);
        await settled(ref, config.timeout_seconds * 1000);
        const failure = failureOf(name, ref);
        if (failure) {
          await uninstall(name);
          throw failure;
        }
        let written: StoredConfig;
        try {
          deps.registry();
          written = await store.update((servers, { invalidNames }) => {
            // A hand-written entry of that name that does not validate is still the user's.
            if (name in servers || invalidNames.includes(name)) throw new ConflictError(name);
            return { ...servers, [name]: config };
          });
        } catch (failed) {
          await uninstall(name);
          throw failed;
        }
        return viewAt(name, written);
      });
    },

    update(name, patch, { ifMatch } = {}) {
      return queue.run(name, async () => {
        const ref = actorOf(name);
        const running = ref.getSnapshot().context.config;
        const loaded = await store.load();
        const expect = (versions: Readonly<Record<string, number>>) => {
          if (ifMatch !== undefined && versions[name] !== ifMatch) throw new PreconditionFailedError(name, ifMatch, versions[name] ?? null);
        };
        expect(loaded.versions);
        const previous = loaded.servers.find(([candidate]) => candidate === name)?.[1] ?? running;
        const next = mergePatch(previous, patch);
        await apply(ref, next);
        const failure = failureOf(name, ref);
        if (failure) {
          // All or nothing: back on the config it ran before, and the store untouched.
          await apply(ref, running);
          throw failure;
        }
        let stored = next;
        let written: StoredConfig;
        try {
          // A shutdown that began meanwhile stopped the server: the change never ran, so it is not kept.
          deps.registry();
          // The patch is merged into the config as stored now, under the store's lock: a change another
          // worker made meanwhile to other fields is kept, not overwritten with what this one read.
          written = await store.update((servers, { versions }) => {
            expect(versions);
            stored = mergePatch(servers[name] ?? previous, patch);
            return { ...servers, [name]: stored };
          });
        } catch (refused) {
          await apply(ref, running);
          throw refused;
        }
        if (!isDeepStrictEqual(stored, next)) await apply(ref, stored);
        return viewAt(name, written);
      });
    },

    remove(name) {
      return queue.run(name, async () => {
        deps.registry();
        const stored = await persisted(name);
        if (!deps.current(name) && !stored) throw new NotFoundError(name);
        await uninstall(name);
        if (stored) {
          await store.update((servers) => {
            delete servers[name];
            return servers;
          });
        }
        // Its tokens must not outlive it (a later server of that name is a new one).
        await deps.forgetCredentials(name);
      });
    },

    restart(name) {
      return queue.run(name, async () => {
        const ref = actorOf(name);
        // A hand edit not applied yet (no watcher) is applied by the restart.
        const config = (await persisted(name)) ?? ref.getSnapshot().context.config;
        const event = configChangeEvent(ref.getSnapshot().context.config, config);
        ref.send(event?.type === 'server.configure' ? event : { type: 'server.restart' });
        await settled(ref, config.timeout_seconds * 1000);
        return deps.view(name);
      });
    },

    async beginAuth(name) {
      const ref = actorOf(name);
      // A server whose view already says needs_reauth may still be closing its lost connection.
      const before = await waitFor(ref, (snapshot) => !snapshot.matches('closing'), { timeout: Infinity });
      if (!isOAuthConfig(before.context.config)) {
        throw new AuthNotApplicableError(name, 'not_oauth', `server "${name}" does not use OAuth`);
      }
      const consenting = (snapshot: typeof before) => snapshot.matches({ authenticating: 'consenting' });
      if (!before.matches('needs_reauth') && !consenting(before)) {
        throw new AuthNotApplicableError(name, 'not_needed', `server "${name}" is ${stateName(before)}: consent starts only from needs_reauth`);
      }
      // Why a consent failed, with its kind: the authorization server away is `unreachable`, not a refusal.
      let failure: FleetError | undefined;
      const listening = ref.on('consent.failed', ({ error }) => (failure = error));
      try {
        ref.send({ type: 'auth.begin' });
        // The invoked consent reports its URL, or fails and leaves for needs_reauth.
        const after = await waitFor(ref, (snapshot) => snapshot.context.authorizationUrl !== null || !consenting(snapshot), {
          timeout: Infinity,
        });
        if (after.context.authorizationUrl !== null && consenting(after)) return { authorization_url: after.context.authorizationUrl };
        throw failure ?? new FleetError('auth', after.context.error ?? `the consent of server "${name}" could not start`);
      } finally {
        listening.unsubscribe();
      }
    },
  };
}

function stateName(snapshot: { value: unknown }): string {
  const value = snapshot.value;
  return typeof value === 'string' ? value : Object.keys(value as object)[0] ?? 'unknown';
}
