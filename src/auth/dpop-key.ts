/**
 * The DPoP key (RFC 9449) a server's tokens are bound to, kept with the
 * tokens: an access or refresh token bound to a key that died with the
 * process could never be presented again, so a worker made to restart
 * would need a consent each time. ES256, the SDK's default algorithm.
 */
import { createHash, webcrypto } from 'node:crypto';
import type { DpopKeyPair } from '@modelcontextprotocol/client';
import { generateDpopKeyPair } from '@modelcontextprotocol/client';
import { z } from 'zod';

/** A stored key: the private JWK (`d` included: a secret, as the tokens are). */
export const StoredDpopKey = z.object({
  alg: z.literal('ES256'),
  private_jwk: z.looseObject({ kty: z.literal('EC'), crv: z.literal('P-256'), x: z.string(), y: z.string(), d: z.string() }),
});
export type StoredDpopKey = z.infer<typeof StoredDpopKey>;

const ES256 = { name: 'ECDSA', namedCurve: 'P-256' } as const;

/** A fresh key pair, extractable so it can be stored, and the form it is stored in. */
export async function createDpopKey(): Promise<{ keyPair: DpopKeyPair; stored: StoredDpopKey }> {
  const keyPair = await generateDpopKeyPair({ alg: 'ES256', extractable: true });
  const jwk = await webcrypto.subtle.exportKey('jwk', keyPair.privateKey);
  return { keyPair, stored: StoredDpopKey.parse({ alg: 'ES256', private_jwk: jwk }) };
}

/** The key pair a stored key describes, with the thumbprint its tokens carry as `cnf.jkt`. */
export async function dpopKeyPairOf(stored: StoredDpopKey): Promise<DpopKeyPair> {
  const { kty, crv, x, y, d } = stored.private_jwk;
  const privateKey = await webcrypto.subtle.importKey('jwk', { kty, crv, x, y, d }, ES256, false, ['sign']);
  const publicJwk = { kty, crv, x, y };
  const publicKey = await webcrypto.subtle.importKey('jwk', publicJwk, ES256, true, ['verify']);
  return { privateKey, publicKey, publicJwk, thumbprint: jwkThumbprint(publicJwk), alg: stored.alg };
}

/** RFC 7638: SHA-256 of the required members in lexicographic order, base64url. */
function jwkThumbprint(jwk: { kty: string; crv: string; x: string; y: string }): string {
  const canonical = JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y });
  return createHash('sha256').update(canonical).digest('base64url');
}
