/**
 * mcp-fleet's metric instruments, created on the meter of the registered
 * meter provider (tracer.ts) and rebuilt when another is registered; null
 * while none is, so callers skip building attributes. Names are the
 * conventions' where they have one (`mcp.client.*`), `mcp_fleet.*` otherwise.
 */
import type { Counter, Histogram, Meter, ObservableGauge, UpDownCounter } from '@opentelemetry/api';
import { ATTR } from './attributes.js';
import { meter } from './tracer.js';

/** Names of the instruments, for the README and the tests. */
export const METRIC = {
  operationDuration: 'mcp.client.operation.duration',
  sessionDuration: 'mcp.client.session.duration',
  callsInFlight: 'mcp_fleet.tool_calls.in_flight',
  callErrors: 'mcp_fleet.tool_calls.errors',
  servers: 'mcp_fleet.servers',
  resyncDuration: 'mcp_fleet.catalog.sync.duration',
  oauthRefreshes: 'mcp_fleet.oauth.refreshes',
} as const;

export interface Instruments {
  /** Seconds from sending an MCP request until its answer (tool calls, reads, renders, listings). */
  operationDuration: Histogram;
  /** Seconds a server stayed connected (`ready`), recorded when it leaves `ready`. */
  sessionDuration: Histogram;
  /** Tool calls started and not yet answered. */
  callsInFlight: UpDownCounter;
  /** Failed tool calls, by `error.type`. */
  callErrors: Counter;
  /** Seconds one catalog listing took, from request to applied. */
  resyncDuration: Histogram;
  /** OAuth token refreshes, by outcome. */
  oauthRefreshes: Counter;
}

// Buckets the conventions advise for MCP durations (seconds).
const DURATION_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];
const SESSION_BUCKETS = [1, 10, 60, 300, 1800, 3600, 4 * 3600, 24 * 3600];

// Process-wide like the meter provider they are built on (the global OpenTelemetry API): every host records on the same instruments.
let builtFor: Meter | null = null;
let built: Instruments | null = null;
let serversGauge: ObservableGauge | undefined;

/** The instruments, or null when no meter provider is registered. */
export function instruments(): Instruments | null {
  const scoped = meter();
  if (scoped !== builtFor) {
    builtFor = scoped;
    built = scoped === null ? null : create(scoped);
  }
  return built;
}

function create(on: Meter): Instruments {
  serversGauge = on.createObservableGauge(METRIC.servers, {
    description: 'Configured MCP servers by state',
    unit: '{server}',
  });
  serversGauge.addCallback((result) => {
    for (const [state, count] of countStates()) result.observe(count, { [ATTR.state]: state });
  });
  return {
    operationDuration: on.createHistogram(METRIC.operationDuration, {
      description: 'The duration of an MCP request as observed by mcp-fleet, from sending it to its answer',
      unit: 's',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    }),
    sessionDuration: on.createHistogram(METRIC.sessionDuration, {
      description: 'How long a server stayed connected and ready',
      unit: 's',
      advice: { explicitBucketBoundaries: SESSION_BUCKETS },
    }),
    callsInFlight: on.createUpDownCounter(METRIC.callsInFlight, {
      description: 'Tool calls sent and not yet answered',
      unit: '{call}',
    }),
    callErrors: on.createCounter(METRIC.callErrors, {
      description: 'Tool calls that failed or answered with isError, by error.type',
      unit: '{call}',
    }),
    resyncDuration: on.createHistogram(METRIC.resyncDuration, {
      description: 'The duration of one catalog listing (tools, resources or prompts) and its diff',
      unit: 's',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    }),
    oauthRefreshes: on.createCounter(METRIC.oauthRefreshes, {
      description: 'OAuth access-token refreshes, by outcome',
      unit: '{refresh}',
    }),
  };
}

// The state of every observed server actor, for the servers-by-state gauge. Keyed by the actor,
// which one host owns and alone adds and forgets; the gauge counts the servers of every host in the
// process, as the meter it reports through is the process's.
const states = new Map<object, string>();

/** Notes the state `actor` is in now (the journal bridge calls this on each transition). */
export function noteServerState(actor: object, state: string): void {
  states.set(actor, state);
}

/** Forgets `actor` (removed, or replaced by a successor that reports its own state). */
export function forgetServer(actor: object): void {
  states.delete(actor);
}

function countStates(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const state of states.values()) counts.set(state, (counts.get(state) ?? 0) + 1);
  return counts;
}
