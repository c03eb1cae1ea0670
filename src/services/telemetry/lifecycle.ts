/**
 * The long-lived span of each server: `server {name}`, from the first state
 * the journal bridge sees until the server stops, with every state
 * transition as a span event. Connecting and catalog re-syncs of that server
 * are its children, so a trace backend shows a server's life as one tree.
 */
import { ROOT_CONTEXT, SpanKind, trace, type Context, type Span } from '@opentelemetry/api';
import type { ServerConfig } from '../config/schema.js';
import { ATTR } from './attributes.js';
import { tracer, tracingOn } from './tracer.js';

/** The span event of a transition. */
export const TRANSITION_EVENT = 'mcp_fleet.server.transition';

// The open lifecycle span of each server name (a successor actor takes the name over).
const lifecycles = new Map<string, Span>();

/** A server's lifecycle span, opened when tracing; records `from → to` as an event. Ends it on `stopped`. */
export function noteTransition(owner: LifecycleOwner, server: string, from: string | null, to: string, errorKind: string | null): void {
  if (owner.span === undefined) {
    if (!tracingOn()) return;
    // A root of its own: a server's life is not part of whatever trace was active when it was added.
    owner.span = tracer().startSpan(`server ${server}`, { kind: SpanKind.INTERNAL, attributes: { [ATTR.server]: server } }, ROOT_CONTEXT);
    lifecycles.set(server, owner.span);
  }
  const span = owner.span;
  if (span.isRecording()) {
    const attributes: Record<string, string> = { [ATTR.state]: to };
    if (from !== null) attributes[ATTR.fromState] = from;
    if (errorKind !== null) attributes[ATTR.errorType] = errorKind;
    span.addEvent(TRANSITION_EVENT, attributes);
    span.setAttribute(ATTR.state, to);
  }
  if (to === 'stopped') endLifecycle(owner, server);
}

/** Ends the lifecycle span (the server stopped, or its actor is gone). */
export function endLifecycle(owner: LifecycleOwner, server: string): void {
  const span = owner.span;
  if (span === undefined) return;
  owner.span = undefined;
  span.end();
  if (lifecycles.get(server) === span) lifecycles.delete(server);
}

/** What holds one actor's lifecycle span (the journal bridge, per actor). */
export interface LifecycleOwner {
  span: Span | undefined;
}

/** The context to start a server's connect or re-sync span in: under its lifecycle span, when there is one. */
export function serverContext(server: string, fallback: Context): Context {
  const span = lifecycles.get(server);
  return span === undefined ? fallback : trace.setSpan(fallback, span);
}

// The server of each open connection, for spans started from a connection alone (catalog sync).
const connections = new WeakMap<object, { server: string; config: ServerConfig }>();

/** Remembers which server `connection` (and its SDK client) belongs to. */
export function nameConnection(connection: { client: object }, server: string, config: ServerConfig): void {
  const known = { server, config };
  connections.set(connection, known);
  connections.set(connection.client, known);
}

/** The server a connection or its SDK client belongs to, when it was opened by connect(). */
export function connectionServer(connection: object): { server: string; config: ServerConfig } | undefined {
  return connections.get(connection);
}
