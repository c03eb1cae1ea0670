// `project()` on hand-made journals: a view follows its current actor only,
// removal ends it, shadowing and the visible tools are derived from the order
// of registrations, a new run turns each server's state into its `last_run`,
// listings last while the server is ready, and folding is pure, so a replay
// gives the same views as the live store.
import { describe, expect, test } from 'vitest';
import type { JournalEvent, JournalEventInput } from '../../src/journal/events.js';
import { promptsListed, resourcesListed } from '../../src/journal/events.js';
import {
  createProjection,
  emptyProjection,
  project,
  serverViews,
  shadowedByRegistration,
  visibleTools,
  type ProjectionContext,
} from '../../src/journal/projection.js';
import { maskedConfig } from './masked-config.js';
import { toResponse, type ServerConfigResponse } from '../../src/config/masking.js';
import { ServerConfig } from '../../src/config/schema.js';

/** Stamps events as the journal does: seq from 1, one second apart. */
function journalOf(inputs: JournalEventInput[]): JournalEvent[] {
  return inputs.map((input, index) => ({
    ...input,
    seq: index + 1,
    at: new Date(Date.UTC(2026, 0, 1, 0, 0, index + 1)).toISOString(),
  })) as JournalEvent[];
}

const empty: ProjectionContext = emptyProjection();
const fold = (events: JournalEvent[]) => events.reduce(project, empty);
const viewsOf = (events: JournalEvent[]) => serverViews(fold(events));

const configured = (server: string, actor = server, config = maskedConfig()): JournalEventInput => ({
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
  test('auth.status is one of the five the contract names, in every state, for every kind', () => {
    const remote = (auth: Record<string, unknown>) =>
      toResponse(ServerConfig.parse({ type: 'remote', url: 'https://mcp.example/mcp', auth }));
    const kinds = {
      none: remote({ kind: 'none' }),
      bearer: remote({ kind: 'bearer', token: 'token-0123456789' }),
      oauth: remote({ kind: 'oauth' }),
      machine: remote({ kind: 'client_credentials', client_id: 'job', client_secret: 'secret-0123456789' }),
    };
    const statusIn = (config: ServerConfigResponse, path: Array<Transition['to']>) => {
      const steps = path.map((to, index) => moved('s', index === 0 ? null : (path[index - 1] as Transition['to']), to));
      return viewsOf(journalOf([configured('s', 's', config), ...steps]))[0]!.auth.status;
    };
    const table = Object.fromEntries(
      Object.entries(kinds).map(([kind, config]) => [
        kind,
        {
          pending: statusIn(config, ['pending']),
          ready: statusIn(config, ['pending', 'ready']),
          error: statusIn(config, ['pending', 'error']),
          needs_reauth: statusIn(config, ['pending', 'needs_reauth']),
          authenticating: statusIn(config, ['pending', 'authenticating']),
        },
      ]),
    );
    expect(table).toEqual({
      none: { pending: 'none', ready: 'none', error: 'none', needs_reauth: 'none', authenticating: 'none' },
      bearer: { pending: 'configured', ready: 'configured', error: 'configured', needs_reauth: 'needs_reauth', authenticating: 'authenticating' },
      oauth: { pending: 'configured', ready: 'authorized', error: 'configured', needs_reauth: 'needs_reauth', authenticating: 'authenticating' },
      machine: { pending: 'configured', ready: 'authorized', error: 'configured', needs_reauth: 'needs_reauth', authenticating: 'authenticating' },
    });
  });

  test('a view follows its actor: state, since, error and tools', () => {
    const events = journalOf([
      configured('files', 'files', maskedConfig({ enabled: false })),
      moved('files', null, 'pending'),
      moved('files', 'pending', 'error', 'files', { error: 'no answer to initialize within 1s', error_kind: 'timeout' }),
    ]);
    expect(viewsOf(events)).toEqual([
      expect.objectContaining({
        name: 'files',
        config: maskedConfig({ enabled: false }),
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
      configured('files', 'files', maskedConfig({ timeout_seconds: 60 })),
      moved('files', null, 'pending'),
      moved('files', 'pending', 'ready'),
      // Management replaces the actor (restart / new config) …
      configured('files', 'files#1', maskedConfig({ timeout_seconds: 5 })),
      moved('files', null, 'pending', 'files#1'),
      // … and the old one's last steps arrive afterwards.
      moved('files', 'ready', 'stopped', 'files'),
      moved('files', 'pending', 'error', 'files', { error: 'late', error_kind: 'spawn_failed' }),
    ]);
    const context = fold(events);
    expect(context.servers['files']).toMatchObject({ actor: 'files#1', state: 'pending', error: null });
    expect(viewsOf(events)[0]!.config).toEqual(maskedConfig({ timeout_seconds: 5 }));
    expect(viewsOf(events)[0]!.since).toBe(events[4]!.at);
    expect(context.lastSeq).toBe(7);
  });

  test('a transition of a server never configured makes no view', () => {
    const context = fold(journalOf([moved('ghost', null, 'pending')]));
    expect(context.servers).toEqual({});
    expect(context.lastSeq).toBe(1);
  });

  test("a removed server's late tools and listings bring back no view", () => {
    const context = fold(
      journalOf([
        configured('gone'),
        { type: 'server.removed', server: 'gone' },
        tools('gone', 'gone__echo'),
        { type: 'tools.unregistered', server: 'gone', tools: ['gone__echo'] },
      ]),
    );
    expect(context.servers).toEqual({});
    expect(context.lastSeq).toBe(4);
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
    expect(visibleTools(shadowed).map((tool) => `${tool.server}:${tool.name}`)).toEqual(['x:x__own', 'y:shared__t']);

    // x registers again (a restart): now x wins and y is the one shadowed.
    const flipped = fold(journalOf([...base, tools('x', 'shared__t', 'x__own')]));
    expect(serverViews(flipped).map((view) => view.shadowed_tools)).toEqual([[], ['shared__t']]);

    // The winner unregisters: nothing is shadowed any more.
    const released = fold(journalOf([...base, { type: 'tools.unregistered', server: 'y', tools: ['shared__t'] }]));
    expect(serverViews(released).map((view) => view.shadowed_tools)).toEqual([[], []]);
  });

  test('visibleTools: every name once, as the tool registry lists them; shadowedByRegistration says what a registration hid', () => {
    const events = journalOf([
      configured('one'),
      configured('two'),
      tools('one', 'x1'),
      tools('two', 'x2', 'same'),
      // `one` re-registers: it keeps its place in the list and takes `same` over.
      tools('one', 'y1', 'x1', 'same'),
    ]);
    const before = fold(events.slice(0, 4));
    const after = fold(events);
    expect(visibleTools(after).map((tool) => `${tool.server}:${tool.name}`)).toEqual(['one:y1', 'one:x1', 'one:same', 'two:x2']);
    expect(visibleTools(after)[0]).toEqual({ name: 'y1', server: 'one', original: 'y1', description: '' });
    expect(shadowedByRegistration(before, 'one', after.servers['one']!.tools)).toEqual([{ tool: 'same', shadowed_server: 'two' }]);
    // Owning a name already hides nothing new.
    const again = fold(journalOf([...events, tools('one', 'same')]));
    expect(shadowedByRegistration(after, 'one', again.servers['one']!.tools)).toEqual([]);

    // Two tools of one server with one name (`a.b`, `a_b`): the later wins, in the place of the first.
    const within = journalOf([
      configured('s'),
      {
        type: 'tools.registered',
        server: 's',
        tools: [
          { name: 's__a_b', original: 'a.b', description: 'first' },
          { name: 's__c', original: 'c', description: '' },
          { name: 's__a_b', original: 'a_b', description: 'second' },
        ],
      },
    ]);
    const context = fold(within);
    expect(visibleTools(context)).toEqual([
      { name: 's__a_b', server: 's', original: 'a_b', description: 'second' },
      { name: 's__c', server: 's', original: 'c', description: '' },
    ]);
    expect(shadowedByRegistration(fold(within.slice(0, 1)), 's', context.servers['s']!.tools)).toEqual([{ tool: 's__a_b', shadowed_server: 's' }]);
    expect(serverViews(context)[0]!.shadowed_tools).toEqual(['s__a_b']);

    // Unregistering gives up the place: registering again comes last.
    const moved = fold(journalOf([...events, { type: 'tools.unregistered', server: 'one', tools: [] }, tools('one', 'z1')]));
    expect(visibleTools(moved).map((tool) => `${tool.server}:${tool.name}`)).toEqual(['two:x2', 'two:same', 'one:z1']);
  });

  test('an event that changes no server keeps the servers record: what a selector derived from it still holds', () => {
    const context = fold(journalOf([configured('a'), tools('a', 'a__t')]));
    const logged = project(context, { seq: 3, at: 'now', type: 'server.log', server: 'a', level: 'info', logger: null, message: 'hi' });
    expect(logged.servers).toBe(context.servers);
  });

  test('worker.started: each server’s state becomes its last_run; tools and listings go, the state stays until this run reports', () => {
    const firstRun = [
      configured('files'),
      moved('files', null, 'pending'),
      tools('files', 'files__read', 'files__write'),
      moved('files', 'pending', 'ready'),
      resourcesListed('files', [{ uri: 'file:///a', name: 'a', mimeType: 'text/plain' }], []),
      promptsListed('files', [{ name: 'summarize', arguments: [{ name: 'path', required: true }] }]),
      configured('broken'),
      moved('broken', null, 'pending'),
      moved('broken', 'pending', 'error', 'broken', { error: 'exited with code 1', error_kind: 'spawn_failed' }),
    ];
    const events = journalOf([...firstRun, { type: 'worker.started', pid: 42 }]);
    const context = fold(events);
    const files = context.servers['files']!;
    expect(files).toMatchObject({ state: 'ready', actor: '', tools: [], resources: null, templates: null, prompts: null });
    expect(files.last_run).toEqual({ state: 'ready', error: null, error_kind: null, tool_count: 2, at: events[3]!.at });
    expect(context.servers['broken']!.last_run).toEqual({
      state: 'error',
      error: 'exited with code 1',
      error_kind: 'spawn_failed',
      tool_count: 0,
      at: events[8]!.at,
    });
    expect(visibleTools(context)).toEqual([]);
    expect(serverViews(context).map((view) => [view.name, view.state, view.tool_count])).toEqual([
      ['files', 'ready', 0],
      ['broken', 'error', 0],
    ]);
    // The previous run's actor no longer moves the view; this run's does, and last_run stays.
    const resumed = fold(journalOf([...events, moved('files', 'ready', 'stopped'), configured('files', 'files'), moved('files', null, 'pending')]));
    expect(resumed.servers['files']).toMatchObject({ state: 'pending', last_run: { state: 'ready', tool_count: 2 } });
    // A server first configured in this run, or removed and added again, has no last run.
    const fresh = fold(journalOf([...events, { type: 'server.removed', server: 'broken' }, configured('broken'), configured('new')]));
    expect(serverViews(fresh).map((view) => [view.name, view.last_run === null])).toEqual([
      ['files', false],
      ['broken', true],
      ['new', true],
    ]);
    expect(serverViews(fold(journalOf(firstRun))).every((view) => view.last_run === null)).toBe(true);
  });

  test('listings replace the ones before and are cleared when the server leaves ready', () => {
    const ready = [configured('a'), moved('a', null, 'pending'), moved('a', 'pending', 'ready')];
    const listed = journalOf([
      ...ready,
      resourcesListed('a', [{ uri: 'mem://1', name: 'one', description: undefined }], [{ uriTemplate: 'mem://{id}', name: 'item' }]),
      resourcesListed('a', [{ uri: 'mem://2', name: 'two', description: 'second' }], []),
      promptsListed('a', [{ name: 'p', description: 'a prompt' }]),
    ]);
    const context = fold(listed);
    expect(context.servers['a']).toMatchObject({
      resources: [{ uri: 'mem://2', name: 'two', description: 'second' }],
      templates: [],
      prompts: [{ name: 'p', description: 'a prompt' }],
    });
    // No undefined member: the event is the same after a trip through JSON.
    expect(listed[3]).toStrictEqual(JSON.parse(JSON.stringify(listed[3])));
    const failed = journalOf([moved('a', 'ready', 'error', 'a', { error: 'gone', error_kind: 'transport_closed' })])[0]!;
    const left = project(context, { ...failed, seq: context.lastSeq + 1 });
    // Not listed (null), not "none": whatever it offers is unknown until it is ready again.
    expect(left.servers['a']).toMatchObject({ state: 'error', resources: null, templates: null, prompts: null });
  });

  test('entering ready, a kind the server offers is not listed yet (null) and one it does not offer is none ([])', () => {
    const ready = (offers?: Array<'resources' | 'prompts'>) =>
      fold(
        journalOf([
          configured('a'),
          moved('a', null, 'pending'),
          { ...moved('a', 'pending', 'ready'), ...(offers === undefined ? {} : { offers }) } as JournalEventInput,
        ]),
      ).servers['a'];
    expect(ready(['resources'])).toMatchObject({ resources: null, templates: null, prompts: [] });
    expect(ready(['prompts'])).toMatchObject({ resources: [], templates: [], prompts: null });
    expect(ready([])).toMatchObject({ resources: [], templates: [], prompts: [] });
    // A journal written before `offers` was recorded: nothing is known until listed.
    expect(ready()).toMatchObject({ resources: null, templates: null, prompts: null });
    // Before it is ready, nothing is listed either.
    expect(fold(journalOf([configured('a'), moved('a', null, 'pending')])).servers['a']).toMatchObject({
      resources: null,
      templates: null,
      prompts: null,
    });
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
