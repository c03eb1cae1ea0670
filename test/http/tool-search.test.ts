// GET /api/mcp/tools/search against a real host on real stdio fixture servers:
// ranked results in the SPEC §6 shape, the limit, the 400s and the guards.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCommand } from '../fixtures/index.js';
import { CANARIES, healthy, startFleet, untilState, type Fleet } from './fleet.js';
import { TOKEN } from './helpers.js';
import type { ToolSearchResult } from '../../src/host/tool-search.js';

// One fleet for the file: these tests only read.
let fleet: Fleet;
beforeAll(async () => {
  fleet = await startFleet((dir) => ({
    alpha: healthy(dir, 'alpha', { env: { API_KEY: CANARIES[0] } }),
    // Configured but never started: its tools are nowhere to be found.
    off: healthy(dir, 'off', { enabled: false }),
  }));
  await untilState(fleet, 'alpha', 'ready');
});
afterAll(async () => {
  await fleet?.close();
});

const search = (query: string, options: { noAuth?: boolean; headers?: Record<string, string> } = {}) =>
  fleet.request(`/api/mcp/tools/search${query}`, options);

type Hit = ToolSearchResult;

describe('GET /api/mcp/tools/search', () => {
  it('answers the tools ranked by relevance, best first, wrapped', async () => {
    const reply = await search(`?q=${encodeURIComponent('add two numbers')}`);
    expect(reply.status).toBe(200);
    expect(Object.keys(reply.json)).toEqual(['tools']);
    const tools: Hit[] = reply.json.tools;
    expect(tools[0]).toEqual({
      name: 'alpha__add',
      server: 'alpha',
      original: 'add',
      description: 'Adds two numbers',
      parameters: expect.objectContaining({ properties: { a: { type: 'number' }, b: { type: 'number' } } }),
      score: expect.any(Number),
      available: true,
      denied: false,
      matched: expect.arrayContaining(['name', 'description']),
    });
    // A query many tools share words with: every one of them, in descending score.
    const many: Hit[] = (await search(`?q=${encodeURIComponent('text numbers fails cancel stderr slow env')}&limit=100`)).json.tools;
    expect(many.length).toBeGreaterThan(4);
    const scores = many.map((tool) => tool.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    expect(scores.every((score) => score > 0)).toBe(true);
    // `stderr` matches in its name, its description and its parameters: it leads.
    expect(many[0]).toMatchObject({ name: 'alpha__stderr' });
  });

  it('ranks by what a tool does: another query, another winner', async () => {
    const reply = await search(`?q=${encodeURIComponent('return the text I give')}`);
    expect(reply.status).toBe(200);
    expect(reply.json.tools[0]).toMatchObject({ name: 'alpha__echo', available: true });
  });

  it('finds only running servers\' tools: a disabled server has none', async () => {
    const reply = await search('?q=echo&limit=100');
    expect(reply.status).toBe(200);
    const servers = new Set(reply.json.tools.map((tool: Hit) => tool.server));
    expect(servers).toEqual(new Set(['alpha']));
  });

  it('honours limit', async () => {
    // `text` is in several of the healthy fixture's tools (echo, stderr, and their schemas).
    const all: Hit[] = (await search('?q=text&limit=100')).json.tools;
    expect(all.length).toBeGreaterThan(1);
    const one = await search('?q=text&limit=1');
    expect(one.status).toBe(200);
    expect(one.json.tools).toEqual([all[0]]);
    const two: Hit[] = (await search('?q=text&limit=2')).json.tools;
    expect(two).toEqual(all.slice(0, 2));
  });

  it('a query that matches nothing is an empty list, not an error', async () => {
    const reply = await search('?q=zyxwvutsrq');
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ tools: [] });
  });

  it.each([
    ['missing', ''],
    ['empty', '?q='],
    ['blank', '?q=%20%20%09'],
    ['missing, with a limit', '?limit=3'],
  ])('q %s → 400 naming q', async (_label, query) => {
    const reply = await search(query);
    expect(reply.status).toBe(400);
    expect(reply.json).toEqual({ error: { code: 'invalid_request', message: 'q: a search query is required', field: 'q' } });
  });

  it.each(['0', '101', '-1', '1.5', '1e1', '0x10', 'abc', ''])('limit=%s → 400 naming limit', async (limit) => {
    const reply = await search(`?q=echo&limit=${encodeURIComponent(limit)}`);
    expect(reply.status).toBe(400);
    expect(reply.json).toEqual({
      error: { code: 'invalid_request', message: 'limit: must be an integer from 1 to 100', field: 'limit' },
    });
  });

  it('limit 100 is the most allowed', async () => {
    expect((await search('?q=echo&limit=100')).status).toBe(200);
  });

  it('is a search, not a tool named "search": calling that is a 404', async () => {
    const reply = await fleet.request('/api/mcp/tools/search/call', { method: 'POST', body: { arguments: {} } });
    expect(reply.status).toBe(404);
    expect(reply.json.error.code).toBe('not_found');
  });

  it('needs the bearer token, and an accepted Host', async () => {
    const anonymous = await search('?q=echo', { noAuth: true });
    expect(anonymous.status).toBe(401);
    expect(anonymous.json.error.code).toBe('unauthorized');
    const wrong = await search('?q=echo', { noAuth: true, headers: { authorization: 'Bearer not-the-token' } });
    expect(wrong.status).toBe(401);
    const rebinding = await search('?q=echo', { headers: { host: `evil.example:${fleet.served.port}` } });
    expect(rebinding.status).toBe(403);
    expect(rebinding.json.error.code).toBe('forbidden_host');
    // A read: a foreign Origin may ask, it just cannot read the answer (no CORS header is ever sent).
    const foreign = await search('?q=echo', { headers: { origin: 'https://evil.example' } });
    expect(foreign.status).toBe(200);
    expect(foreign.headers['access-control-allow-origin']).toBeUndefined();
    expect(anonymous.text).not.toContain(TOKEN);
  });
});

describe('the search follows the fleet', () => {
  it('a server added at run time is found (and the default limit of 8 shows); removed, it is gone', async () => {
    const added = await fleet.request('/api/mcp/servers', {
      method: 'POST',
      body: { name: 'beta', type: 'local', command: fixtureCommand('healthy'), timeout_seconds: 15 },
    });
    expect(added.status).toBe(201);
    const found: Hit[] = (await search('?q=adds&limit=100')).json.tools;
    expect(found.map((tool) => tool.name).sort()).toEqual(['alpha__add', 'beta__add']);
    expect(found.every((tool) => tool.available)).toBe(true);

    // Sixteen tools now; a query most of them share a word with is capped at the default of 8.
    const wide = `?q=${encodeURIComponent('text numbers fails cancel stderr slow env reads')}`;
    const every: Hit[] = (await search(`${wide}&limit=100`)).json.tools;
    expect(every.length).toBeGreaterThan(8);
    expect((await search(wide)).json.tools).toEqual(every.slice(0, 8));

    expect((await fleet.request('/api/mcp/servers/beta', { method: 'DELETE' })).status).toBe(204);
    const after: Hit[] = (await search('?q=adds&limit=100')).json.tools;
    expect(after.map((tool) => tool.name)).toEqual(['alpha__add']);
  });
});
