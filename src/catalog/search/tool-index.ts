/**
 * The fleet's tools ranked by relevance to a natural-language query:
 * MiniSearch's BM25+ over the name split into words, the title, the
 * description and the input schema's parameters, the query widened with
 * synonyms (`query-terms.ts`) and with the indexed words closest to its own
 * in meaning (`related-terms.ts`, offline word vectors), each a weighted
 * term of one MiniSearch query. Kept incrementally: a re-listed server
 * re-indexes only the tools that changed.
 *
 * The fields are indexed as one text in which the name counts twice, rather
 * than as separate MiniSearch fields with boosts: per-field BM25 sums a term
 * once per field, so a tool that repeats one word everywhere (`ticket_id:
 * The ID of the ticket` in a `get_ticket` tool) outranked one matching two
 * different query words. One text saturates a word's weight once, as BM25F
 * does. Which fields a hit matched in is looked up in the tool's own terms.
 */
import MiniSearch from 'minisearch';
import type { SearchResult } from 'minisearch';
import { jsonEqual } from '../json-equal.js';
import { queryTerms } from './query-terms.js';
import { termsOf, toTerm, tokenize, toolFields } from './tool-text.js';
import type { ToolFields } from './tool-text.js';
import { createRelatedTerms } from './related-terms.js';

export interface SearchableTool {
  /** Agent-facing name, e.g. `files__read_text_file`: the tool's key in the index. */
  name: string;
  server: string;
  /** The server's own tool name, e.g. `read_text_file`. */
  original: string;
  title?: string;
  description: string;
  /** JSON Schema of the input, verbatim. */
  parameters: Record<string, unknown>;
}

/** A field of the tool's text. */
export type TextField = 'name' | 'title' | 'description' | 'parameters';
/** Why a tool is a hit: a field holding a query word (or a synonym of one), and `meaning` when it holds a word only close in meaning to one (`related-terms.ts`). */
export type MatchedField = TextField | 'meaning';

export interface ToolSearchHit {
  tool: SearchableTool;
  /** Higher is better, always > 0. */
  score: number;
  /** The fields in which a query term (or one of its synonyms, or a word close in meaning) matched, then `meaning` if a word close in meaning did. */
  matched: MatchedField[];
}

export interface ToolSearchOptions {
  /** At most this many hits (default 8). */
  limit?: number;
  /** Only tools for which this returns true. */
  filter?: (tool: SearchableTool) => boolean;
}

export interface ToolIndex {
  /** Replaces the server's tools; only tools that were added, removed or changed are (re)indexed, so one changed tool does not rebuild anything. */
  setServerTools(server: string, tools: readonly SearchableTool[]): void;
  removeServer(server: string): void;
  /** Ranked hits, best first, at most `limit` (default 8); an empty/blank query returns []. */
  search(query: string, options?: ToolSearchOptions): ToolSearchHit[];
  /** How many tools are indexed. */
  readonly size: number;
}

const DEFAULT_LIMIT = 8;

/**
 * A widening term (a synonym, or a word close in meaning) found in more
 * tools than this whose weight × IDF stays below `MIN_WIDENING_IMPACT` is
 * left out of the query: in so many tools ("show" → "list") it can hardly
 * tell them apart, yet MiniSearch multiplies the score of every tool
 * holding it by one more matched term (see `search`). Small catalogs keep
 * them all: there "directory" is in every filesystem tool, yet the one
 * way to find them for "folder".
 */
const MAX_CHEAP_POSTINGS = 100;
const MIN_WIDENING_IMPACT = 1;

/**
 * At most this many (tool, term) pairs a search walks: MiniSearch builds a
 * result object for each, which at 5,000 tools is most of a search's time.
 * The query's terms are kept by weight × IDF, best first, while they fit;
 * the best one always is. What is left out matches so many tools with so
 * little weight that it hardly orders them (on the benchmark's tuning half
 * 1,000 ranked as well as no limit, and halved the slowest searches).
 */
const MAX_POSTINGS = 1000;

/** How often each field is said in the indexed text: a word of the name says most about what a tool does. */
const FIELD_REPEATS: Record<TextField, number> = { name: 2, title: 1, description: 1, parameters: 1 };
const TEXT_FIELDS = Object.keys(FIELD_REPEATS) as TextField[];

/**
 * The semantic part: a query word that no indexed tool uses ("photo" in a
 * fleet that says "image") looks for the indexed terms closest to it in
 * meaning (`related-terms.ts`): at most `RELATED_LIMIT` whose
 * rarity-weighted cosine reaches `RELATED_MIN`, each weighted from 0 (at
 * `RELATED_MIN`) up to `RELATED_WEIGHT` (same meaning), like a synonym.
 * Only for words found nowhere: these word vectors (news and encyclopedia
 * text) place words of one topic close ("delete" near "annotation"), so
 * widening words that already match ranked no better on the benchmark's
 * tuning half and brought unrelated tools into small catalogs' results.
 */
const RELATED_MIN = 0.4;
const RELATED_LIMIT = 5;
const RELATED_WEIGHT = 0.6;

/** What MiniSearch indexes of a tool: its name (the id) and its fields as one text. */
interface Document {
  id: string;
  text: string;
}

interface Entry {
  server: string;
  tool: SearchableTool;
  /** Index term → which fields hold it (bit i: `TEXT_FIELDS[i]`), for `matched`. */
  fields: Map<string, number>;
}

/** A query's terms are index terms already, joined by spaces: MiniSearch only splits them again. */
const splitTerms = (text: string): string[] => text.split(' ');
const asIs = (term: string): string => term;

export function createToolIndex(): ToolIndex {
  const engine = new MiniSearch<Document>({
    fields: ['text'],
    tokenize,
    processTerm: toTerm,
    // Discarded versions are skipped by searches and vacuumed by MiniSearch itself (by default once
    // a tenth of the index, at least 20 documents, is stale), in batches between other work.
    autoVacuum: true,
    searchOptions: { tokenize: splitTerms, processTerm: asIs, prefix: false, fuzzy: false, combineWith: 'OR' },
  });
  const related = createRelatedTerms();
  /** name → the indexed tool and the server that owns it. */
  const entries = new Map<string, Entry>();
  /** server → names of its indexed tools. */
  const servers = new Map<string, Set<string>>();
  /** Index term → how many indexed tools hold it (MiniSearch keeps no such count of its own). */
  const documentFrequency = new Map<string, number>();

  function countTerms(terms: Iterable<string>, by: 1 | -1): void {
    for (const term of terms) {
      const next = (documentFrequency.get(term) ?? 0) + by;
      if (next > 0) documentFrequency.set(term, next);
      else documentFrequency.delete(term);
    }
  }

  /** Takes the tool's name from the server that listed it before, if another one did. */
  function own(server: string, entry: Entry): void {
    if (entry.server !== server) servers.get(entry.server)?.delete(entry.tool.name);
    entry.server = server;
  }

  function index(server: string, tool: SearchableTool): void {
    const text = toolFields(tool);
    const fields = fieldTerms(text);
    const current = entries.get(tool.name);
    const document = { id: tool.name, text: indexedText(text) };
    if (current === undefined) engine.add(document);
    else {
      own(server, current);
      countTerms(current.fields.keys(), -1);
      engine.replace(document);
    }
    countTerms(fields.keys(), 1);
    for (const term of fields.keys()) related.add(term);
    entries.set(tool.name, { server, tool, fields });
  }

  function unindex(name: string): void {
    const entry = entries.get(name);
    if (entry === undefined) return;
    entries.delete(name);
    countTerms(entry.fields.keys(), -1);
    engine.discard(name);
  }

  /** The query's terms with their weights: its words, their synonyms, and for a word no tool uses, the indexed words nearest in meaning (`byMeaning`). */
  function weightedTerms(query: string, byMeaning: Set<string>): Map<string, number> {
    const weights = queryTerms(query);
    for (const [term, weight] of [...weights]) {
      if (weight < 1 || documentFrequency.has(term)) continue;
      for (const [near, closeness] of related.near(term, RELATED_MIN, RELATED_LIMIT)) {
        const nearWeight = (RELATED_WEIGHT * (closeness - RELATED_MIN)) / (1 - RELATED_MIN);
        if ((weights.get(near) ?? 0) >= nearWeight) continue;
        weights.set(near, nearWeight);
        byMeaning.add(near);
      }
    }
    const impact = (term: string, weight: number) => weight * idf(documentFrequency.get(term) ?? 0, entries.size);
    for (const [term, weight] of weights) {
      const frequency = documentFrequency.get(term) ?? 0;
      // A term no tool holds could only cost MiniSearch a look-up.
      if (frequency === 0 || (weight < 1 && frequency > MAX_CHEAP_POSTINGS && impact(term, weight) < MIN_WIDENING_IMPACT)) weights.delete(term);
    }
    let postings = 0;
    const byImpact = [...weights].map(([term, weight]) => ({ term, impact: impact(term, weight) })).sort((a, b) => b.impact - a.impact);
    for (const [rank, { term }] of byImpact.entries()) {
      const frequency = documentFrequency.get(term)!;
      if (rank > 0 && postings + frequency > MAX_POSTINGS) weights.delete(term);
      else postings += frequency;
    }
    return weights;
  }

  /** The tools whose full or own name is `query` (any case), the full name first. */
  function exactNames(query: string, filter: ToolSearchOptions['filter']): ToolSearchHit[] {
    const wanted = query.trim().toLowerCase();
    if (wanted === '') return [];
    const hits: ToolSearchHit[] = [];
    for (const entry of entries.values()) {
      const full = entry.tool.name.toLowerCase() === wanted;
      if (!full && entry.tool.original.toLowerCase() !== wanted) continue;
      if (filter !== undefined && !filter(entry.tool)) continue;
      const hit: ToolSearchHit = { tool: entry.tool, score: 1, matched: ['name'] };
      if (full) hits.unshift(hit);
      else hits.push(hit);
    }
    return hits;
  }

  return {
    setServerTools(server, list) {
      const names = new Set<string>();
      for (const tool of list) {
        names.add(tool.name);
        const current = entries.get(tool.name);
        if (current !== undefined && sameText(current.tool, tool)) {
          // Unchanged text: hits hand out the newest object, nothing is re-indexed.
          own(server, current);
          current.tool = tool;
        } else index(server, tool);
      }
      for (const name of servers.get(server) ?? []) if (!names.has(name)) unindex(name);
      if (names.size === 0) servers.delete(server);
      else servers.set(server, names);
    },

    removeServer(server) {
      for (const name of servers.get(server) ?? []) unindex(name);
      servers.delete(server);
    },

    search(query, { limit = DEFAULT_LIMIT, filter } = {}) {
      if (limit <= 0) return [];
      /** Terms in the query only for their meaning: a hit through one of them reports `meaning`. */
      const byMeaning = new Set<string>();
      const weights = weightedTerms(query, byMeaning);
      // A query with no word to rank by (`x`, `r__x`: one-letter words are no terms) still finds a
      // tool it names exactly, by its full or its own name.
      if (weights.size === 0) return exactNames(query, filter).slice(0, limit);
      // One MiniSearch query: every term an OR'ed clause, weighted by `boostTerm`, the caller's filter
      // applied before the limit. MiniSearch then multiplies each tool's score by how many of the
      // terms it matched — synonyms and related words included, so a tool holding many loose
      // synonyms of one query word would outrank the tool that has the word itself. No option turns
      // that off; the score is divided back by that count (`queryTerms.length`), which leaves
      // MiniSearch's BM25+ sum of the weighted terms (held-out recall@5 0.59 → 0.70 on the benchmark).
      const results = engine.search([...weights.keys()].join(' '), {
        boostTerm: (term) => weights.get(term) ?? 0,
        ...(filter !== undefined && { filter: (result: SearchResult) => filter(entries.get(result.id as string)!.tool) }),
      });
      for (const result of results) result.score /= Math.max(1, result.queryTerms.length);
      return topByScore(results, limit).map((result) => hit(entries.get(result.id as string)!, result, byMeaning));
    },

    get size() {
      return entries.size;
    },
  };
}

/** The `limit` best results, best first (a partial pass: most of a wide query's results are never shown). */
function topByScore(results: SearchResult[], limit: number): SearchResult[] {
  const top: SearchResult[] = [];
  for (const result of results) {
    if (top.length === limit && result.score <= top[limit - 1]!.score) continue;
    let at = top.length;
    while (at > 0 && top[at - 1]!.score < result.score) at -= 1;
    top.splice(at, 0, result);
    if (top.length > limit) top.pop();
  }
  return top;
}

function hit(entry: Entry, result: SearchResult, byMeaning: ReadonlySet<string>): ToolSearchHit {
  let fieldBits = 0;
  let meaning = false;
  for (const term of result.terms) {
    fieldBits |= entry.fields.get(term) ?? 0;
    if (byMeaning.has(term)) meaning = true;
  }
  const matched: MatchedField[] = TEXT_FIELDS.filter((_, i) => (fieldBits & (1 << i)) !== 0);
  if (meaning) matched.push('meaning');
  return { tool: entry.tool, score: result.score, matched };
}

/** The tool's fields as the one text MiniSearch indexes, each said `FIELD_REPEATS` times. */
function indexedText(fields: ToolFields): string {
  return TEXT_FIELDS.flatMap((field) => Array<string>(FIELD_REPEATS[field]).fill(fields[field])).join('\n');
}

/** Index term → the fields holding it, as bits. */
function fieldTerms(fields: ToolFields): Map<string, number> {
  const bits = new Map<string, number>();
  for (const [i, field] of TEXT_FIELDS.entries()) {
    for (const term of termsOf(fields[field])) bits.set(term, (bits.get(term) ?? 0) | (1 << i));
  }
  return bits;
}

/** BM25's inverse document frequency, as MiniSearch computes it. */
function idf(documentFrequency: number, documentCount: number): number {
  return Math.log(1 + (documentCount - documentFrequency + 0.5) / (documentFrequency + 0.5));
}

/** Whether two versions of a tool index to the same text. */
function sameText(a: SearchableTool, b: SearchableTool): boolean {
  // The catalog sync hands unchanged tools over as the same objects: then nothing needs comparing.
  if (a === b) return true;
  return (
    a.original === b.original &&
    a.title === b.title &&
    a.description === b.description &&
    jsonEqual(a.parameters, b.parameters)
  );
}
