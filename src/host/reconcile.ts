/**
 * Applies a hand edit of `mcp_servers.json` through the registry and the
 * server actors, like management does: a deleted entry uninstalls its actor,
 * a new one is enqueued (during startup it takes its turn at the end of the
 * queue), a changed one gets the event that applies the change. A server
 * still waiting in the startup queue is left alone: its dequeue re-reads the
 * file and applies the edit in file order.
 */
import type { ServerActorRef } from '../machines/registry.machine.js';
import type { RegistryEvent } from '../machines/registry.events.js';
import type { ConfigStore } from '../config/index.js';
import { configChangeEvent } from './config-change.js';
import { own } from '../records.js';

export interface ReconcileDeps {
  store: ConfigStore;
  registry(): { send(event: RegistryEvent): void } | null;
  /** Every published server actor, by name. */
  servers(): Record<string, ServerActorRef>;
  /** A management transaction on it is under way and persists what it runs. */
  busy(name: string): boolean;
  warn(message: string): void;
}

/**
 * Reads the file and applies what changed in it; a file that does not parse
 * changes nothing. Returns the servers it left alone because a management
 * transaction on them was under way: the caller reads again once it is over.
 */
export async function reconcile(deps: ReconcileDeps): Promise<string[]> {
  const loaded = await deps.store.load();
  const registry = deps.registry();
  if (!registry) return [];
  if (loaded.broken) {
    deps.warn(
      `config: ignored an edit of ${loaded.broken.file} that does not parse (${loaded.broken.problem}); ` +
        'the running servers are unchanged and the file will not be overwritten',
    );
    return [];
  }
  const persisted = new Map(loaded.servers);
  const servers = deps.servers();
  const busy: string[] = [];
  for (const name of new Set([...persisted.keys(), ...Object.keys(servers)])) {
    // An entry that does not validate was skipped with a warning; it is not a deletion.
    if (loaded.invalid.some((entry) => entry.name === name)) continue;
    // The transaction stores what it runs, but another hand (another worker) may write after it: read again then.
    if (deps.busy(name)) {
      busy.push(name);
      continue;
    }
    const config = persisted.get(name);
    const ref = own(servers, name);
    if (!config) {
      if (ref) registry.send({ type: 'server.uninstall', name });
    } else if (!ref) {
      registry.send({ type: 'server.enqueue', name, config });
    } else if (!ref.getSnapshot().context.queued) {
      // Through the registry: during startup an edit that connects the server waits for its turn.
      const event = configChangeEvent(ref.getSnapshot().context.config, config);
      if (event) registry.send({ type: 'server.edit', name, event });
    }
  }
  return busy;
}
