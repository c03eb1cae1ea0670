// A child's stderr reaches the tail as UTF-8 text, whole characters only: a
// character whose bytes arrive in two chunks is not broken in two, and bytes
// cut off by the end of the stream still show (as U+FFFD) rather than vanish.
import { expect, it } from 'vitest';
import { ChildTransport } from '../../src/connection/child-transport.js';

/** Runs `script` (node -e) as a child and hands back everything it wrote to stderr, once the stream has ended. */
async function stderrOf(script: string): Promise<string> {
  let stderr = '';
  const transport = new ChildTransport({ command: [process.execPath, '-e', script], env: {}, cwd: null }, (chunk) => {
    stderr += chunk;
  });
  await transport.start();
  await transport.exited;
  await transport.stderrEnded;
  await transport.close();
  return stderr;
}

it('joins a character whose bytes arrive in two chunks', async () => {
  // "é" is C3 A9: the first byte alone, a pause, then the second with the rest of the line.
  const script = `process.stderr.write(Buffer.from([0x63, 0x61, 0x66, 0xc3])); setTimeout(() => process.stderr.write(Buffer.from([0xa9, 0x0a])), 50);`;
  expect(await stderrOf(script)).toBe('café\n');
});

it('shows bytes of a character cut off by the end of the stream', async () => {
  expect(await stderrOf(`process.stderr.write(Buffer.from([0x61, 0xe2, 0x82]));`)).toBe('a\ufffd');
});
