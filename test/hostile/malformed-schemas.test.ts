// Tools with malformed schemas. The SDK's client refuses a tools/list answer
// that breaks the MCP schema (inputSchema missing, not an object, not of type
// object): that server is an `error` of kind `protocol` naming the field, and
// its process is stopped. Legal but odd schemas (a recursive $ref) are kept
// verbatim; a huge description is cut, as it would reach the model every turn.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { MAX_DESCRIPTION_BYTES } from '../../src/catalog/tools/adapter.js';
import { toAnthropicTools, toOpenAITools } from '../../src/catalog/tools/provider-formats.js';
import { closeAndExpectNoChild, expectStillServing, hostile, isAlive, pidFile, readPid, startWithHealthy, type Fleet } from './helpers.js';

const MODES = ['missing', 'not-object', 'string-type', 'ref', 'huge-description'] as const;

let fleet: Fleet;
beforeAll(async () => {
  fleet = await startWithHealthy((dir) =>
    Object.fromEntries(MODES.map((mode) => [mode, hostile(dir, mode, 'bad-schemas', {}, mode)])),
  );
});
afterAll(async () => {
  if (fleet) await closeAndExpectNoChild(fleet, MODES.map((mode) => readPid(pidFile(fleet.dir, mode))));
});

describe('malformed tool schemas', () => {
  test.each([
    ['missing', 'tools.1.inputSchema: required: expected object'],
    ['not-object', 'tools.1.inputSchema: expected object, received string'],
    ['string-type', 'tools.1.inputSchema.type: expected "object"'],
  ])('%s: error (protocol) naming the field, process stopped', (mode, problem) => {
    expect(fleet.host.server(mode)).toMatchObject({
      state: 'error',
      error_kind: 'protocol',
      error: `tools/list failed: the server's answer does not follow the MCP schema: ${problem}`,
    });
    expect(isAlive(readPid(pidFile(fleet.dir, mode)))).toBe(false);
  });

  test('a recursive $ref schema is kept verbatim and exports to the providers', async () => {
    expect(fleet.host.server('ref')).toMatchObject({ state: 'ready', tool_count: 2 });
    const tree = fleet.host.tools().find((tool) => tool.name === 'ref__tree')!;
    expect(tree.parameters).toEqual({
      type: 'object',
      properties: { node: { $ref: '#/$defs/node' } },
      $defs: { node: { type: 'object', properties: { children: { type: 'array', items: { $ref: '#/$defs/node' } } } } },
    });
    expect(JSON.stringify(toOpenAITools([tree]))).toContain('#/$defs/node');
    expect(toAnthropicTools([tree])[0]!.input_schema).toBe(tree.parameters);
    expect(await fleet.host.callTool('ref__tree', { node: { children: [] } })).toMatchObject({
      content: [{ type: 'text', text: 'called tree' }],
    });
  });

  test('a 2 MB description is cut with a note, in the tools, the journal and the API', async () => {
    expect(fleet.host.server('huge-description')).toMatchObject({ state: 'ready', tool_count: 2 });
    const verbose = fleet.host.tools().find((tool) => tool.name === 'huge-description__verbose')!;
    expect(verbose.description).toMatch(/\n\[description truncated: \d+ of 2200000 bytes shown\]$/);
    expect(Buffer.byteLength(verbose.description)).toBeLessThan(MAX_DESCRIPTION_BYTES + 100);
    const registered = fleet.host.events().find((event) => event.type === 'tools.registered' && event.server === 'huge-description');
    expect(JSON.stringify(registered).length).toBeLessThan(MAX_DESCRIPTION_BYTES + 1000);
    const tools = await fleet.request('/api/mcp/tools');
    expect(tools.status).toBe(200);
    expect(tools.text.length).toBeLessThan(100_000);
    expect(await fleet.host.callTool('huge-description__ok', {})).toMatchObject({ content: [{ type: 'text', text: 'ok' }] });
    await expectStillServing(fleet);
  });
});
