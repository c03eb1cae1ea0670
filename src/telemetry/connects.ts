/**
 * Spans of connecting a server: `connect {server}` (INTERNAL, under the
 * server's lifecycle span) around the whole connect, with the handshake
 * (`initialize`, or `server/discover` in the 2026-07-28 era, spawning the
 * child for stdio) and the first `tools/list` as CLIENT children.
 */
import { context, SpanKind, trace } from '@opentelemetry/api';
import type { Client } from '@modelcontextprotocol/client';
import type { ServerConfig } from '../config/index.js';
import { ATTR, errorType, peerAttributes, requestAttributes, sessionAttributes } from './attributes.js';
import { serverContext, type LifecycleSpan } from './lifecycle.js';
import { endFailed, observe, observed } from './spans.js';
import { tracer, tracingOn } from './tracer.js';

/** What a finished connect tells its span. */
export interface ConnectOutcome {
  client: Client;
  pid: number | null;
  tools: readonly unknown[];
}

/** Runs `run` (the whole connect) inside `connect {server}` when tracing, under `lifecycle`'s span when it has one; plain otherwise. */
export function traceConnect<T extends ConnectOutcome>(
  server: string,
  config: ServerConfig,
  lifecycle: LifecycleSpan | undefined,
  run: () => Promise<T>,
): Promise<T> {
  // Not async itself: untraced, a connect makes no promise or frame of this function's.
  return tracingOn() ? tracedConnect(server, config, lifecycle, run) : run();
}

async function tracedConnect<T extends ConnectOutcome>(
  server: string,
  config: ServerConfig,
  lifecycle: LifecycleSpan | undefined,
  run: () => Promise<T>,
): Promise<T> {
  const parent = serverContext(lifecycle, context.active());
  const span = tracer().startSpan(`connect ${server}`, { kind: SpanKind.INTERNAL }, parent);
  if (span.isRecording()) span.setAttributes(peerAttributes(config, { [ATTR.server]: server }));
  try {
    const connection = await context.with(trace.setSpan(parent, span), run);
    if (span.isRecording()) {
      span.setAttributes(sessionAttributes(connection.client, {}));
      if (connection.pid !== null) span.setAttribute(ATTR.processPid, connection.pid);
      span.setAttribute(ATTR.toolCount, connection.tools.length);
    }
    span.end();
    return connection;
  } catch (error) {
    endFailed(span, errorType(error));
    throw error;
  }
}

/** The handshake with `server` as a CLIENT span, named by the era it ended in; `clientOf` finds the client in `run`'s result. */
export function observeHandshake<T>(server: string, config: ServerConfig, clientOf: (result: T) => Client, run: () => Promise<T>): Promise<T> {
  return observed() ? observedHandshake(server, config, clientOf, run) : run();
}

function observedHandshake<T>(server: string, config: ServerConfig, clientOf: (result: T) => Client, run: () => Promise<T>): Promise<T> {
  // Named for the era once it is known: the duration recorded after it carries the same name and version.
  let method = 'initialize';
  let version: string | undefined;
  const attributes = () =>
    peerAttributes(config, { [ATTR.methodName]: method, [ATTR.server]: server, ...(version !== undefined && { [ATTR.protocolVersion]: version }) });
  return observe({ method: 'initialize', attributes }, async (span) => {
    const result = await run();
    const client = clientOf(result);
    if (client.getProtocolEra() === 'modern') method = 'server/discover';
    version = client.getNegotiatedProtocolVersion();
    if (span !== undefined && span.isRecording()) {
      if (method !== 'initialize') {
        span.updateName(method);
        span.setAttribute(ATTR.methodName, method);
      }
      span.setAttributes(sessionAttributes(client, {}));
    }
    return result;
  });
}

/** A `tools/list` (every page) of `server` as a CLIENT span. */
export function observeToolListing<T>(server: string, config: ServerConfig, client: Client, run: () => Promise<T>): Promise<T> {
  if (!observed()) return run();
  return observe({ method: 'tools/list', attributes: () => requestAttributes(server, config, client, 'tools/list') }, run);
}
