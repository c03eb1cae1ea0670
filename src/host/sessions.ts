/**
 * The sessions of `per_user` servers on this worker: each principal calls
 * through a connection of their own, made with the config resolved with
 * their `user_inputs` (`${user.NAME}`), one actor of the session machine
 * each. At most `max_sessions` per server (the least recently used is ended
 * for a new one); a session ends after `idle_timeout_seconds` with no call.
 * The tools a per_user server offers are those its first session listed on
 * this worker (its catalog is the server's, whoever connected).
 */
import { createActor, waitFor } from 'xstate';
import type { Tool } from '@modelcontextprotocol/client';
import { connect, createCallLimiter, type ServerConnection } from '../connection/index.js';
import { referencingFields, userReferences, USER_REFERENCE, type ServerConfig } from '../config/schema.js';
import { jsonEqual, toAgentTool, type AgentTool, type ExecuteOptions } from '../catalog/index.js';
import type { JournalEventInput } from '../journal/index.js';
import { sessionMachine, type SessionActorRef, type SessionState } from '../machines/session.machine.js';
import { ADMIN_PRINCIPAL, Principal, type UserInputsStore } from '../users/index.js';

/** One session as `GET /api/mcp/sessions` shows it. */
export interface SessionView {
  server: string;
  principal: string;
  state: SessionState;
  /** When it entered its state (ISO 8601). */
  since: string;
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
}

export interface Sessions {
  /** Whether `server` is a configured `per_user` server. */
  isPerUser(server: string): boolean;
  /** The agent tools of the per_user servers whose catalog a session has learnt. */
  tools(): AgentTool[];
  /** The tools a session of the per_user server `server` listed (the same array until it is learnt again); undefined before. */
  learnt(server: string): readonly AgentTool[] | undefined;
  /** The tool `name` (`{server}__{tool}`) of a per_user server, learnt or not: the server and its own name of it. */
  owner(name: string): { server: string; original: string } | undefined;
  /** Calls `original` of `server` through the principal's session (the admin's without one). */
  call(server: string, original: string, args: Record<string, unknown>, options: ExecuteOptions): Promise<unknown>;
  /** The values the open sessions connected with, for redacting logs. */
  secrets(): string[];
  /** Every open session (of `principal` only, when given). */
  list(principal?: string): SessionView[];
  /** Ends the sessions of `server` (of one principal when given): their inputs or config changed, or the server went. */
  end(server: string, principal?: string): Promise<void>;
  /** Ends every session; resolves once each connection is gone. */
  shutdown(): Promise<void>;
}

interface Entry {
  /** The principal's values it connected with (redacted from logs while it is open). */
  values: string[];
  server: string;
  principal: string;
  actor: SessionActorRef;
  connection: ServerConnection | null;
  lastUsed: number;
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

/** The config with each `${user.NAME}` replaced by the principal's value. */
export function resolveUserConfig(config: ServerConfig, values: Record<string, string>): ServerConfig {
  const fill = (text: string): string => text.replace(USER_REFERENCE, (_, name: string) => values[name] ?? '');
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
  return Object.keys(config.user_inputs).filter((name) => used.has(name) && !(values[name] ?? '').length);
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
  const open = new Map<string, Entry>();
  /** Each per_user server's tools, from the first session that listed them. */
  const catalogs = new Map<string, AgentTool[]>();
  /** Each per_user server's listing as the first session got it: a session whose listing is the same holds this one. */
  const listings = new Map<string, Tool[]>();
  const closes = createCallLimiter(CONCURRENT_CLOSES);
  let stopping = false;

  function agentTools(server: string, tools: Tool[]): AgentTool[] {
    return tools.map((tool) => toAgentTool(server, tool, (original, args, callOptions) => sessions.call(server, original, args, callOptions)));
  }

  function start(server: string, principal: string, config: ServerConfig, values: Record<string, string>): Entry {
    const resolved = resolveUserConfig(config, values);
    // One already closing is on its way out: it holds no place.
    const forServer = [...open.values()].filter((entry) => entry.server === server && entry.state !== 'closing');
    // Room for the new one: the least recently used session of this server ends.
    if (forServer.length >= config.max_sessions) {
      const oldest = forServer.reduce((a, b) => (a.lastUsed <= b.lastUsed ? a : b));
      oldest.actor.send({ type: 'session.evict' });
    }
    let lost: ((error: string) => void) | undefined;
    const entry: Entry = {
      values: Object.values(values).filter((value) => value !== ''),
      server,
      principal,
      connection: null,
      lastUsed: Date.now(),
      since: new Date().toISOString(),
      state: 'connecting',
      actor: createActor(sessionMachine, {
        input: {
          server,
          principal,
          idleMs: config.idle_timeout_seconds * 1000,
          work: {
            async connect(signal) {
              // Nothing of a session listens for what a server sends outside a call: no standalone stream.
              const connection = await connect(server, resolved, { signal, onClose: (error) => lost?.(error.message), standaloneStream: false });
              entry.connection = connection;
              if (!catalogs.has(server)) catalogs.set(server, agentTools(server, connection.tools));
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
      options.append({
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
    options.append({ type: 'session.changed', server, principal, state: 'connecting' });
    entry.actor.start();
    return entry;
  }

  async function ended(entry: Entry): Promise<void> {
    await waitFor(entry.actor, (snapshot) => snapshot.status === 'done', { timeout: Infinity });
  }

  const sessions: Sessions = {
    isPerUser: (server) => options.perUserConfig(server) !== undefined,

    tools() {
      return [...catalogs].flatMap(([server, tools]) => (sessions.isPerUser(server) ? tools : []));
    },

    learnt: (server) => (sessions.isPerUser(server) ? catalogs.get(server) : undefined),

    owner(name) {
      const cut = name.indexOf('__');
      if (cut <= 0) return undefined;
      const server = name.slice(0, cut);
      if (!sessions.isPerUser(server)) return undefined;
      const learnt = catalogs.get(server)?.find((tool) => tool.name === name);
      return { server, original: learnt?.originalName ?? name.slice(cut + 2) };
    },

    async call(server, original, args, callOptions) {
      const config = options.perUserConfig(server);
      if (config === undefined || stopping) throw new Error(`server "${server}" is not a per_user server`);
      if (config.type === 'remote' && config.auth.kind === 'oauth') {
        throw new Error(`server "${server}": per-user OAuth grants are not supported yet; give each user a token as a user input (\${user.NAME} in headers)`);
      }
      const principal = callOptions.principal === undefined ? ADMIN_PRINCIPAL : Principal.parse(callOptions.principal).id;
      let entry = open.get(keyOf(server, principal));
      if (entry === undefined || entry.state === 'closing') {
        if (entry !== undefined) await ended(entry);
        const values = await options.inputs.get(server, principal);
        const missing = missingInputs(config, values);
        if (missing.length > 0) throw new MissingInputsError(server, missing);
        entry = open.get(keyOf(server, principal)) ?? start(server, principal, config, values);
      }
      entry.lastUsed = Date.now();
      const reached = await waitFor(entry.actor, (snapshot) => snapshot.value !== 'connecting', {
        timeout: config.timeout_seconds * 1000,
        ...(callOptions.signal && { signal: callOptions.signal }),
      });
      if (reached.value !== 'ready' || entry.connection === null) {
        throw new Error(`server "${server}": your session ${reached.value === 'failed' ? `failed: ${reached.context.error}` : 'ended'}`);
      }
      entry.actor.send({ type: 'call.started' });
      try {
        return await entry.connection.callTool(original, args, callOptions);
      } finally {
        entry.lastUsed = Date.now();
        entry.actor.send({ type: 'call.finished' });
      }
    },

    secrets: () => [...open.values()].flatMap((entry) => entry.values),

    list(principal) {
      return [...open.values()]
        .filter((entry) => principal === undefined || entry.principal === principal)
        .map(({ server, principal: who, state, since }) => ({ server, principal: who, state, since }));
    },

    async end(server, principal) {
      const ending = [...open.values()].filter((entry) => entry.server === server && (principal === undefined || entry.principal === principal));
      for (const entry of ending) entry.actor.send({ type: 'session.stop' });
      // A changed config may list other tools (a filter): the next session lists them again.
      if (principal === undefined) {
        catalogs.delete(server);
        listings.delete(server);
      }
      await Promise.all(ending.map(ended));
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
