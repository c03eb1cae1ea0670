// The bounds the hostile tests rely on, without processes: result truncation
// at UTF-8 boundaries and across blocks, the description cap, and the stdio
// line buffer (linear, size-limited, holding no view into a big line).
import { deserializeMessage } from '@modelcontextprotocol/client';
import { describe, expect, test } from 'vitest';
import { convertCallResult, MAX_DESCRIPTION_BYTES, toAgentTool } from '../../src/catalog/tools/adapter.js';
import { AgentToolResult } from '../../src/catalog/tools/agent-tool.js';
import { LineBuffer, MessageTooLargeError } from '../../src/connection/line-buffer.js';

const ctx = { server: 'srv', tool: 't' };
const bounded = (result: unknown, max: number) => convertCallResult(result, ctx, { maxResultBytes: max });
const texts = (result: AgentToolResult) => result.content.map((block) => (block.type === 'text' ? block.text : `<${block.type}>`));
/** What the agent sees, in bytes: every text, and the data of every other block. */
const resultBytes = (result: AgentToolResult) =>
  result.content.reduce((sum, block) => sum + Buffer.byteLength(block.type === 'text' ? block.text : block.data), 0);

describe('max_result_bytes', () => {
  test('a result within the bound is returned as converted, with no truncated flag', () => {
    const result = bounded({ content: [{ type: 'text', text: 'abc' }], structuredContent: { a: 1 } }, 1024);
    expect(result).toEqual({ content: [{ type: 'text', text: 'abc' }], details: { is_error: false, structured: { a: 1 }, server: 'srv', tool: 't' } });
    expect(AgentToolResult.safeParse(result).success).toBe(true);
  });

  test('text is cut between characters, never inside one, and the note counts bytes', () => {
    // 'é' is 2 bytes and '😀' 4: whatever room the note leaves, the cut falls between characters.
    for (const text of ['a' + 'é'.repeat(600), 'ab' + '😀'.repeat(300)]) {
      const result = bounded({ content: [{ type: 'text', text }] }, 1024);
      const [, head, shown] = /^(.*)\n\[truncated: (\d+) of (\d+) bytes shown — max_result_bytes\]$/su.exec(texts(result)[0]!) ?? [];
      expect(text.startsWith(head!)).toBe(true);
      expect(Number(shown)).toBe(Buffer.byteLength(head!));
      expect(resultBytes(result)).toBeLessThanOrEqual(1024);
      // The next character would not have fitted (give or take a digit of the note).
      const next = [...text.slice(head!.length)][0]!;
      expect(resultBytes(result) + Buffer.byteLength(next)).toBeGreaterThan(1024 - 2);
      expect(result.details.truncated).toBe(true);
    }
  });

  test('blocks share one budget: what fits is kept, the first text over it is cut, the rest is one note', () => {
    const content = [
      { type: 'text', text: 'x'.repeat(600) },
      { type: 'image', data: 'A'.repeat(5000), mimeType: 'image/png' },
      { type: 'text', text: 'y'.repeat(600) },
      ...Array.from({ length: 1000 }, () => ({ type: 'text', text: 'z'.repeat(100) })),
      { type: 'audio', data: 'B'.repeat(10), mimeType: 'audio/wav' },
    ];
    const result = bounded({ content }, 1024);
    expect(texts(result)).toEqual([
      'x'.repeat(600),
      expect.stringMatching(/^y+\n\[truncated: \d+ of 600 bytes shown — max_result_bytes\]$/),
      expect.stringMatching(/^\[omitted: 1002 blocks \(image image\/png, text, audio audio\/wav\), \d+ bytes — above max_result_bytes \(1024\)\]$/),
    ]);
    // The notes take their share of the one budget: the cut text gets what is left.
    const [, ys, shown] = /^(y+)\n\[truncated: (\d+)/.exec(texts(result)[1]!) ?? [];
    expect(Number(shown)).toBe(ys!.length);
    expect(resultBytes(result)).toBeLessThanOrEqual(1024);
    expect(resultBytes(result)).toBeGreaterThan(1024 - 3);
    expect(AgentToolResult.safeParse(result).success).toBe(true);
  });

  test('structured content whose JSON is over the bound is dropped with a note', () => {
    const result = bounded({ content: [{ type: 'text', text: 'ok' }], structuredContent: { big: 'v'.repeat(2000) } }, 1024);
    expect(result.details).toEqual({ is_error: false, server: 'srv', tool: 't', truncated: true });
    expect(texts(result)).toEqual(['ok', expect.stringMatching(/^\[omitted: structured content, 2010 bytes of JSON — above max_result_bytes \(1024\)\]$/)]);
  });

  test('an agent tool bounds results and error texts alike', async () => {
    const tool = { name: 't', inputSchema: { type: 'object' as const } };
    const big = toAgentTool('srv', tool, async () => ({ content: [{ type: 'text', text: 'r'.repeat(5000) }] }), { maxResultBytes: 1024 });
    expect((await big.execute({})).details.truncated).toBe(true);
    const failing = toAgentTool('srv', tool, async () => { throw new Error('e'.repeat(5000)); }, { maxResultBytes: 1024 });
    const result = await failing.execute({});
    expect(result.details).toMatchObject({ is_error: true, truncated: true });
    const [, es, shown] = /^(e+)\n\[truncated: (\d+) of 5000 bytes shown/.exec(texts(result)[0]!) ?? [];
    expect(Number(shown)).toBe(es!.length);
    expect(resultBytes(result)).toBeLessThanOrEqual(1024);
  });

  test('a description over the cap is cut with a note', () => {
    const tool = toAgentTool('srv', { name: 't', description: 'd'.repeat(100_000), inputSchema: { type: 'object' } }, async () => ({}));
    expect(tool.description).toBe(`${'d'.repeat(MAX_DESCRIPTION_BYTES)}\n[description truncated: ${MAX_DESCRIPTION_BYTES} of 100000 bytes shown]`);
  });
});

describe('LineBuffer', () => {
  const message = (id: number) => `${JSON.stringify({ jsonrpc: '2.0', id, result: {} })}\n`;

  test('reads whole lines across chunks, CRLF included, and several per chunk', () => {
    const buffer = new LineBuffer(1024);
    const line = message(1);
    buffer.append(Buffer.from(line.slice(0, 10)));
    expect(buffer.readMessage()).toBeNull();
    buffer.append(Buffer.from(`${line.slice(10, -1)}\r\n${message(2)}${message(3).slice(0, 5)}`));
    expect([buffer.readMessage(), buffer.readMessage(), buffer.readMessage()]).toEqual([
      { jsonrpc: '2.0', id: 1, result: {} },
      { jsonrpc: '2.0', id: 2, result: {} },
      null,
    ]);
    buffer.append(Buffer.from(message(3).slice(5)));
    expect(buffer.readMessage()).toEqual({ jsonrpc: '2.0', id: 3, result: {} });
  });

  test('a line that is not JSON-RPC throws once and is gone; the next one reads', () => {
    const buffer = new LineBuffer(1024);
    buffer.append(Buffer.from(`not json\n${message(4)}`));
    expect(() => buffer.readMessage()).toThrow(SyntaxError);
    expect(buffer.readMessage()).toEqual({ jsonrpc: '2.0', id: 4, result: {} });
  });

  test('an unfinished line over the limit throws MessageTooLargeError and is forgotten', () => {
    const buffer = new LineBuffer(1024 * 1024);
    const chunk = Buffer.alloc(64 * 1024, 'a');
    let thrown: unknown;
    try {
      for (let i = 0; i < 17; i += 1) buffer.append(chunk);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(MessageTooLargeError);
    expect((thrown as Error).message).toBe('the server sent a message larger than 1 MiB, the most one message may be');
    // Nothing of the long line is left to be taken for the start of the next message.
    buffer.append(Buffer.from(message(5)));
    expect(buffer.readMessage()).toEqual({ jsonrpc: '2.0', id: 5, result: {} });
  });

  test('every kind of line reads as the SDK reads it: the same message, or the same error; an invalid answer to a request, an error answer', () => {
    const lines = [
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      { jsonrpc: '2.0', id: 'a', method: 'roots/list', params: { _meta: { progressToken: 3 } } },
      { jsonrpc: '2.0', method: 'notifications/tools/list_changed' },
      { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x' } },
      { jsonrpc: '2.0', id: 2, result: { tools: [], _meta: { k: 1 } } },
      { jsonrpc: '2.0', id: 3, error: { code: -32601, message: 'Method not found' } },
      { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error', data: { at: 1 } } },
      // Not JSON-RPC: each must fail with the SDK's own error.
      { jsonrpc: '2.0', id: 6, method: 'ping', result: {} },
      { jsonrpc: '2.0', method: 7 },
      { jsonrpc: '2.0', id: 10 },
      {},
      [],
      'text',
      null,
    ].map((value) => JSON.stringify(value));
    const outcome = (read: () => unknown) => {
      try {
        return { value: read() };
      } catch (error) {
        return { error: String(error) };
      }
    };
    for (const line of lines) {
      const buffer = new LineBuffer(1024);
      buffer.append(Buffer.from(`${line}\n`));
      expect(outcome(() => buffer.readMessage()), line).toEqual(outcome(() => deserializeMessage(line)));
    }
    // An answer (an id, a result or an error) that is not a valid one: an error answer to its id, which the SDK
    // gives the request it answers, where skipping it left the request waiting out its timeout.
    const answers = [
      { jsonrpc: '2.0', id: 4, result: 'not an object' },
      { jsonrpc: '2.0', id: 5, error: { code: 'x', message: 1 } },
      { jsonrpc: '1.0', id: 8, result: {} },
      { id: 9, result: {}, error: { code: 1, message: 'both' } },
      { jsonrpc: '2.0', id: 'eleven', result: null },
    ];
    for (const answer of answers) {
      const line = JSON.stringify(answer);
      expect(() => deserializeMessage(line), line).toThrow();
      const buffer = new LineBuffer(1024);
      buffer.append(Buffer.from(`${line}\n`));
      expect(buffer.readMessage(), line).toEqual({
        jsonrpc: '2.0',
        id: answer.id,
        error: { code: -32603, message: expect.stringMatching(/^the server's answer was malformed: its (result|error) is not a valid JSON-RPC (result|error)/) },
      });
    }
  });

  // That the rest is copied, so no view keeps the big line alive, is measured by bench/suites/bounds.js.
  test('a 10 MB line joined from chunks is read whole, and the start of the next line carried on', () => {
    const buffer = new LineBuffer();
    const big = `${JSON.stringify({ jsonrpc: '2.0', id: 6, result: { text: 'x'.repeat(10_000_000) } })}\n`;
    for (let at = 0; at < big.length; at += 65_536) buffer.append(Buffer.from(big.slice(at, at + 65_536)));
    // The last chunk holds the end of the big line and the start of the next.
    buffer.append(Buffer.from('{"jsonrpc":'));
    expect(buffer.readMessage()).toMatchObject({ id: 6, result: { text: 'x'.repeat(10_000_000) } });
    expect(buffer.readMessage()).toBeNull();
    buffer.append(Buffer.from('"2.0","id":7,"result":{}}\n'));
    expect(buffer.readMessage()).toEqual({ jsonrpc: '2.0', id: 7, result: {} });
  });
});
