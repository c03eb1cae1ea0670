/**
 * Client registrations kept per authorization server (SEP-2352): a
 * registration belongs to the issuer it was made with and is never presented
 * to another. Issuers are compared as the SDK's `auth()` compares them, so a
 * registration stored under `https://as.example/` is found for
 * `https://as.example`. The map is the credentials file's `clients`; these
 * functions never change it in place.
 */
import type { OAuthDiscoveryState } from '@modelcontextprotocol/client';
import type { StoredClient } from './credentials-file.js';

/** Registrations by the issuer they were made with. */
export type Registrations = Record<string, StoredClient>;

/** The issuer tokens and registrations of `discovery`'s authorization server are stamped with, as the SDK's auth() stamps them. */
export function issuerOf(discovery: OAuthDiscoveryState): string {
  return discovery.authorizationServerMetadata?.issuer ?? discovery.authorizationServerUrl;
}

/**
 * Whether two authorization server identifiers name the same server, as the
 * SDK's auth() compares them: as parsed URLs, one trailing `/` either way.
 */
export function sameIssuer(a: string, b: string): boolean {
  let [x, y] = [a, b];
  try {
    [x, y] = [new URL(a).href, new URL(b).href];
  } catch {
    // Not two URLs: compared as written.
  }
  return x === y || (x.endsWith('/') && x.slice(0, -1) === y) || (y.endsWith('/') && y.slice(0, -1) === x);
}

/** The registration made with `issuer`, if any. */
export function registrationFor(registrations: Registrations, issuer: string): StoredClient | undefined {
  return Object.entries(registrations).find(([key]) => sameIssuer(key, issuer))?.[1];
}

/** `registrations` with `client` as the one made with `issuer` (replacing an earlier one). */
export function withRegistration(registrations: Registrations, issuer: string, client: StoredClient): Registrations {
  return { ...withoutRegistration(registrations, issuer), [issuer]: client };
}

/** `registrations` without the one made with `issuer`. */
export function withoutRegistration(registrations: Registrations, issuer: string): Registrations {
  return Object.fromEntries(Object.entries(registrations).filter(([key]) => !sameIssuer(key, issuer)));
}
