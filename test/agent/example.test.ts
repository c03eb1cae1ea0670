import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, expect, test } from 'vitest';
import { startScriptedModel, textStep, toolCallsStep, type ScriptedModel } from '../support/scripted-model.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);
const KEY = 'sk-example-key-0123456789';

let endpoint: ScriptedModel | undefined;
afterEach(async () => {
  await endpoint?.close();
  endpoint = undefined;
});

// A whole example process (tsx, server-everything) per test: on a busy machine it can take a while to start.
test('examples/agent-loop.ts runs a turn against the endpoint its env vars name, and exits', { timeout: 90_000 }, async () => {
  endpoint = await startScriptedModel([
    toolCallsStep([{ id: 'call_1', name: 'everything__echo', args: { message: 'hello fleet' } }]),
    (request) => textStep(`It returned "${request.body.messages.at(-1).content}".`),
  ]);
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'examples/agent-loop.ts', 'Echo hello fleet'], {
    cwd: root,
    timeout: 60_000,
    env: { ...process.env, OPENAI_BASE_URL: endpoint.baseUrl, OPENAI_API_KEY: KEY, OPENAI_MODEL: 'scripted' },
  });
  expect(stdout).toContain('→ everything__echo {"message":"hello fleet"}');
  expect(stdout).toContain('It returned "Echo: hello fleet".');
  expect(stdout).not.toContain(KEY);
  expect(endpoint.requests[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
  expect(endpoint.requests[0]!.body).toMatchObject({ model: 'scripted', messages: [{ role: 'user', content: 'Echo hello fleet' }] });
});

test('examples/agent-loop.ts without OPENAI_MODEL says what to set', { timeout: 90_000 }, async () => {
  const env = { ...process.env };
  delete env.OPENAI_MODEL;
  const failure = await run(process.execPath, ['--import', 'tsx', 'examples/agent-loop.ts'], { cwd: root, timeout: 60_000, env }).catch(
    (err: { code: number; stderr: string }) => err,
  );
  expect(failure).toMatchObject({ code: 1, stderr: expect.stringContaining('Set OPENAI_MODEL') });
});
