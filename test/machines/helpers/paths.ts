// Paths over a graph for `xstate/graph`'s path functions, and one more kind
// of path: every transition once (and on past each self-loop).
import type { ActorLogic, EventObject, Snapshot } from 'xstate';
import { getAdjacencyMap, type StatePath, type TraversalOptions } from 'xstate/graph';

/**
 * Every transition of the graph once: the shortest path to each state, then
 * each event that state can take (also the events it ignores: the real actor
 * must ignore them too). Shortest paths alone reach every state but leave out
 * most transitions into a state already reached another way.
 *
 * With `pastSelfLoops`, a self-loop (an edge back to the state it left, as
 * `serializeState` sees it) does not end a path: it is walked on past, with
 * each edge that leaves the state. An ignored event is a self-loop too, and so is a transition
 * that changes only what the key leaves out (a targetless transition whose
 * actions were lost is one XState ignores): what the loop did to whatever
 * the key leaves out (context, timers, work in flight) shows in the step
 * after it.
 */
export function getTransitionPaths<TSnapshot extends Snapshot<unknown>, TEvent extends EventObject, TInput>(
  logic: ActorLogic<TSnapshot, TEvent, TInput>,
  options: TraversalOptions<TSnapshot, TEvent, TInput> & { serializeState: (snapshot: TSnapshot) => string },
  /** Transitions that are not the logic's own (a bound refused the event): left out. */
  skip: (event: TEvent) => boolean = () => false,
  /** Walk on past each self-loop (below); about twice the paths. */
  { pastSelfLoops = false }: { pastSelfLoops?: boolean } = {},
): Array<StatePath<TSnapshot, TEvent>> {
  const adjacency = getAdjacencyMap(logic, options);
  const shortest = shortestPaths<TSnapshot, TEvent>(adjacency as never, options.serializeState);
  const paths: Array<StatePath<TSnapshot, TEvent>> = [];
  for (const [key, { transitions }] of Object.entries(adjacency)) {
    const head = shortest.get(key);
    if (!head) continue;
    const edges = (Object.values(transitions) as Array<{ event: TEvent; state: TSnapshot }>).filter(({ event }) => !skip(event));
    const leaving = edges.filter(({ state }) => options.serializeState(state) !== key);
    for (const edge of edges) {
      paths.push({ state: edge.state, weight: head.weight + 1, steps: [...head.steps, edge] });
      if (!pastSelfLoops || options.serializeState(edge.state) !== key) continue;
      for (const next of leaving) {
        paths.push({ state: next.state, weight: head.weight + 2, steps: [...head.steps, edge, next] });
      }
    }
  }
  return paths;
}

/** An adjacency map of `xstate/graph`, by serialized state. */
export type Adjacency<TSnapshot, TEvent> = Record<string, { state: TSnapshot; transitions: Record<string, { event: TEvent; state: TSnapshot }> }>;

/**
 * The shortest path to each state of an adjacency map, by state, as
 * `getShortestPaths` finds them (breadth first, the first way found), from
 * the map already built rather than a second walk of the graph.
 */
function shortestPaths<TSnapshot extends Snapshot<unknown>, TEvent extends EventObject>(
  adjacency: Adjacency<TSnapshot, TEvent>,
  serializeState: (snapshot: TSnapshot) => string,
): Map<string, StatePath<TSnapshot, TEvent>> {
  const [start] = Object.keys(adjacency);
  const paths = new Map<string, StatePath<TSnapshot, TEvent>>();
  if (start === undefined) return paths;
  const initial = adjacency[start]!.state;
  paths.set(start, { state: initial, weight: 0, steps: [{ state: initial, event: { type: 'xstate.init' } as TEvent }] });
  for (const [key, head] of paths) {
    for (const { event, state } of Object.values(adjacency[key]!.transitions)) {
      const next = serializeState(state);
      if (paths.has(next)) continue;
      paths.set(next, { state, weight: head.weight + 1, steps: [...head.steps, { state, event }] });
    }
  }
  return paths;
}

/** The shortest path to every state (as `getShortestPaths` finds them), and the adjacency map they were found on. */
export function getShortestPathsAndMap<TSnapshot extends Snapshot<unknown>, TEvent extends EventObject, TInput>(
  logic: ActorLogic<TSnapshot, TEvent, TInput>,
  options: TraversalOptions<TSnapshot, TEvent, TInput> & { serializeState: (snapshot: TSnapshot) => string },
) {
  const adjacency = getAdjacencyMap(logic, options) as unknown as Adjacency<TSnapshot, TEvent>;
  return { paths: [...shortestPaths(adjacency, options.serializeState).values()], adjacency };
}

/**
 * Runs that together reach every state the `paths` end in (shortest paths,
 * one per state): from the end of a path a run goes on along the graph to a
 * state not reached yet (the nearest, if no edge leads to one), so the steps
 * to reach a state are shared; a state no run has reached yet starts a new
 * one along its own path. Every state is reached, with every step a real
 * edge of the graph. `maxSteps` bounds a run (a mismatch far down a long
 * run is harder to read).
 */
export function chainStates<TSnapshot extends Snapshot<unknown>, TEvent extends EventObject>(
  paths: ReadonlyArray<StatePath<TSnapshot, TEvent>>,
  adjacency: Adjacency<TSnapshot, TEvent>,
  serializeState: (snapshot: TSnapshot) => string,
  { maxSteps = 40 }: { maxSteps?: number } = {},
): Array<StatePath<TSnapshot, TEvent>> {
  type Step = StatePath<TSnapshot, TEvent>['steps'][number];
  const unreached = new Set(paths.map((path) => serializeState(path.state)));
  /** The fewest steps from `key` to a state not reached yet, within `room` steps. */
  function wayOn(key: string, room: number): Step[] | undefined {
    const cameBy = new Map<string, { from: string; step: Step } | null>([[key, null]]);
    let frontier = [key];
    for (let depth = 0; depth < room && frontier.length > 0; depth += 1) {
      const further: string[] = [];
      for (const at of frontier) {
        for (const { event, state } of Object.values(adjacency[at]?.transitions ?? {})) {
          const to = serializeState(state);
          if (cameBy.has(to)) continue;
          cameBy.set(to, { from: at, step: { event, state } });
          if (unreached.has(to)) {
            const way: Step[] = [];
            for (let back = cameBy.get(to); back; back = cameBy.get(back.from)) way.unshift(back.step);
            return way;
          }
          further.push(to);
        }
      }
      frontier = further;
    }
    return undefined;
  }

  const runs: Array<StatePath<TSnapshot, TEvent>> = [];
  for (const path of paths) {
    if (!unreached.has(serializeState(path.state))) continue;
    const steps = [...path.steps];
    for (const step of steps) unreached.delete(serializeState(step.state));
    let key = serializeState(path.state);
    for (let room = maxSteps - (steps.length - 1); room > 0; room = maxSteps - (steps.length - 1)) {
      // On to a state not reached yet, if that is shorter than starting a run for it.
      const way = wayOn(key, Math.min(room, path.steps.length));
      if (!way) break;
      for (const step of way) {
        steps.push(step);
        unreached.delete(serializeState(step.state));
      }
      key = serializeState(steps.at(-1)!.state);
    }
    runs.push({ state: steps.at(-1)!.state, weight: steps.length - 1, steps });
  }
  return runs;
}

/** Steps a set of paths takes (their initial step left out). */
export const stepsOf = (paths: ReadonlyArray<{ steps: readonly unknown[] }>): number =>
  paths.reduce((sum, path) => sum + path.steps.length - 1, 0);

/**
 * The paths to run so that every step of every path is run: those that are
 * not a prefix of another (nor the same as one run already). Running a path
 * observes each step of its prefixes on the way, and the same events from
 * the same start reach the same states, so a prefix run alone adds nothing.
 * `key` names an event (distinct events, distinct names).
 */
export function withoutPrefixes<TPath extends { steps: ReadonlyArray<{ event: unknown }> }>(
  paths: readonly TPath[],
  key: (event: TPath['steps'][number]['event']) => string,
): TPath[] {
  // A trie of the paths' events: a path is run iff it ends at a leaf, and only the first path to end there.
  interface Node {
    next: Map<string, Node>;
    run: boolean;
  }
  const root: Node = { next: new Map(), run: false };
  const ends = paths.map((path) => {
    let node = root;
    for (const step of path.steps.slice(1)) {
      const name = key(step.event);
      let child = node.next.get(name);
      if (!child) node.next.set(name, (child = { next: new Map(), run: false }));
      node = child;
    }
    return node;
  });
  return paths.filter((_, index) => {
    const end = ends[index]!;
    if (end.next.size > 0 || end.run) return false;
    end.run = true;
    return true;
  });
}

/**
 * The transitions of `getTransitionPaths` (each path's last edge, and for a
 * path on past a self-loop, the loop and the edge after it), chained into
 * fewer, longer paths: from the end of one transition a path goes on with
 * one not taken yet from the state it reached, and only when none is left
 * there does a new path start, along the shortest path to a state that
 * still has some. Every transition is taken as before, from a state that
 * serializes the same; the steps to reach it are shared instead of run
 * once per transition. `maxSteps` bounds a path (a mismatch far down a long
 * path is harder to read).
 */
export function chainTransitions<TSnapshot extends Snapshot<unknown>, TEvent extends EventObject>(
  paths: ReadonlyArray<StatePath<TSnapshot, TEvent>>,
  serializeState: (snapshot: TSnapshot) => string,
  eventKey: (event: TEvent) => string,
  { maxSteps = 40 }: { maxSteps?: number } = {},
): Array<StatePath<TSnapshot, TEvent>> {
  type Step = StatePath<TSnapshot, TEvent>['steps'][number];
  interface Edge {
    step: Step;
    event: string;
    to: string;
  }
  const heads = new Map<string, Step[]>();
  /** Transitions not taken yet, by the state they leave. */
  const edges = new Map<string, Map<string, Edge>>();
  /** After a self-loop (by the state and the loop's event): the edges still to take right after it. */
  const afterLoops = new Map<string, Map<string, Map<string, Edge>>>();
  const edgeOf = (step: Step): Edge => ({ step, event: eventKey(step.event), to: serializeState(step.state) });
  const within = <V>(map: Map<string, V>, key: string, make: () => V): V => {
    if (!map.has(key)) map.set(key, make());
    return map.get(key)!;
  };
  /** How many transitions (and edges after a loop) are still to take from each state. */
  const left = new Map<string, number>();
  const owe = (from: string, owed: Map<string, Edge>, edge: Edge): void => {
    if (!owed.has(edge.event)) left.set(from, (left.get(from) ?? 0) + 1);
    owed.set(edge.event, edge);
  };
  const take = (from: string, owed: Map<string, Edge> | undefined, event: string): Edge | undefined => {
    const edge = owed?.get(event);
    if (edge === undefined) return undefined;
    owed!.delete(event);
    left.set(from, left.get(from)! - 1);
    return edge;
  };
  const pending = (key: string): boolean => (left.get(key) ?? 0) > 0;

  for (const { steps } of paths) {
    const keys = steps.map((step) => serializeState(step.state));
    const last = steps.length - 1;
    // A shortest path takes no self-loop: a loop just before the last step is the loop the path goes on past.
    const pastLoop = last >= 2 && keys[last - 2] === keys[last - 1];
    const headLength = pastLoop ? last - 1 : last;
    const from = keys[headLength - 1]!;
    if (!heads.has(from)) heads.set(from, steps.slice(0, headLength));
    const first = edgeOf(steps[headLength]!);
    owe(from, within(edges, from, () => new Map()), first);
    if (pastLoop) owe(from, within(within(afterLoops, from, () => new Map()), first.event, () => new Map()), edgeOf(steps[last]!));
  }

  /** Each self-loop's step, to take a loop again for what is owed after it. */
  const loops = new Map<string, Step>();
  for (const [from, out] of edges) for (const edge of out.values()) if (edge.to === from) loops.set(`${from} ${edge.event}`, edge.step);
  const loopStep = (key: string, event: string): Step => loops.get(`${key} ${event}`)!;


  /** The next step from `key`: an edge owed right after the loop just taken, an edge not taken yet, or a loop with edges owed after it. */
  function next(key: string, loop: string | null): Edge | undefined {
    const owedAfter = loop === null ? undefined : afterLoops.get(key)?.get(loop);
    if (owedAfter && owedAfter.size > 0) {
      const [event] = owedAfter.keys();
      const edge = take(key, owedAfter, event!)!;
      take(key, edges.get(key), edge.event);
      return edge;
    }
    const open = edges.get(key);
    if (open && open.size > 0) {
      // Rather an edge to a state with transitions left, so the path goes on.
      const all = [...open.values()];
      const edge = all.find((candidate) => candidate.to !== key && pending(candidate.to)) ?? all.find((candidate) => candidate.to === key) ?? all[0]!;
      return take(key, open, edge.event);
    }
    for (const [event, owed] of afterLoops.get(key) ?? []) {
      if (owed.size === 0) continue;
      const [first] = owed.values();
      // The loop again (taken already), to take what is owed after it.
      return { ...first!, step: loopStep(key, event), event, to: key };
    }
    return undefined;
  }
  /** Every edge between states, taken or not: the ways to a state with transitions left. */
  const ways = new Map<string, Edge[]>();
  for (const [from, out] of edges) ways.set(from, [...out.values()].filter((edge) => edge.to !== from));
  /** The fewest edges from `key` to a state with transitions left (none if there is no such state within `room` steps). */
  function wayOn(key: string, room: number): Edge[] | undefined {
    const cameBy = new Map<string, Edge | null>([[key, null]]);
    let frontier = [key];
    for (let depth = 0; depth < room && frontier.length > 0; depth += 1) {
      const further: string[] = [];
      for (const at of frontier) {
        for (const edge of ways.get(at) ?? []) {
          if (cameBy.has(edge.to)) continue;
          cameBy.set(edge.to, edge);
          if (pending(edge.to)) {
            const way: Edge[] = [];
            for (let back: Edge | null | undefined = edge; back; back = cameBy.get(keyBefore(back))) way.unshift(back);
            return way;
          }
          further.push(edge.to);
        }
      }
      frontier = further;
    }
    return undefined;
  }
  const before = new Map<Edge, string>();
  for (const [from, out] of ways) for (const edge of out) before.set(edge, from);
  const keyBefore = (edge: Edge): string => before.get(edge)!;

  const chained: Array<StatePath<TSnapshot, TEvent>> = [];
  for (const [start, head] of heads) {
    while (pending(start)) {
      const steps = [...head];
      let key = start;
      let loop: string | null = null;
      for (;;) {
        // Past the bound a path still takes what it owes right after a loop (or it would start over for ever).
        const room = maxSteps - (steps.length - 1);
        let edge: Edge | undefined = room > 0 || loop !== null ? next(key, loop) : undefined;
        if (!edge && room > 1) {
          // Nothing left here: on to the nearest state with transitions left, if that is shorter than starting over.
          const way = wayOn(key, Math.min(room - 1, head.length));
          if (!way) break;
          for (const step of way) steps.push(step.step);
          key = way.at(-1)!.to;
          loop = null;
          edge = next(key, loop);
        }
        if (!edge) break;
        steps.push(edge.step);
        loop = edge.to === key ? edge.event : null;
        key = edge.to;
      }
      chained.push({ state: steps.at(-1)!.state, weight: steps.length - 1, steps });
    }
  }
  return chained;
}

/**
 * The transitions of `paths` (as `chainTransitions` reads them) that no run
 * takes: a run takes an edge when it leaves a state that serializes the same
 * by the same event to a state that serializes the same, and goes on past a
 * self-loop when the edge comes right after the loop.
 */
export function untaken<TSnapshot extends Snapshot<unknown>, TEvent extends EventObject>(
  paths: ReadonlyArray<StatePath<TSnapshot, TEvent>>,
  runs: ReadonlyArray<StatePath<TSnapshot, TEvent>>,
  serializeState: (snapshot: TSnapshot) => string,
  eventKey: (event: TEvent) => string,
): string[] {
  const taken = new Set<string>();
  const keysOf = (path: StatePath<TSnapshot, TEvent>) => path.steps.map((step) => serializeState(step.state));
  for (const run of runs) {
    const keys = keysOf(run);
    for (let index = 1; index < keys.length; index += 1) {
      const event = eventKey(run.steps[index]!.event);
      taken.add(`${keys[index - 1]} ${event} ${keys[index]}`);
      if (index >= 2 && keys[index - 2] === keys[index - 1]) {
        taken.add(`${keys[index - 2]} ${eventKey(run.steps[index - 1]!.event)} ${event} ${keys[index]}`);
      }
    }
  }
  return paths.flatMap((path) => {
    const keys = keysOf(path);
    const last = keys.length - 1;
    const event = eventKey(path.steps[last]!.event);
    const edge = `${keys[last - 1]} ${event} ${keys[last]}`;
    const pastLoop = last >= 2 && keys[last - 2] === keys[last - 1];
    const pair = pastLoop ? `${keys[last - 2]} ${eventKey(path.steps[last - 1]!.event)} ${event} ${keys[last]}` : null;
    return [edge, ...(pair ? [pair] : [])].filter((needed) => !taken.has(needed));
  });
}
