/**
 * The index terms closest in meaning to a query word, by the cosine of
 * their word vectors (`word-vectors.ts`): "photo" finds "imag", "catalog"
 * finds "directori", with no synonym list. The vectors of the terms the
 * index holds sit end to end in one array, so a look-up is one pass of dot
 * products over a thousand or so rows (~0.15 ms). Terms join on the first
 * look-up after they were indexed, so indexing never reads the word
 * vectors; a term no tool uses any more stays (harmless: it matches
 * nothing). Answers are remembered until a new term joins.
 */
import { DIMENSIONS, termRarity, termVector } from './word-vectors.js';

/** Answers remembered at most (each a few hundred bytes); past it they are forgotten all at once. */
const MAX_REMEMBERED = 2000;

export type Closeness = readonly [term: string, closeness: number];

export interface RelatedTerms {
  /** `term` occurs in the index: it may be found from now on. */
  add(term: string): void;
  /**
   * Index terms other than `term`, closest first, at most `limit`, whose
   * closeness reaches `minimum`: the cosine of the two vectors times the
   * found term's rarity (`termRarity`), since the commonest words sit close
   * to almost everything. Empty for a term without a vector.
   */
  near(term: string, minimum: number, limit: number): readonly Closeness[];
}

export function createRelatedTerms(): RelatedTerms {
  const known = new Set<string>();
  /** Indexed since the last look-up, not yet given a row. */
  const pending: string[] = [];
  /** row → its term; the rows' unit vectors end to end; row → its term's rarity. */
  const terms: string[] = [];
  let vectors = new Float32Array(0);
  let rarities = new Float32Array(0);
  /** Answers since the last new row, by their arguments: a query's words recur far more often than the index's words change. */
  const remembered = new Map<string, readonly Closeness[]>();

  function addRow(term: string, vector: Float32Array): void {
    const row = terms.length;
    if (row === rarities.length) {
      const capacity = Math.max(256, row * 2);
      const grownVectors = new Float32Array(capacity * DIMENSIONS);
      grownVectors.set(vectors);
      vectors = grownVectors;
      const grownRarities = new Float32Array(capacity);
      grownRarities.set(rarities);
      rarities = grownRarities;
    }
    vectors.set(vector, row * DIMENSIONS);
    rarities[row] = termRarity(term);
    terms.push(term);
  }

  function addPending(): void {
    for (const term of pending) {
      const vector = termVector(term);
      if (vector !== undefined) addRow(term, vector);
    }
    pending.length = 0;
    // A new row may be closer than the ones found before.
    remembered.clear();
  }

  function closest(term: string, minimum: number, limit: number): Closeness[] {
    const query = termVector(term);
    if (query === undefined) return [];
    const found: [string, number][] = [];
    // The one hot loop of a search with an unknown word: locals, not the closure's variables, and
    // unrolled by four (DIMENSIONS is a multiple of 4).
    const rows = vectors;
    const rowRarities = rarities;
    for (let row = 0, at = 0; row < terms.length; row += 1, at += DIMENSIONS) {
      let dot = 0;
      for (let d = 0; d < DIMENSIONS; d += 4) {
        dot += query[d]! * rows[at + d]! + query[d + 1]! * rows[at + d + 1]! + query[d + 2]! * rows[at + d + 2]! + query[d + 3]! * rows[at + d + 3]!;
      }
      const closeness = dot * rowRarities[row]!;
      if (closeness >= minimum && terms[row] !== term) found.push([terms[row]!, closeness]);
    }
    return found.sort((a, b) => b[1] - a[1]).slice(0, limit);
  }

  return {
    add(term) {
      if (known.has(term)) return;
      known.add(term);
      pending.push(term);
    },

    near(term, minimum, limit) {
      if (pending.length > 0) addPending();
      const key = `${term} ${minimum} ${limit}`;
      let answer = remembered.get(key);
      if (answer === undefined) {
        if (remembered.size >= MAX_REMEMBERED) remembered.clear();
        answer = closest(term, minimum, limit);
        remembered.set(key, answer);
      }
      return answer;
    },
  };
}
