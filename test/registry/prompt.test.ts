// The terminal prompt: the question is shown; a secret answer is not echoed.
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ask, askInput } from '../../src/mcp-registry/prompt.js';

function terminal() {
  const input = new PassThrough();
  const output = new PassThrough();
  let shown = '';
  output.on('data', (chunk: Buffer) => (shown += chunk.toString('utf8')));
  return { input, output, shown: () => shown };
}

describe('ask', () => {
  it('a secret: the question is shown, the typed value never is', async () => {
    const t = terminal();
    const answer = ask('header X-Api-Key [secret, not shown]: ', { secret: true, input: t.input, output: t.output });
    t.input.write('s3cret-value\r');
    await expect(answer).resolves.toBe('s3cret-value');
    expect(t.shown()).toContain('header X-Api-Key [secret, not shown]: ');
    expect(t.shown()).not.toContain('s3cret');
  });

  it('a plain value is echoed as typed', async () => {
    const t = terminal();
    const answer = ask('arg target_dir: ', { input: t.input, output: t.output });
    t.input.write('/srv/data\r');
    await expect(answer).resolves.toBe('/srv/data');
    expect(t.shown()).toContain('/srv/data');
  });
  it("an input's default is offered, and an empty answer takes it", async () => {
    const t = terminal();
    const input = { kind: 'arg' as const, name: 'target_dir', required: true, secret: false, description: 'Path to access', default: '/Users/username/Desktop' };
    const answer = askInput(input, { input: t.input, output: t.output });
    t.input.write('\r');
    await expect(answer).resolves.toBe('/Users/username/Desktop');
    expect(t.shown()).toContain('arg target_dir (Path to access) [Enter for /Users/username/Desktop]: ');
    const typed = askInput(input, { input: t.input, output: t.output });
    t.input.write('/srv/data\r');
    await expect(typed).resolves.toBe('/srv/data');
  });

  it('stdin closing at the question (EOF, Ctrl-D) ends it, naming the input; a half-typed value is not taken', async () => {
    const t = terminal();
    const input = { kind: 'arg' as const, name: 'target_dir', required: true, secret: false, default: '/Users/username/Desktop' };
    const answer = askInput(input, { input: t.input, output: t.output });
    t.input.write('/srv/da');
    t.input.end();
    await expect(answer).rejects.toMatchObject({ name: 'PromptClosedError', reason: 'closed', message: 'no answer for arg target_dir (stdin closed)' });
    const u = terminal();
    const ctrlD = ask('header X-Api-Key: ', { secret: true, input: u.input, output: u.output });
    u.input.write('\x04');
    await expect(ctrlD).rejects.toThrow('no answer (stdin closed)');
  });

  it('Ctrl-C at the question ends it as interrupted, not as a closed stdin', async () => {
    const t = terminal();
    const answer = askInput({ kind: 'env' as const, name: 'API_KEY', required: true, secret: true }, { input: t.input, output: t.output });
    t.input.write('\x03');
    await expect(answer).rejects.toMatchObject({ name: 'PromptClosedError', reason: 'interrupted', message: 'no answer for env API_KEY (interrupted)' });
  });
});
