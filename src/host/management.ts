/**
 * Management transactions (docs/lifecycle.md, Management): add, change, restart, remove a
 * server and begin its consent. Each change is a transaction actor
 * (src/machines/transaction.machine.ts) that sends an event to the server's
 * existing actor (only a deleted server's actor is replaced), waits for the
 * outcome, and persists only what did not end in `error`; a change that does
 * is rolled back to the previous config. The work it invokes is provided
 * here; the transactions coordinator runs one transaction per server at a time.
 */
import { z } from 'zod';
import { checkOptions } from '../checked-options.js';
import { fromPromise, waitFor } from 'xstate';
import type { ServerActorRef } from '../machines/registry.machine.js';
import { isSettling, SETTLE_MARGIN_MS, settled } from '../machines/server.queries.js';
import {
  transactionMachine,
  type ApplyInput,
  type PersistInput,
  type ReadInput,
  type Settled,
  type TransactionInput,
  type TransactionRead,
  type Written,
} from '../machines/transaction.machine.js';
import { transactionsMachine } from '../machines/transactions.machine.js';
import type { RegistryEvent } from '../machines/registry.events.js';
import { mergePatch } from '../config/merge-patch.js';
import type { ServerConfig, ServerConfigInput } from '../config/index.js';
import { ConfigFileBrokenError, type ConfigStore } from '../config/index.js';
import { parseServerConfig } from '../config/validate.js';
import { isOAuthConfig } from '../auth/provider.js';
import { AuthNotApplicableError, type AuthBegun } from '../auth/server-auth.js';
import { ConflictError, FleetError, NotFoundError, PreconditionFailedError, StartFailedError } from '../errors.js';
import type { ServerView } from '../journal/index.js';
import { configChangeEvent } from './config-change.js';
import { own } from '../records.js';
import { createTransactionRunner } from './transaction-runner.js';

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
  /** Change (or remove) only if the stored config is still at this version (HTTP `If-Match`); else `PreconditionFailedError`. */
  ifMatch?: number;
}

const UpdateOptionsSchema = z.strictObject({ ifMatch: z.number().int('must be an integer') } satisfies Record<keyof UpdateOptions, z.ZodType>).partial();

export interface Management {
  add(name: string, input: ServerConfigInput): Promise<ServerView>;
  update(name: string, patch: Record<string, unknown>, options?: UpdateOptions): Promise<ServerView>;
  remove(name: string, options?: UpdateOptions): Promise<void>;
  restart(name: string): Promise<ServerView>;
  /** The consent's URL; `begun`: this call started it (false: it was already waiting and answers its URL again, or it answers a consent another worker began). */
  beginAuth(name: string): Promise<AuthBegun & { begun: boolean }>;
  /** Whether a transaction on `name` is under way (a hand edit of it then waits for the next read). */
  busy(name: string): boolean;
  /** Resolves once no transaction on `name` is under way. */
  idle(name: string): Promise<void>;
}

export function createManagement(deps: ManagementDeps): Management {
  // Taken apart, not kept: the deps object itself dies once the host is made.
  const { store, registry, current, forgetCredentials, view } = deps;

  /** The server's actor; throws when the host is not running (never started, or shutting down). */
  function actorOf(name: string): ServerActorRef {
    registry();
    const ref = current(name);
    if (!ref) throw new NotFoundError(name);
    return ref;
  }

  /**
   * How `ref` settled: the failure when it ended in `error`. The server's own
   * `timeout_seconds` ends its start, so the wait gives it a margin past that
   * to say so; one still starting after it is a failure too, never a success.
   */
  async function settledOf(name: string, ref: ServerActorRef, config: ServerConfig): Promise<Settled> {
    await settled(ref, config.timeout_seconds * 1000 + SETTLE_MARGIN_MS);
    const snapshot = ref.getSnapshot();
    if (isSettling(snapshot)) {
      return { failure: new StartFailedError(name, 'timeout', `still starting ${SETTLE_MARGIN_MS / 1000}s past timeout_seconds (${config.timeout_seconds}s)`) };
    }
    if (!snapshot.matches('error')) return { failure: null };
    const { error, errorKind } = snapshot.context;
    return { failure: new StartFailedError(name, errorKind ?? 'protocol', error ?? 'unknown error') };
  }

  /** The work a transaction invokes: events to the server's actor, the store, credentials, views. */
  const provided = () => transactionMachine.provide({
    actors: {
      read: fromPromise<TransactionRead, ReadInput>(async ({ input: { name, kind } }) => {
        registry();
        const running = current(name)?.getSnapshot().context.config ?? null;
        const loaded = await store.load();
        // A file that does not parse takes no write: refused before the server is touched (a restart writes nothing).
        if (loaded.broken !== null && kind !== 'restart') throw new ConfigFileBrokenError(loaded.broken.file, loaded.broken.problem);
        const stored = loaded.servers.find(([candidate]) => candidate === name)?.[1] ?? null;
        // An entry written by hand that does not validate is the user's text: the machine refuses to change it, and a removal deletes it.
        const entry = loaded.invalid.find((candidate) => candidate.name === name);
        return { running, stored, version: own(loaded.versions, name) ?? null, invalid: entry?.problem ?? null, invalidField: entry?.field };
      }),
      install: fromPromise<Settled, { name: string; config: ServerConfig }>(async ({ input: { name, config } }) => {
        registry().send({ type: 'server.install', name, config });
        return settledOf(name, actorOf(name), config);
      }),
      apply: fromPromise<Settled, ApplyInput>(async ({ input: { name, config, restart } }) => {
        // Gone only once the host shut down: nothing left to move.
        const ref = current(name);
        if (!ref) return { failure: null };
        const change = configChangeEvent(ref.getSnapshot().context.config, config);
        // A change that changes nothing leaves the server as it is (an unchanged form saved, a script re-sending
        // the whole config); a restart reconnects, unless it must bring a new connection config.
        if (restart) ref.send(change?.type === 'server.configure' ? change : { type: 'server.restart' });
        else if (change !== null) ref.send(change);
        return settledOf(name, ref, config);
      }),
      uninstall: fromPromise<void, { name: string }>(async ({ input: { name } }) => {
        const ref = current(name);
        registry().send({ type: 'server.uninstall', name });
        if (ref) await waitFor(ref, (snapshot) => snapshot.status !== 'active', { timeout: Infinity });
      }),
      persist: fromPromise<Written, PersistInput>(async ({ input }) => {
        const { name } = input;
        if (input.kind === 'remove') {
          await store.update((servers, { invalidNames, discard }) => {
            delete servers[name];
            if (invalidNames.includes(name)) discard(name);
            return servers;
          });
          return { config: null, version: null };
        }
        // A shutdown that began meanwhile stopped the server: the change never ran, so it is not kept.
        registry();
        /** What is written for the server: the new config, or the patch merged into the entry as stored now. */
        let stored = input.kind === 'add' ? input.config : input.previous;
        const written = await store.update((servers, { invalidNames, versions }) => {
          if (input.kind === 'add') {
            // A hand-written entry of that name that does not validate is still the user's.
            if (Object.hasOwn(servers, name) || invalidNames.includes(name)) throw new ConflictError(name);
            return { ...servers, [name]: stored };
          }
          // Removed meanwhile (by another worker, or by hand): a change does not bring it back.
          if (!Object.hasOwn(servers, name)) throw new NotFoundError(name);
          if (input.ifMatch !== null && own(versions, name) !== input.ifMatch) {
            throw new PreconditionFailedError(name, input.ifMatch, own(versions, name) ?? null);
          }
          // Merged into the config as stored now, under the store's lock: a change another worker made
          // meanwhile to other fields is kept, not overwritten with what this one read.
          stored = mergePatch(own(servers, name) as ServerConfig, input.patch);
          return { ...servers, [name]: stored };
        });
        return { config: stored, version: own(written.versions, name) ?? null };
      }),
      forget: fromPromise<void, { name: string }>(({ input: { name } }) => forgetCredentials(name)),
      view: fromPromise<ServerView, { name: string }>(({ input: { name } }) => view(name)),
    },
  });
  const transactions = createTransactionRunner(() => transactionsMachine.provide({ actors: { transaction: provided() } }));

  const viewOf = async (input: TransactionInput): Promise<ServerView> => (await transactions.run(input))!;

  return {
    busy: (name) => transactions.busy(name),
    idle: (name) => transactions.idle(name),
    add: async (name, input) => viewOf({ kind: 'add', name, config: parseServerConfig(name, input) }),
    update: (name, patch, options = {}) => {
      // A misspelled `ifMatch` would change the server unconditionally: refused, as a rejection like every other.
      try {
        checkOptions('updateServer', UpdateOptionsSchema, options);
      } catch (error) {
        return Promise.reject(error);
      }
      const { ifMatch } = options;
      return viewOf({ kind: 'update', name, patch, ...(ifMatch !== undefined ? { ifMatch } : {}) });
    },
    remove: async (name, options = {}) => {
      // A misspelled `ifMatch` would remove the server unconditionally: refused, as for an update.
      checkOptions('removeServer', UpdateOptionsSchema, options);
      const { ifMatch } = options;
      await transactions.run({ kind: 'remove', name, ...(ifMatch !== undefined ? { ifMatch } : {}) });
    },
    restart: (name) => viewOf({ kind: 'restart', name }),

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
        if (after.context.authorizationUrl !== null && consenting(after)) {
          // Checked and sent with no await between: of two asking at once, only the first begins it. A consent
          // another worker began and this one answers was begun there: the fleet journals it once.
          return { authorization_url: after.context.authorizationUrl, begun: !consenting(before) && !after.context.consentJoined };
        }
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
