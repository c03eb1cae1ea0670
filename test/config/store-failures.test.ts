// Faults that real files cannot produce on demand (a full disk, a failing
// rename) are injected by wrapping node:fs/promises for this file only.
import * as fs from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ServerConfigInput } from '../../src/config/schema.js';
import { createConfigStore } from '../../src/config/store.js';
import { modeOf, recordingLogger, removeDirs, tempDir, tempFiles } from './helpers.js';

vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs/promises')>();
  return { ...actual, open: vi.fn(actual.open), rename: vi.fn(actual.rename), chmod: vi.fn(actual.chmod) };
});

const actual = await vi.importActual<typeof import('node:fs/promises')>('node:fs/promises');
const dirs: string[] = [];
let dir: string;
let file: string;

beforeEach(async () => {
  dir = await tempDir();
  dirs.push(dir);
  file = path.join(dir, 'mcp_servers.json');
  vi.mocked(fs.open).mockClear();
  vi.mocked(fs.open).mockImplementation(actual.open);
  vi.mocked(fs.rename).mockClear();
});
afterEach(() => removeDirs(dirs));

function ioError(code: string): Error {
  return Object.assign(new Error(`${code}: injected`), { code });
}

const store = () => createConfigStore({ stateDir: () => dir, logger: recordingLogger() });

/** The next open of a temp file (the document's, not its lock's) gives the handle `wrap` makes of the real one. */
function nextTempOpen(wrap: (handle: FileHandle) => FileHandle): void {
  let done = false;
  vi.mocked(fs.open).mockImplementation(async (p, flags, mode) => {
    const handle = await actual.open(p, flags, mode);
    if (done || !String(p).endsWith('.tmp')) return handle;
    done = true;
    return wrap(handle);
  });
}
const original: Array<[string, ServerConfigInput]> = [['keep', { type: 'local', command: ['original'] }]];
const replacement: Array<[string, ServerConfigInput]> = [['new', { type: 'local', command: ['replacement'] }]];

describe('save under faults', () => {
  it('creates the temp file 0600 in one exclusive open, never chmod-ing afterwards', async () => {
    await store().save(original);
    const tempOpens = vi.mocked(fs.open).mock.calls.filter(([p]) => String(p).endsWith('.tmp') && String(p).includes('mcp_servers.json'));
    expect(tempOpens).toHaveLength(1);
    expect(tempOpens[0]?.slice(1)).toEqual(['wx', 0o600]);
    expect(path.dirname(String(tempOpens[0]?.[0]))).toBe(dir);
    expect(fs.chmod).not.toHaveBeenCalled();
    // The directory is opened too, to fsync the rename.
    expect(vi.mocked(fs.open).mock.calls.some(([p, flags]) => p === dir && flags === 'r')).toBe(true);
    expect(await modeOf(file)).toBe(0o600);
  });

  it('removes the temp file and keeps the old document when the rename fails', async () => {
    const s = store();
    await s.save(original);
    const before = await actual.readFile(file);
    vi.mocked(fs.rename).mockRejectedValueOnce(ioError('EXDEV'));
    await expect(s.save(replacement)).rejects.toThrow('EXDEV');
    expect(await actual.readFile(file)).toEqual(before);
    expect(await tempFiles(dir)).toEqual([]);
    // The lock was released: the next save goes through.
    await s.save(replacement);
    expect((await s.load()).servers.map(([n]) => n)).toEqual(['new']);
  });

  it('removes the temp file and keeps the old document when the write fails (disk full)', async () => {
    const s = store();
    await s.save(original);
    const before = await actual.readFile(file);
    nextTempOpen(
      (handle) =>
        ({
          writeFile: async () => {
            await handle.write('{"servers": {"partial');
            throw ioError('ENOSPC');
          },
          sync: () => handle.sync(),
          close: () => handle.close(),
        }) as unknown as FileHandle,
    );
    await expect(s.update((servers) => ({ ...servers, ...Object.fromEntries(replacement) }))).rejects.toThrow('ENOSPC');
    expect(await actual.readFile(file)).toEqual(before);
    expect(await tempFiles(dir)).toEqual([]);
  });

  it('removes the temp file when fsync fails', async () => {
    const s = store();
    nextTempOpen(
      (handle) =>
        ({
          writeFile: (data: string) => handle.writeFile(data),
          sync: async () => {
            throw ioError('EIO');
          },
          close: () => handle.close(),
        }) as unknown as FileHandle,
    );
    await expect(s.save(original)).rejects.toThrow('EIO');
    expect(await actual.readdir(dir)).toEqual([]);
  });
});
