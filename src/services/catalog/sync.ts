/**
 * Keeps a ready server's catalog (tools, resources and resource templates,
 * prompts) in step with the server: on `notifications/…/list_changed` it
 * re-lists every page, diffs, and hands over the new listing in one step.
 * A change is listed at once; what arrives in the next `debounceMs` is
 * coalesced into one more listing, so a burst costs two listings and an
 * isolated change no wait. A generation counter drops a listing that finishes
 * after a newer one started. Resources and prompts are listed when the sync
 * starts (the tools were listed at connect); a change a server announced
 * before the sync listened was held by the connection's notification
 * dispatcher and is replayed to it.
 */
import type { Prompt, Resource, ResourceTemplate, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ServerConnection } from '../connection/connection.js';
import { jsonEqual } from '../support/json-equal.js';
import { notificationsOf } from '../connection/notifications.js';
import { allPages } from './paging.js';

export type CatalogKind = 'tools' | 'resources' | 'prompts';

/** What a server offers beside its tools. */
export interface Offer {
  resources: Resource[];
  resourceTemplates: ResourceTemplate[];
  prompts: Prompt[];
}

/** Names that appeared, went away, or kept their name with a new definition. */
export interface CatalogChange {
  kind: CatalogKind;
  added: string[];
  removed: string[];
  changed: string[];
}

export interface CatalogSyncOptions {
  connection: ServerConnection;
  /** Bound on each list request, in ms (the server's `timeout_seconds`). */
  timeoutMs: number;
  /** After a listing starts, `list_changed` of that kind within this window makes one more listing at its end (default 50 ms). */
  debounceMs?: number;
  /** `connection.allTools` holds a new listing: register the server's tools again. */
  onTools(): void;
  /** Resources or prompts were listed (the first time, or after a change). */
  onOffer(offer: Offer): void;
  /** A listing differed from the one before it. */
  onChange(change: CatalogChange): void;
  /** A listing failed; the previous one stays. */
  onError(kind: CatalogKind, error: Error): void;
}

export interface CatalogSync {
  /** The latest resources and prompts (empty until first listed, or when the server has none). */
  offer(): Offer;
  /** Resolves once no listing is scheduled or running (for callers that must see a settled catalog). */
  idle(): Promise<void>;
  /** Stops listening; listings still running are dropped. */
  stop(): void;
}

/** Starts syncing `connection`'s catalog and lists everything once. */
export function startCatalogSync(options: CatalogSyncOptions): CatalogSync {
  const { connection } = options;
  const client = connection.client;
  const debounceMs = options.debounceMs ?? 50;
  const capabilities = client.getServerCapabilities() ?? {};
  const stopping = new AbortController();
  const generation: Record<CatalogKind, number> = { tools: 0, resources: 0, prompts: 0 };
  /** Per kind, the window after a listing started: `again` when a change arrived in it. */
  const windows = new Map<CatalogKind, { timer: NodeJS.Timeout; again: boolean }>();
  const running = new Set<Promise<void>>();
  let offer: Offer = { resources: [], resourceTemplates: [], prompts: [] };
  /** Whether resources / prompts were listed once: the first listing is not a change. */
  const listed = { resources: false, prompts: false };

  function schedule(kind: CatalogKind): void {
    if (stopping.signal.aborted) return;
    const open = windows.get(kind);
    if (open) {
      open.again = true;
      return;
    }
    relist(kind);
    openWindow(kind);
  }

  function openWindow(kind: CatalogKind): void {
    const window = {
      again: false,
      timer: setTimeout(() => {
        windows.delete(kind);
        if (!window.again) return;
        relist(kind);
        openWindow(kind);
      }, debounceMs),
    };
    windows.set(kind, window);
  }

  const listingDue = () => [...windows.values()].some((window) => window.again);

  function relist(kind: CatalogKind): void {
    const mine = ++generation[kind];
    const current = () => !stopping.signal.aborted && generation[kind] === mine;
    const run = listAndApply(kind, current).catch((error: unknown) => {
      if (current()) options.onError(kind, error instanceof Error ? error : new Error(String(error)));
    });
    running.add(run);
    void run.finally(() => running.delete(run));
  }

  async function listAndApply(kind: CatalogKind, current: () => boolean): Promise<void> {
    if (kind === 'tools') {
      const listing = await connection.listTools(stopping.signal);
      if (!current()) return;
      const { change, stable } = diff('tools', connection.allTools, listing, (tool: Tool) => tool.name);
      if (change === null) return;
      connection.replaceTools(stable);
      options.onTools();
      options.onChange(change);
      return;
    }
    if (kind === 'resources') {
      if (!capabilities.resources) return;
      const [resources, resourceTemplates] = await Promise.all([listResources(), listResourceTemplates()]);
      if (!current()) return;
      const before = offer;
      offer = { ...offer, resources, resourceTemplates };
      options.onOffer(offer);
      if (!listed.resources) {
        listed.resources = true;
        return;
      }
      const changes = [
        diff('resources', before.resources, resources, (resource: Resource) => resource.uri).change,
        diff('resources', before.resourceTemplates, resourceTemplates, (t: ResourceTemplate) => t.uriTemplate).change,
      ].filter((change): change is CatalogChange => change !== null);
      if (changes.length > 0) options.onChange(merge('resources', changes));
      return;
    }
    if (!capabilities.prompts) return;
    const prompts = await listPrompts();
    if (!current()) return;
    const before = offer.prompts;
    offer = { ...offer, prompts };
    options.onOffer(offer);
    if (!listed.prompts) {
      listed.prompts = true;
      return;
    }
    const { change } = diff('prompts', before, prompts, (prompt: Prompt) => prompt.name);
    if (change !== null) options.onChange(change);
  }

  const bound = { signal: stopping.signal, timeout: options.timeoutMs };
  const listResources = () =>
    allPages(async (cursor, request) => {
      const page = await client.listResources(cursor === undefined ? {} : { cursor }, request);
      return [page.resources, page.nextCursor];
    }, bound);
  const listResourceTemplates = () =>
    allPages(async (cursor, request) => {
      const page = await client.listResourceTemplates(cursor === undefined ? {} : { cursor }, request);
      return [page.resourceTemplates, page.nextCursor];
    }, bound);
  const listPrompts = () =>
    allPages(async (cursor, request) => {
      const page = await client.listPrompts(cursor === undefined ? {} : { cursor }, request);
      return [page.prompts, page.nextCursor];
    }, bound);

  // Resources and prompts are listed for the catalog. The tools were listed at
  // connect; a change announced since then was held by the dispatcher and is
  // replayed here, to listeners subscribed only now that everything they call exists.
  relist('resources');
  relist('prompts');
  const dispatcher = notificationsOf(client);
  const unsubscribe = [
    dispatcher.subscribe('notifications/tools/list_changed', () => schedule('tools')),
    dispatcher.subscribe('notifications/resources/list_changed', () => schedule('resources')),
    dispatcher.subscribe('notifications/prompts/list_changed', () => schedule('prompts')),
  ];

  return {
    offer: () => offer,
    async idle() {
      while (listingDue() || running.size > 0) {
        await Promise.all([...running]);
        if (listingDue()) await new Promise((resolve) => setTimeout(resolve, debounceMs));
      }
    },
    stop() {
      stopping.abort(new Error('catalog sync stopped'));
      for (const window of windows.values()) clearTimeout(window.timer);
      windows.clear();
      for (const off of unsubscribe) off();
    },
  };
}

/**
 * What differs between two listings by key (null when nothing does), and the
 * new listing with each unchanged item replaced by its old object: what did
 * not change keeps its identity, so work derived from it can be kept too.
 */
function diff<T>(
  kind: CatalogKind,
  before: readonly T[],
  after: readonly T[],
  key: (item: T) => string,
): { change: CatalogChange | null; stable: T[] } {
  const old = new Map(before.map((item) => [key(item), item]));
  const next = new Map(after.map((item) => [key(item), item]));
  const change: CatalogChange = { kind, added: [], removed: [], changed: [] };
  /** New item → the equal old one it stands for. */
  const kept = new Map<T, T>();
  for (const [name, item] of next) {
    const previous = old.get(name);
    if (previous === undefined) change.added.push(name);
    else if (jsonEqual(previous, item)) kept.set(item, previous);
    else change.changed.push(name);
  }
  for (const name of old.keys()) if (!next.has(name)) change.removed.push(name);
  const changed = change.added.length + change.removed.length + change.changed.length > 0;
  return { change: changed ? change : null, stable: after.map((item) => kept.get(item) ?? item) };
}

function merge(kind: CatalogKind, changes: CatalogChange[]): CatalogChange {
  return {
    kind,
    added: changes.flatMap((change) => change.added),
    removed: changes.flatMap((change) => change.removed),
    changed: changes.flatMap((change) => change.changed),
  };
}
