/**
 * Sealing and opening the secrets of a JSON value found at given paths, each
 * bound to its own context (`<prefix>:<field>:<key>…`). Shared by the server
 * config and the OAuth credentials record.
 */
import { hasCredentialParameter } from '../masking.js';
import { open, seal, SecretOpenError, type SealedValue } from './sealed.js';
import type { SecretKey } from './secret-key.js';
import { contextOf, mapAtPaths, type SecretPath } from './secret-paths.js';

/** `value` with every string at `paths` sealed with `key`; `null` and absent secrets stay as they are. */
export function sealAtPaths(key: SecretKey, value: unknown, paths: readonly SecretPath[], prefix: readonly string[]): unknown {
  return mapAtPaths(value, paths, (found, at) =>
    typeof found === 'string' ? seal(key, found, contextOf([...prefix, ...at])) : found,
  );
}

/**
 * `value` with every sealed value at `paths` opened. A plain string there is
 * refused (`plaintext`): what was stored must have been sealed, so a secret in
 * clear text is a bug or a tampered row, not something to pass on quietly.
 * Anything else is left for the caller's schema to judge.
 */
export function openAtPaths(
  keys: SecretKey | readonly SecretKey[],
  value: unknown,
  paths: readonly SecretPath[],
  prefix: readonly string[],
): unknown {
  return mapAtPaths(value, paths, (found, at) => {
    const context = contextOf([...prefix, ...at]);
    if (typeof found === 'string') {
      throw new SecretOpenError('plaintext', context, `the secret at ${context} is stored in plain text, not sealed`);
    }
    if (typeof found === 'object' && found !== null && '$sealed' in found) return open(keys, found as SealedValue, context);
    return found;
  });
}

/**
 * `url` sealed whole at `context` when a query parameter named like a
 * credential carries a value (`?api_key=…`, a secret as a header is), else as
 * it is: the rest of a URL is no secret, and stays readable in the row.
 */
export function sealUrl(key: SecretKey, url: unknown, context: string): unknown {
  return typeof url === 'string' && hasCredentialParameter(url) ? seal(key, url, context) : url;
}

/**
 * A URL stored by {@link sealUrl}: a sealed one opened, a plain string as it
 * is (a URL with no credential, or a row written before URLs were sealed).
 */
export function openUrl(keys: SecretKey | readonly SecretKey[], stored: unknown, context: string): unknown {
  return typeof stored === 'object' && stored !== null && '$sealed' in stored ? open(keys, stored as SealedValue, context) : stored;
}
