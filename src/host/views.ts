/**
 * The views' config versions, per host: a view carries the version of the
 * stored config once it shows that config.
 */
import type { ServerConfig } from '../services/config/schema.js';
import type { ConfigStore } from '../services/config/store.js';
import { toResponse, type ServerConfigResponse } from '../services/config/masking.js';
import type { ServerView } from '../services/journal/server-view.js';
import { jsonEqual } from '../services/support/json-equal.js';

export function createViewVersions(store: ConfigStore): { withVersion(view: ServerView): ServerView } {
  /**
   * The version of the config a view shows: the stored config's version once
   * the view shows that config (a change another worker stored is announced
   * before this worker has applied and journaled it; until then the view
   * keeps the version it had). Compared masked, as the view holds it.
   */
  const shows = new WeakMap<object, { stored: ServerConfig; version: number | null }>();
  const masked = new WeakMap<ServerConfig, ServerConfigResponse>();
  function versionOf(view: ServerView): number | null {
    const stored = store.stored(view.name);
    const known = shows.get(view.config);
    if (stored === undefined || (known !== undefined && known.stored === stored.config)) return known?.version ?? null;
    let storedView = masked.get(stored.config);
    if (storedView === undefined) masked.set(stored.config, (storedView = toResponse(stored.config)));
    if (!jsonEqual(view.config, storedView)) return known?.version ?? null;
    shows.set(view.config, { stored: stored.config, version: stored.version });
    return stored.version;
  }

  /**
   * The view with its version. The projection's views are shared until their
   * server changes (see `serverViews`); so are these, until the version
   * moves, so an unchanged list stays the same objects.
   */
  const versioned = new WeakMap<ServerView, ServerView>();
  function withVersion(view: ServerView): ServerView {
    const version = versionOf(view);
    const known = versioned.get(view);
    if (known !== undefined && known.version === version) return known;
    const next = { ...view, version };
    versioned.set(view, next);
    return next;
  }
  return { withVersion };
}
