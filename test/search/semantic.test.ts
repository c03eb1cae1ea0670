import { describe, expect, it } from 'vitest';
import { DOMAIN_SYNONYMS } from '../../src/catalog/search/domain-synonyms.js';
import { createToolIndex } from '../../src/catalog/search/tool-index.js';
import type { SearchableTool, ToolIndex } from '../../src/catalog/search/tool-index.js';
import { WORDNET_SYNONYMS } from '../../src/catalog/search/wordnet-synonyms.js';
import { wordVectorsLoaded } from '../../src/catalog/search/word-vectors.js';

const tool = (original: string, description: string): SearchableTool => ({ name: `s__${original}`, server: 's', original, description, parameters: {} });

function smallIndex(): ToolIndex {
  const index = createToolIndex();
  index.setServerTools('s', [
    tool('read_image', 'Reads an image file and returns it as base64.'),
    tool('send_email', 'Sends an email message to a recipient.'),
    tool('list_users', 'Lists the users of the workspace.'),
    tool('create_invoice', 'Creates an invoice for a customer.'),
  ]);
  return index;
}

/** The synonyms both tables give `word` (as the tables hold them: index terms). */
function tabledSynonyms(word: string): string[] {
  const wordnet = WORDNET_SYNONYMS.split('\n').find((line) => line.split(' ')[0] === word)?.split(' ').slice(1) ?? [];
  const domain = DOMAIN_SYNONYMS.filter((group) => group.split(' ').includes(word)).flatMap((group) => group.split(' '));
  return [...wordnet, ...domain];
}

// Vitest gives each test file its own module registry: nothing has read the vectors before this file's searches.
describe('word vectors', () => {
  it('are read on the first search needing them, never at import or indexing', () => {
    expect(wordVectorsLoaded()).toBe(false);
    const index = smallIndex();
    expect(wordVectorsLoaded()).toBe(false);
    // Every word is found as it is: no meaning needed.
    expect(index.search('send an email').map((hit) => hit.tool.original)).toEqual(['send_email']);
    expect(wordVectorsLoaded()).toBe(false);
    index.search('photo');
    expect(wordVectorsLoaded()).toBe(true);
  });
});

describe('meaning', () => {
  const index = smallIndex();

  it('finds a tool for a word close in meaning, with no shared word and no synonym-table entry', () => {
    expect(tabledSynonyms('photo').some((synonym) => synonym.startsWith('imag'))).toBe(false);
    const [hit] = index.search('photo');
    expect(hit?.tool.original).toBe('read_image');
    // The fields holding the related word, then why: its meaning.
    expect(hit?.matched).toEqual(['name', 'description', 'meaning']);
  });

  it('reports `meaning` only for hits through a related word', () => {
    // "bill" is a WordNet synonym of "invoice": a synonym, not a meaning.
    expect(index.search('bill').map((hit) => [hit.tool.original, hit.matched])).toEqual([['create_invoice', ['name', 'description']]]);
  });

  it('does not widen a word the tools already use', () => {
    expect(index.search('image').map((hit) => [hit.tool.original, hit.matched])).toEqual([['read_image', ['name', 'description']]]);
  });

  it('keeps scores above zero and monotone with rank', () => {
    const hits = index.search('letter to a colleague');
    expect(hits.length).toBeGreaterThan(0);
    for (const [i, hit] of hits.entries()) {
      expect(hit.score).toBeGreaterThan(0);
      if (i > 0) expect(hit.score).toBeLessThanOrEqual(hits[i - 1]!.score);
    }
  });

  it('returns nothing for a word without a vector that no tool uses', () => {
    expect(index.search('xylophonic')).toEqual([]);
  });

  it('finds words of tools indexed after the first search', () => {
    const before = index.search('catalog').map((hit) => hit.tool.original);
    index.setServerTools('t', [{ name: 't__open_directory', server: 't', original: 'open_directory', description: 'Opens a directory.', parameters: {} }]);
    // "catalog" sits next to "directory" in the vectors; the answer remembered for it above must not hide the new tool.
    expect(before).not.toContain('open_directory');
    expect(index.search('catalog').map((hit) => [hit.tool.original, hit.matched])).toEqual([['open_directory', ['name', 'description', 'meaning']]]);
  });
});
