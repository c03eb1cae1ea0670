import MiniSearch from 'minisearch';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createToolIndex } from '../../src/catalog/search/tool-index.js';
import type { SearchableTool, ToolIndex } from '../../src/catalog/search/tool-index.js';
// Verbatim tools/list answers of server-filesystem, server-memory and five
// server-everything tools (2026.8.31), as bench/tools/dump-search-fixtures.js stores them.
import realTools from './real-tools.json' with { type: 'json' };

interface ListedTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
}

function searchable(server: string, tool: ListedTool): SearchableTool {
  return {
    name: `${server}__${tool.name}`,
    server,
    original: tool.name,
    ...(tool.title !== undefined && { title: tool.title }),
    description: tool.description ?? '',
    parameters: tool.inputSchema,
  };
}

const catalog: Record<string, SearchableTool[]> = Object.fromEntries(
  Object.entries(realTools as Record<string, ListedTool[]>).map(([server, tools]) => [server, tools.map((tool) => searchable(server, tool))]),
);

function fleetIndex(): ToolIndex {
  const index = createToolIndex();
  for (const [server, tools] of Object.entries(catalog)) index.setServerTools(server, tools);
  return index;
}

const names = (index: ToolIndex, query: string, limit?: number) =>
  index.search(query, limit === undefined ? {} : { limit }).map((hit) => hit.tool.name);

afterEach(() => {
  vi.restoreAllMocks();
});

describe('ranking', () => {
  const index = fleetIndex();

  it('indexes every tool once', () => {
    expect(index.size).toBe(14 + 9 + 5);
  });

  it.each([
    ['read the contents of a text file', ['filesystem__read_text_file', 'filesystem__read_file']],
    ['write a new file to disk', ['filesystem__write_file']],
    ['add two numbers together', ['everything__get-sum']],
    ['delete entities from the knowledge graph', ['memory__delete_entities']],
    ['list the environment variables', ['everything__get-env']],
  ])('ranks the tool that does "%s" first', (query, best) => {
    expect(best).toContain(names(index, query)[0]);
  });

  it('ranks best first, every score above zero', () => {
    const hits = index.search('search for files matching a pattern');
    expect(hits[0]?.tool.name).toBe('filesystem__search_files');
    for (const [i, hit] of hits.entries()) {
      expect(hit.score).toBeGreaterThan(0);
      if (i > 0) expect(hit.score).toBeLessThanOrEqual(hits[i - 1]!.score);
    }
  });

  it('matches name words split from snake_case, kebab-case and camelCase', () => {
    expect(names(index, 'tiny image')[0]).toBe('everything__get-tiny-image');
    const camel = createToolIndex();
    camel.setServerTools('s', [{ name: 's__takeScreenShot', server: 's', original: 'takeScreenShot', description: '', parameters: {} }]);
    expect(camel.search('screen shot').map((hit) => hit.matched)).toEqual([['name']]);
  });

  it('stems: a plural or another tense finds the same tool', () => {
    expect(names(index, 'observation deleted')[0]).toBe('memory__delete_observations');
  });

  it('a query with no word to rank by finds a tool it names exactly, by its full or its own name', () => {
    const short = createToolIndex();
    const tool = (server: string, original: string): SearchableTool => ({ name: `${server}__${original}`, server, original, description: '', parameters: {} });
    short.setServerTools('r', [tool('r', 'x'), tool('r', 'ab')]);
    short.setServerTools('q', [tool('q', 'x')]);
    expect(names(short, 'r__x')).toEqual(['r__x']);
    expect(names(short, 'R__X')).toEqual(['r__x']);
    expect(names(short, ' x ')).toEqual(['r__x', 'q__x']);
    expect(names(short, 'x', 1)).toEqual(['r__x']);
    expect(short.search('x', { filter: (found) => found.server === 'q' }).map((hit) => [hit.tool.name, hit.matched])).toEqual([['q__x', ['name']]]);
    expect(names(short, 'y')).toEqual([]);
    expect(names(short, '  ')).toEqual([]);
  });
});

describe('synonyms', () => {
  const index = fleetIndex();

  it('finds directory tools for "folder", a word none of them uses', () => {
    expect(JSON.stringify(catalog.filesystem).toLowerCase()).not.toContain('folder');
    expect(names(index, 'create a folder')[0]).toBe('filesystem__create_directory');
    expect(names(index, 'folder', 3)).toEqual(expect.arrayContaining(['filesystem__list_directory']));
  });

  it('finds the image tools for "picture"', () => {
    expect(names(index, 'picture', 3)).toEqual(expect.arrayContaining(['everything__get-tiny-image', 'filesystem__read_media_file']));
  });

  it('finds "remove" tools for "erase"', () => {
    expect(names(index, 'erase an observation')[0]).toBe('memory__delete_observations');
  });

  it("still ranks a tool using the user's own word above one using a synonym", () => {
    const index = createToolIndex();
    const tool = (original: string, description: string): SearchableTool => ({ name: `s__${original}`, server: 's', original, description, parameters: {} });
    index.setServerTools('s', [tool('open_directory', 'Opens a directory.'), tool('open_folder', 'Opens a folder.')]);
    expect(names(index, 'folder')).toEqual(['s__open_folder', 's__open_directory']);
    expect(names(index, 'directory')).toEqual(['s__open_directory', 's__open_folder']);
  });
});

describe('parameters', () => {
  it('walks nested schema properties: names and descriptions', () => {
    const index = fleetIndex();
    // "entityType" only appears inside create_entities' array items.
    const hit = index.search('entity type').find((h) => h.tool.name === 'memory__create_entities');
    expect(hit?.matched).toContain('parameters');
    // "dryRun" is a property of edit_file's input only.
    const edits = index.search('dry run').at(0);
    expect(edits?.tool.name).toBe('filesystem__edit_file');
    expect(edits?.matched).toEqual(['parameters']);
  });

  it('stays bounded on a deep, self-similar schema', () => {
    let schema: Record<string, unknown> = { type: 'string', description: 'bottomword' };
    for (let depth = 0; depth < 50; depth += 1) schema = { type: 'object', properties: { [`level${depth}`]: schema } };
    const index = createToolIndex();
    index.setServerTools('s', [{ name: 's__deep', server: 's', original: 'deep', description: 'deep', parameters: schema }]);
    expect(index.search('level49')).toHaveLength(1);
    expect(index.search('bottomword')).toEqual([]);
  });
});

describe('matched', () => {
  const index = fleetIndex();

  it('names the fields in which a query word or its synonym occurs', () => {
    const hit = index.search('tiny image')[0];
    expect(hit?.matched.sort()).toEqual(['description', 'name', 'title']);
    const echo = index.search('echo').find((h) => h.tool.name === 'everything__echo');
    expect(echo?.matched.sort()).toEqual(['description', 'name', 'parameters', 'title']);
  });
});

describe('limit, filter and blank queries', () => {
  const index = fleetIndex();

  it('returns at most 8 hits by default, else at most `limit`', () => {
    expect(index.search('file')).toHaveLength(8);
    expect(index.search('file', { limit: 3 })).toHaveLength(3);
    expect(index.search('file', { limit: 100 }).length).toBeGreaterThan(8);
    expect(index.search('file', { limit: 0 })).toEqual([]);
  });

  it('returns [] for an empty, blank or stopword-only query, and for words found nowhere', () => {
    expect(index.search('')).toEqual([]);
    expect(index.search('   \n\t')).toEqual([]);
    expect(index.search('the of and')).toEqual([]);
    expect(index.search('xylophonic')).toEqual([]);
  });

  it('keeps only the tools the filter accepts, before the limit', () => {
    const hits = index.search('file', { limit: 3, filter: (tool) => tool.server === 'everything' });
    expect(hits.map((hit) => hit.tool.name)).toEqual(['everything__gzip-file-as-resource']);
  });
});

describe('what a search asks MiniSearch', () => {
  /** `count` tools `{prefix}{i}` whose descriptions hold `words` and a number of their own. */
  const tools = (prefix: string, count: number, words: string): SearchableTool[] =>
    Array.from({ length: count }, (_, i) => ({ name: `s__${prefix}${i}`, server: 's', original: `${prefix}${i}`, description: `${words} number${i}`, parameters: {} }));
  /** The hits, and the terms MiniSearch was asked for. */
  const asked = (index: ToolIndex, query: string) => {
    const search = vi.spyOn(MiniSearch.prototype, 'search');
    const hits = index.search(query);
    return { hits, terms: String(search.mock.calls.at(-1)?.[0]).split(' ') };
  };

  it('leaves out a synonym that a large share of the catalog holds', () => {
    const index = createToolIndex();
    // "list" is a synonym of "show" (domain-synonyms.ts), here in every tool.
    index.setServerTools('s', tools('t', 1200, 'list widgets'));
    const { hits, terms } = asked(index, 'show widgets');
    expect(terms).toEqual(['widget']);
    expect(hits).toHaveLength(8);
  });

  it('walks at most MAX_POSTINGS tool-term pairs, keeping the terms that weigh most', () => {
    const index = createToolIndex();
    index.setServerTools('s', [...tools('gadget', 900, 'gadget'), ...tools('gizmo', 900, 'gizmo'), ...tools('sprocket', 3, 'sprocket')]);
    // Both common words would be 1,800 pairs: the rare word stays, and of the two equally weighty common words the first.
    const { hits, terms } = asked(index, 'gadget gizmo sprocket');
    expect(terms.sort()).toEqual(['gadget', 'sprocket']);
    expect(hits.slice(0, 3).map((hit) => hit.tool.original).sort()).toEqual(['sprocket0', 'sprocket1', 'sprocket2']);
    // A query's best term is always asked, however many tools hold it.
    const widgets = createToolIndex();
    widgets.setServerTools('s', tools('widget', 1500, 'widget'));
    expect(asked(widgets, 'widget').terms).toEqual(['widget']);
  });
});

describe('incremental updates', () => {
  /** Spies on every way a tool enters or leaves MiniSearch's index, to count what is re-indexed. */
  function spyOnIndexing() {
    return {
      add: vi.spyOn(MiniSearch.prototype, 'add'),
      replace: vi.spyOn(MiniSearch.prototype, 'replace'),
      discard: vi.spyOn(MiniSearch.prototype, 'discard'),
      addAll: vi.spyOn(MiniSearch.prototype, 'addAll'),
      remove: vi.spyOn(MiniSearch.prototype, 'remove'),
    };
  }

  it('re-indexes only the tool that changed', () => {
    const index = fleetIndex();
    const spies = spyOnIndexing();
    // A re-listed server: every object new, one description changed.
    const relisted = structuredClone(catalog.filesystem!);
    const changed = relisted.find((tool) => tool.original === 'move_file')!;
    changed.description = 'Teleport a file somewhere else.';
    index.setServerTools('filesystem', relisted);
    // MiniSearch's replace discards the old version and adds the new one: one add, for this tool only.
    expect(spies.replace).toHaveBeenCalledTimes(1);
    expect(spies.replace.mock.calls[0]?.[0]).toMatchObject({ id: 'filesystem__move_file' });
    expect(spies.add).toHaveBeenCalledTimes(1);
    expect(spies.discard).toHaveBeenCalledTimes(1);
    expect(spies.addAll).not.toHaveBeenCalled();
    expect(spies.remove).not.toHaveBeenCalled();
    expect(names(index, 'teleport')).toEqual(['filesystem__move_file']);
    // The old description said "rename"; only the name and title (move, its synonym) still match.
    const rename = index.search('rename').find((hit) => hit.tool.name === 'filesystem__move_file');
    expect(rename?.matched.sort()).toEqual(['name', 'title']);
    // Unchanged tools hand out the newest objects.
    expect(index.search('directory tree')[0]?.tool).toBe(relisted.find((tool) => tool.original === 'directory_tree'));
  });

  it('re-indexes a tool whose schema changed, and nothing for an identical list', () => {
    const index = fleetIndex();
    const spies = spyOnIndexing();
    index.setServerTools('memory', structuredClone(catalog.memory!));
    for (const spy of Object.values(spies)) expect(spy).not.toHaveBeenCalled();
    const relisted = structuredClone(catalog.memory!);
    relisted[0]!.parameters = { type: 'object', properties: { zeppelin: { type: 'string' } } };
    index.setServerTools('memory', relisted);
    expect(spies.replace).toHaveBeenCalledTimes(1);
    expect(spies.add).toHaveBeenCalledTimes(1);
    expect(names(index, 'zeppelin')).toEqual([relisted[0]!.name]);
  });

  it('adds a new tool and discards a dropped one, touching no other', () => {
    const index = fleetIndex();
    const spies = spyOnIndexing();
    const relisted = catalog.everything!.filter((tool) => tool.original !== 'echo');
    relisted.push({ name: 'everything__whistle', server: 'everything', original: 'whistle', description: 'Whistles a tune.', parameters: {} });
    index.setServerTools('everything', relisted);
    expect(spies.add.mock.calls.map(([document]) => document)).toEqual([expect.objectContaining({ id: 'everything__whistle' })]);
    expect(spies.discard.mock.calls).toEqual([['everything__echo']]);
    expect(spies.replace).not.toHaveBeenCalled();
    expect(names(index, 'whistle')).toEqual(['everything__whistle']);
  });

  it('forgets a tool the server no longer lists', () => {
    const index = fleetIndex();
    index.setServerTools('everything', catalog.everything!.filter((tool) => tool.original !== 'echo'));
    // Now that no tool says "echo", only tools close to it in meaning may be found.
    expect(names(index, 'echo', 50)).not.toContain('everything__echo');
    for (const hit of index.search('echo')) expect(hit.matched).toContain('meaning');
    expect(index.size).toBe(14 + 9 + 4);
  });

  it('never returns a tool of a removed server', () => {
    const index = fleetIndex();
    index.removeServer('filesystem');
    expect(index.size).toBe(9 + 5);
    for (const query of ['read a file', 'directory', 'write file', 'move file', 'search files']) {
      expect(index.search(query, { limit: 50 }).filter((hit) => hit.tool.server === 'filesystem')).toEqual([]);
    }
    index.setServerTools('memory', []);
    expect(index.size).toBe(5);
    expect(index.search('knowledge graph', { limit: 50 }).filter((hit) => hit.tool.server === 'memory')).toEqual([]);
    index.removeServer('no-such-server');
    expect(index.size).toBe(5);
  });

  it('moves a tool name to the server that lists it last', () => {
    const index = createToolIndex();
    const tool = (server: string, description: string): SearchableTool => ({ name: 'shared__tool', server, original: 'tool', description, parameters: {} });
    index.setServerTools('a', [tool('a', 'first owner')]);
    index.setServerTools('b', [tool('b', 'second owner')]);
    expect(index.size).toBe(1);
    expect(index.search('owner').map((hit) => hit.tool.server)).toEqual(['b']);
    // The first server's next re-list without it must not remove the second server's tool.
    index.setServerTools('a', []);
    expect(index.search('owner').map((hit) => hit.tool.server)).toEqual(['b']);
    index.removeServer('b');
    expect(index.size).toBe(0);
  });
});
