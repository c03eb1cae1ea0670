// The server machine as a graph for `xstate/graph`: the real machine's
// transitions, plus synthetic events for the connect invoke's completion
// (`createTestModel` refuses machines that invoke, the path functions do not
// care as long as the invoke's outcome is an event).
import type { ActorLogic, ActorScope, SnapshotFrom } from 'xstate';
import { serverMachine, type ServerInput } from '../../../src/machines/server.machine.js';
import { ServerConfig } from '../../../src/services/config/schema.js';
import type { ServerEvent } from '../../../src/machines/server.events.js';
import { failures } from './scripted-connection.js';

export type ServerSnapshot = SnapshotFrom<typeof serverMachine>;

/** The machine's events plus how the connect invoke can end. */
export type ModelEvent =
  | ServerEvent
  | { type: 'connect.succeeds' }
  | { type: 'connect.fails' }
  | { type: 'connect.fails_auth' }
  /** A ready connection is lost because its OAuth token can no longer be refreshed. */
  | { type: 'connection.auth_lost' }
  /** The reconnect backoff elapsed (the machine's `after: backoff`). */
  | { type: 'reconnect.due' }
  /** The server stayed ready long enough for its failures to stop counting (`after: stable`). */
  | { type: 'ready.stable' };

/** Every event the paths may take, with the payloads the scripted world uses. */
export const modelEvents: readonly ModelEvent[] = [
  { type: 'server.connect' },
  { type: 'server.enable' },
  { type: 'server.disable' },
  { type: 'server.restart' },
  { type: 'server.stop' },
  { type: 'connection.closed', error: failures.lost() },
  { type: 'connection.auth_lost' },
  { type: 'auth.begin' },
  { type: 'auth.completed' },
  { type: 'auth.failed', error: failures.consent() },
  { type: 'connect.succeeds' },
  { type: 'connect.fails' },
  { type: 'connect.fails_auth' },
  { type: 'reconnect.due' },
  { type: 'ready.stable' },
  // A hand edit of the tool filter only: taken in every state, re-registers in `ready`.
  { type: 'server.retool', config: ServerConfig.parse({ type: 'local', command: ['node', 'server.js'], tools: { exclude: ['gone'] } }) },
];

/** The machine's own delayed events, which the model fires by name instead of waiting. */
export const delayedEvents = {
  'reconnect.due': 'xstate.after.backoff.server.error.backing_off',
  'ready.stable': 'xstate.after.stable.server.ready',
} as const;

const connectInvoke = serverMachine.getStateNodeById('server.pending.connecting').invoke[0]!.id;
/** What the model's `connect.succeeds` hands over; only its presence matters to the machine. */
const modelLive = { connection: {}, lost: new Promise(() => {}) };

function toMachineEvent(event: ModelEvent) {
  switch (event.type) {
    case 'connect.succeeds':
      return { type: `xstate.done.actor.${connectInvoke}`, output: modelLive, actorId: connectInvoke };
    case 'connect.fails':
      return { type: `xstate.error.actor.${connectInvoke}`, error: failures.connect(), actorId: connectInvoke };
    case 'connect.fails_auth':
      return { type: `xstate.error.actor.${connectInvoke}`, error: failures.auth(), actorId: connectInvoke };
    case 'connection.auth_lost':
      return { type: 'connection.closed', error: failures.auth() };
    case 'reconnect.due':
    case 'ready.stable':
      return { type: delayedEvents[event.type] };
    default:
      return event;
  }
}

/**
 * Connect attempts so far on the way to a snapshot. Part of the vertex, so a
 * simple path can go round the connect cycle (ready → restart → ready) up to
 * `maxAttempts` times instead of never.
 */
const attemptsOf = new WeakMap<object, number>();
const connecting = (snapshot: ServerSnapshot): boolean => snapshot.matches({ pending: 'connecting' });
// Only the initial snapshot is not in the map: it may already be connecting.
const attempts = (snapshot: ServerSnapshot): number => attemptsOf.get(snapshot) ?? (connecting(snapshot) ? 1 : 0);

/** The real machine's transition function, driven by model events. */
export const serverModel: ActorLogic<ServerSnapshot, ModelEvent, ServerInput> = Object.assign(
  Object.create(serverMachine) as ActorLogic<ServerSnapshot, ModelEvent, ServerInput>,
  {
    transition(snapshot: ServerSnapshot, event: ModelEvent, scope: ActorScope<ServerSnapshot, ModelEvent>) {
      const next = serverMachine.transition(snapshot, toMachineEvent(event) as ServerEvent, scope as never);
      attemptsOf.set(next, attempts(snapshot) + (connecting(next) && !connecting(snapshot) ? 1 : 0));
      return next;
    },
  },
);

const startsAttempt = new Set<ModelEvent['type']>([
  'server.connect',
  'server.enable',
  'server.restart',
  'auth.completed',
  'reconnect.due',
]);

/** Traversal options shared by shortest and simple paths. */
export function traversal(input: ServerInput, maxAttempts: number) {
  return {
    input,
    events: modelEvents,
    // An invoke can only complete while it runs; past the bound, no new attempt.
    filterEvents: (snapshot: ServerSnapshot, event: ModelEvent) => {
      // A stopped actor takes no events: nothing to test past the final state.
      if (snapshot.status !== 'active') return false;
      if (event.type.startsWith('connect.')) return connecting(snapshot);
      if (event.type === 'reconnect.due' && !snapshot.matches({ error: 'backing_off' })) return false;
      if (event.type === 'ready.stable' && !snapshot.matches('ready')) return false;
      return !(startsAttempt.has(event.type) && attempts(snapshot) >= maxAttempts);
    },
    serializeState: (snapshot: ServerSnapshot) =>
      JSON.stringify({
        value: snapshot.value,
        status: snapshot.status,
        queued: snapshot.context.queued,
        error: snapshot.context.error,
        errorKind: snapshot.context.errorKind,
        live: snapshot.context.live !== null,
        failures: snapshot.context.failures,
        tools: snapshot.context.config.tools,
        attempts: attempts(snapshot),
      }),
  };
}

/** What a step's state promises about the real actor. */
export function expectedOf(snapshot: ServerSnapshot) {
  return {
    value: snapshot.value,
    status: snapshot.status,
    queued: snapshot.context.queued,
    error: snapshot.context.error,
    errorKind: snapshot.context.errorKind,
    failures: snapshot.context.failures,
    holdsConnection: snapshot.context.live !== null,
  };
}
