/**
 * The sessions of `per_user` servers on this worker: each principal calls
 * through a connection of their own, made with the config resolved with
 * their `user_inputs` (`${user.NAME}`), one actor of the session machine
 * each. At most `max_sessions` per server (the least recently used is ended
 * for a new one); a session ends after `idle_timeout_seconds` with no call.
 * The tools a per_user server offers are those its sessions listed on this
 * worker. Each session is its own authorization context: a listing the
 * server marked `cacheScope: "private"` (2026-07-28) is kept for the
 * principal whose session made it and shown to no one else; a `public` one
 * (or a 2025 server's, whose era has no scopes) is the server's catalog,
 * shown to every principal without a private listing of their own.
 */
import { createActor, waitFor } from 'xstate';
import type { Client, Tool } from '@modelcontextprotocol/client';
import { connect, createCallLimiter, type CacheScope, type ServerConnection } from '../connection/index.js';
import { referencingFields, userReferences, USER_REFERENCE, type ServerConfig } from '../config/schema.js';
import { jsonEqual, toAgentTool, type AgentTool, type ExecuteOptions } from '../catalog/index.js';
import type { JournalEventInput } from '../journal/index.js';
import { isOAuthConfig, type FleetOAuthProvider, type OAuthServerConfig } from '../auth/provider.js';
import { ConsentRequiredError } from '../auth/oauth-errors.js';
import { sessionMachine, type SessionActorRef, type SessionState } from '../machines/session.machine.js';
import { ADMIN_PRINCIPAL, parsePrincipal, type UserInputsStore } from '../users/index.js';
import { own } from '../records.js';

/** One session as `GET /api/mcp/sessions` shows it. */
export interface SessionView {
  server: string;
  principal: string;
  state: SessionState;
  /** When it entered its state (ISO 8601). */
  since: string;
}

/** A `per_user` OAuth server the principal has not connected their own account to yet. */
export class GrantMissingError extends Error {
  override readonly name = 'GrantMissingError';
  constructor(
    readonly server: string,
    /** Why a grant the principal had no longer serves (a refused token, a refused refresh); absent when there was none. */
    reason?: string,
  ) {
    super(
      `server "${server}" needs your own authorization${reason === undefined ? '' : ` (${reason})`}: connect your account with the Connect button on the page ` +
        `(or POST /api/mcp/servers/${server}/auth and open the authorization_url in the same browser), then call again`,
    );
  }
}

/** A `per_user` server at `max_sessions` whose every session has a call in flight. */
export class SessionsBusyError extends Error {
  override readonly name = 'SessionsBusyError';
  constructor(
    readonly server: string,
    readonly maxSessions: number,
  ) {
    super(
      `server "${server}" has max_sessions ${maxSessions} and ${maxSessions === 1 ? 'its session is' : 'every session is'} busy with a call: ` +
        'try again when one finishes',
    );
  }
}

/** What the principal must set before a session can connect. */
export class MissingInputsError extends Error {
  override readonly name = 'MissingInputsError';
  constructor(
    readonly server: string,
    readonly missing: string[],
  ) {
    super(
      `server "${server}" needs your own ${missing.length === 1 ? 'input' : 'inputs'} ${missing.join(', ')}: ` +
        `set ${missing.length === 1 ? 'it' : 'them'} on the page, with PUT /api/mcp/servers/${server}/inputs, or host.setInputs("${server}", …)`,
    );
  }
}

export interface SessionsOptions {
  inputs: UserInputsStore;
  append(event: JournalEventInput): void;
  /** The server's config while it is a configured `per_user` server; undefined otherwise. */
  perUserConfig(server: string): ServerConfig | undefined;
  /** The provider of `principal`'s own grant for a `per_user` OAuth server. */
  grantProvider(server: string, principal: string, config: OAuthServerConfig): Promise<FleetOAuthProvider>;
  /** Sets up each session's client before it connects: who answers its server's requests (sampling, elicitation, roots). */
  setupClient?(server: string): (client: Client) => void;
  /** Every configured server's secrets, redacted (with every open session's values) from what a session's server tells. */
  fleetSecrets(): readonly string[];
}

export interface Sessions {
  /** Whether `server` is a configured `per_user` server. */
  isPerUser(server: string): boolean;
  /** The agent tools of the per_user servers as `principal` (the admin without one) is shown them. */
  tools(principal?: string): AgentTool[];
  /**
   * The tools of the per_user server `server` as `principal` (the admin without one) is shown them: their own
   * private listing, else the server's public one (the same array until it is learnt again); undefined before.
   */
  learnt(server: string, principal?: string): readonly AgentTool[] | undefined;
  /** Every listing of `server` kept: the public one, and each principal's private one (for the search index). */
  listings(server: string): { shared: readonly AgentTool[] | undefined; own: ReadonlyMap<string, readonly AgentTool[]> };
  /** The tool `name` (`{server}__{tool}`) of a per_user server, learnt or not: the server and its own name of it (as `principal` learnt it). */
  owner(name: string, principal?: string): { server: string; original: string } | undefined;
  /** Calls `original` of `server` through the principal's session (the admin's without one). */
  call(server: string, original: string, args: Record<string, unknown>, options: ExecuteOptions): Promise<unknown>;
  /** The principal's session of `server`, connected (a new one when none is open) and its tools listed now. */
  refresh(server: string, options: Pick<ExecuteOptions, 'principal' | 'signal'>): Promise<ServerConnection>;
  /** The principal's session of `server`, connected (a new one when none is open): what `/mcp/servers/:name` forwards to. */
  connection(server: string, options: Pick<ExecuteOptions, 'principal' | 'signal'>): Promise<ServerConnection>;
  /** The values the open sessions connected with, for redacting logs. */
  secrets(): string[];
  /** Every open session (of `principal` only, when given). */
  list(principal?: string): SessionView[];
  /** Ends the sessions of `server` (of one principal when given): their inputs or config changed, or the server went. */
  end(server: string, principal?: string): Promise<void>;
  /** Ends the principal's session of `server` unless it connected with `values` (what a change made elsewhere left stored). */
  endUnlessConnectedWith(server: string, principal: string, values: Readonly<Record<string, string>>): Promise<void>;
  /** Ends every session; resolves once each connection is gone. */
  shutdown(): Promise<void>;
}

interface Entry {
  /** The principal's values it connected with (redacted from logs while it is open). */
  values: string[];
  /** The same, by input name. */
  inputs: Readonly<Record<string, string>>;
  server: string;
  principal: string;
  actor: SessionActorRef;
  connection: ServerConnection | null;
  lastUsed: number;
  /** Calls in flight, and callers waiting for it to connect: a busy session is never evicted. */
  busy: number;
  since: string;
  state: SessionState;
}

/**
 * Sessions that end together close at most this many at a time. Closing an
 * HTTP session sends a DELETE, and fetch's connection pool keeps every
 * connection it opened for requests in flight at once for the rest of the
 * process: 1,000 sessions ended at once left 1,000 idle connections behind
 * them. Their states change at once all the same.
 */
export const CONCURRENT_CLOSES = 32;

const keyOf = (server: string, principal: string): string => `${server}\u0000${principal}`;

/** Whether two sets of input values are the same (an empty value is none). */
function sameValues(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const given = (values: Readonly<Record<string, string>>) => Object.entries(values).filter(([, value]) => value !== '');
  const left = given(a);
  return left.length === given(b).length && left.every(([name, value]) => Object.hasOwn(b, name) && b[name] === value);
}

/**
 * A consent the principal's own grant needs, said as theirs to give: the
 * provider names its record (`<server>.u-…`), not the server, and the call
 * layers may carry its message in an error of their own.
 */
function ownGrantError(server: string, error: unknown): unknown {
  if (error instanceof ConsentRequiredError) return new GrantMissingError(server, error.reason);
  const reason = error instanceof Error ? /^server "[^"]+\.u-[0-9a-f]+" needs OAuth consent \((.*)\): run /.exec(error.message)?.[1] : undefined;
  return reason === undefined ? error : new GrantMissingError(server, reason);
}

/** The config with each `${user.NAME}` replaced by the principal's value. */
export function resolveUserConfig(config: ServerConfig, values: Record<string, string>): ServerConfig {
  const fill = (text: string): string => text.replace(USER_REFERENCE, (_, name: string) => own(values, name) ?? '');
  if (config.type === 'local') {
    return {
      ...config,
      command: config.command.map(fill),
      env: Object.fromEntries(Object.entries(config.env).map(([key, value]) => [key, fill(value)])),
    };
  }
  return { ...config, headers: Object.fromEntries(Object.entries(config.headers).map(([key, value]) => [key, fill(value)])) };
}

/** The inputs `config` refers to that `values` lacks, in declaration order. */
export function missingInputs(config: ServerConfig, values: Record<string, string>): string[] {
  const used = new Set(referencingFields(config).flatMap(([, value]) => userReferences(value)));
  return Object.keys(config.user_inputs).filter((name) => used.has(name) && !(own(values, name) ?? '').length);
}

/**
 * Most principals are listed the same tools: a session whose listing equals
 * the one `listings` holds for `server` (the first session's) holds that one,
 * so an idle session keeps no copy of its own. A listing that differs (what
 * this principal may see is not the same) stays the session's own.
 */
export function shareListing(listings: Map<string, Tool[]>, server: string, connection: ServerConnection): void {
  const shared = listings.get(server);
  if (shared === undefined) listings.set(server, connection.allTools);
  else if (shared !== connection.allTools && jsonEqual(shared, connection.allTools)) connection.replaceTools(shared);
}

export function createSessions(options: SessionsOptions): Sessions {
  // Taken apart, not kept: the options object itself dies once the host is made.
  const { inputs, append, perUserConfig, grantProvider, setupClient, fleetSecrets } = options;
  const open = new Map<string, Entry>();
  /** Each per_user server's public tools, from the latest session whose listing was public. */
  const catalogs = new Map<string, AgentTool[]>();
  /** Private listings by server, then principal: served to that principal alone. */
  const privateCatalogs = new Map<string, Map<string, AgentTool[]>>();
  const noneOwn: ReadonlyMap<string, readonly AgentTool[]> = new Map();
  /** Each per_user server's listing as the first session got it: a session whose listing is the same holds this one. */
  const listings = new Map<string, Tool[]>();
  const closes = createCallLimiter(CONCURRENT_CLOSES);
  let stopping = false;

  function agentTools(server: string, tools: Tool[]): AgentTool[] {
    return tools.map((tool) => toAgentTool(server, tool, (original, args, callOptions) => sessions.call(server, original, args, callOptions)));
  }

  function start(
    server: string,
    principal: string,
    config: ServerConfig,
    values: Record<string, string>,
    grant: FleetOAuthProvider | undefined,
  ): Entry {
    const resolved = resolveUserConfig(config, values);
    // One already closing is on its way out: it holds no place.
    const forServer = [...open.values()].filter((entry) => entry.server === server && entry.state !== 'closing');
    // Room for the new one: the least recently used session of this server with no call in flight ends.
    // None: the call is refused rather than end another's call under them.
    if (forServer.length >= config.max_sessions) {
      const idle = forServer.filter((entry) => entry.busy === 0);
      if (idle.length === 0) throw new SessionsBusyError(server, config.max_sessions);
      const oldest = idle.reduce((a, b) => (a.lastUsed <= b.lastUsed ? a : b));
      oldest.actor.send({ type: 'session.evict' });
    }
    let lost: ((error: string) => void) | undefined;
    const entry: Entry = {
      values: Object.values(values).filter((value) => value !== ''),
      inputs: values,
      server,
      principal,
      connection: null,
      lastUsed: Date.now(),
      busy: 0,
      since: new Date().toISOString(),
      state: 'connecting',
      actor: createActor(sessionMachine, {
        input: {
          server,
          principal,
          idleMs: config.idle_timeout_seconds * 1000,
          work: {
            async connect(signal) {
              const connection = await connect(server, resolved, {
                signal,
                // An input resolved into the command is no config secret of its own: said here, so no error shows it.
                secrets: secretInputs(config, values),
                // Its process may print another's: each server's secrets and each session's values, asked on a failure.
                fleetSecrets: () => [...fleetSecrets(), ...sessions.secrets()],
                onClose: (error) => lost?.(error.message),
                // Nothing of a session listens for what a server sends outside a call: no standalone stream.
                standaloneStream: false,
                ...(setupClient && { setupClient: setupClient(server) }),
                // The principal's own grant, refreshed under its own lock: fleet-wide one refresh per principal and server.
                ...(grant && { authProvider: grant }),
              }).catch((error: unknown) => {
                throw ownGrantError(server, error);
              });
              entry.connection = connection;
              learn(server, principal, connection.tools, connection.connectScope);
              shareListing(listings, server, connection);
              return { close: () => closes.run(() => connection.close()) };
            },
            onLost(listener) {
              lost = listener;
            },
          },
        },
      }),
    };
    entry.actor.subscribe((snapshot) => {
      const state = snapshot.value as SessionState;
      if (state === entry.state) return;
      entry.state = state;
      entry.since = new Date().toISOString();
      append({
        type: 'session.changed',
        server,
        principal,
        state,
        ...(state === 'failed' && { error: snapshot.context.error }),
        ...(state === 'closed' && { reason: snapshot.context.reason }),
      });
      if (snapshot.status === 'done' && open.get(keyOf(server, principal)) === entry) open.delete(keyOf(server, principal));
    });
    open.set(keyOf(server, principal), entry);
    append({ type: 'session.changed', server, principal, state: 'connecting' });
    entry.actor.start();
    return entry;
  }

  /** The principal's values of inputs marked secret (the default), which no error may show wherever they were put. */
  function secretInputs(config: ServerConfig, values: Record<string, string>): string[] {
    return Object.entries(values).flatMap(([name, value]) => (value !== '' && own(config.user_inputs, name)?.secret !== false ? [value] : []));
  }

  /** Keeps what a session listed: for its principal alone when the server said private. */
  function learn(server: string, principal: string, listed: readonly Tool[], scope: CacheScope | null): void {
    const tools = agentTools(server, [...listed]);
    if (scope === 'private') {
      let own = privateCatalogs.get(server);
      if (own === undefined) privateCatalogs.set(server, (own = new Map()));
      own.set(principal, tools);
    } else {
      // The server's public list (or one of the 2025 era): a principal's earlier private one is not theirs any more.
      privateCatalogs.get(server)?.delete(principal);
      catalogs.set(server, tools);
    }
  }

  /** Tells the open sessions of `server` (the principal's, given one) to stop; returns them. */
  function stopSessions(server: string, principal: string | undefined): Entry[] {
    const ending: Entry[] = [];
    for (const entry of open.values()) if (entry.server === server && (principal === undefined || entry.principal === principal)) ending.push(entry);
    for (const entry of ending) entry.actor.send({ type: 'session.stop' });
    return ending;
  }

  async function ended(entry: Entry): Promise<void> {
    await waitFor(entry.actor, (snapshot) => snapshot.status === 'done', { timeout: Infinity });
  }

  /** The principal's session of `server`, open and ready (started when none is): a call or a forwarded request goes through it. */
  async function readyEntry(server: string, callOptions: Pick<ExecuteOptions, 'principal' | 'signal'>): Promise<Entry> {
    const config = perUserConfig(server);
    if (config === undefined || stopping) throw new Error(`server "${server}" is not a per_user server`);
    const principal = callOptions.principal === undefined ? ADMIN_PRINCIPAL : parsePrincipal(callOptions.principal).id;
    let entry = open.get(keyOf(server, principal));
    if (entry === undefined || entry.state === 'closing') {
      if (entry !== undefined) await ended(entry);
      const values = await inputs.get(server, principal);
      const missing = missingInputs(config, values);
      if (missing.length > 0) throw new MissingInputsError(server, missing);
      let grant: FleetOAuthProvider | undefined;
      if (isOAuthConfig(config)) {
        // Only the caller's own grant: never the server's shared one, never another principal's.
        grant = await grantProvider(server, principal, config);
        if ((await grant.tokens()) === undefined) throw new GrantMissingError(server);
      }
      entry = open.get(keyOf(server, principal)) ?? start(server, principal, config, values, grant);
    }
    entry.lastUsed = Date.now();
    const waiting = entry;
    waiting.busy += 1;
    const reached = await waitFor(entry.actor, (snapshot) => snapshot.value !== 'connecting', {
      timeout: config.timeout_seconds * 1000,
      ...(callOptions.signal && { signal: callOptions.signal }),
    }).finally(() => (waiting.busy -= 1));
    if (reached.value !== 'ready' || entry.connection === null) {
      throw new Error(`server "${server}": your session ${reached.value === 'failed' ? `failed: ${reached.context.error}` : 'ended'}`);
    }
    return entry;
  }

  const sessions: Sessions = {
    isPerUser: (server) => perUserConfig(server) !== undefined,

    tools(principal = ADMIN_PRINCIPAL) {
      const servers = new Set([...catalogs.keys(), ...privateCatalogs.keys()]);
      return [...servers].flatMap((server) => sessions.learnt(server, principal) ?? []);
    },

    learnt(server, principal = ADMIN_PRINCIPAL) {
      if (!sessions.isPerUser(server)) return undefined;
      return privateCatalogs.get(server)?.get(principal) ?? catalogs.get(server);
    },

    listings: (server) =>
      sessions.isPerUser(server) ? { shared: catalogs.get(server), own: privateCatalogs.get(server) ?? noneOwn } : { shared: undefined, own: noneOwn },

    owner(name, principal) {
      const cut = name.indexOf('__');
      if (cut <= 0) return undefined;
      const server = name.slice(0, cut);
      if (!sessions.isPerUser(server)) return undefined;
      const learnt = sessions.learnt(server, principal)?.find((tool) => tool.name === name);
      return { server, original: learnt?.originalName ?? name.slice(cut + 2) };
    },

    async call(server, original, args, callOptions) {
      const entry = await readyEntry(server, callOptions);
      entry.busy += 1;
      entry.actor.send({ type: 'call.started' });
      try {
        return await entry.connection!.callTool(original, args, callOptions);
      } catch (error) {
        throw ownGrantError(server, error);
      } finally {
        entry.busy -= 1;
        entry.lastUsed = Date.now();
        entry.actor.send({ type: 'call.finished' });
      }
    },

    async connection(server, connectionOptions) {
      const entry = await readyEntry(server, connectionOptions);
      return entry.connection!;
    },

    async refresh(server, refreshOptions) {
      const principal = refreshOptions.principal === undefined ? ADMIN_PRINCIPAL : parsePrincipal(refreshOptions.principal).id;
      const before = open.get(keyOf(server, principal))?.connection ?? null;
      const entry = await readyEntry(server, refreshOptions);
      const connection = entry.connection!;
      // A session that was open lists again; a new one has just listed.
      if (connection === before) {
        const listing = await connection.listTools(refreshOptions.signal);
        connection.replaceTools(listing.tools);
        learn(server, principal, connection.tools, listing.scope);
      }
      return connection;
    },

    secrets: () => [...open.values()].flatMap((entry) => entry.values),

    list(principal) {
      return [...open.values()]
        .filter((entry) => principal === undefined || entry.principal === principal)
        .map(({ server, principal: who, state, since }) => ({ server, principal: who, state, since }));
    },

    async end(server, principal) {
      // Told of every server.configured: mostly no session is open, and nothing is walked or awaited for it.
      const ending = open.size === 0 ? [] : stopSessions(server, principal);
      // A changed config may list other tools (a filter): the next session lists them again.
      if (principal === undefined) {
        catalogs.delete(server);
        privateCatalogs.delete(server);
        listings.delete(server);
      } else {
        // New inputs may be another credential: what the old one was shown privately is not kept.
        privateCatalogs.get(server)?.delete(principal);
      }
      if (ending.length > 0) await Promise.all(ending.map(ended));
    },

    async endUnlessConnectedWith(server, principal, values) {
      const entry = open.get(keyOf(server, principal));
      if (entry === undefined || entry.state === 'closing' || sameValues(entry.inputs, values)) return;
      await sessions.end(server, principal);
    },

    async shutdown() {
      stopping = true;
      const all = [...open.values()];
      for (const entry of all) entry.actor.send({ type: 'session.stop' });
      await Promise.all(all.map(ended));
    },
  };
  return sessions;
}
