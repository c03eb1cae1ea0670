// Model-based test of the session machine (src/machines/session.machine.ts).
// Paths are walked over an independent model of a per_user session's life
// (written here from what a session must do, not read from the machine)
// with `xstate/graph`; each path runs step by step on the real machine, its
// work (connect, the connection's loss, close) scripted and its idle timer
// on fake time. At every step the machine must be in the model's state, with
// the model's reason, have started exactly the connects and closes the model
// says, have aborted a connect it left, and have an idle timer armed only
// while ready with no call in flight.
import { createActor, fromTransition } from 'xstate';
import { getShortestPaths, getSimplePaths } from 'xstate/graph';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { sessionMachine, type SessionLink } from '../../src/machines/session.machine.js';
import { getTransitionPaths } from './helpers/paths.js';

const IDLE_MS = 1_000;
/** Calls in flight at once, bounded so the graph is finite. */
const MAX_IN_FLIGHT = 2;

type Phase = 'connecting' | 'ready' | 'closing' | 'closed' | 'failed';
interface Facts {
  phase: Phase;
  inFlight: number;
  reason: 'idle' | 'evicted' | 'stopped' | null;
  connects: number;
  closes: number;
  /** The connect was left before it settled: its signal must be aborted. */
  connectAborted: boolean;
}
type ModelEvent = { type: 'connect.succeeds' | 'connect.fails' | 'call.started' | 'call.finished' | 'idle.elapses' | 'session.evict' | 'session.stop' | 'connection.lost' | 'close.done' | 'close.fails' };

const initial: Facts = { phase: 'connecting', inFlight: 0, reason: null, connects: 1, closes: 0, connectAborted: false };

/** What a session does on each event, from its contract. */
function step(facts: Facts, event: ModelEvent): Facts {
  const { phase } = facts;
  const endFor = (reason: 'evicted' | 'stopped'): Facts =>
    phase === 'connecting'
      ? { ...facts, phase: 'closed', reason, connectAborted: true }
      : phase === 'ready'
        ? { ...facts, phase: 'closing', reason, closes: facts.closes + 1, inFlight: 0 }
        : facts;
  switch (event.type) {
    case 'connect.succeeds':
      return phase === 'connecting' ? { ...facts, phase: 'ready' } : facts;
    case 'connect.fails':
      return phase === 'connecting' ? { ...facts, phase: 'failed' } : facts;
    case 'call.started':
      return phase === 'ready' && facts.inFlight < MAX_IN_FLIGHT ? { ...facts, inFlight: facts.inFlight + 1 } : facts;
    case 'call.finished':
      return phase === 'ready' && facts.inFlight > 0 ? { ...facts, inFlight: facts.inFlight - 1 } : facts;
    case 'idle.elapses':
      return phase === 'ready' && facts.inFlight === 0 ? { ...facts, phase: 'closing', reason: 'idle', closes: facts.closes + 1 } : facts;
    case 'session.evict':
      return endFor('evicted');
    case 'session.stop':
      return endFor('stopped');
    case 'connection.lost':
      return phase === 'ready' ? { ...facts, phase: 'failed', inFlight: 0 } : facts;
    case 'close.done':
    case 'close.fails':
      return phase === 'closing' ? { ...facts, phase: 'closed' } : facts;
  }
}

/** The events the world can bring in each phase (a loss only of a live connection, a close outcome only of a close). */
function eventsIn(facts: Facts): ModelEvent[] {
  const byPhase: Record<Phase, ModelEvent['type'][]> = {
    connecting: ['connect.succeeds', 'connect.fails', 'session.evict', 'session.stop', 'call.started'],
    ready: ['call.started', 'call.finished', 'idle.elapses', 'session.evict', 'session.stop', 'connection.lost'],
    closing: ['close.done', 'close.fails', 'session.stop', 'call.started'],
    closed: [],
    failed: [],
  };
  const types = byPhase[facts.phase];
  return types.map((type) => ({ type }));
}

const model = fromTransition((facts: Facts, event: ModelEvent) => step(facts, event), initial);
const serialize = (snapshot: { context: Facts }) => JSON.stringify(snapshot.context);

/** The real machine with scripted work, driven by the model's events. */
class World {
  connects: Array<{ resolve(link: SessionLink): void; reject(error: Error): void; signal: AbortSignal }> = [];
  closes: Array<{ resolve(): void; reject(error: Error): void }> = [];
  lost: ((error: string) => void) | undefined;
  readonly actor = createActor(sessionMachine, {
    input: {
      server: 'mine',
      principal: 'alice',
      idleMs: IDLE_MS,
      work: {
        connect: (signal) =>
          new Promise<SessionLink>((resolve, reject) => {
            this.connects.push({ resolve, reject, signal });
          }),
        onLost: (listener) => {
          this.lost = listener;
        },
      },
    },
  });
  readonly link: SessionLink = {
    close: () =>
      new Promise<void>((resolve, reject) => {
        this.closes.push({ resolve, reject });
      }),
  };

  async send(event: ModelEvent): Promise<void> {
    switch (event.type) {
      case 'connect.succeeds':
        this.connects.at(-1)!.resolve(this.link);
        break;
      case 'connect.fails':
        this.connects.at(-1)!.reject(new Error('spawn failed'));
        break;
      case 'idle.elapses':
        vi.advanceTimersByTime(IDLE_MS);
        break;
      case 'connection.lost':
        this.lost!('the process exited');
        break;
      case 'close.done':
        this.closes.at(-1)!.resolve();
        break;
      case 'close.fails':
        this.closes.at(-1)!.reject(new Error('close failed'));
        break;
      case 'call.started':
      case 'call.finished':
      case 'session.evict':
      case 'session.stop':
        this.actor.send({ type: event.type });
    }
    // Settled promises reach the machine on the next turns of the microtask queue.
    for (let turn = 0; turn < 10; turn += 1) await Promise.resolve();
  }

  check(facts: Facts, where: string): void {
    const snapshot = this.actor.getSnapshot();
    expect(snapshot.value, where).toBe(facts.phase);
    expect(snapshot.context.reason, where).toBe(facts.reason);
    expect(this.connects.length, `${where}: connects`).toBe(facts.connects);
    expect(this.closes.length, `${where}: closes`).toBe(facts.closes);
    if (facts.connectAborted) expect(this.connects[0]!.signal.aborted, `${where}: connect aborted`).toBe(true);
    const idleArmed = facts.phase === 'ready' && facts.inFlight === 0;
    expect(vi.getTimerCount(), `${where}: idle timer`).toBe(idleArmed ? 1 : 0);
    expect(snapshot.status, where).toBe(facts.phase === 'closed' || facts.phase === 'failed' ? 'done' : 'active');
  }
}

async function runPath(steps: ReadonlyArray<{ event: ModelEvent | { type: string } }>): Promise<void> {
  const world = new World();
  world.actor.start();
  let facts = initial;
  const names: string[] = [];
  world.check(facts, 'start');
  // The first step of a path is xstate/graph's init: no event of the world.
  for (const { event } of steps) {
    if (event.type === 'xstate.init') continue;
    const modelEvent = event as ModelEvent;
    names.push(modelEvent.type);
    facts = step(facts, modelEvent);
    await world.send(modelEvent);
    world.check(facts, names.join(' → '));
  }
  world.actor.stop();
}

const traversal = { events: (snapshot: { context: Facts }) => eventsIn(snapshot.context), serializeState: serialize };

describe('session machine against its model', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('every state of the model is reached the shortest way', async () => {
    const paths = getShortestPaths(model, traversal);
    expect(new Set(paths.map((path) => path.state.context.phase))).toEqual(new Set(['connecting', 'ready', 'closing', 'closed', 'failed']));
    for (const path of paths) await runPath(path.steps);
  });

  it('every transition of the model, once', async () => {
    const paths = getTransitionPaths(model, traversal);
    expect(paths.length).toBeGreaterThan(20);
    for (const path of paths) await runPath(path.steps);
  });

  it('every simple path of the model', async () => {
    const paths = getSimplePaths(model, traversal);
    expect(paths.length).toBeGreaterThan(25);
    for (const path of paths) await runPath(path.steps);
  });
});
