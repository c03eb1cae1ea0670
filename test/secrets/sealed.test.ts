import { describe, expect, it } from 'vitest';
import { isSealed, open, openJson, seal, sealJson, type SealedValue } from '../../src/config/secrets/sealed.js';
import { newKey, openFailure } from './keys.js';

const context = 'server:files:env:API_KEY';


/** `base64` with one bit of its byte `at` flipped. */
function flipped(base64: string, at = 0): string {
  const bytes = Buffer.from(base64, 'base64');
  bytes[at] = bytes[at]! ^ 0x01;
  return bytes.toString('base64');
}

describe('seal and open', () => {
  const key = newKey();

  it.each([['sk-live-0123456789'], [''], ['ünïcødé ✓ 🔑'], ['x'.repeat(100_000)]])('round-trips %#', (plaintext) => {
    const sealed = seal(key, plaintext, context);
    expect(isSealed(sealed)).toBe(true);
    expect(sealed.kid).toBe(key.id);
    expect(Buffer.from(sealed.iv, 'base64')).toHaveLength(12);
    expect(Buffer.from(sealed.tag, 'base64')).toHaveLength(16);
    expect(open(key, sealed, context)).toBe(plaintext);
  });

  it('uses a fresh IV for every value, so equal secrets do not look equal', () => {
    const a = seal(key, 'same-secret', context);
    const b = seal(key, 'same-secret', context);
    expect(a.iv).not.toBe(b.iv);
    expect(a.data).not.toBe(b.data);
  });

  it('opens with whichever of several keys sealed it (a rotation)', () => {
    const old = newKey();
    const sealed = seal(old, 'rotated', context);
    expect(open([key, old], sealed, context)).toBe('rotated');
  });

  it('names both key ids when the worker lacks the key that sealed it', () => {
    const other = newKey();
    const err = openFailure(() => open(other, seal(key, 'secret-value', context), context));
    expect(err.reason).toBe('unknown_key');
    expect(err.context).toBe(context);
    expect(err.message).toContain(`sealed with key ${key.id}, but the worker's key is ${other.id}`);
  });

  it('fails authentication under a different key that claims the same id', () => {
    const impostor = { id: key.id, bytes: newKey().bytes };
    const err = openFailure(() => open(impostor, seal(key, 'secret-value', context), context));
    expect(err.reason).toBe('authentication');
    expect(err.message).toBe(`a sealed value at ${context} failed authentication: wrong key or altered data`);
  });

  it.each(['data', 'tag', 'iv'] as const)('fails authentication when one bit of %s is flipped', (field) => {
    const sealed = seal(key, 'secret-value-to-alter', context);
    const altered: SealedValue = { ...sealed, [field]: flipped(sealed[field], 3) };
    const err = openFailure(() => open(key, altered, context));
    expect(err.reason).toBe('authentication');
    expect(err.message).not.toContain('secret-value-to-alter');
  });

  it('fails authentication when data is cut short or grown', () => {
    const sealed = seal(key, 'secret-value', context);
    const data = Buffer.from(sealed.data, 'base64');
    for (const changed of [data.subarray(1), Buffer.concat([data, Buffer.of(0)])]) {
      expect(openFailure(() => open(key, { ...sealed, data: changed.toString('base64') }, context)).reason).toBe('authentication');
    }
  });

  it('does not open at another context: a value moved to another field or server fails', () => {
    const sealed = seal(key, 'secret-value', context);
    for (const elsewhere of ['server:files:env:OTHER', 'server:other:env:API_KEY', 'server:files:headers:API_KEY', '']) {
      const err = openFailure(() => open(key, sealed, elsewhere));
      expect(err.reason).toBe('authentication');
      expect(err.context).toBe(elsewhere);
    }
  });

  it.each([
    ['another algorithm', { $sealed: 'aes-128-gcm' }],
    ['a short IV', { iv: Buffer.alloc(8).toString('base64') }],
    ['a short tag', { tag: Buffer.alloc(12).toString('base64') }],
    ['a kid that is not one', { kid: 'not-a-key-id' }],
    ['an extra field', { plaintext: 'oops' }],
  ])('refuses a value with %s as malformed', (_name, change) => {
    const bad = { ...seal(key, 'secret-value', context), ...change } as SealedValue;
    expect(isSealed(bad)).toBe(false);
    expect(openFailure(() => open(key, bad, context)).reason).toBe('malformed');
  });

  it('recognises only sealed values', () => {
    for (const value of [null, 'text', 42, {}, [], { $sealed: 'aes-256-gcm' }]) expect(isSealed(value)).toBe(false);
  });
});

describe('sealJson and openJson', () => {
  const key = newKey();
  const consent = { state: 'state-canary-5e1d', code_verifier: 'verifier-canary-c0de', started_at: 1_700_000_000_000 };

  it('round-trips a whole JSON value, hiding all of it', () => {
    const sealed = sealJson(key, consent, 'consent:remote');
    expect(JSON.stringify(sealed)).not.toMatch(/canary|started_at/);
    expect(openJson(key, sealed, 'consent:remote')).toEqual(consent);
  });

  it('does not open for another server', () => {
    const sealed = sealJson(key, consent, 'consent:remote');
    expect(openFailure(() => openJson(key, sealed, 'consent:other')).reason).toBe('authentication');
  });
});
