// The `read_result` meta tool over a real store: its shape, its pages and
// notes, and refusals the model reads instead of a throw.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import {
  createReadResultTool,
  READ_RESULT_DEFAULT_LENGTH,
  READ_RESULT_MAX_LENGTH,
} from '../../src/catalog/tools/read-result-tool.js';
import { createResultSpill, type ResultSpill } from '../../src/catalog/tools/result-spill.js';
import { AgentToolResult } from '../../src/catalog/tools/agent-tool.js';

const LIMITS = { ttlSeconds: 60, maxBytes: 64 * 1024 * 1024 };

let spill: ResultSpill;
afterEach(() => spill.close());

function reader() {
  spill = createResultSpill({ dir: join(mkdtempSync(join(tmpdir(), 'mcp-fleet-read-')), 'results') });
  return createReadResultTool(spill);
}

const texts = (result: AgentToolResult) => result.content.map((block) => (block.type === 'text' ? block.text : ''));

test('is an agent tool named read_result that says what it is for, with id, offset and length', () => {
  const tool = reader();
  expect(tool).toMatchObject({ name: 'read_result', server: '', originalName: 'read_result' });
  expect(tool.description).toMatch(/too large to show whole/);
  expect(tool.parameters).toMatchObject({
    type: 'object',
    required: ['id'],
    properties: {
      id: { type: 'string' },
      offset: { type: 'integer', minimum: 0, default: 0 },
      length: { type: 'integer', default: READ_RESULT_DEFAULT_LENGTH, maximum: READ_RESULT_MAX_LENGTH },
    },
  });
});

describe('a page', () => {
  test('is the text, then a note with the arguments of the next page; the last note says it is the end', async () => {
    const tool = reader();
    const { id } = await spill.keep('srv', 'abcdefghij', LIMITS);
    const first = await tool.execute({ id, length: 4 });
    expect(texts(first)).toEqual(['abcd', `[read_result: bytes 0–4 of 10; to read on, call read_result with {"id": "${id}", "offset": 4, "length": 4}]`]);
    expect(first.details).toEqual({
      is_error: false,
      server: '',
      tool: 'read_result',
      structured: { id, offset: 0, length: 4, total: 10, done: false },
    });
    expect(AgentToolResult.safeParse(first).success).toBe(true);
    const last = await tool.execute({ id, offset: 8 });
    expect(texts(last)).toEqual(['ij', '[read_result: bytes 8–10 of 10; that is the end of the result]']);
    expect(last.details.structured).toMatchObject({ done: true });
  });

  test('is at most READ_RESULT_MAX_LENGTH bytes, whatever length is asked', async () => {
    const tool = reader();
    const { id } = await spill.keep('srv', 'x'.repeat(READ_RESULT_MAX_LENGTH + 10), LIMITS);
    const page = await tool.execute({ id, length: 10 * READ_RESULT_MAX_LENGTH });
    expect(texts(page)[0]).toHaveLength(READ_RESULT_MAX_LENGTH);
    expect(texts(page)[1]).toContain(`"offset": ${READ_RESULT_MAX_LENGTH}, "length": ${READ_RESULT_MAX_LENGTH}}`);
  });
});

describe('refusals are is_error results naming what is wrong, never throws', () => {
  test.each([
    [{ id: 'AAAAAAAAAAAAAAAAAAAAAA' }, /no kept result "AAAAAAAAAAAAAAAAAAAAAA": it is unknown or has expired \(call the tool that gave the result again\)/],
    [{}, /invalid argument id/],
    [{ id: 'x', offset: -1 }, /invalid argument offset/],
    [{ id: 'x', length: 1.5 }, /invalid argument length/],
  ])('%j', async (args, message) => {
    const result = await reader().execute(args);
    expect(result.details).toEqual({ is_error: true, server: '', tool: 'read_result' });
    expect(texts(result)).toEqual([expect.stringMatching(message)]);
  });

  test('an offset past the end', async () => {
    const tool = reader();
    const { id } = await spill.keep('srv', 'abc', LIMITS);
    const result = await tool.execute({ id, offset: 99 });
    expect(result.details.is_error).toBe(true);
    expect(texts(result)[0]).toContain(`offset 99 is outside result "${id}" (0 to 3 bytes)`);
  });
});
