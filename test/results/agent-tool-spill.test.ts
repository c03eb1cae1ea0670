// An agent tool with a spill (`large_results: "spill"`), over a real store:
// what the model sees of a big result (its head and one note, within
// max_result_bytes), what is kept (the whole result as text), and the cases
// that are bounded as when truncating.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Tool } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, test } from 'vitest';
import { createReadResultTool } from '../../src/catalog/tools/read-result-tool.js';
import { createResultSpill, type ResultSpill } from '../../src/catalog/tools/result-spill.js';
import { toAgentTool } from '../../src/catalog/tools/adapter.js';
import { AgentToolResult } from '../../src/catalog/tools/agent-tool.js';

const MAX = 1024;
const LIMITS = { ttlSeconds: 60, maxBytes: 1024 * 1024 };
const TOOL: Tool = { name: 'big', inputSchema: { type: 'object' } };
const NOTE = /^\[result cut at (\d+) of (\d+) bytes; the whole result is kept: call read_result with (\{.*\}) to read on\]$/;

let spill: ResultSpill;
afterEach(() => spill?.close());

/** An agent tool of server `srv` answering `result`, spilling into a fresh store. */
function toolAnswering(result: unknown, store?: Pick<ResultSpill, 'keep'>) {
  spill = createResultSpill({ dir: join(mkdtempSync(join(tmpdir(), 'mcp-fleet-spill-')), 'results') });
  const agent = toAgentTool('srv', TOOL, async () => result, { maxResultBytes: MAX, spill: { store: store ?? spill, limits: LIMITS } });
  return { agent, reader: createReadResultTool(spill) };
}

const texts = (result: AgentToolResult) => result.content.map((block) => (block.type === 'text' ? block.text : `<${block.type}>`));
const bytes = (result: AgentToolResult) =>
  result.content.reduce((sum, block) => sum + Buffer.byteLength(block.type === 'text' ? block.text : block.data), 0);

/** The note's arguments, then every page after them: the whole kept text. */
async function readOn(reader: ReturnType<typeof createReadResultTool>, shown: AgentToolResult): Promise<string> {
  const [head, note] = texts(shown);
  let args = JSON.parse(NOTE.exec(note ?? '')![3]!) as Record<string, unknown>;
  let whole = head!;
  for (;;) {
    const page = await reader.execute(args);
    expect(page.details.is_error).toBe(false);
    whole += texts(page)[0];
    const next = /call read_result with (\{.*\})\]$/.exec(texts(page)[1]!);
    if (!next) return whole;
    args = JSON.parse(next[1]!);
  }
}

describe('a result above max_result_bytes, with a spill', () => {
  test('the model gets its head and one note naming read_result with the arguments that continue it', async () => {
    const text = '😀 and some ascii '.repeat(400);
    const { agent, reader } = toolAnswering({ content: [{ type: 'text', text }] });
    const result = await agent.execute({});
    const [head, note] = texts(result);
    expect(result.content).toHaveLength(2);
    const [, shown, total, args] = NOTE.exec(note!)!;
    expect(Number(total)).toBe(Buffer.byteLength(text));
    expect(Buffer.byteLength(head!)).toBe(Number(shown));
    expect(text.startsWith(head!)).toBe(true);
    expect(JSON.parse(args!)).toEqual({ id: result.details.spilled!.id, offset: Number(shown), length: 65536 });
    // Head and note together stay within the bound.
    expect(bytes(result)).toBeLessThanOrEqual(MAX);
    expect(bytes(result)).toBeGreaterThan(MAX - 4);
    expect(result.details).toEqual({
      is_error: false,
      server: 'srv',
      tool: 'big',
      truncated: true,
      spilled: { id: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/), total_bytes: Buffer.byteLength(text) },
    });
    expect(AgentToolResult.safeParse(result).success).toBe(true);
    expect(await readOn(reader, result)).toBe(text);
  });

  test('the kept text is the whole result: texts as they are, embedded resources, binary parts as a note, structured content as JSON', async () => {
    const structured = { rows: Array.from({ length: 50 }, (_, i) => ({ i, name: `row ${i}` })) };
    const { agent, reader } = toolAnswering({
      content: [
        { type: 'text', text: 'first' },
        { type: 'image', data: 'A'.repeat(4000), mimeType: 'image/png' },
        { type: 'resource', resource: { uri: 'file:///r.txt', text: 'r'.repeat(600) } },
      ],
      structuredContent: structured,
      isError: true,
    });
    const result = await agent.execute({});
    expect(result.details).toMatchObject({ is_error: true, truncated: true, spilled: { id: expect.any(String) } });
    expect(result.details.structured).toBeUndefined(); // its JSON alone is above the bound
    expect(await readOn(reader, result)).toBe(['first', '[image image/png, 3000 bytes]', 'r'.repeat(600), JSON.stringify(structured)].join('\n'));
  });

  test('structured content a text block already carries is kept once', async () => {
    const structured = { value: 'v'.repeat(3000) };
    const { agent, reader } = toolAnswering({ content: [{ type: 'text', text: JSON.stringify(structured, null, 2) }], structuredContent: structured });
    const result = await agent.execute({});
    expect(await readOn(reader, result)).toBe(JSON.stringify(structured, null, 2));
  });

  test('a result within the bound is returned as it is, nothing kept', async () => {
    const { agent } = toolAnswering({ content: [{ type: 'text', text: 'small' }] });
    expect(await agent.execute({})).toEqual({ content: [{ type: 'text', text: 'small' }], details: { is_error: false, server: 'srv', tool: 'big' } });
    expect(spill.hasResults()).toBe(false);
  });

  test('only image data above the bound: nothing more to read, so it is bounded as when truncating, nothing kept', async () => {
    const { agent } = toolAnswering({ content: [{ type: 'text', text: 'see' }, { type: 'image', data: 'A'.repeat(5000), mimeType: 'image/png' }] });
    const result = await agent.execute({});
    expect(texts(result)).toEqual(['see', expect.stringMatching(/^\[omitted: image image\/png, \d+ bytes — above max_result_bytes \(1024\)\]$/)]);
    expect(result.details.spilled).toBeUndefined();
    expect(spill.hasResults()).toBe(false);
  });

  test('a result the spill cannot keep is truncated, with a note saying why', async () => {
    // A directory that cannot be made: every keep fails.
    const broken = createResultSpill({ dir: '/dev/null/results' });
    const { agent } = toolAnswering({ content: [{ type: 'text', text: 'x'.repeat(3000) }] }, broken);
    const result = await agent.execute({});
    broken.close();
    const [head, why] = texts(result);
    expect(why).toMatch(/^\[the whole result could not be kept \(.+\); it was truncated\]$/);
    const shown = /^(x+)\n\[truncated: (\d+) of 3000 bytes shown — max_result_bytes\]$/.exec(head!);
    expect(Number(shown?.[2])).toBe(shown?.[1]?.length);
    // The notes count too: head, its note and the note saying why fill the bound (a digit fewer in a note may leave a byte).
    expect(bytes(result)).toBeLessThanOrEqual(MAX);
    expect(bytes(result)).toBeGreaterThan(MAX - 3);
    expect(result.details).toMatchObject({ truncated: true });
    expect(result.details.spilled).toBeUndefined();
  });
});

test('without a spill (large_results: "truncate") a big result is cut, its note within the bound, a character never split', async () => {
  const agent = toAgentTool('srv', TOOL, async () => ({ content: [{ type: 'text', text: 'éa'.repeat(1000) }] }), { maxResultBytes: MAX });
  const result = await agent.execute({});
  const [head] = texts(result);
  const shown = /^((?:éa)*é?)\n\[truncated: (\d+) of 3000 bytes shown — max_result_bytes\]$/.exec(head!);
  expect(Number(shown?.[2])).toBe(Buffer.byteLength(shown?.[1] ?? 'none'));
  expect(bytes(result)).toBeLessThanOrEqual(MAX);
  expect(bytes(result)).toBeGreaterThan(MAX - 3);
  expect(result.details).toEqual({ is_error: false, server: 'srv', tool: 'big', truncated: true });
});

test('truncating, the notes for cut text, omitted blocks and dropped structured content all fit within the bound', async () => {
  const answer = {
    content: [
      { type: 'text', text: 'x'.repeat(3000) },
      { type: 'image', data: 'A'.repeat(5000), mimeType: 'image/png' },
    ],
    structuredContent: { rows: 'y'.repeat(3000) },
  };
  const agent = toAgentTool('srv', TOOL, async () => answer, { maxResultBytes: MAX });
  const result = await agent.execute({});
  expect(texts(result)).toEqual([
    expect.stringMatching(/^x+\n\[truncated: \d+ of 3000 bytes shown — max_result_bytes\]$/),
    expect.stringMatching(/^\[omitted: image image\/png, \d+ bytes — above max_result_bytes \(1024\)\]$/),
    expect.stringMatching(/^\[omitted: structured content, \d+ bytes of JSON — above max_result_bytes \(1024\)\]$/),
  ]);
  expect(bytes(result)).toBeLessThanOrEqual(MAX);
  expect(bytes(result)).toBeGreaterThan(MAX - 3);
  expect(result.details.structured).toBeUndefined();
});
