// The projection's derived reads keep work between events: owners computed
// again only when a registration changed, a server's view kept while its
// server and hidden tools are, and `shadowedByRegistration` that does not
// index the registering server's own tools. Property test: after every event
// of random journals, each read equals what the plain algorithms (written out
// here, as the projection had them before it kept anything) give for the same
// context, and what the projection itself gives for a copy of that context
// (a new object graph: nothing cached for it). Each projection keeps its own
// owners memo: another's reads never change what it reuses.
import fc from 'fast-check';
import { expect, test } from 'vitest';
import type { JournalEvent, ServerState } from '../../src/services/journal/events.js';
import {
  createProjection,
  emptyProjection,
  ownerOf,
  ownersMemo,
  project,
  serverViews,
  shadowedByRegistration,
  toServerView,
  visibleTools,
  type ProjectedServer,
  type ProjectionContext,
} from '../../src/services/journal/projection.js';
import { maskedConfig } from './masked-config.js';

const SERVERS = ['a', 'b', 'c', 'd'] as const;
const NAMES = ['t1', 't2', 't3', 't4', 't5'] as const;
const STATES: ServerState[] = ['pending', 'ready', 'error', 'stopped', 'disabled'];

type Step =
  | { kind: 'configure'; server: string }
  | { kind: 'transition'; server: string; to: ServerState }
  | { kind: 'register'; server: string; tools: string[]; description: number }
  /** The server's current tool names again, new descriptions (a re-sync that changed no name). */
  | { kind: 'reregister'; server: string; description: number }
  | { kind: 'unregister'; server: string }
  | { kind: 'remove'; server: string }
  | { kind: 'log'; server: string }
  | { kind: 'restart' };

const server = fc.constantFrom(...SERVERS);
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('configure' as const), server }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('transition' as const), server, to: fc.constantFrom(...STATES) }) },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('register' as const),
      server,
      // Repeats within one registration too (a server's own tools can shadow each other).
      tools: fc.array(fc.constantFrom(...NAMES), { maxLength: 6 }),
      description: fc.nat(2),
    }),
  },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('reregister' as const), server, description: fc.nat(2) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('unregister' as const), server }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('remove' as const), server }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('log' as const), server }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'restart' as const }) },
);

function eventOf(s: Step, seq: number, context: ProjectionContext): JournalEvent {
  const at = new Date(seq * 1000).toISOString();
  switch (s.kind) {
    case 'configure':
      return { seq, at, type: 'server.configured', server: s.server, actor: `${s.server}#1`, config: maskedConfig({ timeout_seconds: 1 + (seq % 3) }) };
    case 'transition':
      return { seq, at, type: 'server.transitioned', server: s.server, actor: `${s.server}#1`, from: null, to: s.to, error: null, error_kind: null };
    case 'register':
      return {
        seq,
        at,
        type: 'tools.registered',
        server: s.server,
        tools: s.tools.map((name) => ({ name, original: name, description: `${name} v${s.description}` })),
      };
    case 'reregister':
      return {
        seq,
        at,
        type: 'tools.registered',
        server: s.server,
        tools: (context.servers[s.server]?.tools ?? []).map(({ name, original }) => ({ name, original, description: `${name} v${s.description}` })),
      };
    case 'unregister':
      return { seq, at, type: 'tools.unregistered', server: s.server, tools: [] };
    case 'remove':
      return { seq, at, type: 'server.removed', server: s.server };
    case 'log':
      return { seq, at, type: 'server.log', server: s.server, level: 'info', logger: null, message: 'm' };
    case 'restart':
      return { seq, at, type: 'worker.started', pid: 1 };
  }
}

// ── The plain algorithms ─────────────────────────────────────────────────────

function plainOwners(context: ProjectionContext): Map<string, string> {
  const owners = new Map<string, string>();
  const byRegistration = Object.values(context.servers)
    .filter((s) => s.registered_at > 0)
    .sort((a, b) => a.registered_at - b.registered_at);
  for (const s of byRegistration) for (const tool of s.tools) owners.set(tool.name, s.name);
  return owners;
}

function plainShadowedBy(before: ProjectionContext, after: ProjectionContext, name: string) {
  const registered = after.servers[name];
  if (registered === undefined) return [];
  const out: Array<{ tool: string; shadowed_server: string }> = [];
  const names = new Set<string>();
  for (const tool of registered.tools) {
    if (names.has(tool.name)) out.push({ tool: tool.name, shadowed_server: name });
    names.add(tool.name);
  }
  const owners = plainOwners(before);
  for (const tool of names) {
    const owner = owners.get(tool);
    if (owner !== undefined && owner !== name) out.push({ tool, shadowed_server: owner });
  }
  return out;
}

function plainViews(context: ProjectionContext) {
  const owners = plainOwners(context);
  const hidden = (s: ProjectedServer) => {
    const seen = new Set<string>();
    const out = new Set<string>();
    for (const tool of s.tools) {
      if (seen.has(tool.name) || owners.get(tool.name) !== s.name) out.add(tool.name);
      seen.add(tool.name);
    }
    return [...out];
  };
  return Object.values(context.servers).map((s) => toServerView(s, hidden(s)));
}

/** The same context as a new object graph: nothing the projection keeps applies to it. */
const copy = (context: ProjectionContext): ProjectionContext => structuredClone(context);

test('owners, views, visible tools and what a registration hid match the plain algorithms after every event', () => {
  fc.assert(
    fc.property(
      fc.array(step, { minLength: 1, maxLength: 60 }),
      fc.array(fc.boolean(), { minLength: 60, maxLength: 60 }),
      fc.array(fc.boolean(), { minLength: 60, maxLength: 60 }),
      (steps, readBefore, againstCopy) => {
      const memo = ownersMemo();
      // Another projection's memo (another host's), read on copies in between.
      const other = ownersMemo();
      let context = emptyProjection();
      let previousViews = serverViews(context, memo);
      steps.forEach((s, index) => {
        const before = context;
        // Sometimes the reads ran on `before` (its owners are known), sometimes not.
        if (readBefore[index]) visibleTools(before, memo);
        context = project(context, eventOf(s, index + 1, context));
        if (s.kind === 'register' || s.kind === 'reregister') {
          expect(shadowedByRegistration(before, context, s.server)).toEqual(plainShadowedBy(before, context, s.server));
          expect(shadowedByRegistration(copy(before), context, s.server)).toEqual(plainShadowedBy(before, context, s.server));
        }
        const views = serverViews(context, memo);
        expect(views).toEqual(plainViews(context));
        // Reads of a copy in between make the projection compute afresh; without them it keeps what it can.
        if (againstCopy[index]) expect(views).toEqual(serverViews(copy(context), memo));
        if (readBefore[index]) expect(views).toEqual(serverViews(copy(context), other));
        // A view object is kept only while it says the same.
        for (const view of views) {
          const kept = previousViews.find((old) => old === view);
          if (kept) expect(JSON.stringify(kept)).toBe(JSON.stringify(plainViews(context).find((v) => v.name === view.name)));
        }
        previousViews = views;
        if (againstCopy[index]) expect(visibleTools(context, memo)).toEqual(visibleTools(copy(context)));
        const owners = plainOwners(context);
        for (const name of NAMES) expect(ownerOf(context, name, memo)).toBe(owners.get(name));
      });
      },
    ),
    { numRuns: 300 },
  );
});

test("each projection keeps its own owners: another's reads never replace the owners it reuses", () => {
  const twin: JournalEvent = { seq: 1, at: new Date(0).toISOString(), type: 'server.configured', server: 'twin', actor: 'twin#1', config: maskedConfig() };
  const first = createProjection([twin]);
  const second = createProjection([twin]);
  const registered = (seq: number, server: string, tools: string[]): JournalEvent => ({
    seq,
    at: new Date(0).toISOString(),
    type: 'tools.registered',
    server,
    tools: tools.map((name) => ({ name, original: name, description: '' })),
  });
  first.apply(registered(2, 'twin', ['twin__echo', 'twin__add']));
  second.apply(registered(2, 'twin', ['twin__env']));
  expect(serverViews(first.context, first.memo)[0]!.tool_count).toBe(2);
  const owners = first.memo.last!.owners;
  expect([...owners]).toEqual([['twin__echo', 'twin'], ['twin__add', 'twin']]);

  // The second projection changes its registrations and is read in between.
  second.apply(registered(3, 'twin', ['twin__env', 'twin__fail']));
  expect(visibleTools(second.context, second.memo).map((tool) => tool.name)).toEqual(['twin__env', 'twin__fail']);
  expect(first.memo.last!.owners).toBe(owners);

  // An event of the first that changes no registration reuses its owners, not the second's.
  first.apply({ seq: 3, at: new Date(0).toISOString(), type: 'server.log', server: 'twin', level: 'info', logger: null, message: 'hi' });
  expect(visibleTools(first.context, first.memo).map((tool) => tool.name)).toEqual(['twin__echo', 'twin__add']);
  expect(first.memo.last!.owners).toBe(owners);
  expect(ownerOf(first.context, 'twin__env', first.memo)).toBeUndefined();
  expect(ownerOf(second.context, 'twin__echo', second.memo)).toBeUndefined();
});
