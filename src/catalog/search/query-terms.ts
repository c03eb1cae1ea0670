/**
 * A query's terms with their weights: its own words at full weight, and the
 * synonyms of each word at a lower one, so a tool described with the other
 * word ("directory" for "folder") is found, yet one that uses the user's own
 * word still ranks first.
 */
import { DOMAIN_SYNONYMS } from './domain-synonyms.js';
import { toTerm, tokenize } from './tool-text.js';
import { WORDNET_SYNONYMS } from './wordnet-synonyms.js';

/** A synonym from the hand-kept computing list: near-equivalent in tool text. */
const DOMAIN_WEIGHT = 0.6;
/**
 * A WordNet synonym: a shared main sense, but often not the sense meant
 * ("show" → "exhibit"), so it only tips close calls. (0.3 and up let such
 * senses outrank the query's own words in the benchmark's tuning half.)
 */
const WORDNET_WEIGHT = 0.15;

/** Index term → weight (1 for the query's own words). Empty for a blank query. */
export function queryTerms(query: string): Map<string, number> {
  const terms = new Map<string, number>();
  const add = (term: string, weight: number) => {
    if ((terms.get(term) ?? 0) < weight) terms.set(term, weight);
  };
  for (const word of tokenize(query)) {
    const term = toTerm(word);
    if (term === null) continue;
    add(term, 1);
    for (const synonym of synonymTable().domain.get(term) ?? []) add(synonym, DOMAIN_WEIGHT);
    for (const synonym of synonymTable().wordnet.get(term) ?? []) add(synonym, WORDNET_WEIGHT);
  }
  return terms;
}

interface SynonymTable {
  domain: Map<string, string[]>;
  wordnet: Map<string, string[]>;
}
// Built once from constant lists; never changed after.
let table: SynonymTable | undefined;

/** Both lists keyed by index term, built on first use, not at import: a host that never searches pays nothing. */
function synonymTable(): SynonymTable {
  table ??= {
    domain: termGroups(DOMAIN_SYNONYMS.map((group) => group.split(' '))),
    wordnet: termLines(WORDNET_SYNONYMS),
  };
  return table;
}

/** Every word of a group is a synonym of every other. */
function termGroups(groups: string[][]): Map<string, string[]> {
  const byTerm = new Map<string, Set<string>>();
  for (const group of groups) {
    const terms = group.map(toTerm).filter((term) => term !== null);
    for (const term of terms) {
      const synonyms = byTerm.get(term) ?? new Set<string>();
      for (const other of terms) if (other !== term) synonyms.add(other);
      byTerm.set(term, synonyms);
    }
  }
  return new Map([...byTerm].map(([term, synonyms]) => [term, [...synonyms]]));
}

/** `term synonym…` lines of index terms already (the generator stemmed them): a split each. */
function termLines(text: string): Map<string, string[]> {
  const byTerm = new Map<string, string[]>();
  for (const line of text.split('\n')) {
    const [term = '', ...synonyms] = line.split(' ');
    byTerm.set(term, synonyms);
  }
  return byTerm;
}
