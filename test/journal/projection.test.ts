// `project()` on hand-made journals: a view follows its current actor only,
// removal ends it, shadowing is derived from the order of registrations, and
// folding is pure, so a replay gives the same views as the live store.
import { describe, expect, test } from 'vitest';
import type { JournalEvent, JournalEventInput } from '../../src/services/journal/events.js';
import {
  createProjection,
  project,
  serverViews,
  shadowedTools,
  type ProjectionContext,
} from '../../src/services/journal/projection.js';

/** Stamps events as the journal does: seq from 1, one second apart. */
function journalOf(inputs: JournalEventInput[]): JournalEvent[] {
  return inputs.map((input, index) => ({
    ...input,
    seq: index + 1,
    at: new Date(Date.UTC(2026, 0, 1, 0, 0, index + 1)).toISOString(),
  })) as JournalEvent[];
}

const empty: ProjectionContext = { servers: {}, lastSeq: 0 };
const fold = (events: JournalEvent[]) => events.reduce(project, empty);
const viewsOf = (events: JournalEvent[]) => serverViews(fold(events));

const configured = (server: string, actor = server, config: Record<string, unknown> = { type: 'local' }): JournalEventInput => ({
  type: 'server.configured',
  server,
  actor,
  config,
});
type Transition = Extract<JournalEvent, { type: 'server.transitioned' }>;
const moved = (
  server: string,
  from: Transition['from'],
  to: Transition['to'],
  actor = server,
  failure: { error: string; error_kind: NonNullable<Transition['error_kind']> } | null = null,
): JournalEventInput => ({
  type: 'server.transitioned',
  server,
  actor,
  from,
  to,
  error: failure?.error ?? null,
  error_kind: failure?.error_kind ?? null,
});
const tools = (server: string, ...names: string[]): JournalEventInput => ({
  type: 'tools.registered',
  server,
  tools: names.map((name) => ({ name, original: name.split('__')[1] ?? name, description: '' })),
});

describe('project()', () => {
  test('a view follows its actor: state, since, error and tools', () => {
    const events = journalOf([
      configured('files', 'files', { type: 'local', enabled: true }),
      moved('files', null, 'pending'),
      moved('files', 'pending', 'error', 'files', { error: 'no answer to initialize within 1s', error_kind: 'timeout' }),
    ]);
    expect(viewsOf(events)).toEqual([
      expect.objectContaining({
        name: 'files',
        config: { type: 'local', enabled: true },
        state: 'error',
        ready: false,
        error: 'no answer to initialize within 1s',
        error_kind: 'timeout',
        since: events[2]!.at,
        tool_count: 0,
      }),
    ]);

    const recovered = journalOf([
      ...events,
      moved('files', 'error', 'pending'),
      tools('files', 'files__read', 'files__write'),
      moved('files', 'pending', 'ready'),
    ]);
    expect(viewsOf(recovered)[0]).toMatchObject({ state: 'ready', ready: true, error: null, error_kind: null, tool_count: 2 });
    expect(fold(recovered).lastSeq).toBe(6);
  });

  test("a replaced actor's late events are ignored; its successor's are shown", () => {
    const events = journalOf([
      configured('files', 'files', { timeout_seconds: 60 }),
      moved('files', null, 'pending'),
      moved('files', 'pending', 'ready'),
      // Management replaces the actor (restart / new config) …
      configured('files', 'files#1', { timeout_seconds: 5 }),
      moved('files', null, 'pending', 'files#1'),
      // … and the old one's last steps arrive afterwards.
      moved('files', 'ready', 'stopped', 'files'),
      moved('files', 'pending', 'error', 'files', { error: 'late', error_kind: 'spawn_failed' }),
    ]);
    const context = fold(events);
    expect(context.servers['files']).toMatchObject({ actor: 'files#1', state: 'pending', error: null });
    expect(viewsOf(events)[0]!.config).toEqual({ timeout_seconds: 5 });
    expect(viewsOf(events)[0]!.since).toBe(events[4]!.at);
    expect(context.lastSeq).toBe(7);
  });

  test('a transition of a server never configured makes no view', () => {
    const context = fold(journalOf([moved('ghost', null, 'pending')]));
    expect(context.servers).toEqual({});
    expect(context.lastSeq).toBe(1);
  });

  test('removal ends the view; the same name configured again starts afresh', () => {
    const removed = journalOf([
      configured('a'),
      moved('a', null, 'pending'),
      tools('a', 'a__echo'),
      moved('a', 'pending', 'ready'),
      configured('b'),
      moved('b', null, 'disabled'),
      { type: 'tools.unregistered', server: 'a', tools: ['a__echo'] },
      moved('a', 'ready', 'stopped'),
      { type: 'server.removed', server: 'a' },
    ]);
    expect(viewsOf(removed).map((view) => [view.name, view.state])).toEqual([['b', 'disabled']]);

    const readded = journalOf([...removed, configured('a', 'a#1'), moved('a', null, 'pending', 'a#1')]);
    const views = viewsOf(readded);
    // A fresh view: no tools, and it comes after b now.
    expect(views.map((view) => [view.name, view.state, view.tool_count])).toEqual([
      ['b', 'disabled', 0],
      ['a', 'pending', 0],
    ]);
    expect(views[1]!.since).toBe(readded.at(-1)!.at);
    // Removing what is not there changes nothing but lastSeq.
    const again = fold(journalOf([...readded, { type: 'server.removed', server: 'nobody' }]));
    expect(serverViews(again)).toEqual(views);
    expect(again.lastSeq).toBe(readded.length + 1);
  });

  test('shadowing: the later registration wins a shared name; the loser shows it until the winner leaves', () => {
    const base = [
      configured('x'),
      moved('x', null, 'ready'),
      configured('y'),
      moved('y', null, 'ready'),
      tools('x', 'shared__t', 'x__own'),
      tools('y', 'shared__t'),
      { type: 'tool.shadowed', server: 'y', tool: 'shared__t', shadowed_server: 'x' } as JournalEventInput,
    ];
    const shadowed = fold(journalOf(base));
    expect(serverViews(shadowed).map((view) => [view.name, view.shadowed_tools])).toEqual([
      ['x', ['shared__t']],
      ['y', []],
    ]);
    expect(shadowedTools(shadowed, shadowed.servers['x']!)).toEqual(['shared__t']);

    // x registers again (a restart): now x wins and y is the one shadowed.
    const flipped = fold(journalOf([...base, tools('x', 'shared__t', 'x__own')]));
    expect(serverViews(flipped).map((view) => view.shadowed_tools)).toEqual([[], ['shared__t']]);

    // The winner unregisters: nothing is shadowed any more.
    const released = fold(journalOf([...base, { type: 'tools.unregistered', server: 'y', tools: ['shared__t'] }]));
    expect(serverViews(released).map((view) => view.shadowed_tools)).toEqual([[], []]);
  });

  test('project is pure: the context it is given is never changed', () => {
    const events = journalOf([configured('a'), moved('a', null, 'pending'), tools('a', 'a__t'), moved('a', 'pending', 'ready')]);
    let context = deepFreeze(structuredClone(empty));
    for (const event of events) {
      const next = project(context, event);
      expect(next).not.toBe(context);
      context = deepFreeze(next);
    }
    expect(serverViews(context)[0]).toMatchObject({ state: 'ready', tool_count: 1 });
  });
});

describe('createProjection()', () => {
  test('built from a journal, it equals folding project(); apply() goes on from there', () => {
    const events = journalOf([
      configured('a'),
      moved('a', null, 'pending'),
      configured('b'),
      moved('b', null, 'pending'),
      tools('a', 'a__t'),
      moved('a', 'pending', 'ready'),
    ]);
    const replayed = createProjection(events.slice(0, 4));
    for (const event of events.slice(4)) replayed.apply(event);
    expect(replayed.context).toEqual(fold(events));
    expect(createProjection(events).context).toEqual(fold(events));

    const seen: number[] = [];
    const subscription = replayed.store.subscribe((snapshot) => seen.push(snapshot.context.lastSeq));
    replayed.apply({ ...events[3]!, seq: 7, type: 'server.transitioned', from: 'pending', to: 'error' } as JournalEvent);
    subscription.unsubscribe();
    expect(seen).toEqual([7]);
    expect(serverViews(replayed.context).map((view) => view.state)).toEqual(['ready', 'error']);
  });
});

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
