// Catalog changes of a ready server (notifications/…/list_changed): tools,
// resources and prompts are re-listed and swapped in one step, journaled.
import { afterEach, describe, expect, test } from 'vitest';
import { RESOURCE_TOOL_NAMES } from '../../src/connection/capabilities/resources.js';
import { untilJournal, untilListed } from '../host/helpers.js';
import { catalogServer, startHost, textOf, type Running } from './helpers.js';

let running: Running | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

const names = (r: Running) => r.host.tools().map((tool) => tool.name);

describe('tools/list_changed', () => {
  test('an added tool appears and a removed one goes, each journaled with its name', async () => {
    running = await startHost((dir) => ({ cat: catalogServer(dir, 'cat') }), ['cat']);
    const r = running;
    // Watch every journal event: the server's other tools must be there at each one (swap in one step).
    const gaps: string[] = [];
    const unsubscribe = r.host.subscribe((event) => {
      if (!names(r).includes('cat__echo')) gaps.push(`${event.type} #${event.seq}`);
    });

    await r.host.callTool('cat__add_tool', { name: 'fresh' });
    await expect.poll(() => names(r), { timeout: 10_000 }).toContain('cat__fresh');
    expect(textOf(await r.host.callTool('cat__fresh', {}))).toBe('fresh');
    await expect.poll(() => r.events('catalog.changed').at(-1), { timeout: 10_000 }).toMatchObject({
      server: 'cat', kind: 'tools', added: ['fresh'], removed: [], changed: [],
    });

    await r.host.callTool('cat__remove_tool', { name: 'fresh' });
    await expect.poll(() => names(r), { timeout: 10_000 }).not.toContain('cat__fresh');
    await expect.poll(() => r.events('catalog.changed').at(-1), { timeout: 10_000 }).toMatchObject({ kind: 'tools', added: [], removed: ['fresh'] });
    unsubscribe();
    expect(textOf(await r.host.callTool('cat__fresh', {}))).toBe('tool "cat__fresh" is unavailable: server "cat" no longer offers it');

    expect(gaps).toEqual([]);
    // Re-registered, never unregistered, while the server stayed ready.
    expect(r.events('tools.unregistered')).toEqual([]);
    expect(r.host.server('cat')?.state).toBe('ready');
    expect(r.host.server('cat')?.tool_count).toBe(r.host.tools().length);
  });

  test('a changed tool is rebuilt; every unchanged tool keeps its agent tool', async () => {
    running = await startHost((dir) => ({ cat: catalogServer(dir, 'cat') }), ['cat']);
    const r = running;
    await r.host.callTool('cat__add_tool', { name: 'fresh' });
    await expect.poll(() => names(r), { timeout: 10_000 }).toContain('cat__fresh');
    const before = new Map(r.host.tools().map((tool) => [tool.name, tool]));

    await r.host.callTool('cat__describe_tool', { name: 'fresh', description: 'new words' });
    await expect.poll(() => r.events('catalog.changed').at(-1), { timeout: 10_000 }).toMatchObject({
      kind: 'tools', added: [], removed: [], changed: ['fresh'],
    });
    const after = new Map(r.host.tools().map((tool) => [tool.name, tool]));
    expect(after.get('cat__fresh')?.description).toBe('new words');
    expect(after.get('cat__fresh')).not.toBe(before.get('cat__fresh'));
    // The server's own tools; mcp-fleet's three resource tools are cheap and built anew each time.
    const meta = new Set<string>(RESOURCE_TOOL_NAMES.map((tool) => `cat__${tool}`));
    const own = [...after.keys()].filter((name) => name !== 'cat__fresh' && !meta.has(name));
    const kept = own.filter((name) => before.get(name) === after.get(name));
    expect(kept).toEqual(own);
    expect(kept.length).toBeGreaterThan(5);
    // A kept tool still calls the live connection.
    expect(textOf(await r.host.callTool('cat__echo', { text: 'still here' }))).toBe('still here');
    expect(r.events('tools.registered').at(-1)?.tools.find((tool) => tool.name === 'cat__fresh')?.description).toBe('new words');
  });

  test('a tool added right after initialize is there once the server is ready', async () => {
    running = await startHost((dir) => ({ early: catalogServer(dir, 'early', {}, '--change-after-init') }), ['early']);
    const r = running;
    await expect.poll(() => names(r), { timeout: 10_000 }).toContain('early__late');
    expect(textOf(await r.host.callTool('early__late', {}))).toBe('late');
  });

  test('the tool filter still applies to a changed listing', async () => {
    running = await startHost(
      (dir) => ({ cat: catalogServer(dir, 'cat', { tools: { include: null, exclude: ['hidden'] } }) }),
      ['cat'],
    );
    const r = running;
    await r.host.callTool('cat__add_tool', { name: 'hidden' });
    await r.host.callTool('cat__add_tool', { name: 'shown' });
    await expect.poll(() => names(r), { timeout: 10_000 }).toContain('cat__shown');
    expect(names(r)).not.toContain('cat__hidden');
  });
});

describe('resources/list_changed and prompts/list_changed', () => {
  /** Resolves with the next `catalog.changed` of `kind` journaled after now. */
  function nextChange(r: Running, kind: 'resources' | 'prompts') {
    const seen = r.events('catalog.changed').length;
    const change = () => r.events('catalog.changed').slice(seen).find((event) => event.kind === kind);
    return untilJournal(r.host, () => change() !== undefined, `a ${kind} change`).then(() => change());
  }

  test('the catalog follows added and removed resources, journaled by URI', async () => {
    running = await startHost((dir) => ({ cat: catalogServer(dir, 'cat') }), ['cat']);
    const r = running;
    const uris = () => r.host.catalog().find((entry) => entry.name === 'cat')?.resources?.map((resource) => resource.uri);
    expect((await untilListed(r.host, 'cat')).resources?.map((resource) => resource.uri)).toEqual(['fixture://static', 'fixture://blob']);

    let changed = nextChange(r, 'resources');
    await r.host.callTool('cat__add_resource', { uri: 'fixture://new', body: 'new body' });
    // The change is journaled with its listing: once told, the catalog has it.
    expect(await changed).toMatchObject({ kind: 'resources', added: ['fixture://new'], removed: [] });
    expect(uris()).toContain('fixture://new');

    changed = nextChange(r, 'resources');
    await r.host.callTool('cat__remove_resource', { uri: 'fixture://new' });
    expect(await changed).toMatchObject({ kind: 'resources', removed: ['fixture://new'] });
    expect(uris()).not.toContain('fixture://new');
  });

  test('prompt slash commands follow the server: on ready, on list_changed and on stop', async () => {
    running = await startHost((dir) => ({ cat: catalogServer(dir, 'cat') }), ['cat']);
    const r = running;
    const commands = () => r.host.prompts().map((prompt) => prompt.command);
    expect((await untilListed(r.host, 'cat')).prompts?.map((prompt) => prompt.name)).toEqual(['greet']);
    expect(commands()).toEqual(['/cat:greet']);

    let changed = nextChange(r, 'prompts');
    await r.host.callTool('cat__add_prompt', { name: 'brainstorm' });
    expect(await changed).toMatchObject({ kind: 'prompts', added: ['brainstorm'] });
    expect(commands()).toEqual(['/cat:greet', '/cat:brainstorm']);
    expect(r.host.catalog()[0]?.prompts?.map((prompt) => prompt.name)).toEqual(['greet', 'brainstorm']);

    changed = nextChange(r, 'prompts');
    await r.host.callTool('cat__remove_prompt', { name: 'brainstorm' });
    expect(await changed).toMatchObject({ kind: 'prompts', removed: ['brainstorm'] });
    expect(commands()).toEqual(['/cat:greet']);

    await r.host.removeServer('cat');
    expect(r.host.prompts()).toEqual([]);
  });
});
