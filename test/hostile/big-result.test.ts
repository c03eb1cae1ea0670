// A server answering with 20 MB results: what the agent gets is bounded by
// max_result_bytes (text cut with a note, image data replaced by one, oversized
// structured content dropped), the worker holds no more than that once the
// call is over, and a message above the 32 MiB wire limit ends the connection
// with an error that says so. The worker keeps serving throughout.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { AgentToolResult } from '../../src/catalog/tools/agent-tool.js';
import { DEFAULT_MAX_RESULT_BYTES } from '../../src/config/schema.js';
import {
  closeAndExpectNoChild,
  expectStillServing,
  hostile,
  isAlive,
  pidFile,
  readPid,
  startWithHealthy,
  untilState,
  type Fleet,
} from './helpers.js';

const MB = 1_000_000;
const LINE = 'the quick brown fox jumps over the lazy dog 0123456789\n';
const NOTE = /\n\[truncated: (\d+) of (\d+) bytes shown — max_result_bytes\]$/;

/** Bytes of content the agent sees, notes included. */
function contentBytes(result: AgentToolResult): number {
  return result.content.reduce((sum, block) => sum + Buffer.byteLength(block.type === 'text' ? block.text : block.data), 0);
}

let fleet: Fleet;
let pids: number[] = [];
beforeAll(async () => {
  fleet = await startWithHealthy((dir) => ({ big: hostile(dir, 'big', 'big-result', { large_results: 'truncate' }) }));
  pids.push(readPid(pidFile(fleet.dir, 'big')));
});
afterAll(async () => {
  if (fleet) await closeAndExpectNoChild(fleet, pids);
});

describe('a 20 MB result', () => {
  test('its text is cut to max_result_bytes with a note saying so, while the worker keeps serving', async () => {
    const call = fleet.host.callTool('big__big_text', { mb: 20 });
    await expectStillServing(fleet, 'during a 20 MB result');
    const result = await call;

    expect(result.details).toMatchObject({ is_error: false, truncated: true });
    expect(result.content).toHaveLength(1);
    const text = (result.content[0] as { text: string }).text;
    const [, shown, total] = text.match(NOTE) ?? [];
    expect(Number(total)).toBe(20 * MB);
    expect(text.startsWith(LINE.repeat(100))).toBe(true);
    // The head and its note together fill the bound; the note counts the head's bytes.
    expect(Buffer.byteLength(text.replace(NOTE, ''))).toBe(Number(shown));
    expect(contentBytes(result)).toBeLessThanOrEqual(DEFAULT_MAX_RESULT_BYTES);
    expect(contentBytes(result)).toBeGreaterThan(DEFAULT_MAX_RESULT_BYTES - 3);
    expect(fleet.host.server('big')).toMatchObject({ state: 'ready', error: null });
  });

  test('its image data is replaced by a note; oversized structured content is dropped', async () => {
    const image = await fleet.host.callTool('big__big_image', { mb: 20 });
    expect(image.details.truncated).toBe(true);
    expect(image.content).toEqual([
      { type: 'text', text: expect.stringMatching(/^\[omitted: image image\/png, \d+ bytes — above max_result_bytes \(1048576\)\]$/) },
    ]);

    const structured = await fleet.host.callTool('big__big_structured', { mb: 3 });
    expect(structured.details.structured).toBeUndefined();
    expect(structured.details.truncated).toBe(true);
    expect(structured.content.at(-1)).toMatchObject({ text: expect.stringMatching(/^\[omitted: structured content, \d+ bytes of JSON/) });
    expect(contentBytes(structured)).toBeLessThan(DEFAULT_MAX_RESULT_BYTES + 200);
  });

  test('over HTTP the answer is bounded too', async () => {
    const reply = await fleet.request('/api/mcp/tools/big__big_text/call', { method: 'POST', body: { arguments: { mb: 20 } } });
    expect(reply.status).toBe(200);
    expect(reply.json.details.truncated).toBe(true);
    expect(reply.text.length).toBeLessThan(1.2 * DEFAULT_MAX_RESULT_BYTES);
  });

  test('results an agent keeps cost at most max_result_bytes each once the call is over', async () => {
    // An agent loop keeps every result in its history: three 20 MB answers must not mean 60 MB held.
    // The memory held is measured by bench/suites/bounds.js; here: what is kept is the truncated result.
    const kept: AgentToolResult[] = [];
    for (let i = 0; i < 3; i += 1) kept.push(await fleet.host.callTool('big__big_text', { mb: 20 }));
    for (const result of kept) {
      expect(result.details.truncated).toBe(true);
      expect(contentBytes(result)).toBeLessThan(DEFAULT_MAX_RESULT_BYTES + 100);
    }
  });
});

describe('a message above the 32 MiB wire limit', () => {
  test('ends the connection with an error that says so; the process is stopped and the worker keeps serving', async () => {
    const result = await fleet.host.callTool('big__big_text', { mb: 40 });
    expect(result.details.is_error).toBe(true);
    expect(result.content[0]).toMatchObject({
      text: expect.stringContaining('the server sent a message larger than 32 MiB, the most one message may be'),
    });
    await untilState(fleet.host, 'big', 'error');
    expect(fleet.host.server('big')).toMatchObject({ error_kind: 'transport_closed', error: expect.stringContaining('larger than 32 MiB') });
    expect(isAlive(pids[0]!)).toBe(false);
    await expectStillServing(fleet);
  });
});
