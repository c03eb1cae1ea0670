// The shared owner-only writer (config, OAuth credentials): after a write, the
// temps a dead writer left for the same file are removed, and nothing else.
import { spawn } from 'node:child_process';
import { readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeOwnerOnly } from '../../src/files/owner-only-file.js';
import { modeOf, removeDirs, tempDir } from './helpers.js';

let dir: string;
const dirs: string[] = [];
beforeEach(async () => {
  dir = await tempDir();
  dirs.push(dir);
});
afterEach(() => removeDirs(dirs));

describe('writeOwnerOnly', () => {
  it("writes 0600 and sweeps a dead writer's temps of that file only, leaving a live writer's", async () => {
    const exited = spawn(process.execPath, ['-e', '']);
    await new Promise((resolve) => exited.once('exit', resolve));
    const alive = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)']);
    try {
      const deadOwn = `.s1.json.${exited.pid}.0123456789ab.tmp`;
      const liveOwn = `.s1.json.${alive.pid}.0123456789ab.tmp`;
      const deadOther = `.s2.json.${exited.pid}.0123456789ab.tmp`;
      for (const name of [deadOwn, liveOwn, deadOther]) await writeFile(path.join(dir, name), 'refresh_token=partial');
      await writeOwnerOnly(path.join(dir, 's1.json'), '{}');
      expect((await readdir(dir)).sort()).toEqual([liveOwn, deadOther, 's1.json'].sort());
      expect(await modeOf(path.join(dir, 's1.json'))).toBe(0o600);
    } finally {
      alive.kill();
    }
  });
});
