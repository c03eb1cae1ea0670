import { assign, emit, fromCallback, fromPromise, setup } from 'xstate';
import type { ServerConfig } from '../services/config/schema.js';
import { FleetError, type ErrorKind } from '../services/support/errors.js';
import { openLiveConnection, watchLiveConnection, type LiveConnection } from '../services/connection/live-connection.js';
import type { ServerEmitted, ServerEvent } from './server.events.js';

export interface ServerInput {
  name: string;
  config: ServerConfig;
  /** Wait in `pending.queued` for the registry's `server.connect` instead of connecting at once. */
  queued: boolean;
}

export interface ServerContext {
  name: string;
  config: ServerConfig;
  queued: boolean;
  live: LiveConnection | null;
  error: string | null;
  errorKind: ErrorKind | null;
  /** Connection losses and failed reconnects in a row; 0 once the server stayed ready long enough. */
  failures: number;
}

function asFleetError(error: unknown): FleetError {
  if (error instanceof FleetError) return error;
  return new FleetError('protocol', error instanceof Error ? error.message : String(error), { cause: error });
}

/** Exponential backoff with jitter: the n-th attempt waits about initial·2^(n-1), capped, ±25 %. */
export function backoffMs(config: ServerConfig, failures: number, random: () => number = Math.random): number {
  const { initial_delay_seconds: initial, max_delay_seconds: max } = config.reconnect;
  const base = Math.min(max, initial * 2 ** Math.max(0, failures - 1)) * 1000;
  return Math.round(base * (0.75 + random() / 2));
}

/**
 * One MCP server's lifecycle (SPEC §4). The machine owns the state; the host
 * listens to what it emits (tool registration) and to its snapshots (the
 * journal, closing connections the actor no longer holds).
 */
export const serverMachine = setup({
  types: {
    input: {} as ServerInput,
    context: {} as ServerContext,
    events: {} as ServerEvent,
    emitted: {} as ServerEmitted,
  },
  delays: {
    backoff: ({ context }) => backoffMs(context.config, context.failures),
    /** Ready this long: the losses before no longer count toward giving up. */
    stable: ({ context }) => context.config.reconnect.max_delay_seconds * 1000,
  },
  actors: {
    /** Spawn or open, initialize, list every tool page; bounded by `timeout_seconds`. */
    connect: fromPromise<LiveConnection, { name: string; config: ServerConfig }>(({ input, signal }) =>
      openLiveConnection(input.name, input.config, signal),
    ),
    /** Reports the connection's unexpected end, or an unanswered ping, as `connection.closed`. */
    watchConnection: fromCallback<ServerEvent, { live: LiveConnection; config: ServerConfig }>(
      ({ input, sendBack }) =>
        watchLiveConnection(
          input.live,
          { pingIntervalMs: input.config.ping_interval_seconds * 1000, pingTimeoutMs: input.config.timeout_seconds * 1000 },
          (error) => sendBack({ type: 'connection.closed', error }),
        ),
    ),
  },
  guards: {
    isEnabled: ({ context }) => context.config.enabled,
    isQueued: ({ context }) => context.queued,
    isAuthFailure: (_, params: { error: unknown }) => params.error instanceof FleetError && params.error.kind === 'auth',
    isReconnecting: ({ context }) => context.failures > 0,
    mayReconnect: ({ context }) => context.failures > 0 && context.failures <= context.config.reconnect.max_attempts,
  },
  actions: {
    registerTools: emit(({ context }) => ({
      type: 'tools.register' as const,
      server: context.name,
      live: context.live!,
      filter: context.config.tools,
    })),
    unregisterTools: emit(({ context }) => ({ type: 'tools.unregister' as const, server: context.name })),
    releaseConnection: emit(({ context }) => ({
      type: 'connection.release' as const,
      server: context.name,
      live: context.live!,
    })),
    adoptConnection: assign({ live: (_, live: LiveConnection) => live }),
    forgetConnection: assign({ live: null }),
    recordError: assign((_, params: { error: unknown }) => {
      const failure = asFleetError(params.error);
      return { error: failure.message, errorKind: failure.kind };
    }),
    clearError: assign({ error: null, errorKind: null }),
    countFailure: assign({ failures: ({ context }) => context.failures + 1 }),
    resetFailures: assign({ failures: 0 }),
    openCircuit: assign({
      error: ({ context }) =>
        `${context.error} — gave up after ${context.failures - 1} reconnect attempt(s); restart it by hand`,
    }),
    leaveQueue: assign({ queued: false }),
    takeRereadConfig: assign({ config: ({ context }, config: ServerConfig | undefined) => config ?? context.config }),
    takeConfig: assign({ config: (_, config: ServerConfig) => config }),
  },
}).createMachine({
  id: 'server',
  context: ({ input }) => ({
    name: input.name,
    config: input.config,
    queued: input.queued,
    live: null,
    error: null,
    errorKind: null,
    failures: 0,
  }),
  initial: 'boot',
  on: {
    'server.stop': { target: '.stopped' },
    'server.retool': { actions: { type: 'takeConfig', params: ({ event }) => event.config } },
  },
  states: {
    boot: {
      always: [{ guard: 'isEnabled', target: 'pending' }, { target: 'disabled' }],
    },
    disabled: {
      description: 'enabled: false — no process, no connection, no tools',
      entry: 'clearError',
      on: { 'server.enable': { target: 'pending', actions: 'leaveQueue' } },
    },
    pending: {
      description: 'published (ready=false, no tools); connecting: spawn/open, initialize, list tools',
      entry: 'clearError',
      initial: 'choose',
      on: {
        'server.disable': {
          target: 'disabled',
          actions: { type: 'takeRereadConfig', params: ({ event }) => event.config },
        },
      },
      states: {
        choose: {
          always: [{ guard: 'isQueued', target: 'queued' }, { target: 'connecting' }],
        },
        queued: {
          description: 'waiting for its turn in the startup queue; no process yet',
          on: {
            'server.connect': {
              target: 'connecting',
              actions: ['leaveQueue', { type: 'takeRereadConfig', params: ({ event }) => event.config }],
            },
          },
        },
        connecting: {
          invoke: {
            src: 'connect',
            input: ({ context }) => ({ name: context.name, config: context.config }),
            onDone: {
              target: '#server.ready',
              actions: { type: 'adoptConnection', params: ({ event }) => event.output },
            },
            onError: [
              {
                guard: { type: 'isAuthFailure', params: ({ event }) => ({ error: event.error }) },
                target: '#server.needs_reauth',
                actions: { type: 'recordError', params: ({ event }) => ({ error: event.error }) },
              },
              {
                guard: 'isReconnecting',
                target: '#server.error',
                actions: [{ type: 'recordError', params: ({ event }) => ({ error: event.error }) }, 'countFailure'],
              },
              {
                target: '#server.error',
                actions: { type: 'recordError', params: ({ event }) => ({ error: event.error }) },
              },
            ],
          },
        },
      },
    },
    authenticating: {
      description: 'OAuth in progress: token refresh, or waiting for consent',
      on: {
        'auth.completed': { target: 'pending' },
        'auth.failed': {
          target: 'needs_reauth',
          actions: { type: 'recordError', params: ({ event }) => ({ error: event.error }) },
        },
      },
    },
    ready: {
      description: 'tools registered on entry, unregistered on exit; only here',
      entry: 'registerTools',
      exit: ['unregisterTools', 'releaseConnection', 'forgetConnection'],
      invoke: {
        src: 'watchConnection',
        input: ({ context }) => ({ live: context.live!, config: context.config }),
      },
      after: { stable: { actions: 'resetFailures' } },
      on: {
        'connection.closed': [
          {
            // The OAuth token can no longer be refreshed: a human must consent, reconnecting will not help.
            guard: { type: 'isAuthFailure', params: ({ event }) => ({ error: event.error }) },
            target: 'needs_reauth',
            actions: { type: 'recordError', params: ({ event }) => ({ error: event.error }) },
          },
          {
            target: 'error',
            actions: [{ type: 'recordError', params: ({ event }) => ({ error: event.error }) }, 'countFailure'],
          },
        ],
        'server.restart': { target: 'pending', actions: 'resetFailures' },
        'server.disable': { target: 'disabled' },
        // Registering again replaces the server's tools in one step: no moment without them.
        'server.retool': { actions: [{ type: 'takeConfig', params: ({ event }) => event.config }, 'registerTools'] },
      },
    },
    needs_reauth: {
      description: 'refresh rejected or no usable token; waits for the user',
      on: {
        'auth.begin': { target: 'authenticating' },
        'server.restart': { target: 'pending', actions: 'resetFailures' },
        'server.disable': { target: 'disabled' },
      },
    },
    error: {
      description: 'failed, with a one-line error and its error_kind',
      initial: 'deciding',
      on: {
        'server.restart': { target: 'pending', actions: 'resetFailures' },
        'server.disable': { target: 'disabled', actions: 'resetFailures' },
      },
      states: {
        deciding: {
          always: [
            { guard: 'mayReconnect', target: 'backing_off' },
            { guard: 'isReconnecting', target: 'halted', actions: 'openCircuit' },
            { target: 'halted' },
          ],
        },
        backing_off: {
          description: 'a lost connection: reconnects after exponential backoff with jitter; calls fail fast meanwhile',
          after: { backoff: { target: '#server.pending' } },
        },
        halted: {
          description: 'no automatic reconnect: a failed start, or the circuit opened after reconnect.max_attempts',
        },
      },
    },
    stopped: {
      description: 'final: process ended, tools gone',
      type: 'final',
    },
  },
});

export type ServerMachine = typeof serverMachine;
