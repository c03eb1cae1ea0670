// The catalog sync and the notification dispatcher against an SDK server over
// an in-memory transport: debounce, generations, fan-out, held notifications.
import { Client } from '@modelcontextprotocol/client';
import { InMemoryTransport } from '@modelcontextprotocol/client';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { ListPromptsRequestSchema, ListToolsRequestSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { startCatalogSync, type CatalogChange, type CatalogSyncListener, type CatalogSyncOptions, RETRY_AFTER_FAILURE_MS } from '../../src/catalog/sync.js';
import { MAX_TTL_MS, ttlOf, type ToolListing } from '../../src/connection/tool-listing.js';
import type { ServerConnection } from '../../src/connection/connection.js';
import { HELD_PER_METHOD, notificationsOf } from '../../src/connection/notifications.js';

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
  let reject!: (error: Error) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

/** A tool listing as the connection answers it, with the server's `ttlMs`. */
const listing = (tools: Tool[], ttlMs: number | null) => ({ tools, ttlMs }) as unknown as ToolListing;

/** A connection whose `listTools` answers only when the test says so. */
function fakeConnection(client: Client, initial: Tool[]) {
  // A bare array answers without a ttlMs.
  const listings: Array<ReturnType<typeof deferred<Tool[] | ToolListing>>> = [];
  const connection = {
    client,
    allTools: initial,
    listTools: vi.fn(() => {
      const next = deferred<Tool[] | ToolListing>();
      listings.push(next);
      return next.promise.then((answer) => (Array.isArray(answer) ? { tools: answer, ttlMs: null } : answer));
    }),
    replaceTools: vi.fn((listing: Tool[]) => {
      connection.allTools = listing;
    }),
  };
  return { connection, listings };
}

/** Starts a sync on `connection` that records changes; a listing error fails the test. */
function startSync(
  connection: ReturnType<typeof fakeConnection>['connection'],
  debounceMs: number,
  extra: Partial<CatalogSyncOptions> & { onError?: CatalogSyncListener['onError'] } = {},
) {
  const changes: CatalogChange[] = [];
  const onTools = vi.fn();
  const { onError, ...rest } = extra;
  const sync = startCatalogSync({
    connection: connection as unknown as ServerConnection,
    timeoutMs: 5000,
    debounceMs,
    listener: {
      onTools,
      onOffer: () => {},
      onChange: (change) => changes.push(change),
      onError:
        onError ??
        ((_kind, error) => {
          throw error;
        }),
    },
    ...rest,
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

describe('catalog freshness', () => {
  test('a listing older than maxAgeMs is listed again by freshen, once for any number of readers', async () => {
    const { client } = await pair();
    const { connection, listings } = fakeConnection(client, [tool('a')]);
    let clock = 0;
    const { sync, changes, onTools } = startSync(connection, 1, { maxAgeMs: 1000, now: () => clock });
    await sync.idle();
    const promptsBefore = promptListings;

    clock = 999;
    expect(sync.due()).toBe(false);
    await sync.freshen();
    expect(connection.listTools).not.toHaveBeenCalled();

    clock = 1000;
    expect(sync.due()).toBe(true);
    const readers = Array.from({ length: 5 }, () => sync.freshen());
    await vi.waitFor(() => expect(listings).toHaveLength(1));
    // A reader arriving while the listing runs joins it too.
    readers.push(sync.freshen());
    listings[0]!.resolve([tool('a'), tool('b')]);
    await Promise.all(readers);
    expect(connection.listTools).toHaveBeenCalledTimes(1);
    expect(promptListings).toBe(promptsBefore + 1);
    expect(onTools).toHaveBeenCalledTimes(1);
    // (The fixture's prompts are renamed on every listing: a prompts change too.)
    expect(changes.filter((change) => change.kind === 'tools')).toEqual([{ kind: 'tools', added: ['b'], removed: [], changed: [] }]);
    // Aged from when the listing was asked for.
    expect(sync.due()).toBe(false);
    clock = 1999;
    expect(sync.due()).toBe(false);
    clock = 2000;
    expect(sync.due()).toBe(true);
  });

  test("a listing's ttlMs ages it; a failed listing keeps the one before and is tried again, not before RETRY_AFTER_FAILURE_MS", async () => {
    const { client } = await pair();
    const { connection, listings } = fakeConnection(client, [tool('a')]);
    let clock = 0;
    const errors: Error[] = [];
    const { sync, changes } = startSync(connection, 1, { now: () => clock, onError: (_kind, error) => errors.push(error) });
    await sync.idle();
    clock = 1_000_000;
    expect(sync.due()).toBe(false);

    const refreshed = sync.refresh();
    await vi.waitFor(() => expect(listings).toHaveLength(1));
    listings[0]!.resolve(listing([tool('a')], 500));
    await refreshed;
    clock += 499;
    expect(sync.due()).toBe(false);
    clock += 1;
    expect(sync.due()).toBe(true);

    const failing = sync.freshen();
    await vi.waitFor(() => expect(listings).toHaveLength(2));
    listings[1]!.reject(new Error('server busy'));
    await failing;
    expect(errors.map((error) => error.message)).toEqual(['server busy']);
    expect(connection.allTools.map((t) => t.name)).toEqual(['a']);
    // Reads right after a failure keep the listing they have: no request per read.
    expect(sync.due()).toBe(false);
    await sync.freshen();
    expect(listings).toHaveLength(2);
    clock += RETRY_AFTER_FAILURE_MS;
    expect(sync.due()).toBe(true);

    const retried = sync.freshen();
    await vi.waitFor(() => expect(listings).toHaveLength(3));
    listings[2]!.resolve(listing([tool('a'), tool('c')], null));
    await retried;
    expect(changes.filter((change) => change.kind === 'tools')).toEqual([{ kind: 'tools', added: ['c'], removed: [], changed: [] }]);
    // No hint and no age policy: never due again.
    clock += 1e9;
    expect(sync.due()).toBe(false);
  });

  test("ttlOf: a modern result's positive ttlMs, capped at 24 h; 0, a missing one or a 2025 result give none", () => {
    const era = (value: 'modern' | 'legacy') => ({ getProtocolEra: () => value }) as unknown as Client;
    expect(ttlOf(era('modern'), { tools: [], ttlMs: 1500 })).toBe(1500);
    expect(ttlOf(era('modern'), { tools: [], ttlMs: 10 * MAX_TTL_MS })).toBe(MAX_TTL_MS);
    expect(ttlOf(era('modern'), { tools: [], ttlMs: 0 })).toBeNull();
    expect(ttlOf(era('modern'), { tools: [] })).toBeNull();
    expect(ttlOf(era('legacy'), { tools: [], ttlMs: 1500 })).toBeNull();
  });

  test('refresh rejects with a failed listing', async () => {
    const { client } = await pair();
    const { connection, listings } = fakeConnection(client, [tool('a')]);
    const { sync } = startSync(connection, 1, { onError: () => {} });
    await sync.idle();
    const refreshed = sync.refresh();
    await vi.waitFor(() => expect(listings).toHaveLength(1));
    listings[0]!.reject(new Error('tools/list timed out'));
    await expect(refreshed).rejects.toThrow('tools/list timed out');
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
