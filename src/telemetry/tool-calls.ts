/**
 * The telemetry of tool calls, the hot path: a CLIENT span `tools/call
 * {tool}` (a child of the caller's active span, its context sent to the
 * server in `_meta`), the in-flight count, the duration and the errors by
 * `error.type`. A call its caller cancelled is no error (the journal says
 * `cancelled` too): its span's status stays unset, it has no `error.type`
 * and is not counted in the errors; `mcp_fleet.outcome` = `cancelled` on its
 * span and duration tells it apart from an answered call. With no
 * OpenTelemetry SDK registered `toolCallTelemetry()` is false and the
 * caller takes its plain path: nothing is built per call.
 */
import { context, SpanKind, type Attributes, type Span } from '@opentelemetry/api';
import type { CallToolResult, Client } from '@modelcontextprotocol/client';
import type { ServerConfig } from '../config/index.js';
import { ATTR, errorType, peerAttributes, sessionAttributes, TOOL_ERROR } from './attributes.js';
import { instruments, type Instruments } from './instruments.js';
import { CANCELLED, endCancelled, endFailed } from './spans.js';
import { tracer, tracingOn } from './tracer.js';

const METHOD = 'tools/call';

/** Whether tool calls are observed at all: a tracer or a meter provider is registered. */
export function toolCallTelemetry(): boolean {
  return tracingOn() || instruments() !== null;
}

/** The tool calls of one connection: what every call's attributes share. */
export interface ToolCallTarget {
  server: string;
  config: ServerConfig;
  client: Client;
}

/** One observed call: `span` (undefined when not tracing) goes into the request's `_meta`. */
export interface ObservedCall {
  readonly span: Span | undefined;
  /** Ends the call with its result (an `isError` result counts as `tool_error`); returns the result. */
  done(result: CallToolResult): CallToolResult;
  /** Ends the call as failed; returns `error` for rethrowing. */
  failed(error: unknown): unknown;
  /** Ends the call as cancelled by its caller (its signal aborted): not an error; returns `error` for rethrowing. */
  cancelled(error: unknown): unknown;
}

/** Starts observing one call of `tool`: call it only when `toolCallTelemetry()` said yes. */
export function startToolCall(target: ToolCallTarget, tool: string): ObservedCall {
  const metered = instruments();
  const span = tracingOn() ? tracer().startSpan(`${METHOD} ${tool}`, { kind: SpanKind.CLIENT }, context.active()) : undefined;
  if (span !== undefined && span.isRecording()) span.setAttributes(spanAttributes(target, tool));
  const attributes = metered === null ? undefined : metricAttributes(target, tool);
  if (attributes !== undefined) metered!.callsInFlight.add(1, attributes);
  const started = attributes === undefined ? 0 : performance.now();
  return {
    span,
    done(result) {
      if (result.isError === true) finish(TOOL_ERROR);
      else {
        span?.end();
        settle(undefined);
      }
      return result;
    },
    failed(error) {
      finish(errorType(error));
      return error;
    },
    cancelled(error) {
      if (span !== undefined) endCancelled(span);
      if (attributes !== undefined) {
        const meters = metered as Instruments;
        meters.callsInFlight.add(-1, attributes);
        meters.operationDuration.record((performance.now() - started) / 1000, { ...attributes, [ATTR.outcome]: CANCELLED });
      }
      return error;
    },
  };

  function finish(type: string): void {
    if (span !== undefined) endFailed(span, type);
    settle(type);
  }

  function settle(type: string | undefined): void {
    if (attributes === undefined) return;
    const meters = metered as Instruments;
    meters.callsInFlight.add(-1, attributes);
    const seconds = (performance.now() - started) / 1000;
    if (type === undefined) {
      meters.operationDuration.record(seconds, attributes);
      return;
    }
    const failed = { ...attributes, [ATTR.errorType]: type };
    meters.operationDuration.record(seconds, failed);
    meters.callErrors.add(1, failed);
  }
}

function spanAttributes(target: ToolCallTarget, tool: string): Attributes {
  const attributes: Attributes = {
    [ATTR.methodName]: METHOD,
    [ATTR.toolName]: tool,
    [ATTR.operationName]: 'execute_tool',
    [ATTR.server]: target.server,
  };
  peerAttributes(target.config, attributes);
  return sessionAttributes(target.client, attributes);
}

/** Low-cardinality attributes only: no session id. */
function metricAttributes(target: ToolCallTarget, tool: string): Attributes {
  const attributes: Attributes = {
    [ATTR.methodName]: METHOD,
    [ATTR.toolName]: tool,
    [ATTR.operationName]: 'execute_tool',
    [ATTR.server]: target.server,
    [ATTR.networkTransport]: target.config.type === 'local' ? 'pipe' : 'tcp',
  };
  const version = target.client.getNegotiatedProtocolVersion();
  if (version !== undefined) attributes[ATTR.protocolVersion] = version;
  return attributes;
}
