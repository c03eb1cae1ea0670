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
 *
 * A server may also never announce a change (on the 2026-07-28 era a change
 * sent the 2025 way is dropped): a listing older than `maxAgeMs`, or past the
 * `ttlMs` its result carried, is re-listed when a reader calls `freshen`, one
 * listing per kind however many readers wait for it; `refresh` re-lists now.
 */
import type { Prompt, Resource, ResourceTemplateType, Tool } from '@modelcontextprotocol/client';
import type { ServerConnection } from '../connection/index.js';
import { jsonEqual } from './json-equal.js';
import { notificationsOf } from '../connection/notifications.js';
import { listEveryPage, noneIfUnhandled, ttlOf } from '../connection/tool-listing.js';
import { observeSync, type SyncTrigger } from '../telemetry/catalog.js';
import { observeRequest } from '../telemetry/requests.js';

export type CatalogKind = 'tools' | 'resources' | 'prompts';

/** What a server offers beside its tools. */
export interface Offer {
  resources: Resource[];
  resourceTemplates: ResourceTemplateType[];
  prompts: Prompt[];
}

/** Names that appeared, went away, or kept their name with a new definition. */
export interface CatalogChange {
  kind: CatalogKind;
  added: string[];
  removed: string[];
  changed: string[];
}

/** What a sync tells its owner. */
export interface CatalogSyncListener {
  /** `connection.allTools` holds a new listing: register the server's tools again. */
  onTools(): void;
  /** `kind` was listed (the first time, or after a change); `offer` holds every kind's latest listing. */
  onOffer(offer: Offer, kind: 'resources' | 'prompts'): void;
  /** A listing differed from the one before it. */
  onChange(change: CatalogChange): void;
  /** A listing failed; the previous one stays. */
  onError(kind: CatalogKind, error: Error): void;
}

export interface CatalogSyncOptions {
  connection: ServerConnection;
  /** Bound on each list request, in ms (the server's `timeout_seconds`). */
  timeoutMs: number;
  /** After a listing starts, `list_changed` of that kind within this window makes one more listing at its end (default 50 ms). */
  debounceMs?: number;
  /** Told of new listings, changes and failures. */
  listener: CatalogSyncListener;
  /** `catalog_max_age_seconds` in ms: a listing older than this is re-listed by the next {@link CatalogSync.freshen}; null: only the server's `ttlMs` ages it. */
  maxAgeMs?: number | null;
  /** The clock, in ms (default `Date.now`). */
  now?: () => number;
}

export interface CatalogSync {
  /** The latest resources and prompts (empty until first listed, or when the server has none). */
  offer(): Offer;
  /** Resolves once no listing is scheduled or running (for callers that must see a settled catalog). */
  idle(): Promise<void>;
  /** Whether a listing expired: what {@link freshen} would re-list. */
  due(): boolean;
  /**
   * Re-lists each kind whose listing expired (older than `maxAgeMs`, or past
   * the server's `ttlMs`), joining a listing of that kind already under way;
   * resolves once they are done. A failed listing keeps the one before (and
   * goes to `onError`), so the next call tries again.
   */
  freshen(): Promise<void>;
  /** Re-lists tools, resources and prompts now, whatever their age; rejects with the first listing that failed. */
  refresh(): Promise<void>;
  /** Stops listening; listings still running are dropped. */
  stop(): void;
}

/** After a failed listing, how long reads keep the listing they have before asking again. */
export const RETRY_AFTER_FAILURE_MS = 5_000;

/** Starts syncing `connection`'s catalog and lists everything once. */
export function startCatalogSync(options: CatalogSyncOptions): CatalogSync {
  return new Sync(options);
}

/** Per kind, the window after a listing started: `again` when a change arrived in it. */
interface ChangeWindow {
  timer: NodeJS.Timeout;
  again: boolean;
}

/**
 * One ready connection's sync. A class rather than a closure per method: a
 * host keeps one per ready server, and its methods are shared, not made anew
 * for each (the maps it needs only while listing are made on first use).
 */
class Sync implements CatalogSync {
  private readonly client: ServerConnection['client'];
  private readonly debounceMs: number;
  private readonly capabilities: ReturnType<ServerConnection['client']['getServerCapabilities']> & object;
  private readonly now: () => number;
  private readonly maxAgeMs: number | null;
  // Made on the first listing that needs its signal: most servers list nothing after connect (~0.7 KiB each).
  private stopping: AbortController | null = null;
  private stopped = false;
  private readonly generation: Record<CatalogKind, number> = { tools: 0, resources: 0, prompts: 0 };
  private windows: Map<CatalogKind, ChangeWindow> | null = null;
  private running: Set<Promise<void>> | null = null;
  /** Per kind, when the listing in use was asked for and the server's `ttlMs` for it; null until one succeeded. */
  private readonly fresh: Record<CatalogKind, Freshness | null>;
  /** Per kind, when its last listing failed: an expired kind is not asked again before RETRY_AFTER_FAILURE_MS. */
  private readonly failedAt: Record<CatalogKind, number | null> = { tools: null, resources: null, prompts: null };
  /** Per kind, the latest listing started: what readers of an expired kind wait on instead of listing again. */
  private latest: Map<CatalogKind, Promise<void>> | null = null;
  private current: Offer = { resources: [], resourceTemplates: [], prompts: [] };
  /** Whether resources / prompts were listed once: the first listing is not a change. */
  private readonly listed = { resources: false, prompts: false };
  /** The last tool listing diffed, by name: the next diff's `before` when it became `allTools`. */
  private toolIndex: KeyedListing<Tool> | null = null;
  /** How many changes were reported: the telemetry of a listing tells whether it changed anything. */
  private changeCount = 0;
  /** One listener for the three `list_changed` methods, told apart by the notification's method. */
  private readonly onListChanged = (notification: { method: string }): void => this.schedule(KIND_OF_LIST_CHANGED[notification.method]!);

  constructor(private readonly options: CatalogSyncOptions) {
    const { connection } = options;
    this.client = connection.client;
    this.debounceMs = options.debounceMs ?? 50;
    this.capabilities = this.client.getServerCapabilities() ?? {};
    this.now = options.now ?? Date.now;
    this.maxAgeMs = options.maxAgeMs ?? null;
    this.fresh = { tools: { at: this.now(), ttlMs: connection.connectTtlMs ?? null }, resources: null, prompts: null };
    // Resources and prompts are listed for the catalog. The tools were listed at
    // connect; a change announced since then was held by the dispatcher and is
    // replayed here, to listeners subscribed only now that everything they call exists.
    // A kind the server does not offer would list nothing: no listing is started for it.
    if (this.isOffered('resources')) void this.relist('resources', 'connect');
    if (this.isOffered('prompts')) void this.relist('prompts', 'connect');
    const dispatcher = notificationsOf(this.client);
    for (const method of LIST_CHANGED) dispatcher.subscribe(method, this.onListChanged);
  }

  offer(): Offer {
    return this.current;
  }

  async idle(): Promise<void> {
    while (this.listingDue() || (this.running?.size ?? 0) > 0) {
      await Promise.all([...(this.running ?? [])]);
      if (this.listingDue()) await new Promise((resolve) => setTimeout(resolve, this.debounceMs));
    }
  }

  due(): boolean {
    return !this.stopped && KINDS.some((kind) => this.isOffered(kind) && this.expired(kind));
  }

  async freshen(): Promise<void> {
    if (this.stopped) return;
    const due = KINDS.filter((kind) => this.isOffered(kind) && this.expired(kind));
    await Promise.all(due.map((kind) => this.latest?.get(kind) ?? this.relist(kind, 'expired').catch(() => undefined)));
  }

  async refresh(): Promise<void> {
    if (this.stopped) throw new Error('catalog sync stopped');
    await Promise.all(KINDS.map((kind) => this.relist(kind, 'refresh')));
  }

  stop(): void {
    this.stopped = true;
    (this.stopping ??= new AbortController()).abort(new Error('catalog sync stopped'));
    if (this.windows !== null) for (const window of this.windows.values()) clearTimeout(window.timer);
    this.windows = null;
    const dispatcher = notificationsOf(this.client);
    for (const method of LIST_CHANGED) dispatcher.unsubscribe(method, this.onListChanged);
  }

  /** What `listEveryPage` bounds each page request by; made when a listing runs (most servers list nothing after connect). */
  private pageBound(): { signal: AbortSignal; timeout: number } {
    return { signal: this.stopSignal(), timeout: this.options.timeoutMs };
  }

  private stopSignal(): AbortSignal {
    return (this.stopping ??= new AbortController()).signal;
  }

  private reportChange(change: CatalogChange): void {
    this.changeCount += 1;
    this.options.listener.onChange(change);
  }

  private schedule(kind: CatalogKind): void {
    if (this.stopped) return;
    const open = this.windows?.get(kind);
    if (open) {
      open.again = true;
      return;
    }
    void this.relist(kind, 'list_changed');
    this.openWindow(kind);
  }

  private openWindow(kind: CatalogKind): void {
    const window: ChangeWindow = {
      again: false,
      timer: setTimeout(() => {
        this.windows?.delete(kind);
        if (!window.again) return;
        void this.relist(kind, 'list_changed');
        this.openWindow(kind);
      }, this.debounceMs),
    };
    (this.windows ??= new Map()).set(kind, window);
  }

  private listingDue(): boolean {
    if (this.windows !== null) for (const window of this.windows.values()) if (window.again) return true;
    return false;
  }

  private isOffered(kind: CatalogKind): boolean {
    return kind === 'tools' || this.capabilities[kind] !== undefined;
  }

  /** Starts a listing of `kind`; the promise rejects when it fails (which `onError` is told of either way). */
  private relist(kind: CatalogKind, trigger: SyncTrigger): Promise<void> {
    const mine = ++this.generation[kind];
    const startedAt = this.now();
    const current = () => !this.stopped && this.generation[kind] === mine;
    // Telemetry: whether this listing changed the catalog (onChange was told).
    const changesBefore = this.changeCount;
    const changed = () => this.changeCount !== changesBefore;
    const markListed = (ttlMs: number | null) => (this.fresh[kind] = { at: startedAt, ttlMs });
    // A kind the server does not offer lists nothing: no span for it.
    const listing = this.isOffered(kind)
      ? observeSync(this.options.connection, kind, trigger, changed, () => this.listAndApply(kind, current, markListed))
      : this.listAndApply(kind, current, markListed);
    const run = listing.then(
      () => {
        if (current()) this.failedAt[kind] = null;
      },
      (error: unknown) => {
        if (!current()) return;
        this.failedAt[kind] = this.now();
        this.options.listener.onError(kind, error instanceof Error ? error : new Error(String(error)));
      },
    );
    const running = (this.running ??= new Set());
    const latest = (this.latest ??= new Map());
    running.add(run);
    latest.set(kind, run);
    void run.finally(() => {
      running.delete(run);
      if (latest.get(kind) === run) latest.delete(kind);
    });
    return listing;
  }

  /** Whether `kind`'s listing is past its age or its server-given lifetime. */
  private expired(kind: CatalogKind): boolean {
    // A server that keeps failing a listing is not asked on every read: once per RETRY_AFTER_FAILURE_MS at most.
    const failed = this.failedAt[kind];
    if (failed !== null && this.now() - failed < RETRY_AFTER_FAILURE_MS) return false;
    const known = this.fresh[kind];
    // Never listed (the first listing failed, or is under way): only an age policy asks again.
    if (known === null) return this.maxAgeMs !== null;
    const age = this.now() - known.at;
    return (this.maxAgeMs !== null && age >= this.maxAgeMs) || (known.ttlMs !== null && age >= known.ttlMs);
  }

  private async listAndApply(kind: CatalogKind, current: () => boolean, markListed: (ttlMs: number | null) => void): Promise<void> {
    const { connection } = this.options;
    const client = this.client;
    if (kind === 'tools') {
      const result = await observeRequest(client, 'tools/list', {}, () => connection.listTools(this.stopSignal()));
      if (!current()) return;
      markListed(result.ttlMs);
      const listing = result.tools;
      const { change, stable, keyed, before } = diff('tools', connection.allTools, listing, toolName, this.toolIndex, true);
      // Whichever listing stays `allTools`, its index serves the next diff.
      this.toolIndex = change === null ? before : keyed;
      if (change === null) return;
      connection.replaceTools(stable);
      this.options.listener.onTools();
      this.reportChange(change);
      return;
    }
    if (kind === 'resources') {
      if (!this.capabilities.resources) return;
      const [listedResources, listedTemplates] = await Promise.all([this.listResources(), this.listResourceTemplates()]);
      if (!current()) return;
      markListed(shorter(ttlOf(client, listedResources), ttlOf(client, listedTemplates)));
      const { resources } = listedResources;
      const { resourceTemplates } = listedTemplates;
      const before = this.current;
      this.current = { ...before, resources, resourceTemplates };
      this.options.listener.onOffer(this.current, 'resources');
      if (!this.listed.resources) {
        this.listed.resources = true;
        return;
      }
      const changes = [
        diff('resources', before.resources, resources, (resource: Resource) => resource.uri).change,
        diff('resources', before.resourceTemplates, resourceTemplates, (t: ResourceTemplateType) => t.uriTemplate).change,
      ].filter((change): change is CatalogChange => change !== null);
      if (changes.length > 0) this.reportChange(merge('resources', changes));
      return;
    }
    if (!this.capabilities.prompts) return;
    const listedPrompts = await this.listPrompts();
    if (!current()) return;
    markListed(ttlOf(client, listedPrompts));
    const { prompts } = listedPrompts;
    const before = this.current.prompts;
    this.current = { ...this.current, prompts };
    this.options.listener.onOffer(this.current, 'prompts');
    if (!this.listed.prompts) {
      this.listed.prompts = true;
      return;
    }
    const { change } = diff('prompts', before, prompts, (prompt: Prompt) => prompt.name);
    if (change !== null) this.reportChange(change);
  }

  // `bypass`: a listing reaches the server and leaves no copy in the SDK's response cache (see listEveryPage).
  private listResources() {
    const client = this.client;
    return observeRequest(client, 'resources/list', {}, () =>
      listEveryPage(this.pageBound(), (request) => client.listResources(undefined, { ...request, cacheMode: 'bypass' })),
    );
  }

  private listResourceTemplates() {
    const client = this.client;
    return noneIfUnhandled(
      observeRequest(client, 'resources/templates/list', {}, () =>
        listEveryPage(this.pageBound(), (request) => client.listResourceTemplates(undefined, { ...request, cacheMode: 'bypass' })),
      ),
      { resourceTemplates: [] as ResourceTemplateType[] },
    );
  }

  private listPrompts() {
    const client = this.client;
    return observeRequest(client, 'prompts/list', {}, () =>
      listEveryPage(this.pageBound(), (request) => client.listPrompts(undefined, { ...request, cacheMode: 'bypass' })),
    );
  }
}

const LIST_CHANGED = [
  'notifications/tools/list_changed',
  'notifications/resources/list_changed',
  'notifications/prompts/list_changed',
] as const;
const KIND_OF_LIST_CHANGED: Partial<Record<string, CatalogKind>> = {
  'notifications/tools/list_changed': 'tools',
  'notifications/resources/list_changed': 'resources',
  'notifications/prompts/list_changed': 'prompts',
};

const KINDS: readonly CatalogKind[] = ['tools', 'resources', 'prompts'];

/** When a listing in use was asked for (ms) and how long its server said it stays fresh (null: no hint). */
interface Freshness {
  at: number;
  ttlMs: number | null;
}

/** The shorter of two lifetimes (null: none). */
function shorter(a: number | null, b: number | null): number | null {
  return a === null ? b : b === null ? a : Math.min(a, b);
}

/** A listing and, by key, the index of the last item with that key (the one a listing's key stands for). */
interface KeyedListing<T> {
  items: readonly T[];
  at: Map<string, number>;
}

function keyed<T>(items: readonly T[], key: (item: T) => string): KeyedListing<T> {
  const at = new Map<string, number>();
  for (let index = 0; index < items.length; index += 1) at.set(key(items[index] as T), index);
  return { items, at };
}

/**
 * What differs between two listings by key (null when nothing does), and the
 * new listing with each unchanged item replaced by its old object: what did
 * not change keeps its identity (and its place), so work derived from it can
 * be kept too. `previous`, when it indexes `before` (the stable listing a
 * former diff returned), spares indexing `before` again. With `inPlace`, the
 * stable listing is `after` itself, its unchanged items replaced.
 *
 * The usual re-sync lists the same names in the same places: that is checked
 * first and then compared place by place, without a map and without
 * allocating (see {@link sameJson}), so the garbage collector is not woken
 * while the new listing, just parsed, is still alive (a scavenge then copies
 * all of it; once unchanged items are replaced, only the changed ones live).
 */
function diff<T>(
  kind: CatalogKind,
  before: readonly T[],
  after: T[],
  key: (item: T) => string,
  previous?: KeyedListing<T> | null,
  inPlace = false,
): { change: CatalogChange | null; stable: T[]; keyed: KeyedListing<T>; before: KeyedListing<T> } {
  const old = previous?.items === before ? previous : keyed(before, key);
  const equal = plainData() ? sameJson : jsonEqual;
  if (old.at.size === before.length && before.length === after.length && sameKeys(before, after, key)) {
    const stable = inPlace ? after : after.slice();
    let changed: string[] | null = null;
    for (let index = 0; index < after.length; index += 1) {
      const kept = before[index] as T;
      if (equal(kept, after[index])) stable[index] = kept;
      else (changed ??= []).push(key(after[index] as T));
    }
    const change = changed === null ? null : { kind, added: [], removed: [], changed };
    // The same keys in the same places: `before`'s index serves the stable listing.
    return { change, stable, keyed: { items: stable, at: old.at }, before: old };
  }
  const next = keyed(after, key);
  const change: CatalogChange = { kind, added: [], removed: [], changed: [] };
  const stable = inPlace ? after : after.slice();
  let matched = 0;
  // In the order each key first appears, the last item of that key, as a Map of the listing would give.
  for (const [name, index] of next.at) {
    const oldIndex = old.at.get(name);
    if (oldIndex === undefined) {
      change.added.push(name);
      continue;
    }
    matched += 1;
    const kept = old.items[oldIndex] as T;
    if (equal(kept, after[index])) stable[index] = kept;
    else change.changed.push(name);
  }
  // Every old key matched a new one: nothing went away (keys are distinct in both maps).
  if (matched < old.at.size) for (const name of old.at.keys()) if (!next.at.has(name)) change.removed.push(name);
  const changed = change.added.length + change.removed.length + change.changed.length > 0;
  // `stable` has `after`'s keys at `after`'s indexes: the same index serves it.
  return { change: changed ? change : null, stable, keyed: { items: stable, at: next.at }, before: old };
}

/** Whether both listings have the same key at every place. */
function sameKeys<T>(before: readonly T[], after: readonly T[], key: (item: T) => string): boolean {
  for (let index = 0; index < after.length; index += 1) if (key(before[index] as T) !== key(after[index] as T)) return false;
  return true;
}

const toolName = (tool: Tool) => tool.name;

const hasOwn = Object.hasOwn;

/**
 * `jsonEqual` (src/catalog/json-equal.ts) for what a JSON parse
 * yields (plain objects and arrays), without allocating and with fewer
 * calls: keys are walked with `for…in` instead of two `Object.keys` arrays
 * per object, equal leaves are told equal without a call, and a key is
 * checked to be the other object's own only where `for…in` leaves a doubt
 * (an `undefined` or an object value). A re-sync compares every unchanged
 * definition to its last leaf right after the listing was parsed, when the
 * young generation is full: 50,000 key arrays for 5,000 tools made the
 * collector copy the whole new listing mid-diff; this also takes ~40 % less
 * time than `jsonEqual` on such listings. Only for plain data, while
 * `Object.prototype` has no enumerable property (see {@link plainData}).
 */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i += 1) {
      const left: unknown = a[i];
      const right: unknown = b[i];
      if (left !== right && !sameJson(left, right)) return false;
    }
    return true;
  }
  if (Array.isArray(b)) return false;
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  let keys = 0;
  for (const key in left) {
    const value = left[key];
    const other = right[key];
    if (value === other) {
      if (other === undefined && !hasOwn(right, key)) return false;
    } else if (!sameJson(value, other) || !hasOwn(right, key)) {
      return false;
    }
    keys += 1;
  }
  for (const _key in right) keys -= 1;
  return keys === 0;
}

/** Whether `for…in` walks own keys only for plain objects (no enumerable property was added to `Object.prototype`). */
function plainData(): boolean {
  for (const _key in Object.prototype) return false;
  return true;
}

function merge(kind: CatalogKind, changes: CatalogChange[]): CatalogChange {
  return {
    kind,
    added: changes.flatMap((change) => change.added),
    removed: changes.flatMap((change) => change.removed),
    changed: changes.flatMap((change) => change.changed),
  };
}
