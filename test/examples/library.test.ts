import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, test } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));

// A whole example process (tsx, server-everything): on a busy machine it can take a while to start.
test('the README library example runs as written and leaves no child behind', { timeout: 90_000 }, async () => {
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'examples/library.ts'], {
    cwd: root,
    timeout: 60_000,
  });
  expect(stdout).toContain("'everything: ready,");
  expect(stdout).toContain("'everything__echo'");
  expect(stdout).toContain("text: 'Echo: hello'");
  expect(stdout).toContain("[ 'search_tools' ]");
  expect(stdout).toContain('best match: everything__get-sum');
  // The process exited on its own: shutdown() ended every child and left no handle open.
});
