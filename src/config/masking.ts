/**
 * Secrets out of sight: the masked form of a config every response, log line
 * and event carries, and the redaction of secret values from free text.
 */
import { inspect } from 'node:util';
import { z } from 'zod';
import { compactCopy } from './compact-copy.js';
import { SERVER_SECRET_PATHS, valuesAtPaths } from './secrets/secret-paths.js';
import { LocalServerConfig, RemoteServerConfig, ServerConfig } from './schema.js';
import type { AuthConfig } from './schema.js';

/** What replaces a secret in every response, log line and error. */
export const MASK = '••••';
/** A secret needs at least this many characters before its last 4 are shown. */
const SHOW_TAIL_FROM_LENGTH = 12;

/** A secret as a response shows it (docs/credentials.md). */
export const MaskedSecret = z.object({
  /** The stored value is a non-empty string. */
  has_value: z.boolean(),
  /** `••••` plus the last 4 characters when the value has at least 12, else `••••`. */
  masked: z.string(),
});
export type MaskedSecret = z.infer<typeof MaskedSecret>;

/** `auth` in a response: the config minus its secrets, plus presence flags and masks. */
export const AuthResponse = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('none') }),
  z.object({
    kind: z.literal('bearer'),
    /** A token is stored. */
    has_token: z.boolean(),
    /** The token's mask, `null` when there is none. */
    token_masked: z.string().nullable(),
  }),
  z.object({
    kind: z.literal('oauth'),
    client_id: z.string().nullable(),
    /** A pre-registered client secret is stored. */
    has_client_secret: z.boolean(),
    /** The client secret's mask, `null` when there is none. */
    client_secret_masked: z.string().nullable(),
    scopes: z.array(z.string()),
    callback_port: z.number().nullable(),
    client_metadata_url: z.string().nullable(),
    dpop: z.boolean(),
  }),
  z.object({
    kind: z.literal('client_credentials'),
    client_id: z.string(),
    has_client_secret: z.boolean(),
    client_secret_masked: z.string().nullable(),
    /** A private key is stored (`private_key_jwt`); never shown, not even masked. */
    has_private_key: z.boolean(),
    algorithm: z.string(),
    scopes: z.array(z.string()),
    issuer: z.string().nullable(),
  }),
  z.object({
    kind: z.literal('workload_identity'),
    client_id: z.string(),
    assertion_file: z.string(),
    scopes: z.array(z.string()),
  }),
  z.object({
    kind: z.literal('enterprise'),
    client_id: z.string(),
    has_client_secret: z.boolean(),
    client_secret_masked: z.string().nullable(),
    idp_token_endpoint: z.string(),
    idp_client_id: z.string(),
    has_idp_client_secret: z.boolean(),
    idp_client_secret_masked: z.string().nullable(),
    id_token_file: z.string(),
    scopes: z.array(z.string()),
    issuer: z.string().nullable(),
  }),
]);
export type AuthResponse = z.infer<typeof AuthResponse>;

const MaskedMap = z.record(z.string(), MaskedSecret);

/**
 * A server config as every route returns it: `toResponse()`, no secret anywhere.
 * Derived from the config schemas, so every non-secret field shows as stored.
 */
export const ServerConfigResponse = z.discriminatedUnion('type', [
  LocalServerConfig.extend({ env: MaskedMap }),
  RemoteServerConfig.extend({ headers: MaskedMap, auth: AuthResponse }),
]);
export type ServerConfigResponse = z.infer<typeof ServerConfigResponse>;

/** The full config, secrets included, as written to `mcp_servers.json`. Only the store may use it. */
export function toStorage(config: ServerConfig): ServerConfig {
  return structuredClone(config);
}

/**
 * The masked form of each frozen config (the store's, which actors, events
 * and views share): the `server.configured` event and the version check of
 * `status()` both need it, and it is the same for the config's whole life.
 * Shared as events are: nobody changes it.
 */
const responses = new WeakMap<ServerConfig, ServerConfigResponse>();

/** The config with every secret masked: the only form a route, log or event may carry. */
export function toResponse(config: ServerConfig): ServerConfigResponse {
  let response = responses.get(config);
  if (response === undefined) {
    response = masked(config);
    if (Object.isFrozen(config)) responses.set(config, response);
  }
  return response;
}

/** Every server's view keeps its masked config for the server's life: a compact copy. */
function masked(config: ServerConfig): ServerConfigResponse {
  if (config.type === 'remote') return maskedRemote(config);
  const { env, ...rest } = config;
  return compactCopy({ ...rest, env: maskMap(env) });
}

function maskedRemote(config: RemoteServerConfig): ServerConfigResponse {
  const { headers, auth, url, ...rest } = config;
  return compactCopy({ ...rest, url: maskUrl(url), headers: maskMap(headers), auth: authResponse(auth) });
}

/**
 * `url` with the value of each query parameter named like a credential
 * (`?api_key=…`) masked as a secret is; the rest as written. A PATCH that
 * sends this form back keeps the stored URL.
 */
export function maskUrl(url: string): string {
  const hash = url.indexOf('#');
  const [beforeHash, fragment] = hash < 0 ? [url, ''] : [url.slice(0, hash), url.slice(hash)];
  const question = beforeHash.indexOf('?');
  if (question < 0) return url;
  const query = beforeHash
    .slice(question + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      if (eq < 0 || eq === pair.length - 1 || !CREDENTIAL_PARAMETER.test(safeDecode(pair.slice(0, eq)))) return pair;
      return `${pair.slice(0, eq)}=${maskSecret(safeDecode(pair.slice(eq + 1)))}`;
    })
    .join('&');
  return `${beforeHash.slice(0, question)}?${query}${fragment}`;
}

/** `••••` plus the last 4 characters when `value` has at least 12, else `••••`. */
export function maskSecret(value: string): string {
  // Characters, not UTF-16 units: an emoji counts once and is never cut in half.
  if (value.length < SHOW_TAIL_FROM_LENGTH) return MASK;
  const characters = Array.from(value);
  return characters.length >= SHOW_TAIL_FROM_LENGTH ? MASK + characters.slice(-4).join('') : MASK;
}

function maskMap(map: Record<string, string>): Record<string, MaskedSecret> {
  return Object.fromEntries(
    Object.entries(map).map(([key, value]) => [key, { has_value: value.length > 0, masked: maskSecret(value) }]),
  );
}

function authResponse(auth: AuthConfig): AuthResponse {
  switch (auth.kind) {
    case 'none':
      return { kind: 'none' };
    case 'bearer':
      return { kind: 'bearer', has_token: auth.token.length > 0, token_masked: maskSecret(auth.token) };
    case 'oauth':
      return {
        kind: 'oauth',
        client_id: auth.client_id,
        has_client_secret: auth.client_secret !== null,
        client_secret_masked: auth.client_secret === null ? null : maskSecret(auth.client_secret),
        scopes: [...auth.scopes],
        callback_port: auth.callback_port,
        client_metadata_url: auth.client_metadata_url,
        dpop: auth.dpop,
      };
    case 'client_credentials':
      return {
        kind: 'client_credentials',
        client_id: auth.client_id,
        has_client_secret: auth.client_secret !== null,
        client_secret_masked: auth.client_secret === null ? null : maskSecret(auth.client_secret),
        has_private_key: auth.private_key !== null,
        algorithm: auth.algorithm,
        scopes: [...auth.scopes],
        issuer: auth.issuer,
      };
    case 'workload_identity':
      return { kind: 'workload_identity', client_id: auth.client_id, assertion_file: auth.assertion_file, scopes: [...auth.scopes] };
    case 'enterprise':
      return {
        kind: 'enterprise',
        client_id: auth.client_id,
        has_client_secret: true,
        client_secret_masked: maskSecret(auth.client_secret),
        idp_token_endpoint: auth.idp_token_endpoint,
        idp_client_id: auth.idp_client_id,
        has_idp_client_secret: auth.idp_client_secret !== null,
        idp_client_secret_masked: auth.idp_client_secret === null ? null : maskSecret(auth.idp_client_secret),
        id_token_file: auth.id_token_file,
        scopes: [...auth.scopes],
        issuer: auth.issuer,
      };
  }
}

/**
 * Every secret value of a config (env and header values, token, client
 * secret, and the values of a remote URL's query parameters named like a
 * credential, where an API key may ride), for redaction.
 */
export function secretValues(config: ServerConfig): string[] {
  const known = secrets.get(config);
  if (known !== undefined) return known.slice();
  const values = collectSecretValues(config);
  // A frozen config (the store's) has the same secrets for its whole life: connecting, listing and mounting each ask.
  if (Object.isFrozen(config)) secrets.set(config, values.slice());
  return values;
}

const secrets = new WeakMap<ServerConfig, readonly string[]>();

function collectSecretValues(config: ServerConfig): string[] {
  const values = valuesAtPaths(config, SERVER_SECRET_PATHS).map(([value]) => value);
  if (config.type === 'remote') values.push(...urlQueryValues(config.url));
  return withCredentialParts(values.filter((value): value is string => typeof value === 'string' && value.length > 0 && !USER_TEMPLATE_ONLY.test(value)));
}

/**
 * The values, and the credentials inside each written as an `Authorization`
 * header is (`Bearer <token>`, `Basic <base64>`): a server that logs the bare
 * token, or the user and password a Basic value encodes, must show no more of
 * it than of the whole value.
 */
function withCredentialParts(values: string[]): string[] {
  const out = [...values];
  for (const value of values) {
    const match = AUTHORIZATION_VALUE.exec(value);
    if (match === null || USER_TEMPLATE_ONLY.test(match[2]!)) continue;
    const [, scheme, credentials] = match as unknown as [string, string, string];
    out.push(credentials);
    if (scheme.toLowerCase() !== 'basic') continue;
    const decoded = Buffer.from(credentials, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    // Only a value that really is base64 of `user:password` (what decodes back to the same text).
    if (colon > 0 && Buffer.from(decoded, 'utf8').toString('base64').replace(/=+$/, '') === credentials.replace(/=+$/, '')) {
      out.push(decoded, decoded.slice(colon + 1));
    }
  }
  return out.filter((value) => value.length > 0);
}

/**
 * An `Authorization` value of a scheme that carries a credential, then the
 * credential (at least 8 characters): only these, as any env value is a
 * secret and `"json pretty"` must not make "pretty" one.
 */
const AUTHORIZATION_VALUE = /^(Bearer|Basic|Token|Bot|DPoP|ApiKey|Api-Key|Key) +(\S{8,})$/i;

/**
 * A value that is only a `${user.NAME}` reference holds no secret (each
 * user's value comes in its place): a message naming the reference keeps it.
 */
const USER_TEMPLATE_ONLY = /^\$\{user\.[A-Za-z_][A-Za-z0-9_]*\}$/;

/**
 * Query parameter names that carry a credential (`api_key`, `token`,
 * `X-Amz-Signature`, `access_token`…). Only their values are secrets: every
 * other value (`format=json`, `v=2026`) stays readable in logs and errors.
 */
const CREDENTIAL_PARAMETER = /key|token|secret|passw|pwd|auth|sig|session|credential|code/i;

/** Whether a query parameter of `url` named like a credential carries a value (`?api_key=…`): such a URL is stored sealed. */
export function hasCredentialParameter(url: string): boolean {
  return urlQueryValues(url).length > 0;
}

/** The values of a URL's query parameters named like a credential, as written and decoded. */
function urlQueryValues(url: string): string[] {
  const query = url.split('#')[0]!.split('?')[1];
  if (query === undefined) return [];
  return query.split('&').flatMap((pair) => {
    const eq = pair.indexOf('=');
    if (eq < 0 || !CREDENTIAL_PARAMETER.test(safeDecode(pair.slice(0, eq)))) return [];
    const raw = pair.slice(eq + 1);
    if (raw === '') return [];
    const decoded = safeDecode(raw);
    return decoded === raw ? [raw] : [raw, decoded];
  });
}

/** Percent-decoded (`+` as a space), or the text itself where it is not valid percent-encoding. */
function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text.replaceAll('+', ' '));
  } catch {
    return text;
  }
}

/** Values shorter than this are not redacted: `"1"` or `"on"` would blank out every number and word. */
export const MIN_REDACTED_LENGTH = 4;

/** Every string under `env`, `headers` and `auth` of a config as sent or stored, unparsed (a request body, a config file's entry): the values no response or log may echo. */
export function secretValuesOf(body: unknown): string[] {
  if (body === null || typeof body !== 'object') return [];
  const record = body as Record<string, unknown>;
  const auth = record.auth !== null && typeof record.auth === 'object' ? (record.auth as Record<string, unknown>) : {};
  // An explicit stack, not recursion: a body nested 100 000 deep must not overflow the call stack.
  const pending: unknown[] = [record.env, record.headers, auth.token, auth.client_secret, auth.private_key, auth.idp_client_secret];
  const out: string[] = [];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value === 'string') {
      if (!USER_TEMPLATE_ONLY.test(value)) out.push(value);
    }
    else if (value !== null && typeof value === 'object') for (const inner of Object.values(value)) pending.push(inner);
  }
  return out;
}

/**
 * Replaces every occurrence of every secret in `text` with `••••`, in its raw,
 * JSON-escaped (log lines are JSON) and `util.inspect` forms (Node's own
 * errors quote a value so). Used for stderr tails, error
 * messages and log lines alike.
 */
export function redact(text: string, secrets: Iterable<string>): string {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (secret.length < MIN_REDACTED_LENGTH) continue;
    forms.add(secret);
    forms.add(JSON.stringify(secret).slice(1, -1));
    // As Node quotes a value in its own errors ("Received 'sk-\x00…'"), and that inside a JSON line.
    const inspected = inspect(secret).slice(1, -1);
    forms.add(inspected);
    forms.add(JSON.stringify(inspected).slice(1, -1));
  }
  if (forms.size === 0) return text;
  // One left-to-right pass, the longest form winning at each position: a secret
  // inside a longer one, or inside the mask itself, cannot be half-replaced.
  // No RegExp: an alternation of long values can exceed the engine's limits.
  const unique = [...forms].sort((a, b) => b.length - a.length);
  const next = unique.map((form) => text.indexOf(form));
  let out = '';
  let from = 0;
  for (;;) {
    let best = -1;
    for (const [i, at] of next.entries()) {
      if (at !== -1 && (best === -1 || at < next[best]!)) best = i;
    }
    if (best === -1) return out + text.slice(from);
    const at = next[best]!;
    out += text.slice(from, at) + MASK;
    from = at + unique[best]!.length;
    for (const [i, prev] of next.entries()) {
      if (prev !== -1 && prev < from) next[i] = text.indexOf(unique[i]!, from);
    }
  }
}
