// The tool mount (src/host/tool-mount.ts) keeps per listing place what a
// registration journaled, builds agent tools when first asked for, and
// shares its index by name between registrations with the same names in the
// same places. Property test against a plain model of what it must give:
// over random successions of listings on one or two connections (items kept
// as the same objects or redrawn, moved, removed, repeated names, long
// descriptions, tool filters, result bounds), what is journaled, what
// `forServer` / `get` / `list` answer and which agent tools keep their
// identity are what a mount building every agent tool at once, by item,
// would give.
import type { Tool } from '@modelcontextprotocol/client';
import fc from 'fast-check';
import { expect, test } from 'vitest';
import { createToolMount } from '../../src/host/tool-mount.js';
import type { ServerActorRef } from '../../src/machines/registry.machine.js';
import type { ToolFilter } from '../../src/config/schema.js';
import type { LiveConnection } from '../../src/connection/live-connection.js';
import { createMemoryEventStore } from '../../src/journal/event-store.js';
import type { JournalEvent, ToolEntry } from '../../src/journal/events.js';
import { shadowedByRegistration } from '../../src/journal/projection.js';
import { createJournal } from '../../src/journal/journal.js';
import { MAX_DESCRIPTION_BYTES, namespaceToolName, toAgentTool } from '../../src/catalog/tools/adapter.js';
import { maskedConfig } from '../journal/masked-config.js';

const NAMES = ['a', 'b', 'c', 'd', 'e.f', 'e_f'] as const;

interface Step {
  /** Which connection registers (a new one starts from nothing kept). */
  connection: 0 | 1;
  /** Per place: keep the item the connection listed in that place before (same object), or a new one. */
  items: Array<{ keep: boolean; name: string; description: number; long: boolean }>;
  /** Move the listing round by this many places before registering. */
  rotate: number;
  exclude: string[];
  maxResultBytes: number;
}

const step: fc.Arbitrary<Step> = fc.record({
  connection: fc.constantFrom(0 as const, 1 as const),
  items: fc.array(
    fc.record({ keep: fc.boolean(), name: fc.constantFrom(...NAMES), description: fc.nat(2), long: fc.boolean() }),
    { maxLength: 6 },
  ),
  rotate: fc.nat(3),
  exclude: fc.subarray([...NAMES], { maxLength: 2 }),
  maxResultBytes: fc.constantFrom(1000, 1000, 2000),
});

function fakeRef(name: string, maxResultBytes: () => number): ServerActorRef {
  return {
    getSnapshot: () => ({
      context: { name, config: { type: 'local', env: {}, max_result_bytes: maxResultBytes(), call_timeout_seconds: 1 } },
      matches: () => true,
    }),
  } as unknown as ServerActorRef;
}

function fakeLive(): LiveConnection & { connection: { allTools: Tool[] } } {
  return { connection: { allTools: [], client: { getServerCapabilities: () => ({}) } } } as unknown as LiveConnection & {
    connection: { allTools: Tool[] };
  };
}

const descriptionOf = (item: Step['items'][number]) => (item.long ? 'é'.repeat(MAX_DESCRIPTION_BYTES / 2 + item.description) : `d${item.description}`);

test('journaled entries, lookups and kept agent tools match a mount that builds every agent tool by item', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 8 }), async (steps) => {
      const journal = createJournal({ store: createMemoryEventStore() });
      await journal.open();
      // The projection knows a server from its server.configured on, as in a host.
      journal.append({ type: 'server.configured', server: 's', actor: 's', config: maskedConfig() });
      const mount = createToolMount({ append: (event) => journal.append(event), projected: () => journal.projection.context });
      let bound = 1000;
      const ref = fakeRef('s', () => bound);
      const lives = [fakeLive(), fakeLive()];
      /** The model: per connection, the agent tool an item got (an item keeps its agent tool while its connection and bound do). */
      const modelBuilt = new Map<LiveConnection, { bound: number; byItem: Map<Tool, ReturnType<typeof mount.get>> }>();
      const call = async () => ({ content: [] });

      for (const s of steps) {
        const live = lives[s.connection] as ReturnType<typeof fakeLive>;
        const before = live.connection.allTools;
        let items = s.items.map((item, place) =>
          item.keep && before[place] !== undefined
            ? (before[place] as Tool)
            : ({ name: item.name, description: descriptionOf(item), inputSchema: { type: 'object' } } as Tool),
        );
        if (items.length > 0) items = [...items.slice(s.rotate % items.length), ...items.slice(0, s.rotate % items.length)];
        live.connection.allTools = items;
        bound = s.maxResultBytes;
        const filter: ToolFilter = { include: null, exclude: s.exclude, always_load: [] };
        const seq = journal.lastSeq;
        mount.register(ref, live, filter);

        // What the registration journaled: every shown tool, in listing order, as the adapter names and bounds it.
        const shown = items.filter((tool) => !s.exclude.includes(tool.name));
        const expected = shown.map((tool) => {
          const agent = toAgentTool('s', tool, call, { maxResultBytes: bound });
          return { name: agent.name, original: agent.originalName, description: agent.description, parameters: agent.parameters };
        });
        const registered = journal.since(seq).find((event): event is Extract<JournalEvent, { type: 'tools.registered' }> => event.type === 'tools.registered');
        expect(registered?.tools).toEqual(expected);

        // forServer: by name, first place, last wins; each an agent tool of its item.
        const byName = new Map(shown.map((tool) => [namespaceToolName('s', tool.name), tool]));
        const mountedTools = mount.forServer('s');
        expect(mountedTools.map((tool) => tool.name)).toEqual([...byName.keys()]);
        let model = modelBuilt.get(live);
        if (model?.bound !== bound) {
          model = { bound, byItem: new Map() };
          modelBuilt.set(live, model);
        }
        // Identity: an item kept (same object, same connection, same bound) keeps its agent tool.
        const byItem = new Map<Tool, ReturnType<typeof mount.get>>();
        for (const agent of mountedTools) {
          const item = byName.get(agent.name) as Tool;
          expect(agent.originalName).toBe(item.name);
          expect(agent.parameters).toBe(item.inputSchema);
          const kept = model.byItem.get(item);
          if (kept !== undefined) expect(agent).toBe(kept);
          byItem.set(item, agent);
          expect(mount.get(agent.name)).toBe(agent);
        }
        for (const [item, agent] of byItem) model.byItem.set(item, agent);
        expect(mount.list().map((tool) => tool.name)).toEqual([...byName.keys()]);
        for (const name of NAMES) {
          const agentName = namespaceToolName('s', name);
          if (!byName.has(agentName)) expect(mount.get(agentName)).toBeUndefined();
        }
      }
      await journal.close();
    }),
    { numRuns: 200 },
  );
});

// What a registration hides is worked out from the servers holding its names
// only; over random registrations and unregistrations of servers whose
// namespaced names collide (`a` + `b__c` and `a__b` + `c` are both
// `a__b__c`), it is what `shadowedByRegistration` says over every server the
// mount has mounted, in the order they registered.
test('tool.shadowed: what a registration hides, looked up by its names, is what every mounted server says', async () => {
  const SERVERS = ['a', 'a__b', 'a__b__c', 'q'] as const;
  const TOOLS = ['b__c__d', 'c__d', 'd', 'b__c', 'c', 'e'] as const;
  const op = fc.record({
    server: fc.nat(SERVERS.length - 1),
    unregister: fc.boolean(),
    tools: fc.array(fc.constantFrom(...TOOLS), { maxLength: 4 }),
  });
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 12 }), async (ops) => {
      const journal = createJournal({ store: createMemoryEventStore() });
      await journal.open();
      for (const server of SERVERS) journal.append({ type: 'server.configured', server, actor: server, config: maskedConfig() });
      const mount = createToolMount({ append: (event) => journal.append(event), projected: () => journal.projection.context });
      const refs = SERVERS.map((server) => fakeRef(server, () => 1000));
      const lives = SERVERS.map(() => fakeLive());
      /** The model: every mounted server's journaled tools, in registration order. */
      const model = new Map<string, ToolEntry[]>();
      const filter: ToolFilter = { include: null, exclude: [], always_load: [] };
      for (const { server: index, unregister, tools } of ops) {
        const server = SERVERS[index] as string;
        if (unregister) {
          mount.unregister(refs[index] as ServerActorRef, true);
          model.delete(server);
          continue;
        }
        const live = lives[index] as ReturnType<typeof fakeLive>;
        live.connection.allTools = tools.map((name) => ({ name, description: 'd', inputSchema: { type: 'object' } }) as Tool);
        const seq = journal.lastSeq;
        mount.register(refs[index] as ServerActorRef, live, filter);
        const events = journal.since(seq);
        const registered = events.find((event): event is Extract<JournalEvent, { type: 'tools.registered' }> => event.type === 'tools.registered');
        const journaled = registered?.tools ?? [];
        let at = 0;
        const before = Object.fromEntries([...model].map(([name, entries]) => [name, { name, registered_at: (at += 1), tools: entries }]));
        const shadowed = events.flatMap((event) => (event.type === 'tool.shadowed' ? [{ tool: event.tool, shadowed_server: event.shadowed_server }] : []));
        expect(shadowed).toEqual(shadowedByRegistration({ servers: before }, server, journaled));
        model.delete(server);
        model.set(server, journaled);
      }
      await journal.close();
    }),
    { numRuns: 300 },
  );
});
