// The leak scanner itself: a scan that finds nothing must mean there was nothing to find.
import { describe, expect, it } from 'vitest';
import { maskSecret } from '../../src/config/masking.js';
import { Canaries } from './canaries.js';

describe('Canaries.leaksIn', () => {
  const canaries = new Canaries();
  const plain = canaries.make('plain');
  const special = canaries.make('special', { special: true });

  it('finds the whole value, raw or JSON-escaped', () => {
    expect(canaries.leaksIn(`x ${plain} y`)).toEqual(['plain: the whole value']);
    expect(canaries.leaksIn(JSON.stringify({ v: special }))).toEqual(['special: the whole value']);
  });

  it('finds any 8-character piece past the fixed prefix: a cut or half-redacted secret', () => {
    const random = plain.slice('canary-plain-'.length);
    expect(canaries.leaksIn(`…${random.slice(3, 11)}…`)).toEqual([`plain: the piece "${random.slice(3, 11)}"`]);
    expect(canaries.leaksIn(`${plain.slice(0, -4)}••••`)).toHaveLength(1);
  });

  it('allows the toResponse() mask, and nothing else of the last 4 characters', () => {
    expect(canaries.leaksIn(JSON.stringify({ masked: maskSecret(plain) }))).toEqual([]);
    expect(canaries.leaksIn(`tail ${plain.slice(-4)}`)).toEqual([
      expect.stringMatching(/^plain: its last 4 characters outside a mask/),
    ]);
  });

  it('ends each canary in alternating-case consonants, a shape no printed word or acronym has', () => {
    const tails = Array.from({ length: 200 }, (_, i) => canaries.make(`shape-${i}`).slice(-4));
    for (const tail of tails) expect(tail).toMatch(/^[G-Z][g-z][G-Z][g-z]$/);
    expect(tails).not.toContain('HTTP');
  });

  it('ignores the fixed prefix alone, which is not secret', () => {
    expect(canaries.leaksIn('canary-plain- and canary-special-q"b\\s-')).toEqual([]);
  });
});
