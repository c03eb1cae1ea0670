/**
 * One secret sealed at rest: AES-256-GCM (encrypted and authenticated), a
 * fresh random IV per value, and the id of the key it was sealed with so a
 * worker holding another key says so instead of failing vaguely.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { oneLine } from '../../errors.js';
import type { SecretKey } from './secret-key.js';

const ALGORITHM = 'aes-256-gcm';
/** 96 bits: the IV size GCM is defined for; random IVs stay safe far beyond the number of secrets a fleet holds. */
const IV_BYTES = 12;
const TAG_BYTES = 16;

const base64Of = (bytes: number) =>
  z.base64().refine((text) => Buffer.from(text, 'base64').length === bytes, `must be ${bytes} bytes of base64`);

/** A sealed secret as it is stored: plain JSON, no secret in it. */
export const SealedValue = z.strictObject({
  $sealed: z.literal(ALGORITHM),
  /** Id of the key it was sealed with (see secret-key.ts): never the key. */
  kid: z.string().regex(/^[0-9a-f]{16}$/),
  /** The IV, 12 bytes of base64. */
  iv: base64Of(IV_BYTES),
  /** The ciphertext, base64 (as long as the plaintext). */
  data: z.base64(),
  /** The GCM authentication tag, 16 bytes of base64. */
  tag: base64Of(TAG_BYTES),
});
export type SealedValue = z.infer<typeof SealedValue>;

/** Why a sealed value could not be opened; `context` names where it lives, never what it holds. */
export class SecretOpenError extends Error {
  override readonly name = 'SecretOpenError';
  constructor(
    /** `unknown_key`: sealed with a key the worker lacks; `authentication`: wrong key or altered data; `malformed`: not a sealed value; `plaintext`: a secret stored unsealed. */
    readonly reason: 'unknown_key' | 'authentication' | 'malformed' | 'plaintext',
    readonly context: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(oneLine(message), options);
  }
}

/** Whether `value` has the shape of a sealed value. */
export function isSealed(value: unknown): value is SealedValue {
  return SealedValue.safeParse(value).success;
}

/**
 * Seals `plaintext` with `key`. `context` (e.g. `server:files:env:API_KEY`)
 * is authenticated with it, not stored: a value copied to another field or
 * row does not open there.
 */
export function seal(key: SecretKey, plaintext: string, context: string): SealedValue {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(ALGORITHM, key.bytes, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(context, 'utf8'));
  const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return {
    $sealed: ALGORITHM,
    kid: key.id,
    iv: iv.toString('base64'),
    data: data.toString('base64'),
    tag: cipher.getAuthTag().toString('base64'),
  };
}

/**
 * Opens a value sealed at `context` with whichever of `keys` has its key id.
 * Throws SecretOpenError: `unknown_key` naming both key ids, `authentication`
 * when the data, IV, tag or context were altered, `malformed` when `sealed` is
 * not a sealed value at all.
 */
export function open(keys: SecretKey | readonly SecretKey[], sealed: SealedValue, context: string): string {
  const parsed = SealedValue.safeParse(sealed);
  if (!parsed.success) throw new SecretOpenError('malformed', context, `the value at ${context} is not a sealed value`);
  const { kid, iv, data, tag } = parsed.data;
  const all = Array.isArray(keys) ? (keys as readonly SecretKey[]) : [keys as SecretKey];
  const key = all.find((each) => each.id === kid);
  if (key === undefined) {
    const held = all.map((each) => each.id).join(', ') || 'none';
    throw new SecretOpenError(
      'unknown_key',
      context,
      `the value at ${context} was sealed with key ${kid}, but the worker's key is ${held}: start it with the key that sealed it`,
    );
  }
  const decipher = createDecipheriv(ALGORITHM, key.bytes, Buffer.from(iv, 'base64'), { authTagLength: TAG_BYTES });
  decipher.setAAD(Buffer.from(context, 'utf8'));
  decipher.setAuthTag(Buffer.from(tag, 'base64'));
  try {
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64')), decipher.final()]).toString('utf8');
  } catch (cause) {
    throw new SecretOpenError(
      'authentication',
      context,
      `a sealed value at ${context} failed authentication: wrong key or altered data`,
      { cause },
    );
  }
}

/** Seals a whole JSON value (a pending consent: its `state` and PKCE verifier) as one secret. */
export function sealJson(key: SecretKey, value: unknown, context: string): SealedValue {
  return seal(key, JSON.stringify(value), context);
}

/** The JSON value sealed by {@link sealJson} at `context`; not validated (the caller parses it with its schema). */
export function openJson(keys: SecretKey | readonly SecretKey[], sealed: SealedValue, context: string): unknown {
  return JSON.parse(open(keys, sealed, context));
}
