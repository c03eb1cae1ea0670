// Progress to the library caller and to HTTP callers (server-sent events),
// and max_total_timeout_seconds bounding a whole call.
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { parseServerConfig } from '../../src/config/validate.js';
import type { ToolProgress } from '../../src/catalog/tools/agent-tool.js';
import { fixtureCommand } from '../fixtures/index.js';
import { serve, type Served } from '../http/helpers.js';
import { startHost, textOf, type Running } from './helpers.js';

let running: Running | undefined;
let served: Served | undefined;
afterEach(async () => {
  await served?.close();
  await running?.close();
  running = undefined;
  served = undefined;
});

function healthy(dir: string, name: string, extra: Record<string, unknown> = {}) {
  return {
    type: 'local',
    command: fixtureCommand('healthy'),
    env: { FIXTURE_PID_FILE: join(dir, `${name}.pid`), FIXTURE_CANCEL_LOG: join(dir, 'cancel.log') },
    timeout_seconds: 15,
    ...extra,
  };
}

/** `event: x / data: json` blocks of a server-sent event body. */
function parseSse(body: string): Array<{ event: string; data: unknown }> {
  return body
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const lines = block.split('\n');
      const event = lines.find((line) => line.startsWith('event: '))!.slice('event: '.length);
      const data = JSON.parse(lines.find((line) => line.startsWith('data: '))!.slice('data: '.length));
      return { event, data };
    });
}

describe('progress', () => {
  test('host.callTool forwards each progress notification to onProgress', async () => {
    running = await startHost((dir) => ({ h: healthy(dir, 'h') }), ['h']);
    const seen: ToolProgress[] = [];
    const result = await running.host.callTool('h__slow', { ms: 300, steps: 3 }, { onProgress: (p) => seen.push(p) });
    expect(result.details.is_error).toBe(false);
    // The last one is sent in the same instant as the result, and still comes first (docs/protocol-features.md).
    expect(seen).toEqual([1, 2, 3].map((step) => ({ progress: step, total: 3, message: `step ${step}` })));
  });

  test('progress read in the same chunk as the result still reaches onProgress first, every notification in order', async () => {
    running = await startHost(() => ({ b: { type: 'local', command: fixtureCommand('progress-burst'), timeout_seconds: 15 } }), ['b']);
    for (const count of [1, 5]) {
      const seen: number[] = [];
      const result = await running.host.callTool('b__burst', { count }, { onProgress: (p) => seen.push(p.progress) });
      expect(textOf(result)).toBe(`sent ${count}`);
      expect(seen).toEqual(Array.from({ length: count }, (_, i) => i + 1));
    }
  });

  test('POST …/call with Accept: text/event-stream streams progress events, then one result event', async () => {
    running = await startHost((dir) => ({ h: healthy(dir, 'h') }), ['h']);
    served = await serve(running.host);
    const reply = await served.request('/api/mcp/tools/h__slow/call', {
      method: 'POST',
      headers: { accept: 'text/event-stream' },
      body: { arguments: { ms: 300, steps: 3 } },
    });
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toMatch(/^text\/event-stream/);
    const events = parseSse(reply.text);
    // The last progress can be dropped by the SDK when it arrives together with the result.
    expect(events.map((e) => e.event).join(',')).toMatch(/^progress,progress,(progress,)?result$/);
    expect(events[0]!.data).toEqual({ progress: 1, total: 3, message: 'step 1' });
    expect(events[1]!.data).toEqual({ progress: 2, total: 3, message: 'step 2' });
    expect(events.at(-1)!.data).toMatchObject({ details: { is_error: false, server: 'h', tool: 'slow' } });

    // A tool error is a result event too; without the Accept header the answer is plain JSON, as before.
    const failed = parseSse((await served.request('/api/mcp/tools/h__fail/call', {
      method: 'POST', headers: { accept: 'text/event-stream' }, body: {},
    })).text);
    expect(failed).toEqual([{ event: 'result', data: expect.objectContaining({ details: expect.objectContaining({ is_error: true }) }) }]);
    const plain = await served.request('/api/mcp/tools/h__slow/call', { method: 'POST', body: { arguments: { ms: 10, steps: 1 } } });
    expect(plain.headers['content-type']).toMatch(/^application\/json/);
    expect(plain.json.details.is_error).toBe(false);
  });

  test('a tool the server runs as a task streams its status changes as progress events, then its result', async () => {
    running = await startHost(() => ({ t: { type: 'local', command: fixtureCommand('tasks-server') } }), ['t']);
    served = await serve(running.host);
    const reply = await served.request('/api/mcp/tools/t__long_job/call', {
      method: 'POST',
      headers: { accept: 'text/event-stream' },
      body: { arguments: { ms: 300, steps: 3 } },
    });
    const events = parseSse(reply.text);
    expect(events.map((e) => e.event)).toEqual(['progress', 'progress', 'progress', 'progress', 'result']);
    expect(events.slice(0, 4).map((e) => e.data)).toEqual(
      ['working', 'step 1 of 3', 'step 2 of 3', 'step 3 of 3'].map((message, index) => ({ progress: index + 1, message })),
    );
    expect(events.at(-1)!.data).toMatchObject({ content: [{ type: 'text', text: 'done after 3 steps' }], details: { is_error: false } });
  });

  test('server-everything: trigger-long-running-operation reports its steps', async () => {
    const EVERYTHING = ['node', 'node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'];
    running = await startHost(() => ({ everything: { type: 'local', command: EVERYTHING } }), ['everything']);
    const seen: ToolProgress[] = [];
    const result = await running.host.callTool(
      'everything__trigger-long-running-operation',
      { duration: 1.5, steps: 3 },
      { onProgress: (p) => seen.push(p) },
    );
    expect(result.details.is_error).toBe(false);
    expect(seen.slice(0, 2).map((p) => [p.progress, p.total])).toEqual([[1, 3], [2, 3]]);
  });
});

describe('max_total_timeout_seconds', () => {
  test('bounds a call that keeps sending progress, and the server is told to stop', async () => {
    running = await startHost(
      (dir) => ({ h: healthy(dir, 'h', { call_timeout_seconds: 2, max_total_timeout_seconds: 1 }) }),
      ['h'],
    );
    // Progress every 100 ms would keep resetting call_timeout_seconds for 60 s.
    const result = await running.host.callTool('h__slow', { ms: 60_000, steps: 600 });
    expect(result.details.is_error).toBe(true);
    expect(textOf(result)).toContain('tool "slow" did not finish within max_total_timeout_seconds (1s)');

    const silent = await running.host.callTool('h__wait_for_cancel', {});
    expect(textOf(silent)).toContain('max_total_timeout_seconds (1s)');
    const log = join(running.dir, 'cancel.log');
    await vi.waitFor(() => expect(existsSync(log) && readFileSync(log, 'utf8')).toMatch(/^cancelled \d+\n/), { timeout: 20_000 });
    // The server stays ready and answers the next call.
    expect(textOf(await running.host.callTool('h__echo', { text: 'still here' }))).toBe('still here');
  });

  test('progress still resets call_timeout_seconds when no total bound is set', async () => {
    running = await startHost((dir) => ({ h: healthy(dir, 'h', { call_timeout_seconds: 1 }) }), ['h']);
    const result = await running.host.callTool('h__slow', { ms: 2000, steps: 20 });
    expect(result.details.is_error).toBe(false);
  });

  test('config: positive seconds or null; log_level one of the MCP levels', () => {
    const base = { type: 'local', command: ['x'] };
    expect(parseServerConfig('a', { ...base, max_total_timeout_seconds: 30 }).max_total_timeout_seconds).toBe(30);
    expect(parseServerConfig('a', { ...base, max_total_timeout_seconds: null }).max_total_timeout_seconds).toBeNull();
    expect(parseServerConfig('a', base).max_total_timeout_seconds).toBeUndefined();
    expect(() => parseServerConfig('a', { ...base, max_total_timeout_seconds: 0 })).toThrow(/max_total_timeout_seconds/);
    expect(parseServerConfig('a', { ...base, log_level: 'warning' }).log_level).toBe('warning');
    expect(() => parseServerConfig('a', { ...base, log_level: 'loud' })).toThrow(/log_level/);
  });
});
