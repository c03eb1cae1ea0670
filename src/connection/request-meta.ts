/**
 * The `_meta` mcp-fleet adds to a tool call: the server's `log_level` as the
 * per-request `logLevel` (the 2026-07-28 replacement of `logging/setLevel`,
 * which that era does not have), and the W3C trace context of the call's own
 * span (telemetry/tool-calls.ts) or, when it is not traced, of the caller's
 * active OpenTelemetry span, so the server's spans join the agent's trace.
 * Both eras carry it the same way: `traceparent`/`tracestate` in `_meta`.
 */
import { isSpanContextValid, trace, context, type Span } from '@opentelemetry/api';
import { LOG_LEVEL_META_KEY, TRACEPARENT_META_KEY, TRACESTATE_META_KEY, type Client, type LoggingLevel } from '@modelcontextprotocol/client';

/** The `_meta` of one call, or undefined when there is nothing to add (the common case allocates nothing). */
export function requestMeta(
  client: Client,
  logLevel: LoggingLevel | null | undefined,
  own?: Span,
): Record<string, string> | undefined {
  let meta: Record<string, string> | undefined;
  if (logLevel != null && client.getProtocolEra() === 'modern') meta = { [LOG_LEVEL_META_KEY]: logLevel };
  const span = (own ?? trace.getSpan(context.active()))?.spanContext();
  if (span !== undefined && isSpanContextValid(span)) {
    meta ??= {};
    meta[TRACEPARENT_META_KEY] = `00-${span.traceId}-${span.spanId}-${(span.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
    const state = span.traceState?.serialize();
    if (state) meta[TRACESTATE_META_KEY] = state;
  }
  return meta;
}
