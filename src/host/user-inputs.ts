/**
 * The host's side of `per_user` servers: each caller's own inputs (what they
 * set, never shown back) and the sessions open on this worker. A caller with
 * no principal acts as the admin, whose inputs and session are the admin's
 * own, as any user's.
 */
import type { McpHost } from './api.js';
import { createSessions, type Sessions, type SessionsOptions } from './sessions.js';
import { serverVisible } from './access.js';
import type { ServerActorRef } from '../machines/registry.machine.js';
import type { JournalEvent, ProjectionContext } from '../journal/index.js';
import type { ServerConfig } from '../config/index.js';
import { userReferences } from '../config/schema.js';
import { isOAuthConfig } from '../auth/provider.js';
import type { JournalEventInput } from '../journal/index.js';
import { ConfigError, NotFoundError } from '../errors.js';
import { ADMIN_PRINCIPAL, parsePrincipal, type Principal, type PrincipalInput, type UserInputsStore } from '../users/index.js';
import { own } from '../records.js';

export interface UserInputsOptions {
  store: UserInputsStore;
  sessions: Sessions;
  append(event: JournalEventInput): void;
  /** The server's config, if the principal may see it (an unknown or hidden server is missing alike). */
  visibleConfig(server: string, principal: Principal | undefined): ServerConfig | undefined;
  /** The names of the per_user servers this host runs. */
  perUserServers(): string[];
  /** Forgets a removed user's OAuth grants. */
  forgetGrants(principal: string): Promise<void>;
}

export type HostInputs = Pick<McpHost, 'inputs' | 'setInputs' | 'sessions' | 'forgetUser'>;

const idOf = (principal: PrincipalInput | undefined): string => (principal === undefined ? ADMIN_PRINCIPAL : parsePrincipal(principal).id);
const parsed = (principal: PrincipalInput | undefined): Principal | undefined => (principal === undefined ? undefined : parsePrincipal(principal));

/** Whether a `headers` value of `config` refers to the input `name`. */
function sentInHeader(config: ServerConfig, name: string): boolean {
  return config.type === 'remote' && Object.values(config.headers).some((value) => userReferences(value).includes(name));
}

export function createHostInputs({ store, sessions, append, visibleConfig, perUserServers, forgetGrants }: UserInputsOptions): HostInputs {
  function configOf(server: string, principal: PrincipalInput | undefined): ServerConfig {
    const config = visibleConfig(server, parsed(principal));
    if (config === undefined) throw new NotFoundError(server);
    return config;
  }

  async function answer(server: string, config: ServerConfig, principal: string) {
    const values = await store.get(server, principal);
    return {
      inputs: Object.fromEntries(
        Object.entries(config.user_inputs).map(([name, input]) => [
          name,
          { set: (own(values, name) ?? '') !== '', secret: input.secret, description: input.description },
        ]),
      ),
    };
  }

  return {
    async inputs(server, options) {
      return answer(server, configOf(server, options?.principal), idOf(options?.principal));
    },

    async setInputs(server, given, options) {
      const config = configOf(server, options?.principal);
      const principal = idOf(options?.principal);
      // An empty value is no value: it removes the input, as null does (a call could not use it either).
      const values = Object.fromEntries(Object.entries(given).map(([name, value]) => [name, value === '' ? null : value]));
      for (const [name, value] of Object.entries(values)) {
        if (!Object.hasOwn(config.user_inputs, name)) throw new ConfigError(`server "${server}" declares no user input "${name}"`, name);
        if (value !== null && typeof value !== 'string') throw new ConfigError('must be a string, or null to delete it', name);
        // Refused here, naming the input: at connect the OS or fetch would refuse it quoting the value.
        if (value?.includes('\0')) throw new ConfigError('must not contain a NUL character', name);
        if (value !== null && /[\r\n]/.test(value) && sentInHeader(config, name)) {
          throw new ConfigError('is sent in an HTTP header: must not contain a line break', name);
        }
      }
      await store.set(server, principal, values);
      const names = Object.keys(values).sort();
      append({
        type: 'inputs.changed',
        server,
        principal,
        set: names.filter((name) => values[name] !== null),
        removed: names.filter((name) => values[name] === null),
      });
      // The next call connects with the new values.
      await sessions.end(server, principal);
      return answer(server, config, principal);
    },

    sessions(options) {
      return sessions.list(options?.principal === undefined ? undefined : idOf(options.principal));
    },

    async forgetUser(name) {
      const servers = perUserServers();
      const had = await Promise.all(servers.map((server) => store.get(server, name)));
      await store.forget({ principal: name });
      await forgetGrants(name);
      // Every worker ends the user's sessions on hearing this (the values they hold are gone), here at once:
      // a new user of the same name must not be served through them.
      servers.forEach((server, index) => {
        append({ type: 'inputs.changed', server, principal: name, set: [], removed: Object.keys(had[index] ?? {}).sort() });
      });
      await Promise.all(servers.map((server) => sessions.end(server, name)));
    },
  };
}

export interface PerUserOptions {
  store: UserInputsStore;
  append(event: JournalEventInput): void;
  current(name: string): ServerActorRef | undefined;
  projected(): ProjectionContext;
  subscribe(listener: (event: JournalEvent) => void): () => void;
  grantProvider: SessionsOptions['grantProvider'];
  setupClient?: SessionsOptions['setupClient'];
  fleetSecrets: SessionsOptions['fleetSecrets'];
  forgetGrants(principal: string): Promise<void>;
  /** This worker's id in a fleet: its own events were acted on when it appended them. */
  workerId?: string | undefined;
}

/** The sessions of per_user servers and each caller's inputs, on one store. */
export function createPerUser(options: PerUserOptions): { sessions: Sessions; hostInputs: HostInputs } {
  // Taken apart, not kept: the options object itself dies once the host is made.
  const { store, append, current, projected, subscribe, grantProvider, setupClient, fleetSecrets, workerId } = options;
  const sessions = createSessions({
    inputs: store,
    append,
    grantProvider,
    fleetSecrets,
    ...(setupClient && { setupClient }),
    perUserConfig(name) {
      const config = current(name)?.getSnapshot().context.config;
      return config?.scope === 'per_user' && config.enabled ? config : undefined;
    },
  });
  // A changed or removed server's sessions end: the next call connects with what it is now.
  subscribe((event) => {
    if (event.type === 'server.configured' || event.type === 'server.removed') void sessions.end(event.server);
    // A principal's values changed on another worker (this one's own changes ended its sessions already).
    const elsewhere = event.worker !== undefined && event.worker !== workerId;
    if (event.type === 'inputs.changed' && elsewhere) void endIfChanged(event.server, event.principal).catch(() => {});
  });
  const perUserConfig = (name: string) => {
    const config = current(name)?.getSnapshot().context.config;
    return config?.scope === 'per_user' ? config : undefined;
  };
  /**
   * Another worker changed or forgot a principal's values: a session here that holds other values ends. One
   * that a call opened since, with what is stored now, goes on. An OAuth session ends in any case: the change
   * may be its user's removal, which forgot the grant it holds.
   */
  async function endIfChanged(server: string, principal: string): Promise<void> {
    const config = perUserConfig(server);
    if (config === undefined) return;
    const values = isOAuthConfig(config) ? undefined : await store.get(server, principal).catch(() => undefined);
    await (values === undefined ? sessions.end(server, principal) : sessions.endUnlessConnectedWith(server, principal, values));
  }
  const hostInputs = createHostInputs({
    store,
    sessions,
    append,
    visibleConfig: (name, principal) => (serverVisible(projected(), name, principal) ? current(name)?.getSnapshot().context.config : undefined),
    perUserServers: () => Object.keys(projected().servers).filter((name) => perUserConfig(name) !== undefined),
    forgetGrants: options.forgetGrants,
  });
  return { sessions, hostInputs };
}
