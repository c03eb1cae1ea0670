/**
 * User API keys: `mcpf_` and 32 random bytes (base64url), shown once. Only a
 * SHA-256 of the key is stored: a 256-bit random key cannot be guessed from
 * its hash, so a slow hash (scrypt) would buy nothing and cost every request;
 * a plain digest also lets a store find the user by it.
 */
import { createHash, randomBytes } from 'node:crypto';

/** Every user key starts with this, so a leaked one is recognisable (secret scanners) and never taken for the admin token. */
export const USER_KEY_PREFIX = 'mcpf_';

/** A fresh key. */
export function newUserKey(): string {
  return `${USER_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** What is stored of a key: its SHA-256, hex. */
export function keyHash(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** Whether `token` looks like a user key (the admin token is compared first either way). */
export function isUserKey(token: string): boolean {
  return token.startsWith(USER_KEY_PREFIX);
}
