/** Keys and canary checks shared by the secrets tests. */
import { randomBytes } from 'node:crypto';
import { SecretOpenError } from '../../src/config/secrets/sealed.js';
import { secretKeyFrom, type SecretKey } from '../../src/config/secrets/secret-key.js';

/** A fresh random key, as a worker would load it. */
export function newKey(): SecretKey {
  return secretKeyFrom(randomBytes(32).toString('base64'), 'test');
}

/**
 * Every form a leaked `canary` could take in a dump: as written, JSON-escaped,
 * hex, base64 and base64url, and the base64 of it at the two other byte
 * alignments (its middle, which does not depend on the bytes around it).
 */
export function leakedForms(canary: string): string[] {
  const bytes = Buffer.from(canary, 'utf8');
  const shifted = [1, 2].map((offset) => {
    const text = Buffer.concat([Buffer.alloc(offset), bytes]).toString('base64');
    return text.slice(4, -4);
  });
  return [
    canary,
    JSON.stringify(canary).slice(1, -1),
    bytes.toString('hex'),
    bytes.toString('base64').replace(/=+$/, ''),
    bytes.toString('base64url'),
    ...shifted,
  ];
}

/** The forms of any of `canaries` found in `text`. */
export function leaks(text: string, canaries: readonly string[]): string[] {
  return canaries.flatMap((canary) => leakedForms(canary).filter((form) => text.includes(form)));
}

/** The SecretOpenError `run` throws (the test fails when it throws none or another). */
export function openFailure(run: () => unknown): SecretOpenError {
  try {
    run();
  } catch (err) {
    if (err instanceof SecretOpenError) return err;
    throw err;
  }
  throw new Error('expected a SecretOpenError');
}
