// The catalog sync and the notification dispatcher against an SDK server over
// an in-memory transport: debounce, generations, fan-out, held notifications.
import { Client } from '@modelcontextprotocol/client';
import { InMemoryTransport } from '@modelcontextprotocol/client';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { ListPromptsRequestSchema, ListToolsRequestSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { startCatalogSync, type CatalogChange } from '../../src/services/catalog/sync.js';
import type { ServerConnection } from '../../src/services/connection/connection.js';
import { HELD_PER_METHOD, notificationsOf } from '../../src/services/connection/notifications.js';

const tool = (name: string): Tool => ({ name, inputSchema: { type: 'object' } });

let promptListings = 0;

/** A connected client/server pair; the client's dispatcher is installed before connect, as `connect()` does. */
async function pair() {
  const server = new Server(
    { name: 's', version: '1' },
    { capabilities: { tools: { listChanged: true }, prompts: { listChanged: true }, logging: {} } },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [] }));
  server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts: [{ name: `p${(promptListings += 1)}` }] }));
  const client = new Client({ name: 'c', version: '1' });
  const dispatcher = notificationsOf(client);
  const [a, b] = InMemoryTransport.createLinkedPair();
  await Promise.all([server.connect(a), client.connect(b)]);
  closers.push(() => client.close(), () => server.close());
  return { server, client, dispatcher };
}

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** A connection whose `listTools` answers only when the test says so. */
function fakeConnection(client: Client, initial: Tool[]) {
  const listings: Array<ReturnType<typeof deferred<Tool[]>>> = [];
  const connection = {
    client,
    allTools: initial,
    listTools: vi.fn(() => {
      const next = deferred<Tool[]>();
      listings.push(next);
      return next.promise.then((tools) => ({ tools, ttlMs: null }));
    }),
    replaceTools: vi.fn((listing: Tool[]) => {
      connection.allTools = listing;
    }),
  };
  return { connection, listings };
}

/** Starts a sync on `connection` that records changes; a listing error fails the test. */
function startSync(connection: ReturnType<typeof fakeConnection>['connection'], debounceMs: number) {
  const changes: CatalogChange[] = [];
  const onTools = vi.fn();
  const sync = startCatalogSync({
    connection: connection as unknown as ServerConnection,
    timeoutMs: 5000,
    debounceMs,
    onTools,
    onOffer: () => {},
    onChange: (change) => changes.push(change),
    onError: (_kind, error) => {
      throw error;
    },
  });
  closers.push(async () => sync.stop());
  return { sync, changes, onTools };
}

describe('catalog sync', () => {
  test('a listing that finishes after a newer one is dropped', async () => {
    const { server, client } = await pair();
    const { connection, listings } = fakeConnection(client, [tool('a')]);
    const { sync, changes, onTools } = startSync(connection, 1);
    await server.sendToolListChanged();
    await vi.waitFor(() => expect(listings).toHaveLength(1));
    await server.sendToolListChanged();
    await vi.waitFor(() => expect(listings).toHaveLength(2));
    // The newer listing answers first; the older one, with stale content, after it.
    listings[1]!.resolve([tool('a'), tool('new')]);
    await vi.waitFor(() => expect(onTools).toHaveBeenCalledTimes(1));
    listings[0]!.resolve([tool('a'), tool('stale')]);
    await sync.idle();

    expect(connection.allTools.map((t) => t.name)).toEqual(['a', 'new']);
    expect(connection.replaceTools).toHaveBeenCalledTimes(1);
    expect(onTools).toHaveBeenCalledTimes(1);
    expect(changes).toEqual([{ kind: 'tools', added: ['new'], removed: [], changed: [] }]);
  });

  test('changes announced before the sync started are listed once it starts', async () => {
    const { server, client } = await pair();
    const { connection, listings } = fakeConnection(client, [tool('a')]);
    await server.sendToolListChanged();
    await server.sendPromptListChanged();
    await new Promise((resolve) => setTimeout(resolve, 50)); // both are held by the dispatcher now
    const { sync, changes } = startSync(connection, 1);
    await vi.waitFor(() => expect(listings).toHaveLength(1));
    listings[0]!.resolve([tool('a'), tool('early')]);
    await sync.idle();
    // The tools once, for the held notification; the prompts listed too (at start, and for theirs).
    expect(changes).toEqual([{ kind: 'tools', added: ['early'], removed: [], changed: [] }]);
    expect(sync.offer().prompts).toHaveLength(1);
  });

  test('a burst of list_changed is listed at once and once more after it; a changed definition is reported as changed', async () => {
    const { server, client } = await pair();
    const { connection, listings } = fakeConnection(client, [tool('a')]);
    // A window wide enough that the whole burst lands in the first one, however busy the machine.
    const { sync, changes } = startSync(connection, 1000);
    await Promise.all(Array.from({ length: 20 }, () => server.sendToolListChanged()));
    // The first notification is listed at once; the other 19 arrive within the window: one more listing.
    await vi.waitFor(() => expect(listings).toHaveLength(1));
    listings[0]!.resolve([tool('a')]);
    await vi.waitFor(() => expect(listings).toHaveLength(2), { timeout: 10_000 });
    listings[1]!.resolve([{ ...tool('a'), description: 'now described' }]);
    await sync.idle();
    expect(connection.listTools).toHaveBeenCalledTimes(2);
    expect(changes).toEqual([{ kind: 'tools', added: [], removed: [], changed: ['a'] }]);
  });

  test('after stop, no listing runs and none is applied', async () => {
    const { server, client } = await pair();
    const { connection, listings } = fakeConnection(client, [tool('a')]);
    const { sync, onTools } = startSync(connection, 1);
    await server.sendToolListChanged();
    await vi.waitFor(() => expect(listings).toHaveLength(1));
    sync.stop();
    listings[0]!.resolve([tool('a'), tool('b')]);
    await server.sendToolListChanged();
    await sync.idle();
    expect(listings).toHaveLength(1);
    expect(onTools).not.toHaveBeenCalled();
  });
});

describe('notification dispatcher', () => {
  test('every subscriber gets every notification, and one that throws does not stop the others', async () => {
    const { server, client, dispatcher } = await pair();
    const errors: Error[] = [];
    client.onerror = (error) => errors.push(error);
    const first: string[] = [];
    const second: string[] = [];
    dispatcher.subscribe('notifications/message', (n) => {
      first.push(String(n.params.data));
      throw new Error('subscriber bug');
    });
    dispatcher.subscribe('notifications/message', (n) => second.push(String(n.params.data)));
    await server.sendLoggingMessage({ level: 'info', data: 'one' });
    await server.sendLoggingMessage({ level: 'info', data: 'two' });
    await vi.waitFor(() => expect(second).toEqual(['one', 'two']));
    expect(first).toEqual(['one', 'two']);
    expect(errors.map((error) => error.message)).toEqual([expect.stringContaining('subscriber bug'), expect.stringContaining('subscriber bug')]);
    expect(notificationsOf(client)).toBe(dispatcher);
  });

  test('notifications sent before anyone subscribes reach the first subscriber, oldest dropped past the bound', async () => {
    const { server, dispatcher } = await pair();
    const total = HELD_PER_METHOD + 3;
    for (let i = 0; i < total; i += 1) await server.sendLoggingMessage({ level: 'debug', data: i });
    // The in-memory transport delivers on a microtask; wait for the last one to be held.
    await new Promise((resolve) => setImmediate(resolve));
    const seen: unknown[] = [];
    const unsubscribe = dispatcher.subscribe('notifications/message', (n) => seen.push(n.params.data));
    expect(seen).toEqual(Array.from({ length: HELD_PER_METHOD }, (_, i) => i + 3));
    unsubscribe();
    await server.sendLoggingMessage({ level: 'debug', data: 'after' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen).toHaveLength(HELD_PER_METHOD);
  });
});
