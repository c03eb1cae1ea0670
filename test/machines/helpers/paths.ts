// Paths over a graph for `xstate/graph`'s path functions, and one more kind
// of path: every transition once (and on past each self-loop).
import type { ActorLogic, EventObject, Snapshot } from 'xstate';
import { getAdjacencyMap, getShortestPaths, type StatePath, type TraversalOptions } from 'xstate/graph';

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
  const shortest = new Map(getShortestPaths(logic, options).map((path) => [options.serializeState(path.state), path]));
  const adjacency = getAdjacencyMap(logic, options);
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
