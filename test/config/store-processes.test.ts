// Writers of one config file in several processes: a worker's writes and
// `mcp-fleet import` runs at the same time. Each write is a whole document,
// so without a lock between processes the later one dropped what the other
// had just added (a server the API had confirmed with 201).
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, test } from 'vitest';
import { createConfigStore } from '../../src/config/store.js';
import { BIN } from '../support/cli.js';
import { cleanEnv } from '../support/env.js';
import { recordingLogger, removeDirs, tempDir } from './helpers.js';

const run = promisify(execFile);
const dirs: string[] = [];
afterAll(() => removeDirs(dirs));

test('an import in another process while this one writes loses no server of either', { timeout: 60_000 }, async () => {
  const stateDir = await tempDir('mcp-fleet-two-writers-');
  dirs.push(stateDir);
  const store = createConfigStore({ stateDir: () => stateDir, logger: recordingLogger() });
  await store.save([]);
  const imports = [0, 1, 2].map((n) => {
    const file = path.join(stateDir, `import-${n}.json`);
    const servers = Object.fromEntries([0, 1, 2, 3].map((i) => [`imp${n}-${i}`, { command: 'node', args: ['x'], disabled: true }]));
    writeFileSync(file, JSON.stringify({ mcpServers: servers }));
    return file;
  });
  // This process adds a server every few milliseconds until every import has run.
  let writing = true;
  const added: string[] = [];
  const writer = (async () => {
    for (let i = 0; writing; i += 1) {
      const name = `api${i}`;
      await store.update((servers) => ({ ...servers, [name]: { type: 'local', command: ['node', 'x'], enabled: false } }));
      added.push(name);
    }
  })();
  await Promise.all(imports.map((file) => run(process.execPath, [BIN, 'import', file, '--state-dir', stateDir], { env: cleanEnv() })));
  writing = false;
  await writer;

  const names = Object.keys((JSON.parse(readFileSync(path.join(stateDir, 'mcp_servers.json'), 'utf8')) as { servers: object }).servers);
  const imported = [0, 1, 2].flatMap((n) => [0, 1, 2, 3].map((i) => `imp${n}-${i}`));
  expect(added.length).toBeGreaterThan(3);
  expect(names.filter((name) => name.startsWith('imp')).sort()).toEqual(imported.sort());
  expect(names.filter((name) => name.startsWith('api'))).toEqual(added);
});
