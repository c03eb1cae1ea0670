// Observes server actors the way the host does: through the host's own
// journal bridge (src/host/journal-bridge.ts) into an in-memory journal, with
// a real tool mount. On top, it records every `tools.register` the actors
// emit and where each actor was when it did (SPEC §4: only in `ready`).
import type { ServerActorRef } from '../../../src/machines/registry.machine.js';
import { topState } from '../../../src/machines/server.queries.js';
import { bridgeServer } from '../../../src/host/journal-bridge.js';
import { createToolMount } from '../../../src/host/tool-mount.js';
import { createMemoryEventStore } from '../../../src/journal/event-store.js';
import { createJournal } from '../../../src/journal/journal.js';
import { serverViews } from '../../../src/journal/projection.js';
import type { ServerView } from '../../../src/journal/server-view.js';

export interface Observer {
  /** Starts observing an actor (once per actor). */
  bridge(ref: ServerActorRef): void;
  /** `tools.register` emitted outside `ready.serving`, as `actor: state`. */
  readonly violations: string[];
  /** `tools.register` emitted, by actor id. */
  registrations(actorId: string): number;
  /** The projection's view of a server (undefined once it is removed). */
  view(name: string): ServerView | undefined;
  views(): ServerView[];
  /** The agent tools mounted for a server. */
  tools(name: string): string[];
  /** Whether the journal knows a server's catalog (it registered tools once): what the host's `knowsCatalog` answers. */
  knowsCatalog(name: string): boolean;
  /** Every tool the agent sees. */
  allTools(): string[];
  stop(): void;
}

/** `current(name)`: the actor published under a name now (the registry's, or the single actor under test). */
export async function createObserver(current: (name: string) => ServerActorRef | undefined): Promise<Observer> {
  const journal = createJournal({ store: createMemoryEventStore() });
  await journal.open();
  const append = journal.append.bind(journal);
  const mount = createToolMount({ append, projected: () => journal.projection.context });
  const violations: string[] = [];
  const registered = new Map<string, number>();
  const stops: Array<() => void> = [];
  const bridged = new WeakSet<ServerActorRef>();

  return {
    bridge(ref) {
      if (bridged.has(ref)) return;
      bridged.add(ref);
      const watch = ref.on('tools.register', () => {
        registered.set(ref.id, (registered.get(ref.id) ?? 0) + 1);
        const snapshot = ref.getSnapshot();
        if (snapshot.status !== 'active' || !snapshot.matches({ ready: 'serving' })) {
          violations.push(`${ref.id}: tools.register in ${JSON.stringify(snapshot.value)} (${topState(snapshot)})`);
        }
      });
      stops.push(() => watch.unsubscribe());
      stops.push(bridgeServer(ref, { append, mount, current }));
    },
    violations,
    registrations: (actorId) => registered.get(actorId) ?? 0,
    view: (name) => serverViews(journal.projection.context).find((view) => view.name === name),
    views: () => serverViews(journal.projection.context),
    tools: (name) => mount.forServer(name).map((tool) => tool.name),
    knowsCatalog: (name) => (journal.projection.context.servers[name]?.known_tools ?? null) !== null,
    allTools: () => mount.list().map((tool) => tool.name),
    stop() {
      for (const stop of stops.splice(0)) stop();
      void journal.close();
    },
  };
}
