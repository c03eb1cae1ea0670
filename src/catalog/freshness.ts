/**
 * The catalog syncs of one host's ready servers, by name: what a read of the
 * catalog goes through to re-list listings that expired
 * (`catalog_max_age_seconds`, a server's `ttlMs`), and what a forced refresh
 * reaches. A server's session attaches its sync on entry into `ready` and
 * detaches it on exit, so only ready servers are here.
 */
import type { Offer } from './sync.js';

/** What a session lets readers do with its sync. */
export interface CatalogHandle {
  /** Whether a listing expired (checked on every read: cheap, no request). */
  due(): boolean;
  /** Re-lists the expired listings; resolves once they are done (a failure keeps the listing before). */
  freshen(): Promise<void>;
  /** Re-lists tools, resources and prompts now; resolves with the offer once tools are registered again. */
  refresh(): Promise<Offer>;
  /** Resolves once no listing is under way (the first ones after connect included). */
  idle(): Promise<void>;
}

export interface CatalogFreshness {
  /** Makes `handle` the one of `server`. */
  attach(server: string, handle: CatalogHandle): void;
  /** Removes `handle` if it is still the one of `server`. */
  detach(server: string, handle: CatalogHandle): void;
  /** Starts re-listing every expired listing of every ready server; resolves once all are done. */
  freshen(): Promise<void>;
  /** The handle of a ready server, or undefined. */
  get(server: string): CatalogHandle | undefined;
  /** Resolves once `server`'s listings under way are done; at once for a server that is not ready. */
  listed(server: string): Promise<void>;
}

const settled = Promise.resolve();

export function createCatalogFreshness(): CatalogFreshness {
  const handles = new Map<string, CatalogHandle>();
  return {
    attach(server, handle) {
      handles.set(server, handle);
    },
    detach(server, handle) {
      if (handles.get(server) === handle) handles.delete(server);
    },
    freshen() {
      // Reads call this every time: with nothing expired it allocates nothing per server.
      let waits: Array<Promise<void>> | undefined;
      for (const handle of handles.values()) if (handle.due()) (waits ??= []).push(handle.freshen());
      return waits === undefined ? settled : Promise.all(waits).then(() => undefined);
    },
    get: (server) => handles.get(server),
    listed: (server) => handles.get(server)?.idle() ?? settled,
  };
}
