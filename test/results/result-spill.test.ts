// The spill store on a real directory: owner-only files written whole, ids
// that do not repeat, expiry and the per-server total (oldest first), a
// restart that finds what was kept, and pages that never split a character.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, test } from 'vitest';
import { createResultSpill, ownerOf, ResultSpillError, type ResultSpill, type ResultSpillOptions } from '../../src/catalog/tools/result-spill.js';

const LIMITS = { ttlSeconds: 60, maxBytes: 1024 * 1024 };
const mode = (path: string) => statSync(path).mode & 0o777;

let stores: ResultSpill[] = [];
afterEach(() => {
  for (const store of stores) store.close();
  stores = [];
});

/** A store in a fresh `<dir>/results` with a clock the test moves. */
function spillAt(dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-results-')), options: Partial<ResultSpillOptions> = {}) {
  const clock = { now: 1_700_000_000_000 };
  const resultsDir = join(dir, 'results');
  const store = createResultSpill({ dir: resultsDir, now: () => clock.now, ...options });
  stores.push(store);
  return { store, clock, dir, resultsDir, files: () => (existsSync(resultsDir) ? readdirSync(resultsDir).sort() : []) };
}

/** Every page from 0 to the end, `length` bytes asked each time. */
async function readAll(store: ResultSpill, id: string, length: number) {
  const pages = [];
  for (let offset = 0; ; ) {
    const page = await store.read(id, offset, length);
    pages.push(page);
    if (page.done) return pages;
    offset = page.offset + page.length;
  }
}

async function refusal(promise: Promise<unknown>): Promise<ResultSpillError> {
  const error = await promise.then(
    () => undefined,
    (failure: unknown) => failure,
  );
  if (!(error instanceof ResultSpillError)) throw new Error(`expected a ResultSpillError, got ${String(error)}`);
  return error;
}

describe('keeping a result', () => {
  test('writes it whole into an owner-only file in an owner-only directory, and nothing else', async () => {
    const { store, resultsDir, files } = spillAt();
    expect(files()).toEqual([]); // nothing is created until something is kept
    const text = 'é'.repeat(100_000);
    const kept = await store.keep('srv', text, LIMITS);
    expect(kept).toEqual({ id: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/), bytes: 200_000 });
    expect(mode(resultsDir)).toBe(0o700);
    // One file, no temp left over; named so that a restart can rebuild the index.
    // The owner (here the admin, no principal given) as the SHA-256 of its id: no name on disk.
    expect(files()).toEqual([expect.stringMatching(new RegExp(`^srv\\.\\d+\\.\\d+\\.${kept.id}\\.${ownerOf('admin')}\\.txt$`))]);
    const file = join(resultsDir, files()[0]!);
    expect(mode(file)).toBe(0o600);
    expect(readFileSync(file, 'utf8')).toBe(text);
    expect(store.hasResults()).toBe(true);
  });

  test('narrows a results directory that others could read', async () => {
    const { store, resultsDir } = spillAt();
    mkdirSync(resultsDir, { mode: 0o755 });
    await store.keep('srv', 'x', LIMITS);
    expect(mode(resultsDir)).toBe(0o700);
  });

  test('gives every result its own unguessable id, also when kept at once', async () => {
    const { store, resultsDir, files } = spillAt();
    const texts = Array.from({ length: 20 }, (_, i) => `${i}`.repeat(10_000 + i));
    const kept = await Promise.all(texts.map((text, i) => store.keep(i % 2 ? 'a' : 'b', text, LIMITS)));
    expect(new Set(kept.map((k) => k.id)).size).toBe(20);
    expect(files()).toHaveLength(20);
    for (const [i, { id }] of kept.entries()) {
      const name = files().find((file) => file.includes(`.${id}.`))!;
      expect(readFileSync(join(resultsDir, name), 'utf8')).toBe(texts[i]);
    }
  });

  test('refuses a result above the server’s total, naming the setting', async () => {
    const { store, files } = spillAt();
    const error = await refusal(store.keep('srv', 'x'.repeat(101), { ttlSeconds: 60, maxBytes: 100 }));
    expect(error.kind).toBe('too_large');
    expect(error.message).toContain('results_max_bytes');
    expect(files()).toEqual([]);
  });
});

describe('pruning', () => {
  test('a result older than its TTL is unreadable, and gone from disk on the next prune', async () => {
    const { store, clock, files } = spillAt();
    const short = await store.keep('srv', 'short-lived', { ttlSeconds: 10, maxBytes: 1000 });
    const long = await store.keep('srv', 'long-lived', { ttlSeconds: 100, maxBytes: 1000 });
    clock.now += 10_000;
    const error = await refusal(store.read(short.id, 0, 100));
    expect(error.kind).toBe('unknown_id');
    expect(error.message).toContain(short.id);
    expect(files()).toHaveLength(1);
    expect((await store.read(long.id, 0, 100)).text).toBe('long-lived');
    clock.now += 90_000;
    expect(store.hasResults()).toBe(false);
    await store.prune();
    expect(files()).toEqual([]);
  });

  test('expired results go on a timer too, without waiting for another keep', async () => {
    const { store, clock, files } = spillAt(undefined, { pruneIntervalMs: 20 });
    await store.keep('srv', 'soon gone', { ttlSeconds: 1, maxBytes: 1000 });
    clock.now += 1000;
    await expect.poll(files, { timeout: 5000 }).toEqual([]);
  });

  test('the timer does not keep a process alive', () => {
    const store = pathToFileURL(join(import.meta.dirname, '../../src/catalog/tools/result-spill.ts')).href;
    const dir = join(mkdtempSync(join(tmpdir(), 'mcp-fleet-unref-')), 'results');
    const script = `
      const { createResultSpill } = await import(${JSON.stringify(store)});
      const spill = createResultSpill({ dir: ${JSON.stringify(dir)}, pruneIntervalMs: 50 });
      await spill.keep('srv', 'kept', { ttlSeconds: 60, maxBytes: 1024 });
      console.log('kept');`;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 10_000 });
    expect(child.stderr).toBe('');
    expect(child.stdout).toBe('kept\n');
    // Exited by itself: not killed by the timeout.
    expect(child.signal).toBeNull();
    expect(child.status).toBe(0);
  });

  test('above the server’s total the oldest results go first; other servers’ stay', async () => {
    const { store, clock, files } = spillAt();
    const limits = { ttlSeconds: 60, maxBytes: 100 };
    const other = await store.keep('other', 'o'.repeat(90), limits);
    const ids: string[] = [];
    for (const letter of 'abcd') {
      clock.now += 1;
      ids.push((await store.keep('srv', letter.repeat(40), limits)).id);
    }
    // a (40) + b (40) fit; c makes 120: a goes; d makes 120 again: b goes.
    for (const id of ids.slice(0, 2)) expect((await refusal(store.read(id, 0, 10))).kind).toBe('unknown_id');
    expect((await store.read(ids[2]!, 0, 100)).text).toBe('c'.repeat(40));
    expect((await store.read(ids[3]!, 0, 100)).text).toBe('d'.repeat(40));
    expect((await store.read(other.id, 0, 100)).text).toBe('o'.repeat(90));
    expect(files()).toHaveLength(3);
  });

  test('a restarted store reads what was kept, and removes at startup what expired and temps of writes that never finished', async () => {
    const first = spillAt();
    const kept = await first.store.keep('srv', 'kept across a restart', { ttlSeconds: 60, maxBytes: 1000 });
    const expired = await first.store.keep('srv', 'expires', { ttlSeconds: 1, maxBytes: 1000 });
    // A writer killed mid-write leaves its temp behind; the result it was for expires like any other.
    const keptName = first.files().find((file) => file.includes(kept.id))!;
    const deadTemp = `.${keptName.replace(/^srv\.(\d+)\.(\d+)\./, (_, at: string) => `srv.${at}.${Number(at) + 1000}.`).replace(kept.id, 'Z'.repeat(22))}.99999999.abcdef.tmp`;
    writeFileSync(join(first.resultsDir, deadTemp), 'half a resu');
    first.store.close();

    const second = spillAt(first.dir, { now: () => first.clock.now + 5000 });
    expect((await second.store.read(kept.id, 0, 100)).text).toBe('kept across a restart');
    expect((await refusal(second.store.read(expired.id, 0, 100))).kind).toBe('unknown_id');
    expect(second.files()).toEqual([keptName]);
    expect(second.store.hasResults()).toBe(true);
  });
});

describe('reading', () => {
  // 1-, 2-, 3- and 4-byte characters, so that most page ends fall inside one.
  const TEXT = Array.from({ length: 200 }, (_, i) => `${i} aé€😀`).join('|');

  test('pages through to the end at any length without splitting a character; the pages make the whole', async () => {
    const { store } = spillAt();
    const { id, bytes } = await store.keep('srv', TEXT, LIMITS);
    for (const length of [1, 2, 3, 5, 7, 64, 1000, bytes, bytes + 10]) {
      const pages = await readAll(store, id, length);
      expect(pages.map((page) => page.text).join(''), `length ${length}`).toBe(TEXT);
      for (const page of pages) {
        expect(page.text).not.toContain('\uFFFD');
        expect(Buffer.byteLength(page.text)).toBe(page.length);
        expect(page.total).toBe(bytes);
        // A page is never longer than asked, unless one character is.
        expect(page.length).toBeLessThanOrEqual(Math.max(length, 4));
      }
      expect(pages.at(-1)).toMatchObject({ done: true });
      expect(pages.slice(0, -1).every((page) => !page.done)).toBe(true);
    }
  });

  test('an offset inside a character starts at that character; a length shorter than one gives the character', async () => {
    const { store } = spillAt();
    const { id } = await store.keep('srv', 'a😀b', LIMITS);
    expect(await store.read(id, 2, 1)).toEqual({ text: '😀', offset: 1, length: 4, total: 6, done: false });
    expect(await store.read(id, 5, 10)).toEqual({ text: 'b', offset: 5, length: 1, total: 6, done: true });
    expect(await store.read(id, 6, 10)).toEqual({ text: '', offset: 6, length: 0, total: 6, done: true });
  });

  test('an unknown id, or an offset past the end, is a clear refusal naming it', async () => {
    const { store } = spillAt();
    const { id } = await store.keep('srv', 'abc', LIMITS);
    for (const unknown of ['AAAAAAAAAAAAAAAAAAAAAA', '../../etc/passwd', '']) {
      const error = await refusal(store.read(unknown, 0, 10));
      expect(error.kind).toBe('unknown_id');
      expect(error.message).toContain(`"${unknown}"`);
    }
    const past = await refusal(store.read(id, 4, 10));
    expect(past.kind).toBe('out_of_range');
    expect(past.message).toContain('offset 4');
  });
});

describe('whose result it is', () => {
  test('a result is read by the principal it was kept for alone; a restarted store keeps that; an old file without an owner is the admin\'s', async () => {
    const { store, dir, resultsDir } = spillAt();
    const kept = await store.keep('srv', 'alice only', LIMITS, 'alice');
    expect((await store.read(kept.id, 0, 100, 'alice')).text).toBe('alice only');
    for (const other of ['bob', undefined, 'admin']) {
      const error = await refusal(store.read(kept.id, 0, 100, other));
      expect(error.kind).toBe('unknown_id');
      expect(error.message).toBe(`no kept result "${kept.id}": it is unknown or has expired`);
    }
    expect(store.hasResults('alice')).toBe(true);
    expect(store.hasResults('bob')).toBe(false);
    expect(store.hasResults()).toBe(false);

    // A file of an older run (no owner in its name) is the admin's.
    const oldId = 'OLDOLDOLDOLDOLDOLDOLD0';
    writeFileSync(join(resultsDir, `srv.1700000000000.1700000060000.${oldId}.txt`), 'the admin\'s');
    const again = spillAt(dir).store;
    expect((await again.read(kept.id, 0, 100, 'alice')).text).toBe('alice only');
    expect((await refusal(again.read(kept.id, 0, 100, 'bob'))).kind).toBe('unknown_id');
    expect((await again.read(oldId, 0, 100)).text).toBe('the admin\'s');
    expect((await refusal(again.read(oldId, 0, 100, 'alice'))).kind).toBe('unknown_id');
  });
});
