// End to end through createMcpHost, with a real fixture server process that
// answers with 20 MB of multi-byte text: the call shows the head and a note,
// `read_result` (listed once a result is kept) pages through the rest by the
// notes' own arguments, and the pages make exactly what the server sent. A
// server with `large_results: "truncate"` still gets its result cut.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createMcpHost, type McpHost } from '../../src/host.js';
import { DEFAULT_MAX_RESULT_BYTES } from '../../src/config/schema.js';
import type { AgentToolResult } from '../../src/catalog/tools/agent-tool.js';
import { fixtureCommand } from '../fixtures/index.js';
import { stateDirWith, untilState } from '../host/helpers.js';

const BYTES = 20_000_000;
const server = (extra: Record<string, unknown> = {}) => ({
  type: 'local',
  command: fixtureCommand('spill-text'),
  ping_interval_seconds: 0,
  reconnect: { max_attempts: 0 },
  ...extra,
});

let dir: string;
let host: McpHost;
beforeAll(async () => {
  dir = stateDirWith({ big: server(), cut: server({ large_results: 'truncate' }) });
  host = createMcpHost({ stateDir: dir, persistJournal: false, watchConfig: false, logger: { info() {}, warn() {} } });
  await host.start();
  await Promise.all([untilState(host, 'big', 'ready'), untilState(host, 'cut', 'ready')]);
});
afterAll(async () => {
  await host?.shutdown();
});

const texts = (result: AgentToolResult) => result.content.map((block) => (block.type === 'text' ? block.text : `<${block.type}>`));
const toolNames = () => host.tools().map((tool) => tool.name);

/** The arguments a note asks `read_result` to be called with, or null when it names none. */
function nextArguments(note: string | undefined): Record<string, unknown> | null {
  const match = /call read_result with (\{[^}]*\})/.exec(note ?? '');
  return match ? JSON.parse(match[1]!) : null;
}

describe('a 20 MB result with large_results: "spill" (the default)', () => {
  test('read_result is not listed before any result was kept, yet answers clearly', async () => {
    expect(toolNames()).not.toContain('read_result');
    const result = await host.callTool('read_result', { id: 'AAAAAAAAAAAAAAAAAAAAAA' });
    expect(result.details).toMatchObject({ is_error: true, server: '', tool: 'read_result' });
    expect(texts(result)[0]).toContain('no kept result "AAAAAAAAAAAAAAAAAAAAAA"');
  });

  test('shows its head and a note; read_result pages through all of it, and the pages are what the server sent', async () => {
    const result = await host.callTool('big__text', { bytes: BYTES });
    expect(result.details).toMatchObject({ is_error: false, server: 'big', tool: 'text', truncated: true, spilled: { total_bytes: BYTES } });
    const [head, note] = texts(result);
    expect(result.content).toHaveLength(2);
    expect(note).toMatch(new RegExp(`^\\[result cut at \\d+ of ${BYTES} bytes; the whole result is kept: call read_result with \\{.*\\} to read on\\]$`));
    const headBytes = Buffer.byteLength(head!);
    expect(headBytes).toBeGreaterThan(DEFAULT_MAX_RESULT_BYTES - 300);
    expect(headBytes + Buffer.byteLength(note!)).toBeLessThanOrEqual(DEFAULT_MAX_RESULT_BYTES);
    expect(nextArguments(note)).toEqual({ id: result.details.spilled!.id, offset: headBytes, length: 65536 });

    // Now that a result is kept, the model is offered the tool its note names.
    expect(toolNames()).toContain('read_result');
    const files = readdirSync(join(dir, 'results'));
    expect(files).toHaveLength(1);
    expect(statSync(join(dir, 'results')).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, 'results', files[0]!)).mode & 0o777).toBe(0o600);

    // Page by page, as a model would: each call with the arguments the previous note gave.
    const pages = [head!];
    let pagesRead = 0;
    for (let args = nextArguments(note); args !== null; pagesRead += 1) {
      const page = await host.callTool('read_result', args);
      expect(page.details.is_error).toBe(false);
      const [pageText, pageNote] = texts(page);
      pages.push(pageText!);
      args = nextArguments(pageNote);
      if (args === null) expect(pageNote).toBe(`[read_result: bytes ${BYTES - Buffer.byteLength(pageText!)}–${BYTES} of ${BYTES}; that is the end of the result]`);
    }
    expect(pagesRead).toBe(Math.ceil((BYTES - headBytes) / 65536));
    const whole = pages.join('');
    expect(Buffer.byteLength(whole)).toBe(BYTES);
    const sent = JSON.parse(texts(await host.callTool('big__digest', { bytes: BYTES }))[0]!);
    expect(sent).toEqual({ sha256: createHash('sha256').update(whole).digest('hex'), bytes: BYTES });
  });
});

test('a 20 MB result with large_results: "truncate" is cut as before, nothing kept', async () => {
  const kept = () => (existsSync(join(dir, 'results')) ? readdirSync(join(dir, 'results')).length : 0);
  const before = kept();
  const result = await host.callTool('cut__text', { bytes: BYTES });
  expect(result.details).toEqual({ is_error: false, server: 'cut', tool: 'text', truncated: true });
  expect(result.content).toHaveLength(1);
  expect(texts(result)[0]).toMatch(new RegExp(`\\n\\[truncated: \\d+ of ${BYTES} bytes shown — max_result_bytes\\]$`));
  expect(kept()).toBe(before);
});

describe('a spilled result is bound to the principal whose call spilled it', () => {
  test('another principal (and the admin) get not-found, exactly as for an unknown id; read_result is listed to its owner alone', async () => {
    const alice = { id: 'alice' };
    const bob = { id: 'bob-spill' };
    expect(host.tools({ principal: bob }).map((tool) => tool.name)).not.toContain('read_result');
    const result = await host.callTool('big__text', { bytes: 2_000_000 }, { principal: alice });
    const id = result.details.spilled!.id;
    expect(host.tools({ principal: alice }).map((tool) => tool.name)).toContain('read_result');
    expect(host.tools({ principal: bob }).map((tool) => tool.name)).not.toContain('read_result');

    const own = await host.callTool('read_result', { id, offset: 0, length: 10 }, { principal: alice });
    expect(own.details.is_error).toBe(false);
    for (const other of [{ principal: bob }, {}]) {
      const theirs = await host.callTool('read_result', { id, offset: 0, length: 10 }, other);
      expect(theirs.details.is_error).toBe(true);
      expect(texts(theirs)[0]).toBe(`read_result: no kept result "${id}": it is unknown or has expired (call the tool that gave the result again)`);
    }
  });
});
