import { assign, enqueueActions, fromPromise, setup, type ActorRefFrom } from 'xstate';
import type { ServerConfig } from '../services/config/schema.js';
import type { Reread, RegistryEvent } from './registry.events.js';
import { serverMachine } from './server.machine.js';
import { leftPending } from './server.queries.js';

export type ServerActorRef = ActorRefFrom<typeof serverMachine>;

interface QueueEntry {
  name: string;
  /** The actor queued at start; a different actor under the name means management replaced it. */
  ref: ServerActorRef;
}

export interface RegistryInput {
  /** The persisted servers, in file order. */
  servers: Array<{ name: string; config: ServerConfig }>;
}

export interface RegistryContext {
  servers: Record<string, ServerActorRef>;
  queue: QueueEntry[];
  /** Actors installed by management so far; makes each one's id unique. */
  installed: number;
}

const head = (context: RegistryContext): QueueEntry => context.queue[0]!;

/**
 * The fleet: publishes every configured server at once, then connects the
 * enabled ones one at a time in file order, re-reading the persisted config
 * as it reaches each (SPEC §4). Management installs and uninstalls actors at
 * any time; a replaced actor is never touched by the queue.
 */
export const registryMachine = setup({
  types: {
    input: {} as RegistryInput,
    context: {} as RegistryContext,
    events: {} as RegistryEvent,
  },
  actors: {
    server: serverMachine,
    /** Re-reads the persisted entry of one server. Provided by the host. */
    rereadConfig: fromPromise<Reread, { name: string }>(async () => ({ status: 'unreadable' })),
    /** Waits for a server to leave `pending`, bounded by its `timeout_seconds`. */
    awaitSettled: fromPromise<void, { ref: ServerActorRef; timeoutMs: number }>(({ input }) =>
      leftPending(input.ref, input.timeoutMs),
    ),
  },
  guards: {
    queueEmpty: ({ context }) => context.queue.length === 0,
    headReplaced: ({ context }) => context.servers[head(context).name] !== head(context).ref,
    headDeleted: (_, reread: Reread) => reread.status === 'deleted',
    headDisabled: (_, reread: Reread) => reread.status === 'found' && !reread.config.enabled,
  },
  actions: {
    dropHead: assign({ queue: ({ context }) => context.queue.slice(1) }),
    /** Connects the head with the config just re-read (or the queued one if the file is unreadable). */
    connectHead: enqueueActions(({ context, enqueue }, reread: Reread) => {
      enqueue.sendTo(head(context).ref, {
        type: 'server.connect',
        config: reread.status === 'found' ? reread.config : undefined,
      });
    }),
    /** Disables the head with the config just re-read, so its view says `enabled: false` too. */
    disableHead: enqueueActions(({ context, enqueue }, reread: Reread) => {
      enqueue.sendTo(head(context).ref, {
        type: 'server.disable',
        config: reread.status === 'found' ? reread.config : undefined,
      });
    }),
    uninstallHead: enqueueActions(({ context, enqueue }) => {
      const { name, ref } = head(context);
      enqueue.sendTo(ref, { type: 'server.stop' });
      enqueue.assign({ servers: ({ context: current }) => withoutKey(current.servers, name) });
    }),
    install: enqueueActions(({ context, enqueue }, params: { name: string; config: ServerConfig }) => {
      const previous = context.servers[params.name];
      if (previous) enqueue.sendTo(previous, { type: 'server.stop' });
      enqueue.assign(({ spawn, context: current }) => ({
        installed: current.installed + 1,
        servers: {
          ...current.servers,
          // A fresh id: the replaced actor may still be stopping under the old one.
          [params.name]: spawn('server', {
            id: `${params.name}#${current.installed + 1}`,
            input: { name: params.name, config: params.config, queued: false },
          }),
        },
      }));
    }),
    uninstall: enqueueActions(({ context, enqueue }, params: { name: string }) => {
      const ref = context.servers[params.name];
      if (!ref) return;
      enqueue.sendTo(ref, { type: 'server.stop' });
      enqueue.assign({ servers: ({ context: current }) => withoutKey(current.servers, params.name) });
    }),
    drainQueue: assign({ queue: [] }),
    stopAll: enqueueActions(({ context, enqueue }) => {
      for (const ref of Object.values(context.servers)) enqueue.sendTo(ref, { type: 'server.stop' });
    }),
  },
}).createMachine({
  id: 'registry',
  // Every configured server is published at once (visible as pending or
  // disabled); only the enabled ones are queued to connect.
  context: ({ input, spawn }) => {
    const servers: Record<string, ServerActorRef> = {};
    const queue: QueueEntry[] = [];
    for (const { name, config } of input.servers) {
      const ref = spawn('server', { id: name, input: { name, config, queued: true } });
      servers[name] = ref;
      if (config.enabled) queue.push({ name, ref });
    }
    return { servers, queue, installed: 0 };
  },
  initial: 'starting',
  on: {
    'server.install': { actions: { type: 'install', params: ({ event }) => event } },
    'server.uninstall': { actions: { type: 'uninstall', params: ({ event }) => event } },
    'registry.shutdown': { target: '.stopped' },
  },
  states: {
    starting: {
      description: 'connecting the enabled servers one at a time, in file order',
      initial: 'dequeue',
      states: {
        dequeue: {
          always: [
            { guard: 'queueEmpty', target: '#registry.running' },
            { guard: 'headReplaced', actions: 'dropHead', target: 'dequeue', reenter: true },
            { target: 'rereading' },
          ],
        },
        rereading: {
          description: 're-reads the persisted entry of the server at the head of the queue',
          invoke: {
            src: 'rereadConfig',
            input: ({ context }) => ({ name: head(context).name }),
            onDone: [
              { guard: 'headReplaced', actions: 'dropHead', target: 'dequeue' },
              {
                guard: { type: 'headDeleted', params: ({ event }) => event.output },
                actions: ['uninstallHead', 'dropHead'],
                target: 'dequeue',
              },
              {
                guard: { type: 'headDisabled', params: ({ event }) => event.output },
                actions: [{ type: 'disableHead', params: ({ event }) => event.output }, 'dropHead'],
                target: 'dequeue',
              },
              { actions: { type: 'connectHead', params: ({ event }) => event.output }, target: 'waiting' },
            ],
            onError: { actions: { type: 'connectHead', params: { status: 'unreadable' } }, target: 'waiting' },
          },
        },
        waiting: {
          description: 'waits for the server to leave pending, bounded by its timeout_seconds',
          invoke: {
            src: 'awaitSettled',
            input: ({ context }) => {
              const { ref } = head(context);
              return { ref, timeoutMs: ref.getSnapshot().context.config.timeout_seconds * 1000 };
            },
            onDone: { actions: 'dropHead', target: 'dequeue' },
          },
        },
      },
    },
    running: {
      description: 'startup done; management installs and uninstalls servers',
    },
    stopped: {
      description: 'startup cancelled and drained; every server told to stop',
      entry: ['drainQueue', 'stopAll'],
      on: {
        'server.install': {},
        'server.uninstall': {},
        'registry.shutdown': {},
      },
    },
  },
});

function withoutKey<T>(record: Record<string, T>, key: string): Record<string, T> {
  const { [key]: _removed, ...rest } = record;
  return rest;
}
