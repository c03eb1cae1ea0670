/**
 * OAuth credentials of one remote server, persisted as
 * `<state_dir>/oauth/<server>.json`, owner-only and written atomically like
 * the config (docs/configuration.md, Loading and saving). A record is bound to the server URL (and, for a
 * pre-registered client, its `client_id`): read under a different URL it is
 * empty, so a changed URL never receives another server's token. Client
 * registrations are kept per authorization server (its issuer): a server that
 * moves to another one (SEP-2352) gets a registration of its own there, and
 * the old one is never presented to the new server. The SDK stamps client and
 * tokens with their issuer and refuses them elsewhere. The provider reaches
 * these files through the file store of credentials-store.ts; with a database
 * the same record lives in PostgreSQL instead (pg-credentials-store.ts).
 */
import { chmod, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { FleetError } from '../errors.js';
import { writeOwnerOnly } from '../files/owner-only-file.js';
import { createSerialQueue } from '../files/serial-queue.js';
import { StoredDpopKey } from './dpop-key.js';

/** Tokens as stored: the SDK's fields, with an absolute expiry instead of `expires_in`. */
export const StoredTokens = z.looseObject({
  access_token: z.string().min(1),
  token_type: z.string(),
  refresh_token: z.string().optional(),
  scope: z.string().optional(),
  id_token: z.string().optional(),
  /** The authorization server that issued them (stamped by the SDK). */
  issuer: z.string().optional(),
  /** Epoch ms when the access token expires; absent when the server did not say. */
  expires_at: z.number().optional(),
  /** Epoch ms when it was obtained: with `expires_at`, its lifetime (refresh at half-life for short ones). */
  obtained_at: z.number().optional(),
});
export type StoredTokens = z.infer<typeof StoredTokens>;

/** A client registration as stored: the SDK's fields, stamped with the issuer it was registered with. */
export const StoredClient = z.looseObject({ client_id: z.string(), issuer: z.string().optional() });
export type StoredClient = z.infer<typeof StoredClient>;

export const CredentialsRecord = z.looseObject({
  version: z.literal(1),
  /** The MCP server URL these credentials belong to. */
  server_url: z.string(),
  /** Pre-registered `client_id` of the config they were obtained with; null for dynamic registration. */
  configured_client_id: z.string().nullable().default(null),
  /** Loopback port of the registered `redirect_uri`, reused by every later consent. */
  redirect_port: z.number().int().min(1).max(65_535).nullable().default(null),
  /** Dynamic client registrations (`OAuthClientInformationFull`, issuer-stamped), by the issuer of the authorization server. */
  clients: z.record(z.string(), StoredClient).default({}),
  tokens: StoredTokens.nullable().default(null),
  /** Discovered authorization-server and resource metadata (`OAuthDiscoveryState`). */
  discovery: z.looseObject({ authorizationServerUrl: z.string() }).nullable().default(null),
  /** PKCE verifier of the consent under way. */
  code_verifier: z.string().nullable().default(null),
  /**
   * The consent under way whose callback any worker may answer (`--public-url`): every worker asked for a consent
   * meanwhile answers this URL, so none replaces its verifier. `state_hash` names it (a hash of its `state`);
   * `until` (epoch ms) is when it times out. Kept here, sealed with the rest: the URL carries the state.
   */
  consent: z.object({ authorization_url: z.string(), state_hash: z.string(), until: z.number() }).nullable().default(null),
  /** The scope the server last asked for (`403 insufficient_scope`): every later consent requests it. */
  step_up_scope: z.string().nullable().default(null),
  /** With `auth.dpop`: the key the tokens are bound to (RFC 9449). */
  dpop_key: StoredDpopKey.nullable().default(null),
});
export type CredentialsRecord = z.infer<typeof CredentialsRecord>;

/** `<stateDir>/oauth/<server>.json`. Server names match `^[A-Za-z0-9_-]{1,64}$`, so they are safe path segments. */
export function credentialsPath(stateDir: string, server: string): string {
  return path.join(stateDir, 'oauth', `${server}.json`);
}

/** An empty record for `serverUrl`. */
export function emptyRecord(serverUrl: string, configuredClientId: string | null): CredentialsRecord {
  return {
    version: 1,
    server_url: serverUrl,
    configured_client_id: configuredClientId,
    redirect_port: null,
    clients: {},
    tokens: null,
    discovery: null,
    code_verifier: null,
    consent: null,
    step_up_scope: null,
    dpop_key: null,
  };
}

/**
 * The record stored for `server`, if it belongs to `serverUrl` and the same
 * configured client; otherwise an empty one (keeping only the redirect port,
 * which is ours, not the server's). A file that does not parse is an error:
 * it is never silently replaced.
 */
export async function loadCredentials(
  file: string,
  serverUrl: string,
  configuredClientId: string | null,
): Promise<CredentialsRecord> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return emptyRecord(serverUrl, configuredClientId);
    throw new FleetError('auth', `cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'unknown error'})`);
  }
  // A file or directory someone left open to others narrows to owner-only, as it is written.
  await Promise.all([chmod(file, 0o600), chmod(path.dirname(file), 0o700)]).catch(() => {});
  let parsed: CredentialsRecord;
  try {
    parsed = CredentialsRecord.parse(withClientsByIssuer(JSON.parse(text)));
  } catch {
    throw new FleetError('auth', `${file} is not a valid credentials file: fix or delete it`);
  }
  return boundRecord(parsed, serverUrl, configuredClientId);
}

/**
 * `record` if it belongs to `serverUrl` and the same configured client;
 * otherwise an empty one keeping only the redirect port (ours, not the
 * server's). Every store reads records through this.
 */
export function boundRecord(record: CredentialsRecord, serverUrl: string, configuredClientId: string | null): CredentialsRecord {
  if (record.server_url !== serverUrl || record.configured_client_id !== configuredClientId) {
    return { ...emptyRecord(serverUrl, configuredClientId), redirect_port: record.redirect_port };
  }
  return record;
}

/**
 * A record written before registrations were kept per issuer holds one
 * `client`: it moves under the issuer it is stamped with (else the one its
 * discovery names), so an upgrade keeps the registration its refresh token needs.
 */
function withClientsByIssuer(json: unknown): unknown {
  if (json === null || typeof json !== 'object' || !('client' in json)) return json;
  type Discovery = { authorizationServerUrl?: unknown; authorizationServerMetadata?: { issuer?: unknown } } | null;
  const { client, ...rest } = json as { client: unknown; clients?: unknown; discovery?: Discovery };
  const discovered = rest.discovery?.authorizationServerMetadata?.issuer ?? rest.discovery?.authorizationServerUrl;
  const stamp = (client as { issuer?: unknown } | null)?.issuer ?? discovered;
  if (client === null || typeof stamp !== 'string' || rest.clients !== undefined) return rest;
  return { ...rest, clients: { [stamp]: client } };
}

/** Writes and deletes of one credentials file, in call order: keyed by file, as two stores of one file must not interleave. */
const writes = createSerialQueue();

/**
 * Atomic, owner-only write (as the config's). Writes to one file are
 * serialized, so the last one called is the one that stays.
 */
export function saveCredentials(file: string, record: CredentialsRecord): Promise<void> {
  const text = `${JSON.stringify(record, null, 2)}\n`;
  return writes.run(path.resolve(file), () => writeOwnerOnly(file, text));
}

/** Deletes the stored credentials (a removed server), after the writes already asked for. */
export async function deleteCredentials(file: string): Promise<void> {
  await writes.run(path.resolve(file), () => rm(file, { force: true }));
}
