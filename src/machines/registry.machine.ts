import { assign, enqueueActions, fromCallback, sendTo, setup, type ActorRefFrom } from 'xstate';
import type { ServerConfig } from '../config/index.js';
import type { Reread, RegistryEvent } from './registry.events.js';
import type { ServerMachineEvent } from './server.events.js';
import { serverMachine, type ServerHost } from './server.machine.js';
import { settled } from './server.queries.js';
import { own } from '../records.js';

export type ServerActorRef = ActorRefFrom<typeof serverMachine>;

interface QueueEntry {
  name: string;
  /** The actor queued; management may have started it (or replaced it) since. */
  ref: ServerActorRef;
  /**
   * Sent back to the queue by a hand edit in this very step: the actor has not
   * taken the edit yet, so its `queued` flag is only current after the re-read.
   */
  requeued?: boolean;
}

export interface RegistryInput {
  /** The persisted servers, in file order. */
  servers: Array<{ name: string; config: ServerConfig }>;
  /** How many queued servers may connect at once (default 1: one at a time, in file order). */
  startupConcurrency?: number;
  /** The host's work for the registry and its servers; without one, servers connect plainly and nothing is re-read. */
  host?: RegistryHost | null;
}

/** What a host does for its registry: re-reads a server's persisted entry, and works for its server actors. */
export interface RegistryHost {
  reread(name: string): Promise<Reread>;
  server: ServerHost;
}

export interface RegistryContext {
  servers: Record<string, ServerActorRef>;
  queue: QueueEntry[];
  /** Dequeued servers still in `pending`, each watched by the startup's `watchSettling`. */
  connecting: ServerActorRef[];
  /** Bound on `connecting.length`. */
  startupConcurrency: number;
  /** Actors installed by management so far; makes each one's id unique. */
  installed: number;
  host: RegistryHost | null;
}

const head = (context: RegistryContext): QueueEntry => context.queue[0]!;

/** What the startup's re-reader is told: re-read the persisted entry of `name`. */
export interface RereadRequest {
  type: 'reread';
  name: string;
}

/** What the startup's watcher is told: watch this connecting server, bounded by `timeoutMs`. */
export interface WatchSettling {
  type: 'watch';
  ref: ServerActorRef;
  timeoutMs: number;
}

/**
 * The fleet: publishes every configured server at once, then connects the
 * enabled ones in file order, `startupConcurrency` at a time (default one),
 * re-reading the persisted config as it reaches each. Management
 * sends its events to the existing actors; the registry installs an actor
 * only for a new name and uninstalls it when the server is deleted. A server
 * hand-added during startup joins the end of the queue; one that management
 * already started (or replaced) is skipped by it.
 */
export const registryMachine = setup({
  types: {
    input: {} as RegistryInput,
    context: {} as RegistryContext,
    events: {} as RegistryEvent,
  },
  actors: {
    server: serverMachine,
    /**
     * Re-reads the persisted entry of each server it is told of, through the
     * host, and sends back what it found (`reread.done`, `reread.failed`).
     * One for the whole startup rather than one actor per server (an actor
     * and its events cost several KiB of garbage per server start).
     */
    rereadConfig: fromCallback<RereadRequest, { host: RegistryHost | null }>(({ input, sendBack, receive }) => {
      let reading = true;
      receive(({ name }) => {
        const reread: Promise<Reread> = input.host === null ? Promise.resolve({ status: 'unreadable' }) : input.host.reread(name);
        reread.then(
          (found) => reading && sendBack({ type: 'reread.done', reread: found }),
          (error: unknown) => reading && sendBack({ type: 'reread.failed', error }),
        );
      });
      return () => {
        reading = false;
      };
    }),
    /**
     * Tells the registry (`startup.settled`) when each server it is told to
     * watch has an outcome, bounded by its `timeout_seconds`. One for the
     * whole startup rather than one actor per connecting server (an actor and
     * its events cost several KiB of garbage per server start).
     */
    watchSettling: fromCallback<WatchSettling, void>(({ sendBack, receive }) => {
      let watching = true;
      receive(({ ref, timeoutMs }) => {
        void settled(ref, timeoutMs).then(() => {
          if (watching) sendBack({ type: 'startup.settled', actor: ref.id });
        });
      });
      return () => {
        watching = false;
      };
    }),
  },
  guards: {
    queueEmpty: ({ context }) => context.queue.length === 0,
    startupDone: ({ context }) => context.queue.length === 0 && context.connecting.length === 0,
    slotsFull: ({ context }) => context.connecting.length >= context.startupConcurrency,
    /**
     * Connecting the head takes the last slot or empties the queue: `dequeue`
     * would only send the startup on to `waiting`, so the connect goes there
     * itself (a microstep and a snapshot less per server start).
     */
    waitsOnceHeadConnects: ({ context }) =>
      context.queue.length === 1 || context.connecting.length + 1 >= context.startupConcurrency,
    /**
     * Management replaced the head's actor, or started it (it left the queue):
     * the queue has nothing left to do for it. Asked again after the re-read,
     * when the actor has taken every event sent to it meanwhile.
     */
    headMovedOn: ({ context }) => {
      const { name, ref } = head(context);
      return own(context.servers, name) !== ref || !ref.getSnapshot().context.queued;
    },
    /** As `headMovedOn`, but a head a hand edit just re-queued is trusted to wait until its re-read. */
    headMovedOnBeforeReread: ({ context }) => {
      const { name, ref, requeued } = head(context);
      return own(context.servers, name) !== ref || (!requeued && !ref.getSnapshot().context.queued);
    },
    headDeleted: (_, reread: Reread) => reread.status === 'deleted',
    headDisabled: (_, reread: Reread) => reread.status === 'found' && !reread.config.enabled,
  },
  actions: {
    dropHead: assign({ queue: ({ context }) => context.queue.slice(1) }),
    rereadHead: sendTo('rereadConfig', ({ context }) => ({ type: 'reread' as const, name: head(context).name })),
    /**
     * Connects the head with the config just re-read (or the queued one if the
     * file is unreadable), and moves it to `connecting`; the startup's watcher
     * frees its slot once it leaves `pending`.
     */
    connectHead: enqueueActions(({ context, enqueue }, reread: Reread) => {
      const { ref } = head(context);
      const config = reread.status === 'found' ? reread.config : undefined;
      enqueue.sendTo(ref, { type: 'server.connect', config });
      enqueue.sendTo('watchSettling', {
        type: 'watch',
        ref,
        timeoutMs: (config ?? ref.getSnapshot().context.config).timeout_seconds * 1000,
      });
      enqueue.assign({ queue: context.queue.slice(1), connecting: [...context.connecting, ref] });
    }),
    /** A connecting server left `pending` (or hit its bound): its slot is free. */
    releaseSlot: assign({
      connecting: ({ context }, params: { actor: string }) => context.connecting.filter((candidate) => candidate.id !== params.actor),
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
    /** Publishes a server; `queued` ones wait for their turn (the queue is extended by `enqueue`). */
    install: enqueueActions(
      ({ context, enqueue }, params: { name: string; config: ServerConfig; queued: boolean }) => {
        const previous = own(context.servers, params.name);
        // Only a deleted (and added again) server gets a new actor; the old one stops.
        if (previous) enqueue.sendTo(previous, { type: 'server.stop' });
        enqueue.assign(({ spawn, context: current }) => ({
          installed: current.installed + 1,
          servers: {
            ...current.servers,
            // A fresh id: the replaced actor may still be stopping under the old one.
            [params.name]: spawn('server', {
              id: `${params.name}#${current.installed + 1}`,
              input: { name: params.name, config: params.config, queued: params.queued, host: current.host?.server ?? null },
            }),
          },
        }));
      },
    ),
    /** Puts a just-installed queued server at the end of the startup queue (file order: a new entry comes last). */
    enqueue: enqueueActions(({ context, enqueue }, params: { name: string; config: ServerConfig }) => {
      const ref = own(context.servers, params.name);
      if (ref && params.config.enabled) enqueue.assign({ queue: [...context.queue, { name: params.name, ref }] });
    }),
    /** Applies a hand edit to its actor as it is (after startup there is no queue to wait in). */
    forwardEdit: enqueueActions(({ context, enqueue }, params: { name: string; event: ServerMachineEvent }) => {
      const ref = own(context.servers, params.name);
      if (ref) enqueue.sendTo(ref, params.event);
    }),
    /**
     * During startup, an edit that (re)connects a server sends it to the end of
     * the queue: it connects in its turn, with the config its dequeue re-reads.
     */
    queueEdit: enqueueActions(({ context, enqueue }, params: { name: string; event: ServerMachineEvent }) => {
      const ref = own(context.servers, params.name);
      if (!ref) return;
      const { event } = params;
      const queued: ServerMachineEvent | null =
        event.type === 'server.configure' && event.config.enabled
          ? { type: 'server.configure', config: event.config, queued: true }
          : event.type === 'server.enable'
            ? { type: 'server.enable', ...(event.config ? { config: event.config } : {}), queued: true }
            : null;
      if (queued === null) return void enqueue.sendTo(ref, event);
      enqueue.sendTo(ref, queued);
      if (!context.queue.some((entry) => entry.ref === ref)) {
        enqueue.assign({ queue: [...context.queue, { name: params.name, ref, requeued: true }] });
      }
    }),
    uninstall: enqueueActions(({ context, enqueue }, params: { name: string }) => {
      const ref = own(context.servers, params.name);
      if (!ref) return;
      enqueue.sendTo(ref, { type: 'server.stop' });
      enqueue.assign({ servers: ({ context: current }) => withoutKey(current.servers, params.name) });
    }),
    /** The startup's watcher stopped with `starting`. */
    drainQueue: assign({ queue: [], connecting: [] }),
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
    const host = input.host ?? null;
    input.servers.forEach(({ name, config }) => {
      const ref = spawn('server', { id: name, input: { name, config, queued: true, host: host?.server ?? null } });
      servers[name] = ref;
      if (config.enabled) queue.push({ name, ref });
    });
    return { servers, queue, connecting: [], startupConcurrency: input.startupConcurrency ?? 1, installed: 0, host };
  },
  initial: 'starting',
  on: {
    'server.install': { actions: { type: 'install', params: ({ event }) => ({ ...event, queued: false }) } },
    // After startup, a hand-added server has no queue to wait in: it connects at once.
    'server.enqueue': { actions: { type: 'install', params: ({ event }) => ({ ...event, queued: false }) } },
    'server.edit': { actions: { type: 'forwardEdit', params: ({ event }) => event } },
    'server.uninstall': { actions: { type: 'uninstall', params: ({ event }) => event } },
    'registry.shutdown': { target: '.stopped' },
  },
  states: {
    starting: {
      description: 'connecting the enabled servers in file order, startupConcurrency at a time (default one)',
      invoke: [
        { id: 'rereadConfig', src: 'rereadConfig', input: ({ context }) => ({ host: context.host }) },
        { id: 'watchSettling', src: 'watchSettling' },
      ],
      initial: 'dequeue',
      on: {
        // A slot freed while re-reading: taken up when the re-read is done.
        'startup.settled': { actions: { type: 'releaseSlot', params: ({ event }) => event } },
        // Hand edits during startup take their turn; a re-read in flight is not interrupted.
        'server.edit': { actions: { type: 'queueEdit', params: ({ event }) => event } },
        'server.enqueue': {
          actions: [
            { type: 'install', params: ({ event }) => ({ ...event, queued: true }) },
            { type: 'enqueue', params: ({ event }) => event },
          ],
        },
      },
      states: {
        dequeue: {
          always: [
            { guard: 'startupDone', target: '#registry.running' },
            { guard: 'queueEmpty', target: 'waiting' },
            { guard: 'slotsFull', target: 'waiting' },
            { guard: 'headMovedOnBeforeReread', actions: 'dropHead', target: 'dequeue', reenter: true },
            { target: 'rereading' },
          ],
        },
        rereading: {
          description: 're-reads the persisted entry of the server at the head of the queue',
          entry: 'rereadHead',
          on: {
            'reread.done': [
              { guard: 'headMovedOn', actions: 'dropHead', target: 'dequeue' },
              {
                guard: { type: 'headDeleted', params: ({ event }) => event.reread },
                actions: ['uninstallHead', 'dropHead'],
                target: 'dequeue',
              },
              {
                guard: { type: 'headDisabled', params: ({ event }) => event.reread },
                actions: [{ type: 'disableHead', params: ({ event }) => event.reread }, 'dropHead'],
                target: 'dequeue',
              },
              {
                guard: 'waitsOnceHeadConnects',
                actions: { type: 'connectHead', params: ({ event }) => event.reread },
                target: 'waiting',
              },
              { actions: { type: 'connectHead', params: ({ event }) => event.reread }, target: 'dequeue' },
            ],
            'reread.failed': [
              { guard: 'headMovedOn', actions: 'dropHead', target: 'dequeue' },
              { actions: { type: 'connectHead', params: { status: 'unreadable' } }, target: 'dequeue' },
            ],
          },
        },
        waiting: {
          description:
            'every slot taken (or the queue empty): waits for a server to leave pending, each bounded by its timeout_seconds',
          on: {
            'startup.settled': { actions: { type: 'releaseSlot', params: ({ event }) => event }, target: 'dequeue' },
            'server.enqueue': {
              actions: [
                { type: 'install', params: ({ event }) => ({ ...event, queued: true }) },
                { type: 'enqueue', params: ({ event }) => event },
              ],
              target: 'dequeue',
            },
            'server.edit': { actions: { type: 'queueEdit', params: ({ event }) => event }, target: 'dequeue' },
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
        'server.enqueue': {},
        'server.edit': {},
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
