/**
 * Span helpers: a CLIENT span per MCP request named `{mcp.method.name}
 * {target}` as the conventions say, its end with `error.type` and an ERROR
 * status on failure, and an operation timed into `mcp.client.operation.duration`.
 * Attributes are built only for a span that records.
 */
import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import { ATTR, errorType } from './attributes.js';
import { instruments } from './instruments.js';
import { tracer, tracingOn } from './tracer.js';

/** Starts a CLIENT span for `method` (on `target` when there is a low-cardinality one) under `parent`. */
export function startRequestSpan(method: string, target: string | undefined, parent: Context, attributes?: () => Attributes): Span {
  const span = tracer().startSpan(target === undefined ? method : `${method} ${target}`, { kind: SpanKind.CLIENT }, parent);
  if (attributes !== undefined && span.isRecording()) span.setAttributes(attributes());
  return span;
}

/** Ends `span` as failed: `error.type` and an ERROR status whose text is that type, never a message (it may quote a secret). */
export function endFailed(span: Span, type: string): void {
  if (span.isRecording()) {
    span.setAttribute(ATTR.errorType, type);
    span.setStatus({ code: SpanStatusCode.ERROR, message: type });
  }
  span.end();
}

/** What an observed request is. */
export interface Operation {
  method: string;
  /** The tool or prompt name; the span's name takes it. */
  target?: string;
  /** The span's and the duration's attributes (identifiers only, low cardinality). */
  attributes: () => Attributes;
  /** Attributes of the span alone (a resource URI: too many values for a metric). */
  detail?: () => Attributes;
  /** When set, this span's parent; else the active context's span. */
  parent?: Context;
  /** The caller's signal: a request it cancelled ends as `cancelled`, not as an error. */
  signal?: AbortSignal;
}

/** `mcp_fleet.outcome` of a request its caller cancelled, as the journal's `tool.called` says of a call. */
export const CANCELLED = 'cancelled';

/** Ends `span` as cancelled by its caller: no error, its status left unset. */
export function endCancelled(span: Span): void {
  if (span.isRecording()) span.setAttribute(ATTR.outcome, CANCELLED);
  span.end();
}

/** Whether {@link observe} would record anything: a tracer or a meter provider is registered. Else callers skip building its closures. */
export function observed(): boolean {
  return tracingOn() || instruments() !== null;
}

/**
 * Runs `run` inside a CLIENT span for `operation`, and times it into
 * `mcp.client.operation.duration`; rethrows what `run` throws (as an error,
 * unless `operation.signal` was aborted: then as cancelled). `run` gets the
 * span (to put its context in `_meta`); its returned promise runs with the span active.
 */
export async function observe<T>(operation: Operation, run: (span: Span | undefined) => Promise<T>): Promise<T> {
  const traced = tracingOn();
  const metered = instruments();
  if (!traced && metered === null) return run(undefined);
  const parent = operation.parent ?? context.active();
  const span = traced ? startRequestSpan(operation.method, operation.target, parent, operation.attributes) : undefined;
  if (span !== undefined && operation.detail !== undefined && span.isRecording()) span.setAttributes(operation.detail());
  const started = performance.now();
  try {
    const result = span === undefined ? await run(undefined) : await context.with(trace.setSpan(parent, span), run, undefined, span);
    span?.end();
    metered?.operationDuration.record((performance.now() - started) / 1000, operation.attributes());
    return result;
  } catch (error) {
    const cancelled = operation.signal?.aborted === true;
    const type = cancelled ? CANCELLED : errorType(error);
    if (span !== undefined) (cancelled ? endCancelled(span) : endFailed(span, type));
    if (metered !== null) {
      const attributes = operation.attributes();
      attributes[cancelled ? ATTR.outcome : ATTR.errorType] = type;
      metered.operationDuration.record((performance.now() - started) / 1000, attributes);
    }
    throw error;
  }
}
