// The selector layer (src/journal/selectors.ts) keeps what is
// derived from the projection, by the identity of its input. Property test:
// after every event of random journals, each selector answers what the plain
// derivations of projection.ts give for the same context, and what the plain
// algorithms written out here (as the projection had them before anything was
// kept) give; an unchanged `servers` record gives the same objects, a changed
// one new ones. Two hosts' selectors, on projections with servers of the same
// names, share nothing. `shadowedByRegistration` is read from the registration
// itself: it holds on a projection that has not folded that registration in.
import fc from 'fast-check';
import { expect, test } from 'vitest';
import { toResponse } from '../../src/config/masking.js';
import { ServerConfig } from '../../src/config/schema.js';
import type { JournalEvent, ServerState } from '../../src/journal/events.js';
import {
  createProjection,
  emptyProjection,
  ownersOf,
  project,
  serverViews,
  shadowedByRegistration,
  toolOwner,
  toServerView,
  visibleTools,
  type ProjectedServer,
  type ProjectionContext,
} from '../../src/journal/projection.js';
import { createSelectors } from '../../src/journal/selectors.js';
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
  // Registered: each name the server owns, once.
  const registered = (s: ProjectedServer) => new Set(s.tools.map((tool) => tool.name).filter((name) => owners.get(name) === s.name)).size;
  return Object.values(context.servers).map((s) => toServerView(s, hidden(s), registered(s)));
}

/** The same context as a new object graph: nothing a selector keeps applies to it. */
const copy = (context: ProjectionContext): ProjectionContext => structuredClone(context);

test('each selector answers what the plain derivation gives, after every event; the same input the same objects, a changed one new ones', () => {
  fc.assert(
    fc.property(
      fc.array(step, { minLength: 1, maxLength: 60 }),
      fc.array(fc.boolean(), { minLength: 60, maxLength: 60 }),
      fc.array(fc.boolean(), { minLength: 60, maxLength: 60 }),
      (steps, readBefore, againstCopy) => {
        const selectors = createSelectors();
        // Another host's selectors, read on copies in between.
        const other = createSelectors();
        let context = emptyProjection();
        let previous = { views: selectors.serverViews(context), visible: selectors.visibleTools(context), owners: selectors.owners(context) };
        steps.forEach((s, index) => {
          const before = context;
          // Sometimes the reads ran on `before` (its owners are known), sometimes not.
          if (readBefore[index]) selectors.visibleTools(before);
          const event = eventOf(s, index + 1, context);
          context = project(context, event);
          // A registration of a configured server (the projection leaves out events of others).
          if (event.type === 'tools.registered' && before.servers[event.server] !== undefined) {
            // Before the registration is folded in, from the registration itself.
            const expected = plainShadowedBy(before, context, event.server);
            expect(shadowedByRegistration(before, event.server, event.tools)).toEqual(expected);
            expect(shadowedByRegistration(copy(before), event.server, event.tools)).toEqual(expected);
          }
          const views = selectors.serverViews(context);
          expect(views).toEqual(plainViews(context));
          expect(views).toEqual(serverViews(context));
          if (againstCopy[index]) expect(views).toEqual(selectors.serverViews(copy(context)));
          if (readBefore[index]) expect(views).toEqual(other.serverViews(copy(context)));
          const visible = selectors.visibleTools(context);
          expect(visible).toEqual(visibleTools(context));
          if (againstCopy[index]) expect(visible).toEqual(selectors.visibleTools(copy(context)));
          const owners = selectors.owners(context);
          expect(owners).toEqual(plainOwners(context));
          expect(owners).toEqual(ownersOf(context));
          for (const name of [...NAMES, 'a__t1', 'b__x', 'zz']) expect(selectors.toolOwner(context, name)).toBe(toolOwner(context, name));

          // Asked again, the same objects.
          expect(selectors.visibleTools(context)).toBe(visible);
          expect(selectors.owners(context)).toBe(owners);
          selectors.serverViews(context).forEach((view, i) => expect(view).toBe(views[i]));
          if (context.servers === before.servers) {
            // An unchanged input: what was derived from it before.
            expect(visible).toBe(previous.visible);
            views.forEach((view, i) => expect(view).toBe(previous.views[i]));
          } else {
            expect(visible).not.toBe(previous.visible);
          }
          // Other owners, a new map; a kept view says what it said.
          if (!sameEntries(plainOwners(before), plainOwners(context))) expect(owners).not.toBe(previous.owners);
          for (const view of views) {
            const kept = previous.views.find((old) => old === view);
            if (kept) expect(JSON.stringify(kept)).toBe(JSON.stringify(plainViews(context).find((v) => v.name === view.name)));
          }
          previous = { views, visible, owners };
        });
      },
    ),
    { numRuns: 300 },
  );
});

function sameEntries(a: Map<string, string>, b: Map<string, string>): boolean {
  return a.size === b.size && [...a].every(([key, value]) => b.get(key) === value);
}

const registered = (seq: number, server: string, tools: string[]): JournalEvent => ({
  seq,
  at: new Date(0).toISOString(),
  type: 'tools.registered',
  server,
  tools: tools.map((name) => ({ name, original: name, description: '' })),
});

test("two hosts' selectors share nothing: servers of the same names, each host's answers its own", () => {
  // Two hosts' projections with a server of the same name, each read through its host's selectors.
  const twin: JournalEvent = { seq: 1, at: new Date(0).toISOString(), type: 'server.configured', server: 'twin', actor: 'twin#1', config: maskedConfig() };
  const first = { projection: createProjection([twin]), selectors: createSelectors() };
  const second = { projection: createProjection([twin]), selectors: createSelectors() };
  const toolsOf = (host: typeof first) => host.selectors.visibleTools(host.projection.context).map((tool) => tool.name);
  first.projection.apply(registered(2, 'twin', ['twin__echo', 'twin__add']));
  second.projection.apply(registered(2, 'twin', ['twin__env']));
  expect(toolsOf(first)).toEqual(['twin__echo', 'twin__add']);
  const owners = first.selectors.owners(first.projection.context);
  const views = first.selectors.serverViews(first.projection.context);

  // The second changes its registrations and is read in between.
  second.projection.apply(registered(3, 'twin', ['twin__env', 'twin__fail']));
  expect(toolsOf(second)).toEqual(['twin__env', 'twin__fail']);
  expect(second.selectors.serverViews(second.projection.context)[0]!.tool_count).toBe(2);

  // An event of the first that changes no registration keeps its own owners and views, not the second's.
  first.projection.apply({ seq: 3, at: new Date(0).toISOString(), type: 'server.log', server: 'twin', level: 'info', logger: null, message: 'hi' });
  expect(toolsOf(first)).toEqual(['twin__echo', 'twin__add']);
  expect(first.selectors.owners(first.projection.context)).toBe(owners);
  expect(first.selectors.serverViews(first.projection.context)[0]).toBe(views[0]);
  expect(first.selectors.toolOwner(first.projection.context, 'twin__env')).toBe('twin');
  expect(first.selectors.owners(first.projection.context).has('twin__env')).toBe(false);
  expect(second.selectors.owners(second.projection.context).has('twin__echo')).toBe(false);

  // The same context read by both: equal answers, no object of one host's in the other's.
  const shared = first.projection.context;
  expect(second.selectors.serverViews(shared)).toEqual(first.selectors.serverViews(shared));
  expect(second.selectors.serverViews(shared)[0]).not.toBe(first.selectors.serverViews(shared)[0]);
  expect(second.selectors.visibleTools(shared)).not.toBe(first.selectors.visibleTools(shared));
});

test('a view shows the version of the stored config once it shows that config; the same object until either changes', () => {
  const stored = new Map<string, { config: ServerConfig; version: number }>();
  const selectors = createSelectors({ stored: (name) => stored.get(name) });
  const config = (command: string) => ServerConfig.parse({ type: 'local', command: [command] });
  // The journal holds the config masked, as a view shows it.
  const configured = (seq: number, command: string): JournalEvent => ({
    seq,
    at: new Date(0).toISOString(),
    type: 'server.configured',
    server: 's',
    actor: 's#1',
    config: toResponse(config(command)),
  });
  let context = project(emptyProjection(), configured(1, 'a'));
  expect(selectors.server(context, 's')!.version).toBeNull();

  stored.set('s', { config: config('a'), version: 3 });
  const shown = selectors.server(context, 's')!;
  expect(shown.version).toBe(3);
  expect(selectors.status(context)[0]).toBe(shown);
  expect(selectors.server(context, 'missing')).toBeUndefined();

  // Another worker stored a new config: until this one applies it, the view keeps the version it had.
  stored.set('s', { config: config('b'), version: 4 });
  expect(selectors.server(context, 's')).toBe(shown);
  context = project(context, configured(2, 'b'));
  expect(selectors.server(context, 's')!.version).toBe(4);

  // Two changes in quick succession: this worker applies the first (version 5) only once the store holds the
  // second (version 6). The view keeps the version it had, never none, until it shows the stored config.
  stored.set('s', { config: config('d'), version: 6 });
  context = project(context, configured(3, 'c'));
  expect(selectors.server(context, 's')!.version).toBe(4);
  context = project(context, configured(4, 'd'));
  expect(selectors.server(context, 's')!.version).toBe(6);
});
