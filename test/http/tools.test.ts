// Tool routes against a real host on the healthy fixture server.
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentToolResult } from '../../src/catalog/tools/agent-tool.js';
import { healthy, startFleet, untilState, type Fleet } from './fleet.js';
import { TOKEN } from './helpers.js';

// One fleet for the file: these tests only read and call, and the server stays healthy throughout.
let fleet: Fleet;
let cancelLog: string;
let waitLog: string;
beforeAll(async () => {
  fleet = await startFleet((dir) => ({
    alpha: healthy(dir, 'alpha', { env: { FIXTURE_CANCEL_LOG: join(dir, 'cancel.log'), FIXTURE_WAIT_LOG: join(dir, 'wait.log') } }),
    off: { ...healthy(dir, 'off'), enabled: false },
  }));
  cancelLog = join(fleet.dir, 'cancel.log');
  waitLog = join(fleet.dir, 'wait.log');
  await untilState(fleet, 'alpha', 'ready');
});
afterAll(async () => {
  await fleet?.close();
});

const call = (f: Fleet, tool: string, body: unknown) =>
  f.request(`/api/mcp/tools/${tool}/call`, { method: 'POST', body });

describe('GET /api/mcp/tools', () => {
  it('lists the agent tools, wrapped', async () => {
    const reply = await fleet.request('/api/mcp/tools');
    expect(reply.status).toBe(200);
    expect(Object.keys(reply.json)).toEqual(['tools']);
    expect(reply.json.tools.map((t: { name: string }) => t.name).sort()).toEqual(
      ['add', 'echo', 'env', 'fail', 'readonly_tool', 'slow', 'stderr', 'wait_for_cancel'].map((t) => `alpha__${t}`),
    );
    const add = reply.json.tools.find((t: { name: string }) => t.name === 'alpha__add');
    expect(add).toMatchObject({ server: 'alpha', original: 'add', description: 'Adds two numbers' });
    expect(add.parameters.properties).toEqual({ a: { type: 'number' }, b: { type: 'number' } });
    const readonly = reply.json.tools.find((t: { name: string }) => t.name === 'alpha__readonly_tool');
    expect(readonly.annotations).toMatchObject({ readOnlyHint: true });
  });
});

describe('POST /api/mcp/tools/:name/call', () => {
  it('answers the AgentToolResult', async () => {
    const reply = await call(fleet, 'alpha__add', { arguments: { a: 2, b: 40 } });
    expect(reply.status).toBe(200);
    expect(AgentToolResult.parse(reply.json)).toEqual({
      content: [{ type: 'text', text: '42' }],
      details: { is_error: false, server: 'alpha', tool: 'add' },
    });
  });

  it('a tool error is a 200 with details.is_error', async () => {
    const reply = await call(fleet, 'alpha__fail', {});
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({
      content: [{ type: 'text', text: 'this tool always fails' }],
      details: { is_error: true, server: 'alpha', tool: 'fail' },
    });
  });

  it('an unknown tool → 404', async () => {
    const reply = await call(fleet, 'alpha__nope', { arguments: {} });
    expect(reply.status).toBe(404);
    expect(reply.json.error).toEqual({ code: 'not_found', message: 'no tool named "alpha__nope"' });
  });

  it("a tool of a server that is not ready → 404 saying the server's state", async () => {
    const reply = await call(fleet, 'off__echo', { arguments: {} });
    expect(reply.status).toBe(404);
    expect(reply.json.error).toEqual({ code: 'not_found', message: 'no tool named "off__echo": server "off" is not ready (state: disabled)' });
  });

  it.each([
    ['arguments that are not an object', { arguments: [1] }, 'arguments'],
    ['an unknown field', { arguments: {}, extra: 1 }, 'extra'],
  ])('%s → 400', async (_label, body, field) => {
    const reply = await call(fleet, 'alpha__echo', body);
    expect(reply.status).toBe(400);
    expect(reply.json.error.field).toBe(field);
  });

  it("a tool's arguments sent bare → 400 naming the field and where arguments go", async () => {
    const reply = await call(fleet, 'alpha__echo', { text: 'hi' });
    expect(reply.status).toBe(400);
    expect(reply.json.error).toEqual({
      code: 'invalid_request',
      message: 'text: unknown field; a tool\'s arguments go inside "arguments": {"arguments": {...}}',
      field: 'text',
    });
  });

  it('a client that disconnects cancels the MCP call (the server gets notifications/cancelled)', async () => {
    const body = JSON.stringify({ arguments: {} });
    const req = http.request({
      host: '127.0.0.1',
      port: fleet.served.port,
      path: '/api/mcp/tools/alpha__wait_for_cancel/call',
      method: 'POST',
      headers: {
        host: `127.0.0.1:${fleet.served.port}`,
        authorization: `Bearer ${TOKEN}`,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
      },
      agent: false,
    });
    req.on('error', () => {});
    req.end(body);
    // The tool never answers on its own; once the server has the call, hang up.
    await expect.poll(() => existsSync(waitLog) && readFileSync(waitLog, 'utf8'), { timeout: 20_000 }).toMatch(/^waiting \S+\n$/);
    expect(existsSync(cancelLog)).toBe(false);
    req.destroy();
    await expect.poll(() => existsSync(cancelLog) && readFileSync(cancelLog, 'utf8'), { timeout: 20_000 }).toMatch(/^cancelled \S+\n$/);
    // The server is still fine afterwards.
    expect((await call(fleet, 'alpha__echo', { arguments: { text: 'still here' } })).json.content).toEqual([
      { type: 'text', text: 'still here' },
    ]);
  });
});
