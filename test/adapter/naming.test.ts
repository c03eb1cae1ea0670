import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_TOOL_NAME_LENGTH, namespaceToolName } from '../../src/catalog/tools/adapter.js';

const VALID = /^[A-Za-z0-9_-]{1,64}$/;
const RUNS = { numRuns: 3000 };

/** Independent oracle: per code point, not the implementation's regex. */
function sanitized(part: string): string {
  const out = [...part].map((c) => (/^[A-Za-z0-9_-]$/.test(c) ? c : '_')).join('');
  return out === '' ? '_' : out;
}

// Any string: full Unicode, lone surrogates, ASCII punctuation, and long ones.
const loneSurrogates = fc.string({ unit: fc.integer({ min: 0xd800, max: 0xdfff }).map((n) => String.fromCharCode(n)) });
const anyPart = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 80 }),
  fc.string({ unit: 'binary-ascii', maxLength: 200 }),
  loneSurrogates,
  fc.constant(''),
);
// A small alphabet makes near-collisions (`a_` vs `a__`) likely, so the injectivity test bites.
const validPart = (maxLength: number) =>
  fc.string({ unit: fc.constantFrom('a', 'b', '_', '-', '9'), minLength: 1, maxLength });
const plainServer = validPart(30).filter((s) => !s.includes('__') && !s.endsWith('_'));

describe('namespaceToolName', () => {
  it('always yields a provider-valid name, deterministically', () => {
    fc.assert(
      fc.property(anyPart, anyPart, (server, tool) => {
        const name = namespaceToolName(server, tool);
        expect(name).toMatch(VALID);
        expect(namespaceToolName(server, tool)).toBe(name);
      }),
      RUNS,
    );
  });

  it('is exactly `{server}__{tool}` after sanitizing when it fits', () => {
    fc.assert(
      fc.property(anyPart, anyPart, (server, tool) => {
        const joined = `${sanitized(server)}__${sanitized(tool)}`;
        fc.pre(joined.length <= MAX_TOOL_NAME_LENGTH);
        expect(namespaceToolName(server, tool)).toBe(joined);
      }),
      RUNS,
    );
  });

  it('keeps the whole sanitized tool part when only the server name is long', () => {
    const longServer = fc.string({ unit: 'binary', minLength: 40, maxLength: 300 });
    const shortTool = fc.string({ unit: 'binary', maxLength: 61 }).filter((t) => sanitized(t).length <= 61);
    fc.assert(
      fc.property(longServer, shortTool, (server, tool) => {
        const name = namespaceToolName(server, tool);
        expect(name.endsWith(`__${sanitized(tool)}`)).toBe(true);
        // The server part is a prefix of the sanitized server, at least one character.
        const serverPart = name.slice(0, name.length - sanitized(tool).length - 2);
        expect(serverPart.length).toBeGreaterThanOrEqual(1);
        expect(sanitized(server).startsWith(serverPart)).toBe(true);
        expect(name.length).toBe(Math.min(MAX_TOOL_NAME_LENGTH, sanitized(server).length + 2 + sanitized(tool).length));
      }),
      RUNS,
    );
  });

  it('keeps one server character and cuts the tool part when the tool alone is too long', () => {
    fc.assert(
      fc.property(anyPart, fc.string({ unit: 'binary-ascii', minLength: 62, maxLength: 300 }), (server, tool) => {
        const name = namespaceToolName(server, tool);
        expect(name).toBe(`${sanitized(server)[0]}__${sanitized(tool).slice(0, 61)}`);
        expect(name).toHaveLength(64);
      }),
      RUNS,
    );
  });

  it('maps non-matching characters one-for-one and empty parts to `_`', () => {
    expect(namespaceToolName('my.server', 'read file')).toBe('my_server__read_file');
    expect(namespaceToolName('', '')).toBe('____');
    expect(namespaceToolName('srv', '😀')).toBe('srv___');
    expect(namespaceToolName('git-hub_2', 'Get-Issue_1')).toBe('git-hub_2__Get-Issue_1');
  });

  it('is injective (and invertible) for valid names: server without `__`, not ending in `_`, joined ≤ 64', () => {
    const pair = fc
      .tuple(plainServer, validPart(40))
      .filter(([s, t]) => s.length + 2 + t.length <= MAX_TOOL_NAME_LENGTH);
    fc.assert(
      fc.property(pair, pair, ([s1, t1], [s2, t2]) => {
        const n1 = namespaceToolName(s1, t1);
        // The first `__` is the separator, so the originals come back.
        const cut = n1.indexOf('__');
        expect([n1.slice(0, cut), n1.slice(cut + 2)]).toEqual([s1, t1]);
        if (s1 !== s2 || t1 !== t2) expect(namespaceToolName(s2, t2)).not.toBe(n1);
      }),
      { numRuns: 10_000 },
    );
  });

  it('collides outside those conditions (why the registry keeps originals and reports shadowing)', () => {
    expect(namespaceToolName('a__b', 'c')).toBe(namespaceToolName('a', 'b__c'));
    expect(namespaceToolName('a_', 'b')).toBe(namespaceToolName('a', '_b'));
    expect(namespaceToolName('a.b', 't')).toBe(namespaceToolName('a_b', 't'));
    const long = 'x'.repeat(70);
    expect(namespaceToolName(`${long}1`, 'tool')).toBe(namespaceToolName(`${long}2`, 'tool'));
  });
});
