import { createStore } from '@xstate/store';
import type { ErrorKind } from '../support/errors.js';
import type { ServerView } from './server-view.js';
import type { JournalEvent, ServerState, ToolEntry } from './events.js';

/** What the projection knows of one server: everything a `ServerView` shows, plus its tools. */
export interface ProjectedServer {
  name: string;
  /** The current actor; events of replaced actors are journaled but not projected. */
  actor: string;
  config: Record<string, unknown>;
  state: ServerState;
  error: string | null;
  error_kind: ErrorKind | null;
  since: string;
  tools: ToolEntry[];
  /** `seq` of this server's latest registration: a later one wins a shared name. */
  registered_at: number;
}

export interface ProjectionContext {
  servers: Record<string, ProjectedServer>;
  lastSeq: number;
}

function upsert(context: ProjectionContext, event: JournalEvent, change: (server: ProjectedServer) => ProjectedServer) {
  const current = context.servers[event.server] ?? {
    name: event.server,
    actor: '',
    config: {},
    state: 'pending' as const,
    error: null,
    error_kind: null,
    since: event.at,
    tools: [],
    registered_at: 0,
  };
  return { servers: { ...context.servers, [event.server]: change(current) }, lastSeq: event.seq };
}

/** Folds one journal event into the status view; pure, so replay rebuilds the same view. */
export function project(context: ProjectionContext, event: JournalEvent): ProjectionContext {
  switch (event.type) {
    case 'server.configured':
      return upsert(context, event, (server) => ({ ...server, actor: event.actor, config: event.config }));
    case 'server.transitioned':
      if (context.servers[event.server]?.actor !== event.actor) return { ...context, lastSeq: event.seq };
      return upsert(context, event, (server) => ({
        ...server,
        state: event.to,
        error: event.error,
        error_kind: event.error_kind,
        since: event.at,
      }));
    case 'server.removed': {
      const { [event.server]: _removed, ...servers } = context.servers;
      return { servers, lastSeq: event.seq };
    }
    case 'tools.registered':
      return upsert(context, event, (server) => ({ ...server, tools: event.tools, registered_at: event.seq }));
    case 'tools.unregistered':
      return upsert(context, event, (server) => ({ ...server, tools: [], registered_at: 0 }));
    case 'tool.shadowed':
    // Records for readers of the journal: who is shadowed is derived from registrations,
    // a changed tool list arrives as `tools.registered`, and logs are not state.
    case 'catalog.changed':
    case 'server.log':
      return { ...context, lastSeq: event.seq };
  }
}

/**
 * Names `server` lists for more than one of its own tools (`a.b` and `a_b`
 * namespace alike): its later tool hides the earlier, as between servers.
 */
function takenWithin(server: ProjectedServer): Set<string> {
  const seen = new Set<string>();
  const taken = new Set<string>();
  for (const tool of server.tools) {
    if (seen.has(tool.name)) taken.add(tool.name);
    seen.add(tool.name);
  }
  return taken;
}

/** Each name of `server`'s tools that `taken` says is hidden, once. */
function hiddenNames(server: ProjectedServer, taken: (name: string) => boolean): string[] {
  return [...new Set(server.tools.map((tool) => tool.name).filter(taken))];
}

/** Names of `server`'s tools that a later registration of another server, or another of its own tools, took over (last wins). */
export function shadowedTools(context: ProjectionContext, server: ProjectedServer): string[] {
  const taken = takenWithin(server);
  for (const other of Object.values(context.servers)) {
    if (other.name === server.name || other.registered_at <= server.registered_at) continue;
    for (const tool of other.tools) taken.add(tool.name);
  }
  return hiddenNames(server, (name) => taken.has(name));
}

/**
 * Per tool name, the latest registration offering it: a server's tool is
 * shadowed when that is later than the server's own (as {@link shadowedTools}
 * says), found in one pass over all tools instead of one per server.
 */
function latestRegistrations(context: ProjectionContext): Map<string, number> {
  const latest = new Map<string, number>();
  for (const server of Object.values(context.servers)) {
    for (const tool of server.tools) {
      if ((latest.get(tool.name) ?? -1) < server.registered_at) latest.set(tool.name, server.registered_at);
    }
  }
  return latest;
}

// The context is immutable (each event makes a new one), so its views are computed once:
// status reads (GET /api/mcp/servers, every `host.server(name)`) between two events cost nothing.
const viewsOf = new WeakMap<ProjectionContext, readonly ServerView[]>();

/** Every server's `ServerView`, in the order they were first configured. A fresh array; the views are shared. */
export function serverViews(context: ProjectionContext): ServerView[] {
  let views = viewsOf.get(context);
  if (views === undefined) {
    const latest = latestRegistrations(context);
    views = Object.values(context.servers).map((server) => {
      const within = takenWithin(server);
      return toServerView(
        server,
        hiddenNames(server, (name) => within.has(name) || latest.get(name)! > server.registered_at),
      );
    });
    viewsOf.set(context, views);
  }
  return [...views];
}

/** The status store: an `@xstate/store` fed only by journal events. */
export function createProjection(initial: readonly JournalEvent[] = []) {
  const store = createStore({
    context: { servers: {}, lastSeq: 0 } as ProjectionContext,
    on: {
      journal: (context, event: { event: JournalEvent }) => project(context, event.event),
    },
  });
  for (const event of initial) store.send({ type: 'journal', event });
  return {
    apply(event: JournalEvent): void {
      store.send({ type: 'journal', event });
    },
    get context(): ProjectionContext {
      return store.getSnapshot().context;
    },
    store,
  };
}
export type Projection = ReturnType<typeof createProjection>;

/** The SPEC §6 view of a projected server. */
export function toServerView(server: ProjectedServer, shadowed: string[] = []): ServerView {
  const auth = (server.config['auth'] ?? { kind: 'none' }) as { kind?: string };
  const kind = auth.kind === 'bearer' || auth.kind === 'oauth' ? auth.kind : 'none';
  return {
    name: server.name,
    config: server.config,
    state: server.state,
    ready: server.state === 'ready',
    error: server.error,
    error_kind: server.error_kind,
    auth: { kind, status: authStatus(kind, server.state) },
    tool_count: server.tools.length,
    since: server.since,
    shadowed_tools: shadowed,
  };
}

function authStatus(kind: 'none' | 'bearer' | 'oauth', state: ServerState): string {
  if (kind === 'none') return 'none';
  if (kind === 'bearer') return 'configured';
  if (state === 'ready') return 'authorized';
  if (state === 'needs_reauth' || state === 'authenticating') return state;
  return 'unknown';
}
