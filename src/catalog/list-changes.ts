/**
 * On the 2026-07-28 era a server announces catalog changes only on a
 * `subscriptions/listen` stream the client opens (2025 servers send them
 * unsolicited). This keeps one open for a ready modern server, asking for the
 * list changes it advertises; the notifications arrive through the same
 * handlers (the connection's dispatcher) as unsolicited ones, so the catalog
 * sync does not know the difference. A stream the server drops is opened
 * again after a backoff; one it ends deliberately stays closed.
 */
import type { Client, McpSubscription } from '@modelcontextprotocol/client';

/** First wait before opening a dropped stream again; doubles up to {@link MAX_RELISTEN_MS}. */
export const RELISTEN_MS = 1000;
export const MAX_RELISTEN_MS = 30_000;

/** Shared, not a closure made here: one would keep this call's scope (client, filter, `onError`) for the server's life. */
const NOTHING_TO_STOP = (): void => {};

/** Listens for `client`'s list changes while it is modern; returns the stop function. */
export function listenForChanges(client: Client, onError: (error: Error) => void): () => void {
  if (client.getProtocolEra() !== 'modern') return NOTHING_TO_STOP;
  const capabilities = client.getServerCapabilities();
  const filter: ListChanges = {
    toolsListChanged: capabilities?.tools?.listChanged === true,
    promptsListChanged: capabilities?.prompts?.listChanged === true,
    resourcesListChanged: capabilities?.resources?.listChanged === true,
  };
  if (!Object.values(filter).some(Boolean)) return NOTHING_TO_STOP;
  return keepListening(client, filter, onError);
}

interface ListChanges {
  toolsListChanged: boolean;
  promptsListChanged: boolean;
  resourcesListChanged: boolean;
}

/** Keeps a stream of `filter`'s changes open on a modern server; returns the stop function. */
function keepListening(client: Client, filter: ListChanges, onError: (error: Error) => void): () => void {
  let stopped = false;
  let subscription: McpSubscription | undefined;
  let timer: NodeJS.Timeout | undefined;

  const open = async (delay: number): Promise<void> => {
    try {
      subscription = await client.listen(filter);
      if (stopped) return void subscription.close();
      const reason = await subscription.closed;
      if (reason !== 'remote' || stopped) return;
      delay = RELISTEN_MS;
    } catch (error) {
      if (stopped) return;
      onError(error instanceof Error ? error : new Error(String(error)));
    }
    timer = setTimeout(() => void open(Math.min(delay * 2, MAX_RELISTEN_MS)), delay);
    timer.unref();
  };
  void open(RELISTEN_MS);

  return function stopListening() {
    stopped = true;
    clearTimeout(timer);
    void subscription?.close().catch(() => undefined);
  };
}
