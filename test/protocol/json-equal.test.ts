import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { jsonEqual } from '../../src/catalog/json-equal.js';

/** A small deterministic PRNG, so a failure names a reproducible case. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

function randomJson(next: () => number, depth = 0): unknown {
  const pick = Math.floor(next() * (depth > 3 ? 4 : 6));
  if (pick === 0) return null;
  if (pick === 1) return next() < 0.5;
  if (pick === 2) return Math.floor(next() * 3);
  if (pick === 3) return ['a', 'b', ''][Math.floor(next() * 3)];
  if (pick === 4) return Array.from({ length: Math.floor(next() * 3) }, () => randomJson(next, depth + 1));
  const object: Record<string, unknown> = {};
  for (const key of ['x', 'y', 'z']) if (next() < 0.5) object[key] = randomJson(next, depth + 1);
  return object;
}

/** A deep copy with every object's keys in reverse order. */
function reversedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reversedKeys);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).reverse().map(([key, item]) => [key, reversedKeys(item)]));
}

describe('jsonEqual', () => {
  it('ignores key order and compares arrays in order', () => {
    expect(jsonEqual({ a: 1, b: [1, { c: 'x' }] }, { b: [1, { c: 'x' }], a: 1 })).toBe(true);
    expect(jsonEqual([1, 2], [2, 1])).toBe(false);
  });

  it('tells apart what a catalog diff must notice', () => {
    const tool = { name: 't', description: 'd', inputSchema: { type: 'object', properties: { q: { type: 'string' } } } };
    const deepChange = { ...tool, inputSchema: { type: 'object', properties: { q: { type: 'number' } } } };
    expect(jsonEqual(tool, JSON.parse(JSON.stringify(tool)))).toBe(true);
    expect(jsonEqual(tool, deepChange)).toBe(false);
    expect(jsonEqual(tool, { ...tool, title: 'T' })).toBe(false);
    expect(jsonEqual({ a: undefined }, {})).toBe(false);
    expect(jsonEqual({ a: undefined }, { b: undefined })).toBe(false);
    expect(jsonEqual([], {})).toBe(false);
    expect(jsonEqual({}, [])).toBe(false);
    expect(jsonEqual(null, {})).toBe(false);
    expect(jsonEqual('1', 1)).toBe(false);
  });

  it('agrees with util.isDeepStrictEqual on random JSON values', () => {
    const next = random(7);
    let equalPairs = 0;
    for (let i = 0; i < 5000; i += 1) {
      const a = randomJson(next);
      // Half the pairs are copies with shuffled keys, half independent values.
      const b = next() < 0.5 ? reversedKeys(a) : randomJson(next);
      const expected = isDeepStrictEqual(a, b);
      if (expected) equalPairs += 1;
      expect(jsonEqual(a, b), JSON.stringify([a, b])).toBe(expected);
    }
    // Both outcomes were exercised.
    expect(equalPairs).toBeGreaterThan(1000);
    expect(equalPairs).toBeLessThan(4900);
  });
});
