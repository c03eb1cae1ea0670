import { createStore } from '@xstate/store';
import type { AuthKind } from '../config/index.js';
import type { AuthStatus, LastRun, ServerView } from './server-view.js';
import type { JournalEvent, OfferedKind, ServerJournalEvent, ServerState, ToolEntry } from './events.js';
import type { ProjectedServer } from './projected-server.js';
import { own } from '../records.js';

export type { ProjectedServer } from './projected-server.js';

export interface ProjectionContext {
  servers: Record<string, ProjectedServer>;
  lastSeq: number;
}

export function emptyProjection(): ProjectionContext {
  return { servers: {}, lastSeq: 0 };
}

const unlisted = { resources: null, templates: null, prompts: null } satisfies Partial<ProjectedServer>;
const unregistered = { tools: [], registered_at: 0, registered_since: 0 } satisfies Partial<ProjectedServer>;

/** The change of a server the projection knows: an event about any other (a removed one's late steps) changes nothing. */
function upsert(context: ProjectionContext, event: ServerJournalEvent, change: (server: ProjectedServer) => ProjectedServer) {
  const current = own(context.servers, event.server);
  if (current === undefined) return { ...context, lastSeq: event.seq };
  return { servers: { ...context.servers, [event.server]: change(current) }, lastSeq: event.seq };
}

/** A server as its first `server.configured` brings it in. */
function configured(event: Extract<JournalEvent, { type: 'server.configured' }>): ProjectedServer {
  return {
    name: event.server,
    actor: event.actor,
    config: event.config,
    state: 'pending',
    error: null,
    error_kind: null,
    since: event.at,
    ...unregistered,
    last_run: null,
    outcome: null,
    ...unlisted,
  };
}

/**
 * A new run: each server's last known state becomes its `last_run`. Its state
 * stays as it was until an actor of this run reports; the previous run's
 * actors are gone (`actor` is cleared, so only an actor configured in this run
 * moves the view), and so is everything they had registered or listed.
 */
function nextRun(server: ProjectedServer): ProjectedServer {
  return { ...server, actor: '', last_run: server.outcome ?? outcomeOf(server), outcome: null, ...unregistered, ...unlisted };
}

/**
 * A server entering `ready`: what it offers is not listed yet; what it does
 * not offer it has none of. Without `offers` (an older journal) neither is known.
 */
function offered(offers: readonly OfferedKind[] | undefined): Pick<ProjectedServer, 'resources' | 'templates' | 'prompts'> {
  if (offers === undefined) return unlisted;
  const resources = offers.includes('resources') ? null : [];
  return { resources, templates: resources, prompts: offers.includes('prompts') ? null : [] };
}

function outcomeOf({ state, error, error_kind, tools, since }: ProjectedServer): LastRun {
  return { state, error, error_kind, tool_count: tools.length, at: since };
}

/** Folds one journal event into the views; pure, so replay (from a snapshot too) rebuilds the same views. */
export function project(context: ProjectionContext, event: JournalEvent): ProjectionContext {
  switch (event.type) {
    case 'worker.started': {
      const servers: Record<string, ProjectedServer> = {};
      for (const [name, server] of Object.entries(context.servers)) servers[name] = nextRun(server);
      return { servers, lastSeq: event.seq };
    }
    case 'server.configured': {
      const server = own(context.servers, event.server);
      const next = server === undefined ? configured(event) : { ...server, actor: event.actor, config: event.config };
      return { servers: { ...context.servers, [event.server]: next }, lastSeq: event.seq };
    }
    case 'server.transitioned':
      if (own(context.servers, event.server)?.actor !== event.actor) return { ...context, lastSeq: event.seq };
      return upsert(context, event, (server) => {
        const moved: ProjectedServer = {
          ...server,
          state: event.to,
          error: event.error,
          error_kind: event.error_kind,
          since: event.at,
          // Listings are a ready server's: whatever it listed is gone with its connection.
          ...(event.to === 'ready' ? offered(event.offers) : unlisted),
        };
        return event.to === 'stopped' ? moved : { ...moved, outcome: outcomeOf(moved) };
      });
    case 'server.removed': {
      const { [event.server]: _removed, ...servers } = context.servers;
      return { servers, lastSeq: event.seq };
    }
    case 'tools.registered':
      // The event's array is kept as is (events are immutable too): O(servers), not O(tools).
      return upsert(context, event, (server) => ({
        ...server,
        tools: event.tools,
        known_tools: event.tools,
        registered_at: event.seq,
        registered_since: server.registered_since || event.seq,
        outcome: server.outcome && { ...server.outcome, tool_count: event.tools.length },
      }));
    case 'tools.unregistered':
      return upsert(context, event, (server) => ({ ...server, ...unregistered }));
    case 'resources.listed':
      return upsert(context, event, (server) => ({ ...server, resources: event.resources, templates: event.templates }));
    case 'prompts.listed':
      return upsert(context, event, (server) => ({ ...server, prompts: event.prompts }));
    case 'tool.shadowed':
    // Records for readers of the journal: who is shadowed is derived from registrations,
    // a changed tool list arrives as `tools.registered`, and logs are not state.
    // `servers` stays the same object, so a selector keeps what it derived from it.
    case 'catalog.changed':
    case 'server.log':
    // Approvals are calls, not server state: the pending ones live in the host's gate.
    case 'approval.requested':
    case 'approval.decided':
    case 'tool.called':
    // Audit records: who did what, not server state.
    case 'consent.begun':
    case 'consent.completed':
    case 'consent.failed':
    case 'inputs.changed':
    // A session is one principal's, not the server's state: the host's sessions list them.
    case 'session.changed':
      return { ...context, lastSeq: event.seq };
  }
}

/** A tool as an agent sees it: the winner of its name. */
export interface VisibleTool {
  name: string;
  server: string;
  original: string;
  description: string;
}

type Servers = ProjectionContext['servers'];

/** What decides who owns a server's tool names: its latest registration (0: none now) and its tools. */
export type RegisteredServer = Pick<ProjectedServer, 'name' | 'registered_at' | 'tools'>;

/** What decides who owns each tool name: every registered server, oldest registration first. */
export type Registrations = RegisteredServer[];

export function registrationsOf(servers: Servers): Registrations {
  return Object.values(servers)
    .filter((server) => server.registered_at > 0)
    .sort((a, b) => a.registered_at - b.registered_at)
    .map(({ name, registered_at, tools }) => ({ name, registered_at, tools }));
}

/** Tool name → the server whose tool of that name is visible: servers taken oldest registration first, so a later one overwrites. */
export function ownersFrom(registrations: Registrations): Map<string, string> {
  const owners = new Map<string, string>();
  for (const server of registrations) for (const tool of server.tools) owners.set(tool.name, server.name);
  return owners;
}

/**
 * Who owns each tool name: the latest registration offering it wins (a
 * shared name goes to the last registered; docs/contract.md, Tools).
 */
export function ownersOf(context: ProjectionContext): Map<string, string> {
  return ownersFrom(registrationsOf(context.servers));
}

/**
 * The server a tool name belongs to: the one whose registered tool of that
 * name an agent sees; else the server whose `{server}__` namespace the name
 * is in (the longest server name that fits), such as a tool of an
 * `on_demand` server waiting to start or of one that is not ready.
 */
export function toolOwner(context: ProjectionContext, name: string, owners: ReadonlyMap<string, string> = ownersOf(context)): string | undefined {
  return owners.get(name) ?? namespaceOwner(Object.keys(context.servers), name);
}

/** Of `servers`, the one whose `{server}__` namespace the tool name is in: the longest that fits (a server name may hold `__`). */
export function namespaceOwner(servers: Iterable<string>, name: string): string | undefined {
  let owner: string | undefined;
  for (const server of servers) {
    if (name.startsWith(`${server}__`) && server.length > (owner?.length ?? 0)) owner = server;
  }
  return owner;
}

/**
 * The tools an agent sees, as the tool registry's `list()` orders them:
 * servers in first-registration order, each server's tools in its own order.
 * Every name once: the latest registration wins a name shared between
 * servers; within one server (`a.b` and `a_b` namespace alike) its later tool
 * wins, in the place of the first.
 */
export function visibleTools(context: ProjectionContext, owners: ReadonlyMap<string, string> = ownersOf(context)): VisibleTool[] {
  const out: VisibleTool[] = [];
  const ordered = Object.values(context.servers)
    .filter((server) => server.registered_since > 0)
    .sort((a, b) => a.registered_since - b.registered_since);
  for (const server of ordered) {
    for (const [name, tool] of lastOfEachName(server.tools)) {
      if (owners.get(name) === server.name) {
        out.push({ name, server: server.name, original: tool.original, description: tool.description });
      }
    }
  }
  return out;
}

/** Name → the server's last tool of that name, in the order each name first appears. */
function lastOfEachName(tools: readonly ToolEntry[]): Map<string, ToolEntry> {
  const byName = new Map<string, ToolEntry>();
  for (const tool of tools) byName.set(tool.name, tool);
  return byName;
}

/**
 * The tools `server`'s registration of `tools` on top of `before` hides, as
 * the tool registry reported them: first each repeated name among its own
 * tools (the loser is `server` itself), then each name another server owned
 * before. A server re-registering a name it already owned hides nothing.
 * `before` needs only each server's registration: a projection, or what a
 * tool mount registered.
 */
export function shadowedByRegistration(
  before: { servers: Record<string, RegisteredServer> },
  server: string,
  tools: readonly ToolEntry[],
): Array<{ tool: string; shadowed_server: string }> {
  const out: Array<{ tool: string; shadowed_server: string }> = [];
  const names = new Set<string>();
  for (const tool of tools) {
    if (names.has(tool.name)) out.push({ tool: tool.name, shadowed_server: server });
    names.add(tool.name);
  }
  // Owners before. Only another server can have owned one of these names, and only if
  // it registered after this one last did: the other servers' tools are walked (for a
  // re-sync of one large server, few), this server's own again only if one is shared.
  const others: RegisteredServer[] = [];
  for (const name in before.servers) {
    const other = own(before.servers, name) as RegisteredServer;
    if (other.registered_at > 0 && other.name !== server) others.push(other);
  }
  // No other server registered (a tool mount passes only those holding one of these names): nothing is hidden.
  if (others.length === 0) return out;
  others.sort((a, b) => a.registered_at - b.registered_at);
  const latestOther = new Map<string, RegisteredServer>();
  for (const other of others) for (const tool of other.tools) if (names.has(tool.name)) latestOther.set(tool.name, other);
  if (latestOther.size === 0) return out;
  const self = own(before.servers, server);
  const selfAt = self?.registered_at ?? 0;
  let selfNames: Set<string> | null = null;
  for (const name of names) {
    const other = latestOther.get(name);
    if (other === undefined) continue;
    if (self !== undefined && selfAt > other.registered_at) {
      selfNames ??= new Set(self.tools.map((tool) => tool.name));
      if (selfNames.has(name)) continue;
    }
    out.push({ tool: name, shadowed_server: other.name });
  }
  return out;
}

/** Each name of `server`'s tools that is hidden: another server owns it, or it repeats among its own tools. */
export function shadowedOf(server: ProjectedServer, owners: ReadonlyMap<string, string>): string[] {
  const seen = new Set<string>();
  const hidden = new Set<string>();
  for (const tool of server.tools) {
    if (seen.has(tool.name) || owners.get(tool.name) !== server.name) hidden.add(tool.name);
    seen.add(tool.name);
  }
  return [...hidden];
}

/** How many of `server`'s tools are registered: each name it owns, once. */
export function registeredCount(server: ProjectedServer, owners: ReadonlyMap<string, string>): number {
  const names = new Set<string>();
  for (const tool of server.tools) if (owners.get(tool.name) === server.name) names.add(tool.name);
  return names.size;
}

/** Every server's `ServerView`, in the order they were first configured. */
export function serverViews(context: ProjectionContext, owners: ReadonlyMap<string, string> = ownersOf(context)): ServerView[] {
  return Object.values(context.servers).map((server) => toServerView(server, shadowedOf(server, owners), registeredCount(server, owners)));
}

/**
 * The status store: an `@xstate/store` fed only by journal events, or reset
 * to a saved context (a snapshot, when the journal opens).
 */
export function createProjection(initial: readonly JournalEvent[] = [], from: ProjectionContext = emptyProjection()) {
  const store = projectionStore(initial.reduce(project, from));
  return {
    apply(event: JournalEvent): void {
      store.send({ type: 'journal', event });
    },
    /** Replaces the whole context (one notification to the store's subscribers). */
    restore(context: ProjectionContext): void {
      store.send({ type: 'restore', context });
    },
    get context(): ProjectionContext {
      return store.getSnapshot().context;
    },
    store,
  };
}
export type Projection = ReturnType<typeof createProjection>;

type ProjectionEvent = { type: 'journal'; event: JournalEvent } | { type: 'restore'; context: ProjectionContext };

/** A projection emits nothing. */
const NO_EFFECTS: [] = [];

/**
 * The store, on logic of its own: `createStore({ context, on })` makes an
 * effects queue, a queue of triggered events and an `enqueue` object with two
 * Proxies for every event (about 1.4 KiB each, and every lifecycle step is
 * one), none of which a projection uses.
 */
function projectionStore(context: ProjectionContext) {
  return createStore<ProjectionContext, ProjectionEvent, never>({
    eventTypes: ['journal', 'restore'],
    getInitialSnapshot: () => ({ status: 'active' as const, context, output: undefined, error: undefined }),
    transition(snapshot, event) {
      const next = event.type === 'journal' ? project(snapshot.context, event.event) : event.context;
      return [next === snapshot.context ? snapshot : { ...snapshot, context: next }, NO_EFFECTS];
    },
  });
}

/** The `ServerView` of a projected server (docs/contract.md, API shapes). */
/** `registered`: how many of its tools are registered (all of them when none is shadowed). */
export function toServerView(server: ProjectedServer, shadowed: string[] = [], registered = server.tools.length): ServerView {
  const kind: AuthKind = server.config.type === 'remote' ? server.config.auth.kind : 'none';
  return {
    name: server.name,
    config: server.config,
    state: server.state,
    ready: server.state === 'ready',
    error: server.error,
    error_kind: server.error_kind,
    auth: { kind, status: authStatus(kind, server.state) },
    tool_count: registered,
    since: server.since,
    last_run: server.last_run,
    shadowed_tools: shadowed,
    // The config store knows it; the host adds it to the view.
    version: null,
  };
}

function authStatus(kind: AuthKind, state: ServerState): AuthStatus {
  if (kind === 'none') return 'none';
  if (state === 'needs_reauth' || state === 'authenticating') return state;
  // A bearer token is the user's own: shown as given, whatever the server said of it last.
  if (kind === 'bearer') return 'configured';
  // OAuth and a machine's credentials: proven by a ready connection, else only given (or not yet obtained).
  return state === 'ready' ? 'authorized' : 'configured';
}
