/**
 * The `cacheScope` of list results (2026-07-28): `public` may be served to
 * anyone, `private` only within the authorization context that fetched it.
 * The SDK walks a list's pages itself and keeps only the first page's fields
 * on the list it returns, so the transport is watched: every page that
 * answers a list request is seen, and one page that is not `public` (a
 * missing or unknown scope counts as `private`, as the SDK reads it) makes
 * the whole listing private.
 */
import type { Client, JSONRPCMessage, Transport } from '@modelcontextprotocol/client';
import type { TransportTap } from './transport-proxy.js';

export type CacheScope = 'public' | 'private';

/** The cacheable list methods whose scope a listing is asked for. */
type ListMethod = 'tools/list' | 'prompts/list' | 'resources/list' | 'resources/templates/list';
const LIST_METHODS: ReadonlySet<string> = new Set<ListMethod>(['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list']);

const watched = new WeakMap<object, CacheScopeTap>();

/**
 * Counts the scope of every list page delivered (see {@link listingScope});
 * `watching` names the transport the client is given, by which the count is found.
 */
export function cacheScopeTap(): TransportTap & { watching(transport: Transport): void } {
  return new CacheScopeTap();
}

/**
 * One per connection: a class, its counts four fields rather than a map, and
 * its map of list requests in flight there only while one is.
 */
class CacheScopeTap implements TransportTap {
  /** Per list method, how many pages were not public so far. */
  private readonly privatePages: Record<ListMethod, number> = { 'tools/list': 0, 'prompts/list': 0, 'resources/list': 0, 'resources/templates/list': 0 };
  private lists: Map<string | number, ListMethod> | null = null;

  sent(message: JSONRPCMessage): void {
    if ('method' in message && 'id' in message && LIST_METHODS.has(message.method)) {
      (this.lists ??= new Map()).set(message.id, message.method as ListMethod);
    }
  }

  delivered(message: JSONRPCMessage): JSONRPCMessage {
    if (this.lists !== null && 'id' in message && message.id !== undefined) {
      const method = this.lists.get(message.id);
      if (method !== undefined) {
        this.lists.delete(message.id);
        if (this.lists.size === 0) this.lists = null;
        if ('result' in message && (message.result as { cacheScope?: unknown }).cacheScope !== 'public') this.privatePages[method] += 1;
      }
    }
    return message;
  }

  watching(transport: Transport): void {
    watched.set(transport, this);
  }

  /** How many pages of `method` were not public so far. */
  notPublic(method: string): number {
    return LIST_METHODS.has(method) ? this.privatePages[method as ListMethod] : 0;
  }
}

/**
 * The scope of one listing of `method` on `client`: call before the listing,
 * and the returned function after it. `null` on the 2025 era (it has no
 * scopes); `private` when any page answered in between was not public, or
 * the transport is not watched. Two listings of one method at once on one
 * connection share their count: either may come out private, never public
 * wrongly.
 */
export function listingScope(client: Client, method: string): () => CacheScope | null {
  const tap = client.transport === undefined ? undefined : watched.get(client.transport);
  const before = tap?.notPublic(method) ?? 0;
  return () => {
    if (client.getProtocolEra() !== 'modern') return null;
    if (tap === undefined) return 'private';
    return tap.notPublic(method) > before ? 'private' : 'public';
  };
}
