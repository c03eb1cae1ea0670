// The catalog sync's tool diff (src/catalog/sync.ts) compares by
// index and reuses the index of the listing it kept, without maps keyed by
// the listing's objects. Property test: over random successions of listings
// (repeated names, equal definitions as new objects, deep changes, key
// order), what it reports and the listing it hands over (each unchanged item
// replaced by its old object) are what a plain diff by Map and
// `isDeepStrictEqual` gives.
import { isDeepStrictEqual } from 'node:util';
import { Client } from '@modelcontextprotocol/client';
import { InMemoryTransport } from '@modelcontextprotocol/client';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { ListToolsRequestSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, test, vi } from 'vitest';
import { startCatalogSync, type CatalogChange } from '../../src/catalog/sync.js';
import type { ServerConnection } from '../../src/connection/connection.js';
import { notificationsOf } from '../../src/connection/notifications.js';

let server: Server;
let client: Client;
beforeAll(async () => {
  server = new Server({ name: 's', version: '1' }, { capabilities: { tools: { listChanged: true } } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [] }));
  client = new Client({ name: 'c', version: '1' });
  notificationsOf(client);
  const [a, b] = InMemoryTransport.createLinkedPair();
  await Promise.all([server.connect(a), client.connect(b)]);
});
afterAll(async () => {
  await client.close();
  await server.close();
});

/** A definition as a fresh object each time: equal definitions are never the same object. */
const definition = fc.record({
  name: fc.constantFrom('a', 'b', 'c', 'd', 'e'),
  description: fc.option(fc.constantFrom('one', 'two'), { nil: undefined }),
  schema: fc.constantFrom(0, 1, 2),
  flipKeys: fc.boolean(),
  // Any JSON at all under `_meta` (nested objects, arrays, odd keys such as "__proto__").
  meta: fc.option(fc.jsonValue({ maxDepth: 3 }), { nil: undefined }),
});
type Definition = { name: string; description: string | undefined; schema: number; flipKeys: boolean; meta: unknown };

function toolOf({ name, description, schema, flipKeys, meta }: Definition): Tool {
  const properties: Record<string, object> = schema === 0 ? {} : { q: { type: 'string', ...(schema === 2 ? { minLength: 1 } : {}) } };
  const inputSchema = { type: 'object' as const, properties, required: schema === 2 ? ['q'] : [] };
  const tool: Tool = flipKeys ? { inputSchema, name } : { name, inputSchema };
  if (description !== undefined) tool.description = description;
  // Through JSON, as a listing arrives: every definition is a new object graph.
  if (meta !== undefined) tool._meta = JSON.parse(JSON.stringify({ meta })) as Record<string, unknown>;
  return tool;
}

/** The diff as it was written first: maps by key, `isDeepStrictEqual`, and a map from new item to old. */
function plainDiff(before: readonly Tool[], after: readonly Tool[]) {
  const old = new Map(before.map((item) => [item.name, item]));
  const next = new Map(after.map((item) => [item.name, item]));
  const change: CatalogChange = { kind: 'tools', added: [], removed: [], changed: [] };
  const kept = new Map<Tool, Tool>();
  for (const [name, item] of next) {
    const previous = old.get(name);
    if (previous === undefined) change.added.push(name);
    else if (isDeepStrictEqual(previous, item)) kept.set(item, previous);
    else change.changed.push(name);
  }
  for (const name of old.keys()) if (!next.has(name)) change.removed.push(name);
  const changed = change.added.length + change.removed.length + change.changed.length > 0;
  return { change: changed ? change : null, stable: after.map((item) => kept.get(item) ?? item) };
}

test('changes reported and the listing handed over match a plain diff, listing after listing', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(definition, { maxLength: 6 }),
      // Each next listing: new names, or (the usual re-sync) the same names in the same places, definitions redrawn.
      // Some definitions kept as they were (equal, as new objects), the others redrawn.
      fc.array(
        fc.record({ keepNames: fc.boolean(), keep: fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }), definitions: fc.array(definition, { maxLength: 6 }) }),
        { minLength: 1, maxLength: 6 },
      ),
      async (first, nexts) => {
        let last: Definition[] = first;
        const listings = nexts.map(({ keepNames, keep, definitions }) => {
          const next = keepNames
            ? last.map((kept, i) => (keep[i] ? kept : { ...(definitions[i % Math.max(1, definitions.length)] ?? kept), name: kept.name }))
            : definitions;
          last = next;
          return next;
        });
        const answers: Array<(tools: Tool[]) => void> = [];
        const connection = {
          client,
          allTools: first.map(toolOf),
          listTools: vi.fn(() => new Promise<Tool[]>((resolve) => answers.push(resolve)).then((tools) => ({ tools, ttlMs: null }))),
          replaceTools: vi.fn((listing: Tool[]) => {
            connection.allTools = listing;
          }),
        };
        const changes: CatalogChange[] = [];
        const sync = startCatalogSync({
          connection: connection as unknown as ServerConnection,
          timeoutMs: 5000,
          debounceMs: 1,
          listener: {
            onTools: () => {},
            onOffer: () => {},
            onChange: (change) => changes.push(change),
            onError: (_kind, error) => {
              throw error;
            },
          },
        });
        try {
          for (const [index, definitions] of listings.entries()) {
            const listing = definitions.map(toolOf);
            const before = connection.allTools;
            const expected = plainDiff(before, listing);
            const reported = changes.length;
            await server.sendToolListChanged();
            await vi.waitFor(() => expect(answers).toHaveLength(index + 1));
            answers[index]!(listing);
            await sync.idle();
            // A change hands over the stable listing; no change leaves the listing as it was.
            if (expected.change === null) {
              expect(changes).toHaveLength(reported);
              expect(connection.allTools).toBe(before);
            } else {
              expect(changes.at(-1)).toEqual(expected.change);
              expect(connection.allTools).toHaveLength(expected.stable.length);
              connection.allTools.forEach((item, i) => expect(item, `item ${i}`).toBe(expected.stable[i]));
            }
          }
          // One change reported per listing that differed.
          expect(changes).toHaveLength(connection.replaceTools.mock.calls.length);
        } finally {
          sync.stop();
        }
      },
    ),
    { numRuns: 60 },
  );
});
