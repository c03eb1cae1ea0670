// The event stores on their own: the file store under real temp dirs (seq
// continues across a reopen, a torn last line is cut off, snapshots drop old
// segments and reads below them say `gone`, files are owner-only, a write
// failure is told and not thrown, the pre-store events.jsonl is continued),
// and the memory store that tests and a diskless host use.
import { appendFileSync, chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { createMemoryEventStore, type EventStore } from '../../src/journal/event-store.js';
import type { JournalEvent, JournalEventInput } from '../../src/journal/events.js';
import { createFileEventStore, type FileEventStoreOptions } from '../../src/journal/file-event-store.js';
import { emptyProjection } from '../../src/journal/projection.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-store-'));
  dirs.push(dir);
  return dir;
}

const log = (index: number): JournalEventInput => ({
  type: 'server.log',
  server: 'a',
  level: 'info',
  logger: null,
  message: `line ${index}`,
});
const logs = (count: number, from = 0) => Array.from({ length: count }, (_, index) => log(from + index));

async function opened(options: FileEventStoreOptions): Promise<EventStore> {
  const store = createFileEventStore(options);
  await store.load();
  return store;
}

const seqs = (events: JournalEvent[] | { gone: number }) => ('gone' in events ? events : events.map((event) => event.seq));
const segmentsOf = (stateDir: string) => readdirSync(join(stateDir, 'journal', 'segments')).sort();
const mode = (file: string) => statSync(file).mode & 0o777;

describe('the file event store', () => {
  test('seq continues across a reopened store: no duplicate, no gap, every event read back', async () => {
    const stateDir = tempDir();
    const first = await opened({ stateDir, maxSegmentBytes: 300 });
    const told: number[] = [];
    first.subscribe((event) => told.push(event.seq));
    const appended = await first.append(logs(3));
    // Seq and subscribers are synchronous; the promise only says it is stored.
    const pending = first.append(logs(2, 3));
    expect(told).toEqual([1, 2, 3, 4, 5]);
    expect(first.lastSeq).toBe(5);
    await pending;
    await first.close();
    expect(appended.map((event) => event.seq)).toEqual([1, 2, 3]);
    expect(segmentsOf(stateDir).length).toBeGreaterThan(1);

    const second = createFileEventStore({ stateDir, maxSegmentBytes: 300 });
    const loaded = await second.load();
    expect(loaded.snapshot).toBeNull();
    expect(seqs(loaded.events)).toEqual([1, 2, 3, 4, 5]);
    expect(loaded.events[0]).toEqual(appended[0]);
    expect(second.lastSeq).toBe(5);
    await second.append(logs(2, 5));
    expect(seqs(await second.read(0))).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(seqs(await second.read(4, 2))).toEqual([5, 6]);
    expect(seqs(await second.read(7))).toEqual([]);
    await second.close();
  });

  test('a torn last line from a crash is cut off, not fatal; appends go on after the last whole event', async () => {
    const stateDir = tempDir();
    const first = await opened({ stateDir });
    await first.append(logs(3));
    await first.close();
    const [segment] = segmentsOf(stateDir);
    const file = join(stateDir, 'journal', 'segments', segment!);
    appendFileSync(file, '{"seq":4,"at":"2026-01-01T00:00:00.000Z","type":"server.lo');

    const reopened = createFileEventStore({ stateDir });
    const loaded = await reopened.load();
    expect(seqs(loaded.events)).toEqual([1, 2, 3]);
    expect(reopened.lastSeq).toBe(3);
    await reopened.append(logs(1, 3));
    await reopened.close();
    const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
    expect(lines.map((line) => JSON.parse(line).seq)).toEqual([1, 2, 3, 4]);
    expect(JSON.parse(lines[3]!).message).toBe('line 3');
  });

  test('a snapshot drops segments it covers but the newest keepSegments; reading below them says gone', async () => {
    const stateDir = tempDir();
    const store = await opened({ stateDir, maxSegmentBytes: 250, keepSegments: 2 });
    await store.append(logs(20));
    const before = segmentsOf(stateDir);
    expect(before.length).toBeGreaterThan(4);
    const state = { ...emptyProjection(), lastSeq: 20 };
    await expect(store.saveSnapshot({ seq: 21, at: 'now', state })).rejects.toThrow(RangeError);
    await store.saveSnapshot({ seq: 20, at: '2026-01-01T00:00:00.000Z', state });

    const after = segmentsOf(stateDir);
    expect(after).toEqual(before.slice(-2));
    const oldest = Number(after[0]!.slice(0, 16));
    expect(oldest).toBeGreaterThan(1);
    expect(await store.read(0)).toEqual({ gone: oldest });
    expect(await store.read(oldest - 2)).toEqual({ gone: oldest });
    expect(seqs(await store.read(oldest - 1))).toEqual(Array.from({ length: 21 - oldest }, (_, i) => oldest + i));
    await store.append(logs(1, 20));
    await store.close();

    const reopened = createFileEventStore({ stateDir, maxSegmentBytes: 250 });
    const loaded = await reopened.load();
    expect(loaded.snapshot).toEqual({ seq: 20, at: '2026-01-01T00:00:00.000Z', state });
    // Only what the snapshot does not cover.
    expect(seqs(loaded.events)).toEqual([21]);
    expect(reopened.lastSeq).toBe(21);
    expect(await reopened.read(0)).toEqual({ gone: oldest });
    await reopened.close();
  });

  test('wants a snapshot once snapshotEveryBytes were stored since the last one', async () => {
    const stateDir = tempDir();
    const store = await opened({ stateDir, snapshotEveryBytes: 500 });
    await store.append(logs(2));
    expect(store.wantsSnapshot).toBe(false);
    await store.append(logs(10, 2));
    expect(store.wantsSnapshot).toBe(true);
    const snapshot = store.saveSnapshot({ seq: store.lastSeq, at: 'now', state: { ...emptyProjection(), lastSeq: 12 } });
    expect(store.wantsSnapshot).toBe(false);
    await snapshot;
    await store.close();
    // What was stored after the snapshot counts at the next start.
    const reopened = createFileEventStore({ stateDir, snapshotEveryBytes: 500 });
    await reopened.load();
    expect(reopened.wantsSnapshot).toBe(false);
  });

  test('directories 0700, segments and snapshot 0600, even where the journal dir existed wider', async () => {
    const stateDir = tempDir();
    mkdirSync(join(stateDir, 'journal'), { mode: 0o755 });
    chmodSync(join(stateDir, 'journal'), 0o755);
    const store = await opened({ stateDir, maxSegmentBytes: 200 });
    await store.append(logs(5));
    await store.saveSnapshot({ seq: 5, at: 'now', state: { ...emptyProjection(), lastSeq: 5 } });
    await store.close();
    expect(mode(join(stateDir, 'journal'))).toBe(0o700);
    expect(mode(join(stateDir, 'journal', 'segments'))).toBe(0o700);
    expect(mode(join(stateDir, 'journal', 'snapshot.json'))).toBe(0o600);
    for (const segment of segmentsOf(stateDir)) expect(mode(join(stateDir, 'journal', 'segments', segment))).toBe(0o600);
  });

  test('a write failure is told once, never thrown; the store goes on in memory', async () => {
    const parent = tempDir();
    // The state dir is a file: nothing under it can be created.
    const stateDir = join(parent, 'not-a-dir');
    writeFileSync(stateDir, '');
    const failures: Error[] = [];
    const store = await opened({ stateDir, onWriteError: (error) => failures.push(error) });
    const told: number[] = [];
    store.subscribe((event) => told.push(event.seq));
    await expect(store.append(logs(2))).resolves.toHaveLength(2);
    await expect(store.append(logs(1, 2))).resolves.toHaveLength(1);
    expect(failures).toHaveLength(1);
    expect(failures[0]!.message).toMatch(/ENOTDIR|EEXIST/);
    expect(told).toEqual([1, 2, 3]);
    expect(store.lastSeq).toBe(3);
    await expect(store.saveSnapshot({ seq: 3, at: 'now', state: emptyProjection() })).resolves.toBeUndefined();
    expect(failures.length).toBeGreaterThan(1);
    await store.close();
  });

  test('continues the seq of a journal written before the store (events.jsonl, else .1), reading only its tail', async () => {
    const stateDir = tempDir();
    const line = (seq: number, message = `old ${seq}`) =>
      `${JSON.stringify({ type: 'server.log', server: 'a', level: 'info', logger: null, message, seq, at: 'then' })}\n`;
    // The old journal restarted seq with each run: the last line counts, not the largest seq.
    const big = 'x'.repeat(200_000);
    writeFileSync(join(stateDir, 'events.jsonl'), `${line(40)}${line(41)}${line(1)}${line(2, big)}{"type":"serv`);
    const store = await opened({ stateDir });
    expect(store.lastSeq).toBe(2);
    const [event] = await store.append(logs(1));
    expect(event!.seq).toBe(3);
    // Its events stay where they were and are not readable through the store.
    expect(await store.read(0)).toEqual({ gone: 3 });
    expect(seqs(await store.read(2))).toEqual([3]);
    await store.close();
    expect(readFileSync(join(stateDir, 'events.jsonl'), 'utf8')).toContain(big);

    const rotated = tempDir();
    writeFileSync(join(rotated, 'events.jsonl'), '');
    writeFileSync(join(rotated, 'events.jsonl.1'), `${line(7)}${line(8)}`);
    const fromRotated = await opened({ stateDir: rotated });
    expect(fromRotated.lastSeq).toBe(8);
    await fromRotated.close();
  });

  test('an unreadable snapshot is told, and the stored events are folded instead', async () => {
    const stateDir = tempDir();
    const store = await opened({ stateDir });
    await store.append(logs(3));
    await store.close();
    writeFileSync(join(stateDir, 'journal', 'snapshot.json'), '{"seq": 2, "st');
    const failures: Error[] = [];
    const reopened = createFileEventStore({ stateDir, onWriteError: (error) => failures.push(error) });
    const loaded = await reopened.load();
    expect(loaded.snapshot).toBeNull();
    expect(seqs(loaded.events)).toEqual([1, 2, 3]);
    expect(failures.map((error) => error.message)).toEqual([expect.stringMatching(/snapshot\.json is unreadable/)]);
  });
});

describe('the memory event store', () => {
  test('assigns seq, tells subscribers, reads after since; a snapshot drops what it covers', async () => {
    const store = createMemoryEventStore({ snapshotEvery: 3 });
    expect(await store.load()).toEqual({ snapshot: null, events: [] });
    const told: number[] = [];
    const unsubscribe = store.subscribe((event) => told.push(event.seq));
    void store.append(logs(2));
    expect(told).toEqual([1, 2]);
    expect(store.wantsSnapshot).toBe(false);
    await store.append(logs(2, 2));
    expect(store.wantsSnapshot).toBe(true);
    unsubscribe();
    expect(seqs(await store.read(1, 2))).toEqual([2, 3]);

    await store.saveSnapshot({ seq: 3, at: 'now', state: { ...emptyProjection(), lastSeq: 3 } });
    expect(store.wantsSnapshot).toBe(false);
    expect(await store.read(1)).toEqual({ gone: 4 });
    expect(seqs(await store.read(3))).toEqual([4]);
    expect(seqs((await store.load()).events)).toEqual([4]);
    await store.close();
    await expect(store.append(logs(1))).rejects.toThrow(/closed/);
    expect(told).toEqual([1, 2, 3, 4]);
  });
});
