// `makeDirs`, the state dir's `mkdir -p`: each missing folder made with the
// mode, an existing one taken as it is, and a refusal reported rather than
// retried for ever.
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { makeDirs } from '../../src/files/make-dirs.js';

const root = mkdtempSync(join(tmpdir(), 'mcp-fleet-make-dirs-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

test('makes every missing folder on the way with the mode, and takes an existing one as it is', async () => {
  const deep = join(root, 'a', 'b', 'c');
  await makeDirs(deep, 0o700);
  for (const dir of [join(root, 'a'), join(root, 'a', 'b'), deep]) expect(statSync(dir).mode & 0o777).toBe(0o700);
  await makeDirs(deep, 0o700);
  // Two at once over the same path: both succeed.
  await Promise.all([makeDirs(join(root, 'x', 'y'), 0o700), makeDirs(join(root, 'x', 'y'), 0o700)]);
  expect(statSync(join(root, 'x', 'y')).isDirectory()).toBe(true);
});

test('a file in the way is an error naming it', async () => {
  const file = join(root, 'a-file');
  writeFileSync(file, '');
  await expect(makeDirs(file)).rejects.toMatchObject({ code: 'EEXIST' });
  await expect(makeDirs(join(file, 'below'))).rejects.toMatchObject({ code: 'ENOTDIR' });
});

test.runIf(process.platform === 'linux')('a folder the kernel refuses under a parent that exists fails with its error', async () => {
  await expect(makeDirs('/proc/mcp-fleet-nope/state')).rejects.toMatchObject({ code: 'ENOENT' });
});
