// Runs a path of the registry world on the real registry: real server
// actors (scripted connects, connections that close at once), a scripted
// re-read that answers from the test's own copy of the file, every actor
// observed through the host's own journal bridge, and every event the
// registry sends a server recorded through XState's inspection. At every
// step the observation is compared with the reference model, and the startup
// rules of SPEC §4 are checked on the real observation by themselves.
import { createActor, fromCallback, type InspectionEvent } from 'xstate';
import type { StatePath } from 'xstate/graph';
import type { Reread } from '../../../src/machines/registry.events.js';
import { registryMachine, type RegistryHost, type RereadRequest, type ServerActorRef } from '../../../src/machines/registry.machine.js';
import { serverMachine } from '../../../src/machines/server.machine.js';
import { isSettling, topState } from '../../../src/machines/server.queries.js';
import { configChangeEvent } from '../../../src/host/config-change.js';
import type { ServerConfig } from '../../../src/config/schema.js';
import { compare, createMismatches, type Mismatch } from './mismatches.js';
import { createObserver } from './observe.js';
import {
  labelOf,
  nextWorld,
  initialWorld,
  stateOf,
  type World,
  type WorldEvent,
  type WorldInput,
} from './registry-spec.js';
import { expectedTools } from './server-spec.js';
import { createWorldSlot, failures } from './server-world.js';

export type WorldPath = StatePath<World, WorldEvent>;

/** The delays never elapse by themselves. */
const noTimers = { delays: { backoff: 2 ** 30, stable: 2 ** 30 } };
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

export interface RegistryRun {
  input: WorldInput;
  /** The machines to run (deliberately broken ones, to see the test fail). */
  registry?: typeof registryMachine;
  server?: typeof serverMachine;
}

interface RereadCall {
  name: string;
  resolve(answer: Reread): void;
  reject(error: unknown): void;
  done: boolean;
}

export const describeWorldEvent = (event: WorldEvent): string => ('name' in event ? `${event.type}(${event.name})` : event.type);

/**
 * The registry provided once for many paths (`provide` rebuilds a machine,
 * which costs more than running a short path): its servers' work acts on
 * the world of the path being run, its re-reads are that path's.
 */
function createRig(run: RegistryRun) {
  const servers = createWorldSlot({ closesAtOnce: true });
  let rereads: RereadCall[] = [];
  const machine = (run.registry ?? registryMachine).provide({
    actors: {
      server: (run.server ?? serverMachine).provide({ actors: servers.actors, ...noTimers }),
      // Each re-read the registry asks for waits for the path; stopping the re-reader abandons the one running.
      rereadConfig: fromCallback<RereadRequest, { host: RegistryHost | null }>(({ sendBack, receive }) => {
        const calls = rereads;
        const mine: RereadCall[] = [];
        receive(({ name }) => {
          const call: RereadCall = {
            name,
            resolve: (reread) => sendBack({ type: 'reread.done', reread }),
            reject: (error) => sendBack({ type: 'reread.failed', error }),
            done: false,
          };
          calls.push(call);
          mine.push(call);
        });
        return () => {
          for (const call of mine) call.done = true;
        };
      }),
    },
  });
  /** Its servers' host (the catalog session beside a ready connection); the re-reader is provided as an actor. */
  const host: RegistryHost = {
    reread: () => Promise.reject(new Error('provided as an actor')),
    server: servers.host,
  };
  return {
    machine,
    host,
    /** A fresh world and re-reads for the next path. */
    next() {
      rereads = [];
      return { servers: servers.next(), rereads };
    },
  };
}
type Rig = ReturnType<typeof createRig>;

/** Runs one path on a real registry; the first step where it differs from the model or breaks a startup rule. */
export async function runWorldPath(path: WorldPath, run: RegistryRun, rig: Rig = createRig(run)): Promise<Mismatch | null> {
  const { input } = run;
  const configs = input.configs;
  const { machine } = rig;
  const { servers, rereads } = rig.next();
  const file = new Map<string, ServerConfig>(input.servers.map(({ name, config }) => [name, config]));

  /** Every event the registry sent a server actor, in order. */
  const sent: Array<[string, string]> = [];
  const refs = new Map<string, ServerActorRef>();
  let registryRef: unknown = null;
  const inspect = (inspection: InspectionEvent) => {
    if (inspection.type !== '@xstate.event' || inspection.sourceRef !== registryRef) return;
    // Its children's init events are XState's; what it tells a server is a `server.*` event.
    if (inspection.event.type.startsWith('server.')) sent.push([(inspection.actorRef as ServerActorRef).id, inspection.event.type]);
  };
  const registry = createActor(machine, {
    input: { servers: input.servers, startupConcurrency: input.concurrency, host: rig.host },
    inspect,
  });
  registryRef = registry;
  const published = () => registry.getSnapshot().context.servers;
  const observer = await createObserver((name) => published()[name]);
  /** Observes every actor the registry publishes, as the host does. */
  const bridgeNew = () => {
    for (const ref of Object.values(published())) {
      if (refs.has(ref.id)) continue;
      refs.set(ref.id, ref);
      observer.bridge(ref);
    }
  };
  registry.subscribe(bridgeNew);
  bridgeNew();

  /** Dequeued servers not yet out of pending: the slots taken, as seen from outside the registry. */
  const holding = new Set<string>();
  let seen = 0;
  /** Queue entries in the order the test put them there: the initial queue, then hand adds. */
  const queueOrder: string[] = input.servers.filter(({ config }) => config.enabled).map(({ name }) => name);

  registry.start();
  bridgeNew();
  let world = initialWorld(input);
  const taken: string[] = [];

  function perform(event: WorldEvent): void {
    const id = 'name' in event ? (published()[event.name]?.id ?? '?') : '';
    const ref = 'name' in event ? published()[event.name] : undefined;
    switch (event.type) {
      case 'reread.done':
      case 'reread.unreadable':
      case 'reread.fails': {
        const running = rereads.filter((call) => !call.done);
        if (running.length !== 1) throw new Error(`the path answers a re-read, but ${running.length} run`);
        const call = running[0]!;
        call.done = true;
        const entry = file.get(call.name);
        if (event.type === 'reread.fails') return call.reject(new Error('EACCES: permission denied'));
        if (event.type === 'reread.unreadable') return call.resolve({ status: 'unreadable' });
        return call.resolve(entry ? { status: 'found', config: entry } : { status: 'deleted' });
      }
      case 'connect.succeeds':
        return servers.succeedConnect(id);
      case 'connect.fails':
        return servers.failConnect(failures.spawn(), id);
      case 'connect.fails_auth':
        return servers.failConnect(failures.auth(), id);
      case 'bound.elapses':
        // What the machine's watcher sends once the server's timeout_seconds is up.
        holding.delete(id);
        return registry.send({ type: 'startup.settled', actor: id });
      case 'file.edit':
        return void file.set(event.name, configs[event.name]!.edited);
      case 'file.disable':
        return void file.set(event.name, configs[event.name]!.disabled);
      case 'file.delete':
        return void file.delete(event.name);
      case 'hand.edit': {
        // The host's reconcile: the event that applies the edit, through the registry.
        const edited = configs[event.name]!.edited;
        file.set(event.name, edited);
        const change = configChangeEvent(ref!.getSnapshot().context.config, edited);
        // During startup the edit sends the server to the end of the queue (unless its old entry is still there).
        const queued = registry.getSnapshot().context.queue.some((entry) => entry.ref === ref);
        if (change && registry.getSnapshot().matches('starting') && !queued) queueOrder.push(event.name);
        if (change) registry.send({ type: 'server.edit', name: event.name, event: change });
        return;
      }
      case 'hand.add':
        file.set(event.name, configs[event.name]!.base);
        queueOrder.push(event.name);
        return registry.send({ type: 'server.enqueue', name: event.name, config: configs[event.name]!.base });
      case 'mgmt.restart':
        return ref!.send({ type: 'server.restart' });
      case 'mgmt.disable':
        file.set(event.name, configs[event.name]!.disabled);
        return ref!.send({ type: 'server.disable', config: configs[event.name]!.disabled });
      case 'mgmt.delete':
        file.delete(event.name);
        return registry.send({ type: 'server.uninstall', name: event.name });
      case 'mgmt.add':
        file.set(event.name, configs[event.name]!.base);
        return registry.send({ type: 'server.install', name: event.name, config: configs[event.name]!.base });
      case 'demand':
        return ref!.send({ type: 'server.demand' });
      case 'shutdown':
        return registry.send({ type: 'registry.shutdown' });
    }
  }

  /** The real fleet, in the model's terms. */
  function observe() {
    const snapshot = registry.getSnapshot();
    const value = snapshot.value;
    const current = Object.entries(published()).map(([name, ref]): [string, string] => [name, ref.id]);
    return {
      registry: typeof value === 'string' ? value : Object.keys(value)[0],
      published: current,
      actors: Object.fromEntries(
        [...refs.values()].map((ref) => {
          const actor = ref.getSnapshot();
          const name = actor.context.name;
          return [ref.id, { state: topState(actor), config: labelOf(configs, name, actor.context.config) }];
        }),
      ),
      queue: snapshot.context.queue.map((entry) => entry.ref.id),
      rereading: rereads.find((call) => !call.done)?.name ?? null,
      slots: snapshot.context.connecting.map((ref) => ref.id),
      connectsRunning: Object.fromEntries([...refs.keys()].map((id) => [id, servers.connects.running(id).length])),
      sent,
      views: Object.fromEntries(
        observer.views().map((view) => [
          view.name,
          { state: view.state, enabled: view.config['enabled'], timeout_seconds: view.config['timeout_seconds'] },
        ]),
      ),
      tools: Object.fromEntries(current.map(([name]) => [name, observer.tools(name).sort()])),
      registeredOutsideReady: observer.violations,
      rules: rules(current),
    };
  }

  /** SPEC §4's startup rules, checked on the real observation alone. */
  function rules(current: Array<[string, string]>) {
    const snapshot = registry.getSnapshot();
    const broken: string[] = [];
    // At most `startupConcurrency` servers the queue dequeued are on their way at once: each from the
    // registry's `server.connect` until it first leaves pending (or its bound elapses).
    for (const [id, type] of sent.slice(seen)) if (type === 'server.connect') holding.add(id);
    seen = sent.length;
    for (const id of holding) if (!isSettling(refs.get(id)!.getSnapshot())) holding.delete(id);
    if (holding.size > input.concurrency) broken.push(`${holding.size} queued servers connect at once: ${[...holding]}`);
    const dequeued = new Set(sent.filter(([, type]) => type === 'server.connect').map(([id]) => id));
    // The queue takes its servers in file order (hand-added ones last, in the order they came).
    const takenOrder = sent
      .filter(([id, type]) => type === 'server.connect' || (type === 'server.disable' && dequeued.has(id)))
      .map(([id]) => refs.get(id)!.getSnapshot().context.name)
      .filter((name) => queueOrder.includes(name));
    // Each taken server matches its first entry not taken yet; the entries must come in queue order.
    const matched = new Set<number>();
    const positions = takenOrder.map((name) => {
      const position = queueOrder.findIndex((queued, index) => queued === name && !matched.has(index));
      matched.add(position);
      return position;
    });
    if (positions.some((position, index) => position < 0 || (index > 0 && position < positions[index - 1]!))) {
      broken.push(`the queue took ${takenOrder} out of order (${queueOrder})`);
    }
    // An actor no longer published (deleted, replaced) got exactly one stop from the registry, and nothing after it.
    const published = new Set(current.map(([, id]) => id));
    for (const id of refs.keys()) {
      if (published.has(id)) continue;
      const types = sent.filter(([to]) => to === id).map(([, type]) => type);
      if (types.at(-1) !== 'server.stop' || types.filter((type) => type === 'server.stop').length !== 1) {
        broken.push(`${id} was left by the registry, then sent ${types}`);
      }
    }
    // Once startup is over, no server is left waiting for a turn nobody will give it.
    if (snapshot.matches('running')) {
      const stranded = current.filter(([, id]) => refs.get(id)!.getSnapshot().matches({ pending: 'queued' }));
      if (stranded.length > 0) broken.push(`startup is over, but ${stranded.map(([name]) => name)} still wait(s) in the queue`);
    }
    // Once stopped, the registry drained its queue and every actor is gone.
    if (snapshot.matches('stopped')) {
      if (snapshot.context.queue.length > 0 || snapshot.context.connecting.length > 0) broken.push('shutdown left startup work');
      if (rereads.some((call) => !call.done)) broken.push('shutdown left a re-read running');
      const alive = [...refs.values()].filter((ref) => ref.getSnapshot().status === 'active').map((ref) => ref.id);
      if (alive.length > 0) broken.push(`shutdown left ${alive} running`);
      if (observer.allTools().length > 0) broken.push(`shutdown left tools: ${observer.allTools()}`);
    }
    return broken;
  }

  /** What the model promises. */
  function promise(model: World): ReturnType<typeof observe> {
    return {
      registry: model.registry,
      published: model.current,
      actors: Object.fromEntries(
        Object.values(model.actors).map(({ id, name, facts }) => [id, { state: stateOf(model, id), config: labelOf(configs, name, facts.config) }]),
      ),
      queue: model.queue,
      rereading: model.rereading === null ? null : model.actors[model.rereading]!.name,
      slots: model.slots,
      connectsRunning: Object.fromEntries(
        Object.values(model.actors).map(({ id, facts }) => [id, facts.phase === 'connecting' ? 1 : 0]),
      ),
      sent: model.sent,
      views: Object.fromEntries(
        model.current.map(([name, id]) => {
          const { facts } = model.actors[id]!;
          return [name, { state: stateOf(model, id), enabled: facts.config.enabled, timeout_seconds: facts.config.timeout_seconds }];
        }),
      ),
      tools: Object.fromEntries(
        model.current.map(([name, id]) => {
          const { facts } = model.actors[id]!;
          return [name, facts.phase === 'ready' ? expectedTools(name, facts.config).sort() : []];
        }),
      ),
      registeredOutsideReady: [],
      rules: [],
    };
  }

  try {
    for (const [index, step] of path.steps.entries()) {
      if (index > 0) {
        perform(step.event);
        world = nextWorld(world, step.event, configs);
        taken.push(describeWorldEvent(step.event));
      }
      await settle();
      const mismatch = compare(taken, observe(), promise(world));
      if (mismatch) return mismatch;
    }
    return null;
  } finally {
    observer.stop();
    registry.stop();
  }
}

/** The path a sequence of events takes through the model (no graph walk). */
export function pathOf(input: WorldInput, events: readonly WorldEvent[]): WorldPath {
  let world = initialWorld(input);
  const steps: WorldPath['steps'] = [{ state: world, event: { type: 'xstate.init' } as unknown as WorldEvent }];
  for (const event of events) {
    world = nextWorld(world, event, input.configs);
    steps.push({ state: world, event });
  }
  return { state: world, weight: events.length, steps };
}

export async function runWorldPaths(paths: readonly WorldPath[], run: RegistryRun) {
  const mismatches = createMismatches();
  const rig = createRig(run);
  for (const path of paths) mismatches.add(await runWorldPath(path, run, rig));
  return mismatches;
}
