// Paths over a graph for `xstate/graph`'s path functions, and one more kind
// of path: every transition once.
import type { ActorLogic, EventObject, Snapshot } from 'xstate';
import { getAdjacencyMap, getShortestPaths, type StatePath, type TraversalOptions } from 'xstate/graph';

/**
 * Every transition of the graph once: the shortest path to each state, then
 * each event that state can take (also the events it ignores: the real actor
 * must ignore them too). Shortest paths alone reach every state but leave out
 * most transitions into a state already reached another way.
 */
export function getTransitionPaths<TSnapshot extends Snapshot<unknown>, TEvent extends EventObject, TInput>(
  logic: ActorLogic<TSnapshot, TEvent, TInput>,
  options: TraversalOptions<TSnapshot, TEvent, TInput> & { serializeState: (snapshot: TSnapshot) => string },
  /** Transitions that are not the logic's own (a bound refused the event): left out. */
  skip: (event: TEvent) => boolean = () => false,
): Array<StatePath<TSnapshot, TEvent>> {
  const shortest = new Map(getShortestPaths(logic, options).map((path) => [options.serializeState(path.state), path]));
  const adjacency = getAdjacencyMap(logic, options);
  const paths: Array<StatePath<TSnapshot, TEvent>> = [];
  for (const [key, { transitions }] of Object.entries(adjacency)) {
    const head = shortest.get(key);
    if (!head) continue;
    for (const { event, state } of Object.values(transitions) as Array<{ event: TEvent; state: TSnapshot }>) {
      if (skip(event)) continue;
      paths.push({ state, weight: head.weight + 1, steps: [...head.steps, { state, event }] });
    }
  }
  return paths;
}

/** Steps a set of paths takes (their initial step left out). */
export const stepsOf = (paths: ReadonlyArray<{ steps: readonly unknown[] }>): number =>
  paths.reduce((sum, path) => sum + path.steps.length - 1, 0);
