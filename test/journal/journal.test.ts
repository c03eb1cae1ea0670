// The journal itself: `events.jsonl` holds exactly the in-memory events, owner
// only; the file rotates to `.1` past `maxFileBytes`; memory keeps the newest
// `maxInMemory`; a write failure is reported and the journal goes on.
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import type { JournalEvent, JournalEventInput } from '../../src/services/journal/events.js';
import { createJournal } from '../../src/services/journal/journal.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-journal-'));
  dirs.push(dir);
  return dir;
}

const transition = (server: string, index: number): JournalEventInput => ({
  type: 'server.transitioned',
  server,
  actor: server,
  from: index === 0 ? null : 'pending',
  to: index % 2 === 0 ? 'pending' : 'ready',
  error: null,
  error_kind: null,
});

function linesOf(file: string): JournalEvent[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as JournalEvent);
}

describe('the journal file', () => {
  test('events.jsonl holds exactly the in-memory events, one line each, owner-only', () => {
    const file = join(tempDir(), 'nested', 'events.jsonl');
    const journal = createJournal({ file: () => file });
    const appended = Array.from({ length: 5 }, (_, index) => journal.append(transition(`s${index % 2}`, index)));

    expect(appended.map((event) => event.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(journal.since()).toEqual(appended);
    expect(linesOf(file)).toEqual(journal.since());
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(journal.lastSeq).toBe(5);
  });

  test('past maxFileBytes the file moves to .1 and a fresh one starts; nothing is lost in memory', () => {
    const file = join(tempDir(), 'events.jsonl');
    // Every line the same length (one-digit seq, fixed-width time), so "full" is exact.
    const event = transition('server-0', 1);
    const lineBytes = JSON.stringify({ ...event, seq: 1, at: new Date().toISOString() }).length + 1;
    const maxFileBytes = lineBytes * 3;
    const journal = createJournal({ file: () => file, maxFileBytes });

    for (let index = 0; index < 3; index += 1) journal.append(event);
    expect(existsSync(`${file}.1`)).toBe(false);
    expect(statSync(file).size).toBe(maxFileBytes);
    // The file is full: the next append rotates first.
    journal.append(event);
    expect(linesOf(`${file}.1`).map((event) => event.seq)).toEqual([1, 2, 3]);
    expect(linesOf(file).map((event) => event.seq)).toEqual([4]);

    for (let index = 4; index < 8; index += 1) journal.append(event);
    // A second rotation replaces .1; the disk keeps the newest events, in order.
    expect(linesOf(`${file}.1`).map((event) => event.seq)).toEqual([4, 5, 6]);
    expect(linesOf(file).map((event) => event.seq)).toEqual([7, 8]);
    expect(statSync(file).size).toBeLessThanOrEqual(maxFileBytes);
    expect([...linesOf(`${file}.1`), ...linesOf(file)]).toEqual(journal.since(3));
    expect(journal.since().map((event) => event.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  test('the file is looked up on every append', () => {
    const dir = tempDir();
    let file: string | null = null;
    const journal = createJournal({ file: () => file });
    journal.append(transition('a', 0));
    file = join(dir, 'first.jsonl');
    journal.append(transition('a', 1));
    file = join(dir, 'second.jsonl');
    journal.append(transition('a', 2));
    expect(linesOf(join(dir, 'first.jsonl')).map((event) => event.seq)).toEqual([2]);
    expect(linesOf(join(dir, 'second.jsonl')).map((event) => event.seq)).toEqual([3]);
  });

  test('a write failure is reported and the journal goes on in memory', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'not-a-dir'), '');
    const failures: Error[] = [];
    const journal = createJournal({ file: () => join(dir, 'not-a-dir', 'events.jsonl'), onWriteError: (error) => failures.push(error) });
    journal.append(transition('a', 0));
    journal.append(transition('a', 1));
    expect(failures).toHaveLength(2);
    expect(failures[0]!.message).toMatch(/ENOTDIR|EEXIST/);
    expect(journal.since().map((event) => event.seq)).toEqual([1, 2]);
  });
});

describe('the journal in memory', () => {
  test('keeps the newest maxInMemory events; since(n) gives those after n', () => {
    const journal = createJournal({ file: () => null, maxInMemory: 3 });
    for (let index = 0; index < 5; index += 1) journal.append(transition('a', index));
    expect(journal.since().map((event) => event.seq)).toEqual([3, 4, 5]);
    expect(journal.since(4).map((event) => event.seq)).toEqual([5]);
    expect(journal.since(5)).toEqual([]);
    expect(journal.since(1).map((event) => event.seq)).toEqual([3, 4, 5]);
  });

  test('also bounds the names the kept events list; the newest event stays however big', () => {
    const journal = createJournal({ file: () => null, maxInMemoryEntries: 20 });
    const registration = (count: number) => ({
      type: 'tools.registered' as const,
      server: 'big',
      tools: Array.from({ length: count }, (_, i) => ({ name: `big__t${i}`, original: `t${i}`, description: '' })),
    });
    journal.append(transition('a', 0));
    journal.append(registration(8)); // 9
    journal.append(registration(8)); // 9 + 9 + 1 = 19
    expect(journal.since().map((event) => event.seq)).toEqual([1, 2, 3]);
    journal.append(transition('a', 1)); // 20
    journal.append(transition('a', 2)); // 21: the oldest goes
    expect(journal.since().map((event) => event.seq)).toEqual([2, 3, 4, 5]);
    journal.append(registration(30)); // over the bound alone
    expect(journal.since().map((event) => event.seq)).toEqual([6]);
    expect(journal.since(6)).toEqual([]);
  });

  test('many more events than it keeps: since(n) stays exact across compactions', () => {
    const journal = createJournal({ file: () => null, maxInMemory: 100 });
    for (let index = 0; index < 5000; index += 1) journal.append(transition('a', index));
    expect(journal.since().map((event) => event.seq)).toEqual(Array.from({ length: 100 }, (_, i) => 4901 + i));
    expect(journal.since(4950).map((event) => event.seq)).toEqual(Array.from({ length: 50 }, (_, i) => 4951 + i));
    expect(journal.since(10).length).toBe(100);
    expect(journal.lastSeq).toBe(5000);
  });

  test('subscribers get every event once, in order, until they unsubscribe', () => {
    const journal = createJournal({ file: () => null });
    const seen: number[] = [];
    const unsubscribe = journal.subscribe((event) => seen.push(event.seq));
    journal.append(transition('a', 0));
    journal.append(transition('a', 1));
    unsubscribe();
    journal.append(transition('a', 2));
    expect(seen).toEqual([1, 2]);
  });
});
