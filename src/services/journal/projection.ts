import { createStore } from '@xstate/store';
import type { ErrorKind } from '../errors.js';
import type { ServerView } from '../status.js';
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
  /** This server's tools hidden by another server's tool of the same name. */
  shadowed_tools: string[];
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
    shadowed_tools: [],
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
      return upsert(context, event, (server) => ({ ...server, tools: event.tools, shadowed_tools: [] }));
    case 'tools.unregistered':
      return upsert(context, event, (server) => ({ ...server, tools: [], shadowed_tools: [] }));
    case 'tool.shadowed': {
      const loser = context.servers[event.shadowed_server];
      if (!loser) return { ...context, lastSeq: event.seq };
      const shadowed = loser.shadowed_tools.includes(event.tool)
        ? loser.shadowed_tools
        : [...loser.shadowed_tools, event.tool];
      return {
        servers: { ...context.servers, [event.shadowed_server]: { ...loser, shadowed_tools: shadowed } },
        lastSeq: event.seq,
      };
    }
  }
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
export function toServerView(server: ProjectedServer): ServerView {
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
    shadowed_tools: server.shadowed_tools,
  };
}

function authStatus(kind: 'none' | 'bearer' | 'oauth', state: ServerState): string {
  if (kind === 'none') return 'none';
  if (kind === 'bearer') return 'configured';
  if (state === 'ready') return 'authorized';
  if (state === 'needs_reauth' || state === 'authenticating') return state;
  return 'unknown';
}
