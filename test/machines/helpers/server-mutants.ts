// Deliberately broken server machines: each differs from the real one by one
// small change a refactor could make. The model test must fail on every one
// of them, or it would pass a machine that gives up too early, retries for
// ever, or counts a loss twice.
import { createMachine } from 'xstate';
import { serverMachine } from '../../../src/machines/server.machine.js';

type Machine = typeof serverMachine;
type Config = Machine['config'];
type StateConfig = NonNullable<Config['states']>[string];

/** The machine with the state at `path` (state names from the root) replaced by `change(state)`. */
function withState(path: readonly string[], change: (state: StateConfig) => StateConfig): Machine {
  const replace = (node: StateConfig, rest: readonly string[]): StateConfig => {
    if (rest.length === 0) return change(node);
    const [name, ...tail] = rest as [string, ...string[]];
    const child = node.states?.[name];
    if (!child) throw new Error(`no state ${name} in the server machine`);
    return { ...node, states: { ...node.states, [name]: replace(child, tail) } };
  };
  const config = replace(serverMachine.config as StateConfig, path) as Config;
  return createMachine(config as never, serverMachine.implementations as never) as unknown as Machine;
}

export const serverMutants: ReadonlyArray<{ name: string; machine: Machine }> = [
  {
    // The timer still runs; when it fires, nothing is reset: earlier losses count after a long stable run.
    name: 'staying ready long enough does not reset the failures (`after: stable` without resetFailures)',
    machine: withState(['ready'], (ready) => ({ ...ready, after: { stable: {} } })),
  },
  {
    name: 'the reconnect guard is inverted (`mayReconnect` says no while attempts are left, yes once they are used up)',
    machine: serverMachine.provide({
      guards: {
        mayReconnect: ({ context }) => !(context.failures > 0 && context.failures <= context.config.reconnect.max_attempts),
      },
    }),
  },
  {
    // A reconnect that fails sends the server back to backing_off with the same count: it never gives up.
    name: 'a failed reconnect does not count as an attempt (the connect failure takes no countFailure)',
    machine: withState(['pending', 'connecting'], (connecting) => {
      const invoke = connecting.invoke as unknown as { onError: Array<{ actions?: unknown }> };
      const onError = invoke.onError.map(({ actions, ...branch }) => ({ ...branch, actions: withoutCount(actions) }));
      return { ...connecting, invoke: { ...invoke, onError } } as unknown as StateConfig;
    }),
  },
  {
    // Restarted by hand from error, it starts with the losses of its previous run against it.
    name: 'a restart of a failed server keeps its failures (error takes server.restart without resetFailures)',
    machine: withState(['error'], (error) => ({
      ...error,
      on: { ...(error.on as object), 'server.restart': { target: '#server.pending' } },
    })),
  },
];

function withoutCount(actions: unknown): unknown {
  return Array.isArray(actions) ? actions.filter((action) => action !== 'countFailure') : actions;
}
