/**
 * The long-lived span of each server: `server {name}`, from the first state
 * the journal bridge sees until the server stops, with every state
 * transition as a span event. Connecting and catalog re-syncs of that server
 * are its children, so a trace backend shows a server's life as one tree.
 */
import { ROOT_CONTEXT, SpanKind, trace, type Context, type Span } from '@opentelemetry/api';
import type { ServerConfig } from '../config/index.js';
import { ATTR } from './attributes.js';
import { tracer, tracingOn } from './tracer.js';

/** The span event of a transition. */
export const TRANSITION_EVENT = 'mcp_fleet.server.transition';

/** What holds one actor's lifecycle span (the journal bridge, per actor). */
export interface LifecycleOwner {
  span: Span | undefined;
}

/**
 * One host's open lifecycle spans, by server name. Each host has its own: two
 * hosts in one process may each run a server of the same name.
 */
export interface Lifecycles {
  /** Opens `server`'s lifecycle span when tracing; records `from → to` as an event. Ends it on `stopped`. */
  noteTransition(owner: LifecycleOwner, server: string, from: string | null, to: string, errorKind: string | null): void;
  /** Ends the lifecycle span (the server stopped, or its actor is gone). */
  end(owner: LifecycleOwner, server: string): void;
  /** The open lifecycle span of `server` in this host, if any. */
  spanOf(server: string): Span | undefined;
}

export function createLifecycles(): Lifecycles {
  // The open span of each server name (a successor actor takes the name over).
  const open = new Map<string, Span>();

  function end(owner: LifecycleOwner, server: string): void {
    const span = owner.span;
    if (span === undefined) return;
    owner.span = undefined;
    span.end();
    if (open.get(server) === span) open.delete(server);
  }

  return {
    noteTransition(owner, server, from, to, errorKind) {
      if (owner.span === undefined) {
        if (!tracingOn()) return;
        // A root of its own: a server's life is not part of whatever trace was active when it was added.
        owner.span = tracer().startSpan(`server ${server}`, { kind: SpanKind.INTERNAL, attributes: { [ATTR.server]: server } }, ROOT_CONTEXT);
        open.set(server, owner.span);
      }
      const span = owner.span;
      if (span.isRecording()) {
        const attributes: Record<string, string> = { [ATTR.state]: to };
        if (from !== null) attributes[ATTR.fromState] = from;
        if (errorKind !== null) attributes[ATTR.errorType] = errorKind;
        span.addEvent(TRANSITION_EVENT, attributes);
        span.setAttribute(ATTR.state, to);
      }
      if (to === 'stopped') end(owner, server);
    },
    end,
    spanOf: (server) => open.get(server),
  };
}

/** Finds the lifecycle span a server's connect or re-sync starts under (read when each starts). */
export type LifecycleSpan = () => Span | undefined;

/** The context to start a server's connect or re-sync span in: under its lifecycle span, when there is one. */
export function serverContext(lifecycle: LifecycleSpan | undefined, fallback: Context): Context {
  const span = lifecycle?.();
  return span === undefined ? fallback : trace.setSpan(fallback, span);
}

// The server of each open connection, for spans started from a connection alone (catalog sync).
// Safe to share between hosts: keyed by the connection (and its SDK client), which one host
// opened, and holding only what that host gave it.
const connections = new WeakMap<object, KnownConnection>();

/** The server a connection belongs to, its config, and where its host keeps that server's lifecycle span. */
export interface KnownConnection {
  server: string;
  config: ServerConfig;
  lifecycle: LifecycleSpan | undefined;
}

/** Remembers which server `connection` (and its SDK client) belongs to. */
export function nameConnection(connection: { client: object }, server: string, config: ServerConfig, lifecycle?: LifecycleSpan): void {
  const known = { server, config, lifecycle };
  connections.set(connection, known);
  connections.set(connection.client, known);
}

/** The server a connection or its SDK client belongs to, when it was opened by connect(). */
export function connectionServer(connection: object): KnownConnection | undefined {
  return connections.get(connection);
}
