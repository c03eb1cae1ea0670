// Tool calls run as tasks (io.modelcontextprotocol/tasks) against a real
// 2026-07-28 server that runs `long_job` as one (tasks-server.mjs): the call
// is polled to its result, status changes reach onProgress, aborting the call
// cancels the task, and the call's timeout applies to the whole task. The
// SSE progress stream of the HTTP API is in test/protocol/progress.test.ts.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AbortError } from '../../src/connection/call-limiter.js';
import { FleetError } from '../../src/errors.js';
import type { ToolProgress } from '../../src/catalog/tools/agent-tool.js';
import { untilValue } from '../support/wait.js';
import { connectTracked, firstText, fixtureConfig, tempDir } from './helpers.js';

function taskLog(): { file: string; lines: () => string[] } {
  const file = join(tempDir(), 'tasks.log');
  return { file, lines: () => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : []) };
}

describe('a tool call answered with a task', () => {
  it('is polled to its result, each status change reported as progress', async () => {
    const log = taskLog();
    const connection = await connectTracked('t', fixtureConfig('tasks-server', { env: { FIXTURE_TASK_LOG: log.file } }));
    const progress: ToolProgress[] = [];
    const result = await connection.callTool('long_job', { ms: 300, steps: 3 }, { onProgress: (update) => progress.push(update) });
    expect(result.isError).not.toBe(true);
    expect(firstText(result)).toBe('done after 3 steps');
    expect(progress.map((update) => update.message)).toEqual(['working', 'step 1 of 3', 'step 2 of 3', 'step 3 of 3']);
    expect(progress.map((update) => update.progress)).toEqual([1, 2, 3, 4]);
    expect(log.lines().every((line) => line === 'get task-1')).toBe(true);
  });

  it('is cancelled with tasks/cancel when the call is aborted', async () => {
    const log = taskLog();
    const connection = await connectTracked('t', fixtureConfig('tasks-server', { env: { FIXTURE_TASK_LOG: log.file } }));
    const controller = new AbortController();
    const call = connection.callTool('long_job', { ms: 60_000, steps: 1 }, { signal: controller.signal });
    await untilValue(() => log.lines().length > 0, 'the first task log line');
    controller.abort();
    const error = await call.then(() => null, (err: unknown) => err);
    expect(error).toBeInstanceOf(AbortError);
    expect((error as Error).message).toBe('call to tool "long_job" on server "t" was cancelled');
    await untilValue(() => log.lines().includes('cancel task-1'), 'cancel task-1 in the log');
  });

  it('is cancelled when it reports nothing new within call_timeout_seconds', async () => {
    const log = taskLog();
    const config = fixtureConfig('tasks-server', { env: { FIXTURE_TASK_LOG: log.file }, call_timeout_seconds: 0.5 });
    const connection = await connectTracked('t', config);
    const error = await connection.callTool('long_job', { ms: 60_000, steps: 1 }).then(() => null, (err: unknown) => err);
    expect((error as FleetError).kind).toBe('timeout');
    expect((error as FleetError).message).toContain('reported nothing new within 0.5s');
    await untilValue(() => log.lines().includes('cancel task-1'), 'cancel task-1 in the log');
  });

  it('asking for input fails the call when the connection has no one to answer it', async () => {
    const connection = await connectTracked('t', fixtureConfig('tasks-server'));
    const error = await connection.callTool('approve_job', {}).then(() => null, (err: unknown) => err);
    expect((error as FleetError).kind).toBe('protocol');
    expect((error as FleetError).message).toBe('tool "approve_job" (task task-1) asks for input, and this connection answers none');
  });
});
