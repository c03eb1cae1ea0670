/**
 * The OAuth credentials of one server (oauth/credentials-file.ts) as the
 * database stores them: the record's JSON with every secret sealed, bound to
 * `oauth:<server>:<field>…`, and `server_url` sealed whole when its query
 * carries a credential (`?api_key=…`). Discovery metadata, scopes, issuers
 * and the redirect port are not secrets and stay readable.
 */
import type { CredentialsRecord } from '../../auth/index.js';
import { openAtPaths, openUrl, sealAtPaths, sealUrl } from './seal-at-paths.js';
import type { SecretKey } from './secret-key.js';
import { contextOf, EACH, type SecretPath } from './secret-paths.js';

/** Where a credentials record keeps its secrets. */
export const CREDENTIALS_SECRET_PATHS: readonly SecretPath[] = [
  ['tokens', 'access_token'],
  ['tokens', 'refresh_token'],
  ['tokens', 'id_token'],
  // Dynamic registrations, by issuer: a confidential client's secret.
  ['clients', EACH, 'client_secret'],
  // RFC 7592's management token: the SDK drops it today; sealed should a registration keep it.
  ['clients', EACH, 'registration_access_token'],
  // PKCE verifier of the consent under way.
  ['code_verifier'],
  // The DPoP key's private part; its public members (x, y) name the key and may stay readable.
  ['dpop_key', 'private_jwk', 'd'],
];

/** A credentials record with its secrets sealed: JSON fit for a database column, no secret in it. */
export type StoredCredentialsRecord = Readonly<Record<string, unknown>>;

/** `record` with every secret sealed with `key`, bound to `server`. */
export function sealCredentialsRecord(key: SecretKey, server: string, record: CredentialsRecord): StoredCredentialsRecord {
  const sealed = sealAtPaths(key, record, CREDENTIALS_SECRET_PATHS, contextPrefix(server)) as StoredCredentialsRecord;
  // The server URL the record is bound to is the config's: its credential parameter (`?api_key=…`) sealed as there.
  return { ...sealed, server_url: sealUrl(key, record.server_url, urlContext(server)) };
}

/**
 * The record `stored` for `server` with its secrets opened. Not yet validated
 * (it comes from the database): parse it with `CredentialsRecord`. Throws
 * SecretOpenError when a secret does not open or is stored in clear.
 */
export function openCredentialsRecord(keys: SecretKey | readonly SecretKey[], server: string, stored: unknown): unknown {
  const opened = openAtPaths(keys, stored, CREDENTIALS_SECRET_PATHS, contextPrefix(server));
  if (typeof opened !== 'object' || opened === null || !Object.hasOwn(opened, 'server_url')) return opened;
  return { ...opened, server_url: openUrl(keys, (opened as Record<string, unknown>).server_url, urlContext(server)) };
}

function urlContext(server: string): string {
  return contextOf([...contextPrefix(server), 'server_url']);
}

function contextPrefix(server: string): string[] {
  return ['oauth', server];
}
