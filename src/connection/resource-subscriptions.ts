/**
 * Who holds a subscription to each resource of one server connection. The
 * gateway's clients (`/mcp` sessions, `/mcp/servers/:name`) and the host's own
 * cache of app resources reach a shared server through the same connection, so
 * the server is subscribed once, when the first of them asks, and unsubscribed
 * when the last lets go. Keyed by the connection's
 * client: a new connection (a reconnect, another user's session) starts with
 * nobody holding anything.
 */
import type { Client } from '@modelcontextprotocol/client';

interface Held {
  holders: Set<object>;
  /** The server's answer to the one `resources/subscribe`: later holders wait for it too. */
  subscribed: Promise<unknown>;
}

const heldByClient = new WeakMap<Client, Map<string, Held>>();

/** Adds `holder` to those of `uri` on `client`, subscribing the server when it is the first; rejects (holding nothing) when the server refuses. */
export async function holdSubscription(client: Client, uri: string, holder: object, options: { signal?: AbortSignal } = {}): Promise<void> {
  let byUri = heldByClient.get(client);
  if (byUri === undefined) heldByClient.set(client, (byUri = new Map()));
  let held = byUri.get(uri);
  if (held === undefined) {
    const subscribed = client.subscribeResource({ uri }, options);
    const made: Held = { holders: new Set(), subscribed };
    byUri.set(uri, (held = made));
    // A refused subscription is forgotten, so the next one asks the server again.
    subscribed.catch(() => {
      if (byUri.get(uri) === made) byUri.delete(uri);
    });
  }
  held.holders.add(holder);
  try {
    await held.subscribed;
  } catch (error) {
    held.holders.delete(holder);
    throw error;
  }
}

/** Takes `holder` off those of `uri` on `client`; the last one out unsubscribes the server. */
export async function releaseSubscription(client: Client, uri: string, holder: object, options: { signal?: AbortSignal } = {}): Promise<void> {
  const byUri = heldByClient.get(client);
  const held = byUri?.get(uri);
  if (byUri === undefined || held === undefined || !held.holders.delete(holder)) return;
  if (held.holders.size > 0) return;
  byUri.delete(uri);
  await client.unsubscribeResource({ uri }, options);
}

