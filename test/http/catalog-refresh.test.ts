// Catalog freshness through the API, against a real Python SDK server
// (test/fixtures/python/growing_catalog.py) on the 2026-07-28 era that
// announces its new tools the 2025 way, which never reaches mcp-fleet:
// POST /api/mcp/servers/:name/refresh, and catalog_max_age_seconds honoured
// by the reads (GET /api/mcp/tools, /catalog, /tools/search).
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { pythonCommand } from '../fixtures/index.js';
import { startFleet, untilState, type Fleet } from './fleet.js';

let fleet: Fleet | undefined;
afterEach(async () => {
  await fleet?.close();
  fleet = undefined;
});

function python(dir: string, name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: 'local',
    command: pythonCommand('growing_catalog'),
    env: { FIXTURE_PID_FILE: join(dir, `${name}.pid`) },
    protocol: '2026',
    timeout_seconds: 20,
    ...extra,
  };
}

/** Has server `py` add tool `name`, announced by `ctx.session.send_tool_list_changed()`. */
async function growUnannounced(name: string): Promise<void> {
  const reply = await fleet!.request('/api/mcp/tools/py__add_tool_old/call', { method: 'POST', body: { arguments: { name } } });
  expect(reply.status).toBe(200);
  expect(reply.json.content[0].text).toBe(name);
}

const toolNames = async () => ((await fleet!.request('/api/mcp/tools')).json.tools as Array<{ name: string }>).map((tool) => tool.name);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('POST /api/mcp/servers/:name/refresh', () => {
  it('re-lists now: the new tool is callable, the journal records the change, the answer counts', { timeout: 60_000 }, async () => {
    fleet = await startFleet((dir) => ({ py: python(dir, 'py'), off: python(dir, 'off', { enabled: false }) }));
    await untilState(fleet, 'py', 'ready', 30_000);
    await growUnannounced('grown');
    expect(await toolNames()).not.toContain('py__grown');

    const reply = await fleet.request('/api/mcp/servers/py/refresh', { method: 'POST' });
    expect(reply.status).toBe(200);
    const tools = await toolNames();
    expect(tools).toContain('py__grown');
    expect(reply.json).toEqual({ tools: tools.filter((name) => name.startsWith('py__')).length, resources: 1, prompts: 1 });

    const call = await fleet.request('/api/mcp/tools/py__grown/call', { method: 'POST', body: { arguments: { text: 'hi' } } });
    expect(call.json).toMatchObject({ content: [{ type: 'text', text: 'grown says hi' }], details: { is_error: false } });
    const events = (await fleet.request('/api/mcp/events?since=0')).json.events as Array<Record<string, unknown>>;
    expect(events).toContainEqual(expect.objectContaining({ type: 'catalog.changed', server: 'py', kind: 'tools', added: ['grown'] }));
    expect((await fleet.request('/api/mcp/servers/py')).json.tool_count).toBe(reply.json.tools);

    // Nothing new: the same counts, no change journaled.
    const again = await fleet.request('/api/mcp/servers/py/refresh', { method: 'POST' });
    expect(again.json).toEqual(reply.json);
    const after = (await fleet.request('/api/mcp/events?since=0')).json.events as Array<{ type: string }>;
    expect(after.filter((event) => event.type === 'catalog.changed')).toHaveLength(1);

    const unknown = await fleet.request('/api/mcp/servers/nope/refresh', { method: 'POST' });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.code).toBe('not_found');
    const off = await fleet.request('/api/mcp/servers/off/refresh', { method: 'POST' });
    expect(off.status).toBe(409);
    expect(off.json.error).toEqual({ code: 'not_ready', message: 'server "off" is not ready (state: disabled)' });
  });

  it('a listing that fails is one error naming it; the tools listed before stay', { timeout: 60_000 }, async () => {
    fleet = await startFleet((dir) => ({ py: python(dir, 'py') }));
    await untilState(fleet, 'py', 'ready', 30_000);
    const before = await toolNames();
    await fleet.request('/api/mcp/tools/py__break_listing/call', { method: 'POST', body: { arguments: {} } });
    const reply = await fleet.request('/api/mcp/servers/py/refresh', { method: 'POST' });
    expect(reply.status).toBe(500);
    expect(reply.json.error.code).toBe('protocol');
    // The Python SDK does not tell a client what its handler raised.
    expect(reply.json.error.message).toBe('server py: cannot list its catalog: Internal server error');
    expect(await toolNames()).toEqual(before);
    expect((await fleet.request('/api/mcp/servers/py')).json.state).toBe('ready');
  });
});

describe('catalog_max_age_seconds', () => {
  it('a read after the age has the new tool on its first answer: tools, search, catalog', { timeout: 60_000 }, async () => {
    fleet = await startFleet((dir) => ({ py: python(dir, 'py', { catalog_max_age_seconds: 1 }) }));
    await untilState(fleet, 'py', 'ready', 30_000);

    await growUnannounced('for_tools');
    // A listing gets old by time alone: each read below comes past catalog_max_age_seconds (1 s).
    await sleep(1100);
    expect(await toolNames()).toContain('py__for_tools');

    await growUnannounced('for_search');
    await sleep(1100);
    const search = await fleet.request('/api/mcp/tools/search?q=for_search');
    expect(search.json.tools.map((tool: { name: string }) => tool.name)).toContain('py__for_search');

    await growUnannounced('for_catalog');
    await sleep(1100);
    const catalog = await fleet.request('/api/mcp/catalog');
    const py = catalog.json.servers.find((entry: { name: string }) => entry.name === 'py');
    expect(py.tools.map((tool: { name: string }) => tool.name)).toContain('py__for_catalog');
  });

  it('is validated like every field, and a PATCH sets and clears it', { timeout: 60_000 }, async () => {
    fleet = await startFleet((dir) => ({ py: python(dir, 'py') }));
    await untilState(fleet, 'py', 'ready', 30_000);
    for (const bad of [0, -5, 'soon', 90_000]) {
      const reply = await fleet.request('/api/mcp/servers/py', { method: 'PATCH', body: { catalog_max_age_seconds: bad } });
      expect(reply.status).toBe(400);
      expect(reply.json.error.field).toBe('catalog_max_age_seconds');
      expect(reply.json.error.message).toContain('catalog_max_age_seconds');
    }
    const set = await fleet.request('/api/mcp/servers/py', { method: 'PATCH', body: { catalog_max_age_seconds: 30 } });
    expect(set.status).toBe(200);
    expect(set.json.config.catalog_max_age_seconds).toBe(30);
    expect(fleet.config().servers.py.catalog_max_age_seconds).toBe(30);
    const cleared = await fleet.request('/api/mcp/servers/py', { method: 'PATCH', body: { catalog_max_age_seconds: null } });
    expect(cleared.status).toBe(200);
    expect(cleared.json.config.catalog_max_age_seconds ?? null).toBeNull();
  });
});
