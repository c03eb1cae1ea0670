// The transaction machine as a graph for `xstate/graph` (the outcome of the
// work a state invokes becomes the `xstate.done.actor.<id>` /
// `xstate.error.actor.<id>` event the machine would receive), and a runner
// that takes a path on a real actor whose work is fakes answering as the
// path says, then compares what it did with the reference model.
import { createActor, fromPromise, type ActorLogic, type ActorScope, type AnyEventObject, type SnapshotFrom } from 'xstate';
import type { StatePath } from 'xstate/graph';
import {
  transactionMachine,
  type ApplyInput,
  type PersistInput,
  type Settled,
  type ReadInput,
  type TransactionInput,
  type TransactionRead,
  type Written,
} from '../../../src/machines/transaction.machine.js';
import { mergePatch } from '../../../src/config/merge-patch.js';
import type { ServerConfig } from '../../../src/config/schema.js';
import type { ServerView } from '../../../src/journal/server-view.js';
import { compare, type Mismatch } from './mismatches.js';
import {
  broke,
  describeError,
  expected,
  labelOf,
  otherWrite,
  reads,
  startFailure,
  type ModelEvent,
  type Observation,
  type ReadEvent,
} from './transaction-spec.js';

export type TransactionSnapshot = SnapshotFrom<typeof transactionMachine>;
export type TransactionPath = StatePath<TransactionSnapshot, ModelEvent>;

/** The work each state invokes, as the world names it. */
const workOf: Record<string, string> = {
  checking: 'read',
  installing: 'install',
  uninstalling: 'uninstall',
  discarding: 'forget',
  merging: 'merge',
  applying: 'apply',
  rollingBack: 'apply',
  removing: 'uninstall',
  persisting: 'persist',
  reapplying: 'apply',
  restarting: 'apply',
  forgetting: 'forget',
  viewing: 'view',
};

const stateOf = (snapshot: TransactionSnapshot): string => String(snapshot.value);

const readEvents = Object.keys(reads).map((type) => ({ type }) as ModelEvent);
const allEvents: ModelEvent[] = [
  ...readEvents,
  { type: 'settles.ready' },
  { type: 'settles.error' },
  { type: 'stores' },
  { type: 'stores.after_other_write' },
  { type: 'done' },
  { type: 'merges' },
  { type: 'throws' },
];

/** The model events that can happen in a state: the answers its work can give. */
export function canHappen(snapshot: TransactionSnapshot, event: ModelEvent): boolean {
  if (snapshot.status !== 'active') return false;
  const work = workOf[stateOf(snapshot)];
  if (event.type === 'throws') return work !== 'merge';
  switch (work) {
    case 'read':
      return event.type in reads;
    case 'install':
    case 'apply':
      return event.type === 'settles.ready' || event.type === 'settles.error';
    case 'persist':
      // Another worker's write in between matters only to a patch (merged again under the lock).
      return event.type === 'stores' || (event.type === 'stores.after_other_write' && snapshot.context.kind === 'update');
    case 'merge':
      return event.type === 'merges';
    default:
      return event.type === 'done';
  }
}

const base = (read: TransactionRead): ServerConfig => read.stored ?? read.running!;

/** What the store holds for the server after the write, as the world's store computes it. */
function writtenBy(snapshot: TransactionSnapshot, afterOther: boolean): Written {
  const { context } = snapshot;
  if (context.kind === 'remove') return { config: null, version: null };
  if (context.kind === 'add') return { config: context.config, version: 1 };
  const current = afterOther ? mergePatch(base(context.read!), otherWrite) : base(context.read!);
  return { config: mergePatch(current, context.patch!), version: 1 };
}

const fakeView = (version: number | null): ServerView =>
  ({ name: 'files', config: {}, state: 'ready', ready: true, error: null, error_kind: null, version }) as unknown as ServerView;

/** The event the machine receives for a model event in this state. */
function toMachineEvent(snapshot: TransactionSnapshot, event: ModelEvent): AnyEventObject {
  const state = stateOf(snapshot);
  const id = transactionMachine.getStateNodeById(`transaction.${state}`).invoke[0]!.id;
  const done = (output: unknown): AnyEventObject => ({ type: `xstate.done.actor.${id}`, output, actorId: id });
  const failed = (error: unknown): AnyEventObject => ({ type: `xstate.error.actor.${id}`, error, actorId: id });
  switch (event.type) {
    case 'throws':
      return failed(broke(workOf[state]!));
    case 'settles.ready':
      return done({ failure: null } satisfies Settled);
    case 'settles.error':
      return done({ failure: startFailure() } satisfies Settled);
    case 'stores':
      return done(writtenBy(snapshot, false));
    case 'stores.after_other_write':
      return done(writtenBy(snapshot, true));
    case 'done':
      return done(state === 'viewing' ? fakeView(1) : undefined);
    case 'merges':
      try {
        return done(mergePatch(base(snapshot.context.read!), snapshot.context.patch!));
      } catch (refused) {
        return failed(refused);
      }
    default:
      return done(reads[event.type as ReadEvent]);
  }
}

/** The real machine's transition function, driven by model events. */
export function transactionGraph(): ActorLogic<TransactionSnapshot, ModelEvent, TransactionInput> {
  const logic = Object.create(transactionMachine) as ActorLogic<TransactionSnapshot, ModelEvent, TransactionInput>;
  return Object.assign(logic, {
    transition: (snapshot: TransactionSnapshot, event: ModelEvent, scope: ActorScope<TransactionSnapshot, ModelEvent>) =>
      transactionMachine.transition(snapshot, toMachineEvent(snapshot, event) as never, scope as never),
  });
}

export function traversal(input: TransactionInput) {
  return {
    input,
    events: allEvents,
    filterEvents: canHappen,
    serializeState: (snapshot: TransactionSnapshot) =>
      JSON.stringify({
        value: snapshot.value,
        status: snapshot.status,
        read: snapshot.context.read,
        config: snapshot.context.config,
        written: snapshot.context.written,
        failure: snapshot.context.failure && describeError(snapshot.context.failure.error),
      }),
  };
}

/** Names a transition of the machine: its source, its event, its place among that event's transitions. */
function transitionKey(transition: { source: { id: string; transitions: Map<string, unknown[]> }; eventType: string }): string {
  const index = transition.source.transitions.get(transition.eventType)?.indexOf(transition) ?? -1;
  return `${transition.source.id} | ${transition.eventType} | ${index}`;
}

/** Every transition the machine declares (what its diagram draws), by key. */
export function declaredTransitions(): string[] {
  const keys: string[] = [];
  for (const node of Object.values(transactionMachine.root.states)) {
    for (const transitions of node.transitions.values()) {
      for (const transition of transitions) keys.push(transitionKey(transition as never));
    }
  }
  return keys;
}

interface Pending {
  work: string;
  input: unknown;
  resolve(output: unknown): void;
  reject(error: unknown): void;
}

/** The fakes of the work, the store they write, and what they were asked to do. */
function createWorld() {
  const work: string[] = [];
  let pending: Pending | null = null;
  let stored: { config: ServerConfig; version: number } | null = null;
  let invalid = false;
  let version = 0;
  const write = (config: ServerConfig) => {
    version += 1;
    stored = { config, version };
  };
  /** `label`: how the work is logged; null for the merge (the machine's own, not the host's, work). */
  const fake = <TOutput, TInput>(name: string, label: (input: TInput) => string | null) =>
    fromPromise<TOutput, TInput>(
      ({ input }) =>
        new Promise<TOutput>((resolve, reject) => {
          const logged = label(input);
          if (logged !== null) work.push(logged);
          pending = { work: name, input, resolve: resolve as (output: unknown) => void, reject };
        }),
    );
  const actors = {
    read: fake<TransactionRead, ReadInput>('read', () => 'read'),
    install: fake<Settled, { name: string; config: ServerConfig }>('install', ({ config }) => `install ${labelOf(config)}`),
    apply: fake<Settled, ApplyInput>('apply', ({ config, restart }) => `apply ${labelOf(config)}${restart ? ' (restart)' : ''}`),
    uninstall: fake<void, { name: string }>('uninstall', () => 'uninstall'),
    persist: fake<Written, PersistInput>('persist', ({ kind }) => `persist ${kind}`),
    forget: fake<void, { name: string }>('forget', () => 'forget'),
    view: fake<ServerView, { name: string }>('view', () => 'view'),
    // The real merge, run when the path says (so the path can stop while it runs).
    merge: fake<ServerConfig, { base: ServerConfig; patch: Record<string, unknown> }>('merge', () => null),
  };

  /** Answers the work under way as the model event says; false when no work fits it. */
  function perform(event: ModelEvent): boolean {
    const call = pending as Pending | null;
    if (!call) return false;
    pending = null;
    if (event.type === 'merges') {
      const { base, patch } = call.input as { base: ServerConfig; patch: Record<string, unknown> };
      try {
        call.resolve(mergePatch(base, patch));
      } catch (refused) {
        call.reject(refused);
      }
      return call.work === 'merge';
    }
    if (event.type === 'throws') {
      call.reject(broke(call.work));
      return true;
    }
    if (event.type in reads) {
      const read = reads[event.type as ReadEvent];
      invalid = read.invalid !== null;
      if (read.stored) {
        stored = { config: read.stored, version: read.version };
        version = read.version;
      }
      call.resolve(read);
      return call.work === 'read';
    }
    switch (event.type) {
      case 'settles.ready':
      case 'settles.error':
        call.resolve({ failure: event.type === 'settles.error' ? startFailure() : null } satisfies Settled);
        return call.work === 'install' || call.work === 'apply';
      case 'stores':
      case 'stores.after_other_write': {
        const input = call.input as PersistInput;
        if (input.kind === 'remove') {
          // The host's removal discards an entry that does not validate too.
          stored = null;
          invalid = false;
          call.resolve({ config: null, version: null } satisfies Written);
        } else if (input.kind === 'add') {
          write(input.config);
          call.resolve({ config: input.config, version } satisfies Written);
        } else {
          let current: ServerConfig = (stored as { config: ServerConfig } | null)?.config ?? input.previous;
          if (event.type === 'stores.after_other_write') write((current = mergePatch(current, otherWrite)));
          const config = mergePatch(current, input.patch);
          write(config);
          call.resolve({ config, version } satisfies Written);
        }
        return call.work === 'persist';
      }
      default:
        call.resolve(call.work === 'view' ? fakeView((stored as { version: number } | null)?.version ?? null) : undefined);
        return true;
    }
  }

  return {
    actors,
    perform,
    observe(outcome: Observation['outcome']): Observation {
      const now = stored as { config: ServerConfig; version: number } | null;
      return { work: [...work], stored: now && { config: labelOf(now.config), version: now.version }, invalid, outcome };
    },
  };
}

/** Lets promise settlements and the done events they cause reach the machine. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

export interface PathRun {
  mismatch: Mismatch | null;
  /** Keys of the transitions the real actor took. */
  transitions: string[];
  observation: Observation;
}

/** Takes `path` on a real actor whose work answers as the path says; compares it with the model at every step. */
export async function runPath(input: TransactionInput, path: TransactionPath): Promise<PathRun> {
  const world = createWorld();
  const transitions: string[] = [];
  const actor = createActor(transactionMachine.provide({ actors: world.actors }), {
    input,
    inspect: (inspection) => {
      if (inspection.type !== '@xstate.microstep') return;
      for (const transition of (inspection as unknown as { _transitions: unknown[] })._transitions) transitions.push(transitionKey(transition as never));
    },
  });
  actor.start();
  await settle();
  const taken: string[] = [];
  const observe = (): Observation => {
    const snapshot = actor.getSnapshot();
    if (snapshot.status !== 'done') return world.observe('running');
    const output = snapshot.output!;
    return world.observe(output.ok ? { ok: true, view: output.view && { version: output.view.version } } : { ok: false, error: describeError(output.error) });
  };
  const events: ModelEvent[] = [];
  for (const step of path.steps.slice(1)) {
    taken.push(step.event.type);
    events.push(step.event);
    const fits = world.perform(step.event);
    await settle();
    const seen = { state: actor.getSnapshot().value, fits, ...observe() };
    const promised = { state: step.state.value, fits: true, ...expected(input, events) };
    const mismatch = compare(taken, seen, promised);
    if (mismatch) {
      actor.stop();
      return { mismatch, transitions, observation: observe() };
    }
  }
  const observation = observe();
  actor.stop();
  return { mismatch: null, transitions, observation };
}
