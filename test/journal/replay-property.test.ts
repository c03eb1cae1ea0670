// Property test (SPEC §4: "replaying it rebuilds them exactly"): random
// journals — lifecycles with stale actors, registrations that shadow across
// and within servers, resource and prompt listings, floods of logs, removals,
// worker restarts — go through the journal into a file store with tiny
// segments that snapshots compact at random points. Then a fresh store on the
// same dir, folding its snapshot and the tail after it, rebuilds exactly the
// live projection and the fold of every event from the first. Along the way,
// the live projection agrees with a plain model of the servers (who wins a
// shared tool name has its own model test: shadowing.test.ts), and `seq`
// runs 1, 2, 3… across restarts.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { expect, test } from 'vitest';
import {
  promptsListed,
  resourcesListed,
  type JournalEvent,
  type JournalEventInput,
  type ServerState,
} from '../../src/journal/events.js';
import { createFileEventStore, type FileEventStoreOptions } from '../../src/journal/file-event-store.js';
import { createJournal, type Journal } from '../../src/journal/journal.js';
import {
  emptyProjection,
  project,
  serverViews,
  shadowedByRegistration,
  visibleTools,
  type ProjectedServer,
  type ProjectionContext,
} from '../../src/journal/projection.js';
import { maskedConfig } from './masked-config.js';

const SERVERS = ['a', 'b', 'c'] as const;
type Server = (typeof SERVERS)[number];
const STATES: ServerState[] = ['pending', 'authenticating', 'ready', 'ready', 'needs_reauth', 'error', 'stopped', 'disabled'];

type Command =
  | { kind: 'configure'; server: Server }
  | { kind: 'transition'; server: Server; to: ServerState; stale: boolean; offers: Array<'resources' | 'prompts'> | undefined }
  | { kind: 'register'; server: Server; tools: string[] }
  | { kind: 'unregister'; server: Server }
  | { kind: 'resources'; server: Server; resources: number; templates: number }
  | { kind: 'prompts'; server: Server; prompts: number }
  | { kind: 'logs'; server: Server; count: number }
  | { kind: 'remove'; server: Server }
  | { kind: 'restart' }
  | { kind: 'flush' };

const server = fc.constantFrom(...SERVERS);
const command: fc.Arbitrary<Command> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('configure' as const), server }) },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('transition' as const),
      server,
      to: fc.constantFrom(...STATES),
      // An event of a replaced actor: journaled, not projected.
      stale: fc.integer({ min: 0, max: 6 }).map((roll) => roll === 0),
      // What a server entering ready offers (absent: a journal written before it was recorded).
      offers: fc.option(fc.subarray(['resources', 'prompts'] as Array<'resources' | 'prompts'>), { nil: undefined }),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('register' as const),
      server,
      // A small pool of names: collisions between servers and within one (`a.b` / `a_b`) are common.
      tools: fc.array(fc.constantFrom('shared__x', 'shared__y', 'shared__z', 'own'), { maxLength: 5 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('unregister' as const), server }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('resources' as const), server, resources: fc.nat(3), templates: fc.nat(2) }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('prompts' as const), server, prompts: fc.nat(3) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('logs' as const), server, count: fc.integer({ min: 1, max: 40 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('remove' as const), server }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('restart' as const) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('flush' as const) }) },
);

const storeArb = fc.record({
  maxSegmentBytes: fc.integer({ min: 150, max: 2_000 }),
  keepSegments: fc.integer({ min: 1, max: 3 }),
  snapshotEveryBytes: fc.integer({ min: 150, max: 3_000 }),
});

/** What a server should look like, kept by hand beside the projection. */
type Expected = Pick<
  ProjectedServer,
  'actor' | 'state' | 'error' | 'error_kind' | 'since' | 'last_run' | 'resources' | 'templates' | 'prompts'
> & {
  toolCount: number;
  /** How the run stands before any `stopped`: the next run's `last_run`. */
  outcome: ProjectedServer['last_run'];
};

async function runJournal(commands: Command[], sizes: Omit<FileEventStoreOptions, 'stateDir'>): Promise<void> {
  const stateDir = mkdtempSync(join(tmpdir(), 'mcp-fleet-replay-'));
  try {
    await checkJournal(stateDir, commands, sizes);
  } finally {
    rmSync(stateDir, { recursive: true, force: true });
  }
}

async function checkJournal(stateDir: string, commands: Command[], sizes: Omit<FileEventStoreOptions, 'stateDir'>): Promise<void> {
  const failures: Error[] = [];
  const options: FileEventStoreOptions = { stateDir, ...sizes, onWriteError: (error) => failures.push(error) };
  const all: JournalEvent[] = [];
  const openJournal = async () => {
    // A small window, so reads reach into the store.
    const opened = createJournal({ store: createFileEventStore(options), maxInMemory: 7 });
    opened.subscribe((event) => all.push(event));
    await opened.open();
    return opened;
  };
  let journal: Journal = await openJournal();
  /** Names each server registered last, for its `tools.unregistered`. */
  const registered = new Map<string, string[]>();
  const model = new Map<Server, Expected>();
  let actors = 0;
  let registrations = 0;
  const live = () => journal.projection.context;
  const append = (input: JournalEventInput): JournalEvent => {
    journal.append(input);
    return all.at(-1)!;
  };

  try {
    for (const step of commands) {
      const expected = 'server' in step ? model.get(step.server) : undefined;
      switch (step.kind) {
        case 'configure': {
          const actor = `${step.server}#${++actors}`;
          const event = append({ type: 'server.configured', server: step.server, actor, config: maskedConfig({ timeout_seconds: actors }) });
          if (expected) expected.actor = actor;
          else {
            model.set(step.server, {
              actor,
              state: 'pending',
              error: null,
              error_kind: null,
              since: event.at,
              last_run: null,
              resources: null,
              templates: null,
              prompts: null,
              toolCount: 0,
              outcome: null,
            });
          }
          break;
        }
        case 'transition': {
          const current = expected?.actor ? expected.actor : `${step.server}#none`;
          const actor = step.stale ? `${step.server}#stale` : current;
          const failure = step.to === 'error' ? { error: 'it broke', error_kind: 'protocol' as const } : { error: null, error_kind: null };
          const offers = step.to === 'ready' && step.offers !== undefined ? { offers: step.offers } : {};
          const event = append({ type: 'server.transitioned', server: step.server, actor, from: null, to: step.to, ...failure, ...offers });
          if (expected && expected.actor === actor) {
            Object.assign(expected, { state: step.to, ...failure, since: event.at });
            // Whatever was listed went with the connection; entering ready, a kind not offered is listed as none.
            const none = (kind: 'resources' | 'prompts') => (offers.offers !== undefined && !offers.offers.includes(kind) ? [] : null);
            Object.assign(expected, { resources: none('resources'), templates: none('resources'), prompts: none('prompts') });
            // A shutdown's `stopped` does not replace what the run knew before it.
            if (step.to !== 'stopped') {
              expected.outcome = { state: step.to, ...failure, tool_count: expected.toolCount, at: event.at };
            }
          }
          break;
        }
        case 'register': {
          if (!expected) break;
          registrations += 1;
          const tools = step.tools.map((name, index) => ({
            name: `${step.server}__${name}`.replace(/^[abc]__shared__/, 'shared__'),
            original: `${name}.${index}`,
            description: `registration ${registrations}, tool ${index}`,
          }));
          registered.set(step.server, tools.map((tool) => tool.name));
          const shadowed = shadowedByRegistration(live(), step.server, tools);
          append({ type: 'tools.registered', server: step.server, tools });
          for (const loss of shadowed) append({ type: 'tool.shadowed', server: step.server, ...loss });
          expected.toolCount = tools.length;
          if (expected.outcome) expected.outcome = { ...expected.outcome, tool_count: tools.length };
          break;
        }
        case 'unregister':
          if (!expected) break;
          append({ type: 'tools.unregistered', server: step.server, tools: registered.get(step.server) ?? [] });
          registered.delete(step.server);
          expected.toolCount = 0;
          break;
        case 'resources': {
          if (!expected) break;
          const event = append(
            resourcesListed(
              step.server,
              Array.from({ length: step.resources }, (_, i) => ({ uri: `mem://${i}`, name: `r${i}`, description: i % 2 ? `d${i}` : undefined })),
              Array.from({ length: step.templates }, (_, i) => ({ uriTemplate: `mem://{id}/${i}`, name: `t${i}`, mimeType: 'text/plain' })),
            ),
          );
          if (event.type === 'resources.listed') Object.assign(expected, { resources: event.resources, templates: event.templates });
          break;
        }
        case 'prompts': {
          if (!expected) break;
          const event = append(
            promptsListed(
              step.server,
              Array.from({ length: step.prompts }, (_, i) => ({ name: `p${i}`, arguments: i ? [{ name: 'x', required: i > 1 }] : undefined })),
            ),
          );
          if (event.type === 'prompts.listed') expected.prompts = event.prompts;
          break;
        }
        case 'logs':
          for (let index = 0; index < step.count; index += 1) {
            append({ type: 'server.log', server: step.server, level: 'info', logger: null, message: `log ${index} ${'·'.repeat(index)}` });
          }
          break;
        case 'remove':
          if (!expected) break;
          registered.delete(step.server);
          append({ type: 'server.removed', server: step.server });
          model.delete(step.server);
          break;
        case 'restart':
          await journal.close();
          journal = await openJournal();
          registered.clear();
          for (const entry of model.values()) {
            const { state, error, error_kind, since } = entry;
            Object.assign(entry, {
              actor: '',
              last_run: entry.outcome ?? { state, error, error_kind, tool_count: entry.toolCount, at: since },
              outcome: null,
              toolCount: 0,
              resources: null,
              templates: null,
              prompts: null,
            });
          }
          break;
        case 'flush':
          await journal.flushed();
          break;
      }
      checkLive(live(), model);
    }
  } finally {
    await journal.close();
  }

  expect(failures, 'no store failure').toEqual([]);
  // `seq` ran 1, 2, 3… across every restart.
  expect(all.map((event) => event.seq)).toEqual(all.map((_, index) => index + 1));

  const store = createFileEventStore(options);
  try {
    const { snapshot, events } = await store.load();
    const rebuilt = events.reduce(project, snapshot?.state ?? emptyProjection());
    const fromFirst = all.reduce(project, emptyProjection());
    expect(rebuilt, 'snapshot + tail = the live projection').toEqual(live());
    expect(rebuilt, 'snapshot + tail = every event folded').toEqual(fromFirst);
    expect(serverViews(rebuilt)).toEqual(serverViews(live()));
    expect(visibleTools(rebuilt)).toEqual(visibleTools(live()));
    expect(store.lastSeq).toBe(all.length);

    // What the store still holds is the journal's tail, with no gap.
    const probe = await store.read(0);
    const oldest = 'gone' in probe ? probe.gone : 1;
    const tail = await store.read(oldest - 1);
    expect(tail).toEqual(all.slice(oldest - 1));
  } finally {
    await store.close();
  }
}

function checkLive(context: ProjectionContext, model: Map<Server, Expected>): void {
  expect(Object.keys(context.servers).sort()).toEqual([...model.keys()].sort());
  for (const [name, expected] of model) {
    const { toolCount, ...fields } = expected;
    const projected = context.servers[name]!;
    expect(projected, name).toMatchObject(fields);
    expect(projected.tools.length, `${name} tools`).toBe(toolCount);
  }
}

test('snapshot + tail of a fresh store rebuilds the live projection exactly, across restarts and compaction', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 60, size: 'max' }), storeArb, runJournal),
    // About half the runs take a snapshot and drop segments (checked once by counting).
    { numRuns: 100 },
  );
}, 120_000);
