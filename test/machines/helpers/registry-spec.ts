// A reference model of the registry and its startup queue, written from the
// contract (docs/contract.md, Lifecycle; docs/lifecycle.md, Startup), not
// from the machine. The world it
// models: the persisted file, every server actor published (each one modelled
// by the server reference model, helpers/server-spec.ts), the queue in file
// order, the re-read in flight, the servers the queue is connecting, and
// what management, hand edits, the servers' connects and calls that ask for
// an `on_demand` server do meanwhile.
//
// As an `ActorLogic` it is also the graph the registry test walks: the
// registry's behaviour lives in its context and its children, which a pure
// transition of its machine cannot move, so the paths come from the model
// and every step is run on the real registry.
import type { ActorLogic } from 'xstate';
import type { ServerConfig } from '../../../src/config/schema.js';
import type { ServerState } from '../../../src/journal/events.js';
import { expected, initialFacts, specState, type ModelEvent, type ServerFacts } from './server-spec.js';

/** What happens to the fleet: the outcomes of the work, and what management, hand edits and the host do. */
export type WorldEvent =
  /** The re-read in flight answers with what the file holds now. */
  | { type: 'reread.done' }
  /** The file is there but cannot be parsed (the host answers `unreadable`). */
  | { type: 'reread.unreadable' }
  /** The re-read itself fails. */
  | { type: 'reread.fails' }
  | { type: 'connect.succeeds'; name: string }
  | { type: 'connect.fails'; name: string }
  /** No usable token: the server needs a human, and must not hold the queue. */
  | { type: 'connect.fails_auth'; name: string }
  /** The server's `timeout_seconds` bound on its startup turn elapses (it still connects). */
  | { type: 'bound.elapses'; name: string }
  /** Hand edits of the file to a server still waiting in the queue: only its dequeue re-read sees them. */
  | { type: 'file.edit'; name: string }
  | { type: 'file.disable'; name: string }
  | { type: 'file.delete'; name: string }
  /** A hand edit (host's reconcile) of a server that no longer waits in the queue: `server.edit`. */
  | { type: 'hand.edit'; name: string }
  /** A server added to the file by hand: `server.enqueue`. */
  | { type: 'hand.add'; name: string }
  /** Management: events to the existing actor, `server.uninstall`, `server.install`. */
  | { type: 'mgmt.restart'; name: string }
  | { type: 'mgmt.disable'; name: string }
  | { type: 'mgmt.delete'; name: string }
  | { type: 'mgmt.add'; name: string }
  /** One of an `on_demand` server's tools is called or loaded through search: the host's `server.demand`. */
  | { type: 'demand'; name: string }
  | { type: 'shutdown' };

/** The configs of one server name: as first written, edited by hand, disabled. */
export interface NameConfigs {
  base: ServerConfig;
  edited: ServerConfig;
  disabled: ServerConfig;
}

export interface ModelActor {
  id: string;
  name: string;
  facts: ServerFacts;
}

export interface World {
  /** For `xstate/graph`: a snapshot of an actor logic. */
  status: 'active';
  output: undefined;
  error: undefined;
  registry: 'starting' | 'running' | 'stopped';
  concurrency: number;
  /** The persisted file: name → config, in file order. */
  file: Array<[string, ServerConfig]>;
  /** Every actor ever published, by id. */
  actors: Record<string, ModelActor>;
  /** The actor published under each name, in publishing order. */
  current: Array<[string, string]>;
  /** Actor ids waiting for their turn, in order. */
  queue: string[];
  /** The head being re-read. */
  rereading: string | null;
  /** Dequeued actors still on their way (each holds a startup slot). */
  slots: string[];
  /** Every event the registry sent a server actor: `[actor id, event type]`, in order. */
  sent: Array<[string, string]>;
  /** Actors installed by management or hand adds so far (their ids are `name#n`). */
  installed: number;
  /** Management actions, hand edits and file edits so far (bounds the paths). */
  interferences: number;
}

export interface WorldInput {
  servers: Array<{ name: string; config: ServerConfig }>;
  concurrency: number;
  configs: Record<string, NameConfigs>;
}

export const currentId = (world: World, name: string): string | undefined => world.current.find(([n]) => n === name)?.[1];
export const stateOf = (world: World, id: string): ServerState => specState(world.actors[id]!.facts);

/**
 * Still on its way: connecting, authenticating without a human, closing
 * towards a new start (SPEC §4's "pending"). Waiting for its turn, or
 * (`on_demand`) to be asked for, is not: it holds no startup slot.
 */
export function onItsWay(facts: ServerFacts): boolean {
  if (facts.phase === 'closing') return facts.closingTo !== 'stopped';
  return ['checking', 'connecting', 'refreshing', 'auth_connecting'].includes(facts.phase);
}

/** Servers close their connection at once in this world: a closing one arrives where it goes. */
function settleServer(facts: ServerFacts): ServerFacts {
  return facts.phase === 'closing' ? expected(facts, { type: 'close.done' }) : facts;
}

function withActor(world: World, id: string, change: (actor: ModelActor) => ModelActor): World {
  return { ...world, actors: { ...world.actors, [id]: change(world.actors[id]!) } };
}

/** An event to one actor; `fromRegistry` records it among what the registry sent. */
function toActor(world: World, id: string, event: ModelEvent, fromRegistry = false): World {
  const next = withActor(world, id, (actor) => ({ ...actor, facts: settleServer(expected(actor.facts, event)) }));
  return fromRegistry ? { ...next, sent: [...next.sent, [id, event.type]] } : next;
}

function publish(world: World, name: string, config: ServerConfig, queued: boolean, id: string): World {
  const actor: ModelActor = { id, name, facts: initialFacts(config, queued) };
  const current = world.current.some(([n]) => n === name)
    ? world.current.map(([n, old]): [string, string] => [n, n === name ? id : old])
    : [...world.current, [name, id] as [string, string]];
  return { ...world, actors: { ...world.actors, [id]: actor }, current };
}

function unpublish(world: World, name: string): World {
  const id = currentId(world, name);
  if (!id) return world;
  const stopped = toActor(world, id, { type: 'server.stop' }, true);
  return { ...stopped, current: stopped.current.filter(([n]) => n !== name) };
}

/** Frees the slots of servers that are no longer on their way, then takes the next heads (SPEC §4's queue). */
function pump(world: World): World {
  let next = { ...world, slots: world.slots.filter((id) => onItsWay(world.actors[id]!.facts)) };
  while (next.registry === 'starting' && next.rereading === null) {
    if (next.queue.length === 0 && next.slots.length === 0) return { ...next, registry: 'running' };
    if (next.queue.length === 0 || next.slots.length >= next.concurrency) return next;
    const head = next.queue[0]!;
    const actor = next.actors[head]!;
    // Replaced, or management started it (it no longer waits for its turn): the queue leaves it alone.
    if (currentId(next, actor.name) !== head || !actor.facts.queued) {
      next = { ...next, queue: next.queue.slice(1) };
      continue;
    }
    next = { ...next, rereading: head };
  }
  return next;
}

/** The re-read of the head answered: what the file says decides (SPEC §4: deleted, disabled, or connect with it). */
function dequeue(world: World, answer: { status: 'found'; config: ServerConfig } | { status: 'deleted' } | { status: 'unreadable' }): World {
  const head = world.rereading!;
  const actor = world.actors[head]!;
  let next: World = { ...world, rereading: null, queue: world.queue.slice(1) };
  // Management acted while the file was read: the queue leaves it alone.
  if (currentId(next, actor.name) !== head || !actor.facts.queued) return pump(next);
  if (answer.status === 'deleted') return pump(unpublish(next, actor.name));
  if (answer.status === 'found' && !answer.config.enabled) {
    return pump(toActor(next, head, { type: 'server.disable', config: answer.config }, true));
  }
  const config = answer.status === 'found' ? answer.config : undefined;
  next = toActor(next, head, config ? { type: 'server.connect', config } : { type: 'server.connect' }, true);
  return pump({ ...next, slots: [...next.slots, head] });
}

function fileSet(world: World, name: string, config: ServerConfig | null): World {
  const exists = world.file.some(([n]) => n === name);
  const file: World['file'] =
    config === null
      ? world.file.filter(([n]) => n !== name)
      : exists
        ? world.file.map(([n, c]): [string, ServerConfig] => [n, n === name ? config : c])
        : [...world.file, [name, config]];
  return { ...world, file };
}

export function initialWorld(input: WorldInput): World {
  let world: World = {
    status: 'active',
    output: undefined,
    error: undefined,
    registry: 'starting',
    concurrency: input.concurrency,
    file: input.servers.map(({ name, config }) => [name, config]),
    actors: {},
    current: [],
    queue: [],
    rereading: null,
    slots: [],
    sent: [],
    installed: 0,
    interferences: 0,
  };
  // Every configured server is published at once; the enabled ones are queued in file order.
  for (const { name, config } of input.servers) {
    world = publish(world, name, config, true, name);
    if (config.enabled) world = { ...world, queue: [...world.queue, name] };
  }
  return pump(world);
}

/** The model: the world after `event`. */
export function nextWorld(world: World, event: WorldEvent, configs: Record<string, NameConfigs>): World {
  if (world.registry === 'stopped') return world;
  const interfered = { ...world, interferences: world.interferences + 1 };
  switch (event.type) {
    case 'reread.done': {
      const name = world.actors[world.rereading!]!.name;
      const entry = world.file.find(([n]) => n === name);
      return dequeue(world, entry ? { status: 'found', config: entry[1] } : { status: 'deleted' });
    }
    case 'reread.unreadable':
    case 'reread.fails':
      return dequeue(world, { status: 'unreadable' });

    case 'connect.succeeds':
    case 'connect.fails':
    case 'connect.fails_auth': {
      const id = currentId(world, event.name)!;
      const outcome: ModelEvent = { type: event.type };
      return pump(toActor(world, id, outcome));
    }
    case 'bound.elapses': {
      const id = currentId(world, event.name)!;
      const freed = { ...world, slots: world.slots.filter((slot) => slot !== id) };
      return pump(freed);
    }

    case 'file.edit':
      return fileSet(interfered, event.name, configs[event.name]!.edited);
    case 'file.disable':
      return fileSet(interfered, event.name, configs[event.name]!.disabled);
    case 'file.delete':
      return fileSet(interfered, event.name, null);

    case 'hand.edit': {
      // The host's reconcile: the file has the edited entry, and the registry applies it.
      const next = fileSet(interfered, event.name, configs[event.name]!.edited);
      const id = currentId(next, event.name)!;
      const config = configs[event.name]!.edited;
      if (next.registry !== 'starting') return pump(toActor(next, id, { type: 'server.configure', config }, true));
      // During startup an edit that connects the server sends it to the end of the queue.
      const queued = toActor(next, id, { type: 'server.configure', config, queued: true }, true);
      return pump(queued.queue.includes(id) ? queued : { ...queued, queue: [...queued.queue, id] });
    }
    case 'hand.add': {
      const config = configs[event.name]!.base;
      const next = fileSet(interfered, event.name, config);
      const id = `${event.name}#${next.installed + 1}`;
      // During startup it joins the end of the queue; after, it connects at once.
      const starting = next.registry === 'starting';
      const published = publish({ ...next, installed: next.installed + 1 }, event.name, config, starting, id);
      return pump(starting ? { ...published, queue: [...published.queue, id] } : published);
    }

    case 'mgmt.restart':
      return pump(toActor(interfered, currentId(world, event.name)!, { type: 'server.restart' }));
    case 'mgmt.disable': {
      const config = configs[event.name]!.disabled;
      const next = fileSet(interfered, event.name, config);
      return pump(toActor(next, currentId(next, event.name)!, { type: 'server.disable', config }));
    }
    case 'mgmt.delete':
      return pump(unpublish(fileSet(interfered, event.name, null), event.name));
    case 'mgmt.add': {
      const config = configs[event.name]!.base;
      const next = fileSet(interfered, event.name, config);
      const id = `${event.name}#${next.installed + 1}`;
      return pump(publish({ ...next, installed: next.installed + 1 }, event.name, config, false, id));
    }

    case 'demand':
      return pump(toActor(world, currentId(world, event.name)!, { type: 'server.demand' }));

    case 'shutdown': {
      // Cancels and drains startup, then stops every published actor, connecting or not.
      let next: World = { ...world, registry: 'stopped', queue: [], rereading: null, slots: [] };
      for (const [, id] of next.current) next = toActor(next, id, { type: 'server.stop' }, true);
      return next;
    }
  }
}

/** The world as an actor logic, for `xstate/graph`. */
export function worldLogic(input: WorldInput): ActorLogic<World, WorldEvent, WorldInput> {
  return {
    config: undefined,
    transition: (world: World, event: WorldEvent) => nextWorld(world, event, input.configs),
    getInitialSnapshot: () => initialWorld(input),
    getPersistedSnapshot: (world: World) => world,
  } as unknown as ActorLogic<World, WorldEvent, WorldInput>;
}

/** The config's name among its server's configs. */
export function labelOf(configs: Record<string, NameConfigs>, name: string, config: ServerConfig): string {
  const found = Object.entries(configs[name] ?? {}).find(([, candidate]) => candidate === config);
  return found ? found[0] : 'other';
}

/** A world as a graph vertex: everything but the history of what was sent. */
export function serializeWorld(world: World, configs: Record<string, NameConfigs>): string {
  return JSON.stringify({
    registry: world.registry,
    file: world.file.map(([name, config]) => `${name}:${labelOf(configs, name, config)}`),
    actors: Object.values(world.actors).map(({ id, name, facts }) => [
      id,
      facts.phase,
      facts.closingTo,
      facts.queued,
      facts.demanded,
      labelOf(configs, name, facts.config),
    ]),
    current: world.current,
    queue: world.queue,
    rereading: world.rereading,
    slots: world.slots,
    interferences: world.interferences,
  });
}

export interface WorldChoice {
  /** Names whose file entry may be edited by hand while they wait in the queue. */
  fileEdits: string[];
  /** Names management may restart, disable, delete and add again. */
  managed: string[];
  /** Names a hand edit may change once they no longer wait in the queue. */
  handEdits: string[];
  /** Names that may be added to the file by hand. */
  handAdds: string[];
  /** Names whose connect may fail (the others only succeed). */
  failing: string[];
  /** Management actions, hand edits and file edits per path. */
  interferences: number;
  /** Names whose tools may be called (their `on_demand` servers asked for), once per actor; not counted as interferences. */
  demands?: string[];
}

/** The events that can happen in a world (only those: the paths need not try the rest). */
export function worldEvents(world: World, choice: WorldChoice, configs: Record<string, NameConfigs>): WorldEvent[] {
  if (world.registry === 'stopped') return [];
  const events: WorldEvent[] = [];
  if (world.rereading !== null) events.push({ type: 'reread.done' }, { type: 'reread.unreadable' }, { type: 'reread.fails' });
  for (const [name, id] of world.current) {
    const { facts } = world.actors[id]!;
    if (facts.phase === 'connecting') {
      events.push({ type: 'connect.succeeds', name });
      if (choice.failing.includes(name)) events.push({ type: 'connect.fails', name }, { type: 'connect.fails_auth', name });
    }
    if (world.slots.includes(id)) events.push({ type: 'bound.elapses', name });
    // The host asks for an `on_demand` server whose tool is called (asked once, it stays asked for in this world).
    const asks = choice.demands?.includes(name) && facts.config.start === 'on_demand' && !facts.demanded;
    if (asks && facts.phase !== 'stopped') events.push({ type: 'demand', name });
  }
  const spare = world.interferences < choice.interferences;
  const actorOf = (name: string) => {
    const id = currentId(world, name);
    return id === undefined ? undefined : world.actors[id]!;
  };
  const inFile = (name: string) => world.file.some(([n]) => n === name);
  if (spare) {
    for (const name of choice.fileEdits) {
      const actor = actorOf(name);
      // Only the file changes: the host leaves a server waiting in the queue to its dequeue re-read.
      if (!actor?.facts.queued || !inFile(name)) continue;
      events.push({ type: 'file.edit', name }, { type: 'file.disable', name }, { type: 'file.delete', name });
    }
    for (const name of choice.handEdits) {
      const actor = actorOf(name);
      const changes = actor !== undefined && actor.facts.config !== configs[name]!.edited;
      if (changes && !actor.facts.queued && actor.facts.phase !== 'stopped' && inFile(name)) events.push({ type: 'hand.edit', name });
    }
    for (const name of choice.handAdds) {
      if (!actorOf(name) && !inFile(name)) events.push({ type: 'hand.add', name });
    }
    for (const name of choice.managed) {
      const actor = actorOf(name);
      if (!actor) {
        if (!inFile(name)) events.push({ type: 'mgmt.add', name });
        continue;
      }
      if (actor.facts.config.enabled) events.push({ type: 'mgmt.restart', name }, { type: 'mgmt.disable', name });
      events.push({ type: 'mgmt.delete', name });
    }
  }
  events.push({ type: 'shutdown' });
  return events;
}
