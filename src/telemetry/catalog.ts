/**
 * Catalog listings after connect: `catalog.sync {kind}` (INTERNAL, under the
 * server's lifecycle span) around one listing of tools, resources or prompts
 * and its diff, with the MCP list requests as CLIENT children; its duration
 * goes to `mcp_fleet.catalog.sync.duration`.
 */
import { context, SpanKind, trace, type Attributes } from '@opentelemetry/api';
import { ATTR, errorType } from './attributes.js';
import { instruments } from './instruments.js';
import { connectionServer, serverContext } from './lifecycle.js';
import { endFailed } from './spans.js';
import { tracer, tracingOn } from './tracer.js';

/** Why a listing runs: the first one after connect, a `list_changed` notification, an expired listing read, or a forced refresh. */
export type SyncTrigger = 'connect' | 'list_changed' | 'expired' | 'refresh';

/** Runs `run`, one listing of `kind` for `connection`, observed; `changed()` says afterwards whether it changed the catalog. */
export async function observeSync(
  connection: object,
  kind: string,
  trigger: SyncTrigger,
  changed: () => boolean,
  run: () => Promise<void>,
): Promise<void> {
  const traced = tracingOn();
  const metered = instruments();
  if (!traced && metered === null) return run();
  const known = connectionServer(connection);
  const attributes = (): Attributes => {
    const built: Attributes = { [ATTR.catalogKind]: kind, [ATTR.catalogTrigger]: trigger };
    if (known !== undefined) built[ATTR.server] = known.server;
    return built;
  };
  const parent = serverContext(known?.lifecycle, context.active());
  const span = traced ? tracer().startSpan(`catalog.sync ${kind}`, { kind: SpanKind.INTERNAL }, parent) : undefined;
  if (span !== undefined && span.isRecording()) span.setAttributes(attributes());
  const started = performance.now();
  let failure: string | undefined;
  try {
    if (span === undefined) await run();
    else await context.with(trace.setSpan(parent, span), run);
  } catch (error) {
    failure = errorType(error);
    throw error;
  } finally {
    const done = attributes();
    done[ATTR.catalogChanged] = failure === undefined && changed();
    if (failure !== undefined) done[ATTR.errorType] = failure;
    if (span !== undefined) {
      if (span.isRecording()) span.setAttribute(ATTR.catalogChanged, done[ATTR.catalogChanged] as boolean);
      if (failure === undefined) span.end();
      else endFailed(span, failure);
    }
    metered?.resyncDuration.record((performance.now() - started) / 1000, done);
  }
}
