// One writer per journal: a host that persists its journal in a state dir
// refuses to start while another host of this process, or another live
// process, writes that journal (each would number its events from the same
// seq). A real host and a real child process holding the lock.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createMcpHost } from '../../src/index.js';
import { fixtureCommand } from '../fixtures/index.js';
import { stateDirWith, untilState } from './helpers.js';

const quiet = { info: () => {}, warn: () => {} };

describe('one writer per journal', () => {
  it('a second host of this process on the same state dir is refused; the first runs on; once it stopped, the dir is free', async () => {
    const dir = stateDirWith({ h: { type: 'local', command: fixtureCommand('healthy') } });
    const first = createMcpHost({ stateDir: dir, logger: quiet });
    const second = createMcpHost({ stateDir: dir, logger: quiet });
    await first.start();
    await untilState(first, 'h', 'ready');
    await expect(second.start()).rejects.toThrow(`the journal of ${dir} is in use by another host in this process: give each host its own state dir`);
    await second.shutdown();
    expect(first.server('h')?.state).toBe('ready');
    await first.shutdown();
    expect(existsSync(join(dir, 'journal', 'writer.lock'))).toBe(false);
    const third = createMcpHost({ stateDir: dir, logger: quiet });
    await third.start();
    await third.shutdown();
    // A host keeping its journal in memory writes none: it is not refused.
    const inMemory = [createMcpHost({ stateDir: dir, logger: quiet, persistJournal: false }), createMcpHost({ stateDir: dir, logger: quiet, persistJournal: false })];
    for (const host of inMemory) await host.start();
    for (const host of inMemory) await host.shutdown();
  });

  it('a journal another live process writes is refused, naming it; a dead one’s lock is taken over', async () => {
    const dir = stateDirWith({});
    const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
    try {
      mkdirSync(join(dir, 'journal'), { recursive: true });
      writeFileSync(join(dir, 'journal', 'writer.lock'), String(holder.pid));
      const refused = createMcpHost({ stateDir: dir, logger: quiet });
      await expect(refused.start()).rejects.toThrow(`the journal of ${dir} is in use by process ${holder.pid}`);
      await refused.shutdown();
    } finally {
      holder.kill('SIGKILL');
      await new Promise((done) => holder.once('exit', done));
    }
    const after = createMcpHost({ stateDir: dir, logger: quiet });
    await after.start();
    await after.shutdown();
  });
});
