// The journal facade over an event store: `open` folds what is stored and
// marks the run; appends are projected at once and stored in order; memory
// keeps a bounded window of the newest events, and `read` reaches past it to
// the store; the store's snapshots make the next open fold only the rest.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { createMemoryEventStore, type EventStore } from '../../src/journal/event-store.js';
import type { JournalEventInput } from '../../src/journal/events.js';
import { createFileEventStore } from '../../src/journal/file-event-store.js';
import { createJournal, type Journal, type JournalOptions } from '../../src/journal/journal.js';
import { project, serverViews } from '../../src/journal/projection.js';
import { maskedConfig } from './masked-config.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-journal-'));
  dirs.push(dir);
  return dir;
}

const configured = (server: string, actor = server): JournalEventInput => ({
  type: 'server.configured',
  server,
  actor,
  config: maskedConfig(),
});
const transition = (server: string, index: number): JournalEventInput => ({
  type: 'server.transitioned',
  server,
  actor: server,
  from: index === 0 ? null : 'pending',
  to: index % 2 === 0 ? 'pending' : 'ready',
  error: null,
  error_kind: null,
});

async function openJournal(options: Partial<JournalOptions> = {}): Promise<Journal> {
  const journal = createJournal({ store: createMemoryEventStore(), ...options });
  await journal.open();
  return journal;
}
const seqs = (journal: Journal, since?: number) => journal.since(since).map((event) => event.seq);

describe('opening the journal', () => {
  test('a fresh store: worker.started is seq 1, appends follow and are projected at once', async () => {
    const journal = await openJournal();
    expect(journal.since()).toEqual([expect.objectContaining({ seq: 1, type: 'worker.started', pid: process.pid })]);
    journal.append(configured('a'));
    journal.append(transition('a', 0));
    journal.append(transition('a', 1));
    // No await: the projection of a local store is current as soon as append returns.
    expect(serverViews(journal.projection.context).map((view) => [view.name, view.state])).toEqual([['a', 'ready']]);
    expect(journal.lastSeq).toBe(4);
    expect(seqs(journal)).toEqual([1, 2, 3, 4]);
    await journal.flushed();
    await journal.close();
  });

  test('a reopened file store: seq goes on, the projection is folded from what is stored, last_run says how the run ended', async () => {
    const stateDir = tempDir();
    const first = await openJournal({ store: createFileEventStore({ stateDir }) });
    first.append(configured('a'));
    first.append(transition('a', 0));
    first.append(transition('a', 1));
    await first.close();

    const second = createJournal({ store: createFileEventStore({ stateDir }) });
    await second.open();
    expect(second.since().map((event) => [event.seq, event.type])).toEqual([
      [1, 'worker.started'],
      [2, 'server.configured'],
      [3, 'server.transitioned'],
      [4, 'server.transitioned'],
      [5, 'worker.started'],
    ]);
    const [view] = serverViews(second.projection.context);
    // Still the last known state until an actor of this run reports.
    expect(view).toMatchObject({ name: 'a', state: 'ready', last_run: { state: 'ready', tool_count: 0, error: null } });
    await second.close();
  });

  test('appends before open wait for it, after worker.started; appends after close are dropped', async () => {
    const store = createMemoryEventStore();
    const journal = createJournal({ store });
    journal.append(configured('early'));
    expect(journal.since()).toEqual([]);
    await journal.flushed();
    await journal.open();
    expect(journal.since().map((event) => event.type)).toEqual(['worker.started', 'server.configured']);
    await expect(journal.open()).rejects.toThrow(/already open/);
    await journal.close();
    journal.append(configured('late'));
    expect(store.lastSeq).toBe(2);
  });

  test('a store that refuses an append is told through onWriteError; append itself never throws', async () => {
    const failures: Error[] = [];
    const memory = createMemoryEventStore();
    const store: EventStore = Object.assign(Object.create(memory) as EventStore, {
      load: () => memory.load(),
      append: () => Promise.reject(new Error('database went away')),
    });
    const journal = createJournal({ store, onWriteError: (error) => failures.push(error) });
    await journal.open();
    expect(() => journal.append(configured('a'))).not.toThrow();
    await journal.flushed();
    expect(failures.map((error) => error.message)).toEqual(['database went away', 'database went away']);
  });
});

describe('the journal in memory', () => {
  test('a subscriber that throws is told as such, not as a write failure; the others are told all the same', async () => {
    const writes: string[] = [];
    const subscribers: string[] = [];
    const journal = await openJournal({ onWriteError: (error) => writes.push(error.message), onSubscriberError: (error) => subscribers.push(error.message) });
    const seen: number[] = [];
    journal.subscribe(() => {
      throw new Error('listener boom');
    });
    journal.subscribe((event) => seen.push(event.seq));
    journal.append(transition('a', 0));
    expect(subscribers).toEqual(['listener boom']);
    expect(writes).toEqual([]);
    expect(seen).toEqual([journal.since().at(-1)?.seq]);
  });

  test('keeps the newest maxInMemory events; since(n) gives those after n', async () => {
    const journal = await openJournal({ maxInMemory: 3 });
    for (let index = 0; index < 5; index += 1) journal.append(transition('a', index));
    expect(seqs(journal)).toEqual([4, 5, 6]);
    expect(seqs(journal, 5)).toEqual([6]);
    expect(seqs(journal, 6)).toEqual([]);
    expect(seqs(journal, 1)).toEqual([4, 5, 6]);
  });

  test('also bounds the names the kept events list; the newest event stays however big', async () => {
    const journal = await openJournal({ maxInMemoryEntries: 20 });
    const registration = (count: number): JournalEventInput => ({
      type: 'tools.registered',
      server: 'big',
      tools: Array.from({ length: count }, (_, i) => ({ name: `big__t${i}`, original: `t${i}`, description: '' })),
    });
    journal.append(registration(8)); // 1 + 9
    journal.append(registration(8)); // 1 + 9 + 9 = 19
    expect(seqs(journal)).toEqual([1, 2, 3]);
    journal.append(transition('a', 1)); // 20
    journal.append(transition('a', 2)); // 21: the oldest goes
    expect(seqs(journal)).toEqual([2, 3, 4, 5]);
    journal.append(registration(30)); // over the bound alone
    expect(seqs(journal)).toEqual([6]);
    expect(seqs(journal, 6)).toEqual([]);
  });

  test('many more events than it keeps: since(n) stays exact across compactions', async () => {
    const journal = await openJournal({ maxInMemory: 100 });
    for (let index = 0; index < 5000; index += 1) journal.append(transition('a', index));
    expect(seqs(journal)).toEqual(Array.from({ length: 100 }, (_, i) => 4902 + i));
    expect(seqs(journal, 4951)).toEqual(Array.from({ length: 50 }, (_, i) => 4952 + i));
    expect(journal.since(10).length).toBe(100);
    expect(journal.lastSeq).toBe(5001);
  });

  test('subscribers get every event once, in order, until they unsubscribe; one that throws is told, not fatal', async () => {
    const failures: Error[] = [];
    const journal = await openJournal({ onWriteError: (error) => failures.push(error) });
    const seen: number[] = [];
    journal.subscribe(() => {
      throw new Error('subscriber broke');
    });
    const unsubscribe = journal.subscribe((event) => seen.push(event.seq));
    journal.append(transition('a', 0));
    journal.append(transition('a', 1));
    unsubscribe();
    journal.append(transition('a', 2));
    expect(seen).toEqual([2, 3]);
    expect(failures.map((error) => error.message)).toEqual(['subscriber broke', 'subscriber broke', 'subscriber broke']);
  });
});

describe('reading and snapshots', () => {
  test('read answers from memory inside the window, from the store beyond it, and gone below the store', async () => {
    const stateDir = tempDir();
    const options = { stateDir, maxSegmentBytes: 400, keepSegments: 2, snapshotEveryBytes: 2_000 };
    const journal = await openJournal({ store: createFileEventStore(options), maxInMemory: 5 });
    for (let index = 0; index < 10; index += 1) journal.append(transition('a', index));
    await journal.flushed();
    // Memory keeps 7..11; the store still has everything.
    expect(seqs(journal)).toEqual([7, 8, 9, 10, 11]);
    expect(await journal.read(8)).toEqual(journal.since(8));
    const older = await journal.read(2, 3);
    expect(Array.isArray(older) && older.map((event) => event.seq)).toEqual([3, 4, 5]);

    // Enough to want a snapshot: taken, old segments dropped.
    for (let index = 0; index < 30; index += 1) journal.append(transition('a', index));
    await journal.close();
    const gone = await createJournalOn(stateDir, options, (reopened) => reopened.read(0));
    expect(gone).toEqual({ gone: expect.any(Number) });
  });

  test('after snapshots, a reopened journal folds snapshot + tail into the same projection as the live one', async () => {
    const stateDir = tempDir();
    const options = { stateDir, maxSegmentBytes: 300, snapshotEveryBytes: 600 };
    const live = await openJournal({ store: createFileEventStore(options) });
    live.append(configured('a'));
    live.append(configured('b'));
    for (let index = 0; index < 40; index += 1) {
      live.append(transition(index % 2 === 0 ? 'a' : 'b', index));
      live.append({ type: 'tools.registered', server: 'a', tools: [{ name: `a__t${index}`, original: `t${index}`, description: '' }] });
      if (index % 7 === 0) await live.flushed();
    }
    await live.close();
    const reopened = createFileEventStore(options);
    const { snapshot, events } = await reopened.load();
    expect(snapshot).not.toBeNull();
    expect(events.length).toBeLessThan(82);
    const journal = createJournal({ store: createFileEventStore(options) });
    await journal.open();
    // Exactly the live projection, moved on by this run's boundary.
    const boundary = journal.since().at(-1)!;
    expect(boundary.type).toBe('worker.started');
    expect(journal.projection.context).toEqual(project(live.projection.context, boundary));
    const { servers } = journal.projection.context;
    expect(servers['a']!.last_run).toMatchObject({ state: 'pending', tool_count: 1 });
    expect(servers['b']!.last_run).toMatchObject({ state: 'ready', tool_count: 0 });
    expect(servers['a']!.tools).toEqual([]);
    await journal.close();
  });
});

async function createJournalOn<T>(
  stateDir: string,
  options: Omit<Parameters<typeof createFileEventStore>[0], 'stateDir'>,
  use: (journal: Journal) => Promise<T>,
): Promise<T> {
  const journal = createJournal({ store: createFileEventStore({ ...options, stateDir }), maxInMemory: 1 });
  await journal.open();
  try {
    return await use(journal);
  } finally {
    await journal.close();
  }
}
