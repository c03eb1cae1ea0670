// Content blocks of a type no MCP revision defines, from a real server: the
// SDK's result schema would refuse the whole answer for one of them, so they
// reach the model as the JSON the server sent, and the blocks around them, the
// structured content included, as they are.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { closeAndExpectNoChild, hostile, pidFile, readPid, startWithHealthy, type Fleet } from './helpers.js';

let fleet: Fleet;
beforeAll(async () => {
  fleet = await startWithHealthy((dir) => ({ odd: hostile(dir, 'odd', 'odd-content') }));
});
afterAll(async () => {
  if (fleet) await closeAndExpectNoChild(fleet, [readPid(pidFile(fleet.dir, 'odd'))]);
});

test('an unknown block type becomes its JSON as text; the rest of the result is kept', async () => {
  const result = await fleet.host.callTool('odd__mixed', {});
  expect(result.details.is_error).toBe(false);
  expect(result.content).toEqual([
    { type: 'text', text: 'before' },
    { type: 'text', text: '{"type":"mystery","z":1}' },
    { type: 'text', text: 'file:///notes.txt (notes)' },
    { type: 'text', text: expect.stringContaining('file:///a.bin') },
  ]);
  expect(result.details.structured).toEqual({ answer: 42 });
});

test('a block with no type at all is shown the same way, and the server stays ready', async () => {
  const result = await fleet.host.callTool('odd__typeless', {});
  expect(result).toMatchObject({ content: [{ type: 'text', text: '{"z":2}' }], details: { is_error: false } });
  expect(fleet.host.server('odd')?.state).toBe('ready');
});
