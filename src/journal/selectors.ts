/**
 * The one place where what is derived from the journal's projection is kept
 * for speed. Each derivation in projection.ts is a plain function of a
 * context; a host's selectors answer the same, remembered by the identity of
 * their input (contexts are immutable, and an event that changes no server
 * keeps the `servers` record). Everything remembered belongs to one
 * `createSelectors()` object, so two hosts in one process share nothing.
 */
import { toResponse, type ServerConfigResponse } from '../config/masking.js';
import type { ServerConfig } from '../config/index.js';
import { jsonEqual } from '../catalog/json-equal.js';
import type { ToolEntry } from './events.js';
import {
  ownersFrom,
  registrationsOf,
  registeredCount,
  shadowedOf,
  toolOwner,
  toServerView,
  visibleTools,
  type ProjectedServer,
  type ProjectionContext,
  type Registrations,
  type VisibleTool,
} from './projection.js';
import type { ServerView } from './server-view.js';
import { own } from '../records.js';

type Servers = ProjectionContext['servers'];

export interface SelectorsOptions {
  /** The stored config of a server and its version (the config store's `stored`); absent: views show no version. */
  stored?(name: string): { config: ServerConfig; version: number } | undefined;
}

export interface Selectors {
  /** `ownersOf`: tool name → the server whose tool of that name is visible. Do not change the map. */
  owners(context: ProjectionContext): ReadonlyMap<string, string>;
  /** `toolOwner`: the server a tool name belongs to. */
  toolOwner(context: ProjectionContext, name: string): string | undefined;
  /** `visibleTools`: the same array until a server changes. Do not change it. */
  visibleTools(context: ProjectionContext): readonly VisibleTool[];
  /** `serverViews`, a fresh array; each view the same object while its server and hidden tools stay the same. */
  serverViews(context: ProjectionContext): ServerView[];
  /** The views with the version of the config each shows: what the host answers as its status. */
  status(context: ProjectionContext): ServerView[];
  /** One server's view in `status`. */
  server(context: ProjectionContext, name: string): ServerView | undefined;
}

/** What is derived from one `servers` record. */
interface Derived {
  owners?: ReadonlyMap<string, string>;
  visible?: readonly VisibleTool[];
  views?: readonly ServerView[];
}

/** The latest owners computed, and from which registrations (also by server name). */
interface LastOwners {
  registrations: Registrations;
  byName: Map<string, Registrations[number]>;
  owners: ReadonlyMap<string, string>;
}

/** Whether `servers` has exactly the registrations `last` was computed from: one pass, nothing allocated. */
function unchangedRegistrations(servers: Servers, last: LastOwners): boolean {
  let registered = 0;
  for (const name in servers) {
    const server = own(servers, name) as ProjectedServer;
    if (server.registered_at <= 0) continue;
    registered += 1;
    const known = last.byName.get(server.name);
    if (known === undefined || known.registered_at !== server.registered_at || known.tools !== server.tools) return false;
  }
  return registered === last.registrations.length;
}

/**
 * Whether `next` is `last` with one server registered again, newest now, with
 * the same names in the same order, each of which it owned already: then it
 * still owns them and every other name keeps its owner (a re-sync that
 * changed descriptions or schemas, not names). Checked in O(servers + its
 * tools), without building a map.
 */
function ownersKept(last: LastOwners, next: Registrations): boolean {
  const previous = last.registrations;
  const moved = next.at(-1);
  if (moved === undefined || next.length !== previous.length) return false;
  const before = previous.find((entry) => entry.name === moved.name);
  if (before === undefined || before.tools.length !== moved.tools.length) return false;
  // Everyone else, in the same order, unchanged.
  let at = 0;
  for (const entry of previous) {
    if (entry === before) continue;
    const other = next[at] as Registrations[number];
    if (other.name !== entry.name || other.registered_at !== entry.registered_at || other.tools !== entry.tools) return false;
    at += 1;
  }
  for (let index = 0; index < moved.tools.length; index += 1) {
    const name = (moved.tools[index] as ToolEntry).name;
    if (name !== (before.tools[index] as ToolEntry).name || last.owners.get(name) !== moved.name) return false;
  }
  return true;
}

function sameNames(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((name, i) => name === b[i]);
}

export function createSelectors(options: SelectorsOptions = {}): Selectors {
  const derivedOf = new WeakMap<Servers, Derived>();
  /**
   * The latest owners: most events change no registration (a state change
   * makes a new `servers` record, not new owners), so the next record usually
   * has the same owners, and the same map serves it.
   */
  let lastOwners: LastOwners | null = null;
  /** A server's view and the owners it was made with: most events change one server, and no owners. */
  const viewOf = new WeakMap<ProjectedServer, { owners: ReadonlyMap<string, string>; view: ServerView }>();
  /** Per masked config of a view: the stored config it was compared with, and that config's version. */
  const shows = new WeakMap<object, { stored: ServerConfig; version: number | null }>();
  /** A stored config masked as views hold it. */
  const masked = new WeakMap<ServerConfig, ServerConfigResponse>();
  /** A view with its version. */
  const versioned = new WeakMap<ServerView, ServerView>();
  /** Each server's version its view last showed: what a view showing a config the store has already replaced keeps. */
  const lastShown = new Map<string, number>();

  function derived(servers: Servers): Derived {
    let found = derivedOf.get(servers);
    if (found === undefined) {
      found = {};
      derivedOf.set(servers, found);
    }
    return found;
  }

  function owners(context: ProjectionContext): ReadonlyMap<string, string> {
    const cache = derived(context.servers);
    if (cache.owners === undefined) {
      const last = lastOwners;
      if (last !== null && unchangedRegistrations(context.servers, last)) {
        cache.owners = last.owners;
        return cache.owners;
      }
      const registrations = registrationsOf(context.servers);
      cache.owners = last !== null && ownersKept(last, registrations) ? last.owners : ownersFrom(registrations);
      lastOwners = { registrations, byName: new Map(registrations.map((entry) => [entry.name, entry])), owners: cache.owners };
    }
    return cache.owners;
  }

  /**
   * The view of one projected server: the same object while the server and
   * its hidden tools stay the same, so an event about one server leaves every
   * other server's view (and what a reader derived from it, such as its JSON)
   * as it was.
   */
  function viewFor(server: ProjectedServer, current: ReadonlyMap<string, string>): ServerView {
    const known = viewOf.get(server);
    if (known?.owners === current) return known.view;
    const shadowed = shadowedOf(server, current);
    const registered = shadowed.length === 0 ? server.tools.length : registeredCount(server, current);
    const view =
      known !== undefined && known.view.tool_count === registered && sameNames(known.view.shadowed_tools, shadowed)
        ? known.view
        : toServerView(server, shadowed, registered);
    viewOf.set(server, { owners: current, view });
    return view;
  }

  function serverViews(context: ProjectionContext): ServerView[] {
    const cache = derived(context.servers);
    if (cache.views === undefined) {
      const current = owners(context);
      cache.views = Object.values(context.servers).map((server) => viewFor(server, current));
    }
    return [...cache.views];
  }

  /**
   * The version of the config a view shows: the stored config's version once
   * the view shows that config (a change another worker stored is announced
   * before this worker has applied and journaled it; until then the view
   * keeps the version it had). Compared masked, as the view holds it.
   */
  function versionOf(view: ServerView): number | null {
    const stored = options.stored?.(view.name);
    const known = shows.get(view.config);
    if (stored === undefined || (known !== undefined && known.stored === stored.config)) return known?.version ?? null;
    let storedView = masked.get(stored.config);
    if (storedView === undefined) masked.set(stored.config, (storedView = toResponse(stored.config)));
    // The same object when the view shows the store's own config (masked once, see toResponse).
    // A config stored and replaced before this worker applied it never shows the store's version: the view keeps the one it had.
    if (view.config !== storedView && !jsonEqual(view.config, storedView)) return known?.version ?? lastShown.get(view.name) ?? null;
    // From now on `shows` answers for this view's config: the masked copy would only take heap.
    masked.delete(stored.config);
    shows.set(view.config, { stored: stored.config, version: stored.version });
    lastShown.set(view.name, stored.version);
    return stored.version;
  }

  /** The view with its version: the same object until its view or version changes, so an unchanged list stays the same objects. */
  function withVersion(view: ServerView): ServerView {
    const version = versionOf(view);
    const known = versioned.get(view);
    if (known !== undefined && known.version === version) return known;
    const next = { ...view, version };
    versioned.set(view, next);
    return next;
  }

  return {
    owners,
    toolOwner: (context, name) => toolOwner(context, name, owners(context)),
    visibleTools(context) {
      const cache = derived(context.servers);
      cache.visible ??= visibleTools(context, owners(context));
      return cache.visible;
    },
    serverViews,
    status: (context) => serverViews(context).map(withVersion),
    server(context, name) {
      const view = serverViews(context).find((candidate) => candidate.name === name);
      return view && withVersion(view);
    },
  };
}
