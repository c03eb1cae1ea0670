// Catalog and diff routes against a real host: fixture servers and the
// reference server-everything (which has resources and prompts).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { untilListed } from '../host/helpers.js';
import { CANARIES, healthy, startFleet, untilState, type Fleet } from './fleet.js';

const [ENV_SECRET, REPLACED_SECRET] = CANARIES as [string, string];
const EVERYTHING = [process.execPath, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'];

let fleet: Fleet | undefined;
afterEach(async () => {
  await fleet?.close();
  fleet = undefined;
});

describe('GET /api/mcp/catalog', () => {
  // Two servers to start, server-everything among them: room for a busy machine.
  it('per server: masked config, status, tools with both names, resources and prompts', { timeout: 60_000 }, async () => {
    fleet = await startFleet((dir) => ({
      alpha: healthy(dir, 'alpha', { env: { API_KEY: ENV_SECRET } }),
      everything: { type: 'local', command: EVERYTHING, timeout_seconds: 20 },
      off: { type: 'local', command: ['node'], enabled: false },
    }));
    await untilState(fleet, 'alpha', 'ready');
    await untilState(fleet, 'everything', 'ready');
    // Resources and prompts are listed once the server is ready: the catalog says `null` until then.
    await untilListed(fleet.host, 'everything');
    const reply = await fleet.request('/api/mcp/catalog');
    expect(reply.status).toBe(200);
    expect(Object.keys(reply.json)).toEqual(['servers']);
    const entries: Array<{ name: string }> = reply.json.servers;
    const byName: Record<string, any> = Object.fromEntries(entries.map((entry) => [entry.name, entry]));

    const alpha = byName.alpha;
    // It offers neither: listed as none the moment it is ready.
    expect(alpha).toMatchObject({ state: 'ready', tool_count: 8, resources: [], resource_templates: [], prompts: [] });
    expect(alpha.config.env.API_KEY).toEqual({ has_value: true, masked: '••••0001' });
    expect(alpha.tools).toContainEqual({
      name: 'alpha__echo',
      original: 'echo',
      description: 'Returns its text',
      parameters: expect.objectContaining({ type: 'object' }),
      // No MCP App: no UI, and a model sees it.
      ui: null,
      model_visible: true,
    });

    const everything = byName.everything;
    expect(everything.tools.map((t: { original: string }) => t.original)).toContain('echo');
    expect(everything.resources.length).toBeGreaterThan(0);
    expect(everything.resources[0]).toMatchObject({ uri: expect.any(String), name: expect.any(String) });
    expect(everything.prompts.length).toBeGreaterThan(0);

    // Never connected: nothing is listed, which is not the same as offering nothing.
    expect(byName.off).toMatchObject({ state: 'disabled', tools: [], resources: null, resource_templates: null, prompts: null });
  });
});

describe('GET /api/mcp/catalog/diff', () => {
  it('is empty when the file matches what runs', async () => {
    fleet = await startFleet((dir) => ({ alpha: healthy(dir, 'alpha') }));
    const reply = await fleet.request('/api/mcp/catalog/diff');
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ added: [], removed: [], changed: [], invalid: [] });
  });

  it('names added, removed and changed fields; a changed secret only as a path', async () => {
    // Not watching: a watching worker would apply the edit, and the file would match again.
    fleet = await startFleet(
      (dir) => ({
        alpha: healthy(dir, 'alpha', { env: { API_KEY: ENV_SECRET } }),
        beta: { type: 'local', command: ['node'], enabled: false },
      }),
      {},
      { watchConfig: false },
    );
    await untilState(fleet, 'alpha', 'ready');
    // Someone edits the file by hand while the worker runs.
    const edited = fleet.config();
    edited.servers.alpha.env.API_KEY = REPLACED_SECRET;
    edited.servers.alpha.timeout_seconds = 30;
    delete edited.servers.beta;
    edited.servers.gamma = { type: 'local', command: ['node'], enabled: false };
    writeFileSync(join(fleet.dir, 'mcp_servers.json'), JSON.stringify(edited));

    const reply = await fleet.request('/api/mcp/catalog/diff');
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({
      added: ['gamma'],
      removed: ['beta'],
      changed: [{ name: 'alpha', fields: expect.arrayContaining(['env.API_KEY', 'timeout_seconds']) }],
      invalid: [],
    });
    expect(reply.json.changed[0].fields).toHaveLength(2);

    // An entry that no longer validates is skipped, not removed: it is listed with why, and alpha still runs.
    edited.servers.alpha.timeout_seconds = 'thirty';
    writeFileSync(join(fleet.dir, 'mcp_servers.json'), JSON.stringify(edited));
    const skipped = await fleet.request('/api/mcp/catalog/diff');
    expect(skipped.json).toEqual({
      added: ['gamma'],
      removed: ['beta'],
      changed: [],
      invalid: [{ name: 'alpha', problem: 'servers.alpha.timeout_seconds: expected number, received string' }],
    });
    expect(skipped.text).not.toContain(REPLACED_SECRET);

    // A file that does not parse says nothing of what is stored: no diff, rather than every server removed.
    writeFileSync(join(fleet.dir, 'mcp_servers.json'), '{"servers": {');
    const broken = await fleet.request('/api/mcp/catalog/diff');
    expect(broken.status).toBe(409);
    expect(broken.json.error.code).toBe('config_file_broken');
    expect(broken.json.error.message).toMatch(/^cannot compare .*mcp_servers\.json with the running servers: it exists but does not parse \(/);
  });
});
