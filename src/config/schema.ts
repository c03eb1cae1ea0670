import { z } from 'zod';

/**
 * Server names become tool-name prefixes and URL path segments. `__proto__`
 * is the one name refused besides the pattern: a JSON object cannot carry it
 * as an ordinary key through validation (zod drops it), so it would be lost.
 */
export const SERVER_NAME_PATTERN = /^(?!__proto__$)[A-Za-z0-9_-]{1,64}$/;

/** The name rule in words, for error messages a person reads. */
export const SERVER_NAME_RULE = 'must be 1 to 64 characters, each a letter, a digit, "_" or "-", and not "__proto__"';

export const ServerName = z.string().regex(SERVER_NAME_PATTERN, SERVER_NAME_RULE);
export type ServerName = z.infer<typeof ServerName>;

/**
 * Schemas whose values are secrets (docs/credentials.md): in a PATCH, `null` deletes a
 * secret instead of being a value (see requests.ts). Masking in responses is
 * in masking.ts.
 */
const secrets = z.registry<{ secret: true }>();

/** Whether `schema` holds a secret value. */
export function isSecret(schema: z.core.$ZodType): boolean {
  return secrets.has(schema);
}

// What the OS or HTTP refuses is refused here, where the field can be named,
// not at spawn or request time, whose errors quote the value (a secret).
export const NO_NUL = /^[^\0]*$/;
export const NO_LINE_BREAK_OR_NUL = /^[^\r\n\0]*$/;
/** What an `env` key may be: not empty, no `=` or NUL. */
export const ENV_NAME = /^[^=\0]+$/;
/** RFC 9110's `token`: what a header name may be made of. */
export const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** A secret that must be set when present (a token). */
const SecretString = z.string().min(1).register(secrets, { secret: true });
/** `env`: every value a secret, handed to the child's environment. */
const EnvMap = z.record(
  z.string().regex(ENV_NAME, 'must be an environment variable name: not empty, no "=" or NUL'),
  z.string().regex(NO_NUL, 'must not contain a NUL character').register(secrets, { secret: true }),
);
/** `headers`: every value a secret, sent with each request. */
const HeaderMap = z.record(
  z.string().regex(HEADER_NAME, "must be an HTTP header name: letters, digits and !#$%&'*+-.^_`|~ only"),
  z.string().regex(NO_LINE_BREAK_OR_NUL, 'must not contain a line break or NUL character').register(secrets, { secret: true }),
);
/** A command-line argument or a path: the OS takes no NUL in either. */
const OsString = z.string().min(1).regex(NO_NUL, 'must not contain a NUL character');

/** How a call of a tool is let through: at once, after a decision, or never. */
export const ApprovalSetting = z.enum(['auto', 'ask', 'deny']);
export type ApprovalSetting = z.infer<typeof ApprovalSetting>;

/**
 * Who may see and call a server or a tool: a user named in `users`, or one in
 * any of `groups`. Admins always may. `{}` (both empty) leaves it to admins.
 */
export const AccessRule = z.strictObject({
  users: z.array(z.string().min(1)).default([]),
  groups: z.array(z.string().min(1)).default([]),
});
export type AccessRule = z.infer<typeof AccessRule>;

export const ToolFilter = z.strictObject({
  /** Only these original tool names are exposed; `null` means all. */
  include: z.array(z.string()).nullable().default(null),
  /** These original tool names are never exposed (applied after `include`). */
  exclude: z.array(z.string()).default([]),
  /**
   * With deferred loading (`host.tools({ loading: 'deferred' })`), these
   * original tool names (`true`: all of the server's) are still given to the
   * model on every request; the rest are found through `search_tools`.
   */
  always_load: z.union([z.literal(true), z.array(z.string())]).default([]),
  /**
   * Per original tool name (`"*"`: every other tool), whether a call runs at
   * once (`auto`), waits for a person's or the host's decision (`ask`), or is
   * never made and the tool never offered (`deny`). Absent (the default):
   * `auto` for all, as `{}`.
   */
  approval: z.record(z.string(), ApprovalSetting).optional(),
  /**
   * Per original tool name, who may see and call it, on top of the server's
   * `access`. A tool not named here: whoever may see the server.
   */
  access: z.record(z.string(), AccessRule).optional(),
});
export type ToolFilter = z.infer<typeof ToolFilter>;

/** Reconnecting a server whose connection was lost while it was ready. */
export const Reconnect = z.strictObject({
  /** Failed attempts in a row before giving up (the circuit opens); 0 never reconnects. */
  max_attempts: z.number().int().min(0).max(100).default(5),
  /** Delay before the first attempt; it doubles on each failure, with jitter. */
  initial_delay_seconds: z.number().positive().max(3600).default(1),
  /** Cap of the delay; also how long a server must stay ready for the count to start over. */
  max_delay_seconds: z.number().positive().max(86_400).default(30),
});
export type Reconnect = z.infer<typeof Reconnect>;

/** MCP logging levels, least to most severe (`logging/setLevel`, `notifications/message`). */
export const LoggingLevel = z.enum(['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency']);
export type LoggingLevel = z.infer<typeof LoggingLevel>;

/** Default of `max_result_bytes`: 1 MiB. */
export const DEFAULT_MAX_RESULT_BYTES = 1024 * 1024;

/**
 * What becomes of a tool result above `max_result_bytes`: `spill` keeps it
 * whole under `<state_dir>/results/` and shows the head, with a note naming
 * the `read_result` tool that pages through the rest; `truncate` cuts it.
 */
export const LargeResults = z.enum(['truncate', 'spill']);
export type LargeResults = z.infer<typeof LargeResults>;

/** Defaults of `results_ttl_seconds` (1 hour) and `results_max_bytes` (256 MiB). */
export const DEFAULT_RESULTS_TTL_SECONDS = 3600;
export const DEFAULT_RESULTS_MAX_BYTES = 256 * 1024 * 1024;

/**
 * The MCP revision a server is spoken to in: `auto` negotiates (a
 * `server/discover` probe, its verdict remembered), `2025` is the
 * `initialize` handshake only, `2026` is 2026-07-28 or nothing.
 */
export const ProtocolSetting = z.enum(['auto', '2025', '2026']);
export type ProtocolSetting = z.infer<typeof ProtocolSetting>;

/** A `user_inputs` name: what `${user.NAME}` refers to (not `__proto__`, for the reason server names are not). */
export const USER_INPUT_NAME_PATTERN = /^(?!__proto__$)[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/**
 * One value each user of a `per_user` server sets for themselves
 * (`PUT /api/mcp/servers/:name/inputs`). `secret` (default true: such a value
 * is most often a credential) keeps it masked on every read.
 */
export const UserInput = z.strictObject({
  description: z.string().default(''),
  secret: z.boolean().default(true),
});
export type UserInput = z.infer<typeof UserInput>;

/** Default of `max_sessions`: per-user sessions of one server on one worker. */
export const DEFAULT_MAX_SESSIONS = 100;

/** Fields every server has, whatever its transport. */
const common = {
  /**
   * `shared`: one connection for everyone. `per_user`: no shared connection;
   * each principal gets a session of their own, connected with their
   * `user_inputs` (a process of their own for a local server).
   */
  scope: z.enum(['shared', 'per_user']).default('shared'),
  /** Values each user sets for themselves, referenced as `${user.NAME}` in `env`, `headers` and `command`. */
  user_inputs: z
    .record(z.string().regex(USER_INPUT_NAME_PATTERN, 'must be a letter or "_", then letters, digits or "_" (at most 64), and not "__proto__"'), UserInput)
    .default(() => ({})),
  /** `per_user`: sessions of this server open at once on one worker; the least recently used is ended for a new one. */
  max_sessions: z.number().int().min(1).max(100_000).default(DEFAULT_MAX_SESSIONS),
  /** Who may see and use this server besides admins; absent or `null`: every user. */
  access: AccessRule.nullable().optional(),
  protocol: ProtocolSetting.default('auto'),
  /** `false` keeps the server configured but never started. */
  enabled: z.boolean().default(true),
  /**
   * `on_demand`: no process until one of its tools is called or loaded
   * through search (its tools are published from its last run's catalog);
   * back to waiting `idle_timeout_seconds` after its last call.
   */
  start: z.enum(['eager', 'on_demand']).default('eager'),
  /** How long an `on_demand` server, or a `per_user` session, stays connected after its last call ended. */
  idle_timeout_seconds: z.number().positive().max(86_400).default(300),
  /** Bound on connect + initialize + the first complete tools/list. */
  timeout_seconds: z.number().positive().max(3600).default(60),
  /** Default per-call bound; every progress notification resets it. */
  call_timeout_seconds: z.number().positive().max(86_400).default(120),
  /** Calls in flight at once on this server; the rest wait in FIFO order. */
  max_concurrent_calls: z.number().int().min(1).max(1024).default(16),
  /** Bytes of a tool result the agent sees; above it the result is spilled or truncated, as `large_results` says, with a note. */
  max_result_bytes: z.number().int().min(1024).max(16 * 1024 * 1024).default(DEFAULT_MAX_RESULT_BYTES),
  large_results: LargeResults.default('spill'),
  /** Seconds a spilled result stays readable (fixed when it is kept). */
  results_ttl_seconds: z.number().int().min(1).default(DEFAULT_RESULTS_TTL_SECONDS),
  /** Bytes this server's spilled results may take together; above it the oldest are removed first. */
  results_max_bytes: z.number().int().min(1024 * 1024).default(DEFAULT_RESULTS_MAX_BYTES),
  // Object defaults come from a function, not one object zod would clone: a clone's hidden class
  // cannot take V8's shared transition to frozen, so each frozen config (store.ts) made a class of its own.
  tools: ToolFilter.default(() => ({ include: null, exclude: [], always_load: [] })),
  /**
   * Derive a tool's approval from its annotations when `tools.approval` names
   * neither it nor `"*"`: `readOnlyHint: true` → auto, `destructiveHint: true`
   * → ask. Off by default: annotations are hints the server chooses.
   */
  approval_from_annotations: z.boolean().default(false),
  /** How long a call waiting for approval waits for a decision before it fails. */
  approval_timeout_seconds: z.number().positive().max(86_400).default(300),
  reconnect: Reconnect.default(() => ({ max_attempts: 5, initial_delay_seconds: 1, max_delay_seconds: 30 })),
  /** Seconds between pings of a ready server; an unanswered ping (within `timeout_seconds`) means it hung. 0: off. */
  ping_interval_seconds: z.number().min(0).max(86_400).default(30),
  /** Bound on one whole tool call, progress or not; absent or `null`: only `call_timeout_seconds` applies. */
  max_total_timeout_seconds: z.number().positive().max(86_400).nullable().optional(),
  /**
   * Seconds a tools, resources or prompts listing is trusted: one older than
   * this is listed again when it is next read. Absent or `null`: rely on the
   * server's announcements (and the `ttlMs` of its list results).
   */
  catalog_max_age_seconds: z.number().positive().max(86_400).nullable().optional(),
  /** `logging/setLevel` sent once the server is ready; absent or `null`: the server's own default. */
  log_level: LoggingLevel.nullable().optional(),
};

export const LocalServerConfig = z.strictObject({
  type: z.literal('local'),
  /** argv of the child process; spawned directly, never through a shell. */
  command: z.array(OsString).min(1, 'needs at least the program to run'),
  /** Added to the SDK's safe default environment. Every value is a secret. */
  env: EnvMap.default(() => ({})),
  cwd: OsString.nullable().default(null),
  /**
   * Names of the worker's own environment variables to pass on as they are.
   * Nothing else of the worker's environment reaches the child beyond the SDK's safe default.
   */
  inherit_env: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name')).default([]),
  ...common,
});
export type LocalServerConfig = z.infer<typeof LocalServerConfig>;

/**
 * An absolute URL with one of `schemes`; the message says which rule it
 * broke (`ftp://…` is a URL, just not one of these).
 */
function webUrl(schemes: readonly string[]) {
  const allowed = `must be an ${schemes.map((scheme) => `${scheme}://`).join(' or ')} URL`;
  return z.string().superRefine((value, ctx) => {
    if (!URL.canParse(value)) ctx.addIssue({ code: 'custom', message: 'must be a valid URL' });
    else if (!schemes.includes(new URL(value).protocol.slice(0, -1))) ctx.addIssue({ code: 'custom', message: allowed });
  });
}

export const NoAuth = z.strictObject({ kind: z.literal('none') });
export const BearerAuth = z.strictObject({
  kind: z.literal('bearer'),
  /** Sent as `Authorization: Bearer <token>`. A secret. */
  token: SecretString,
});
export const OAuthAuth = z.strictObject({
  kind: z.literal('oauth'),
  /** Pre-registered client; `null` uses dynamic client registration. */
  client_id: z.string().min(1).nullable().default(null),
  /** A secret. */
  client_secret: SecretString.nullable().default(null),
  scopes: z.array(z.string()).default([]),
  /** Loopback port of the consent callback; `null` picks a free one once and keeps it. */
  callback_port: z.number().int().min(1).max(65_535).nullable().default(null),
  /**
   * An HTTPS URL where this client's metadata document is published (Client ID
   * Metadata Documents, SEP-991): offered as the `client_id` to an
   * authorization server that takes them; others get dynamic registration.
   */
  client_metadata_url: webUrl(['https']).nullable().default(null),
  /** Ask for DPoP-bound tokens (RFC 9449): each request is signed with a key kept beside the tokens. */
  dpop: z.boolean().default(false),
});
/** Key algorithms a `private_key` may sign its client assertion with (RFC 7523, `private_key_jwt`). */
export const ASSERTION_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;

/**
 * Machine-to-machine OAuth (the `client_credentials` grant): no user, no
 * consent. The client authenticates with `client_secret`, or with a signed
 * JWT assertion from `private_key` (a PEM string); exactly one of the two.
 */
export const ClientCredentialsAuth = z
  .strictObject({
    kind: z.literal('client_credentials'),
    client_id: z.string().min(1),
    /** A secret. */
    client_secret: SecretString.nullable().default(null),
    /** PEM private key for `private_key_jwt`. A secret. */
    private_key: SecretString.nullable().default(null),
    algorithm: z.enum(ASSERTION_ALGORITHMS).default('RS256'),
    scopes: z.array(z.string()).default([]),
    /**
     * The authorization server the credentials belong to: they are sent to no
     * other, whatever the MCP server's metadata names. `null` trusts the
     * server's metadata (and the SDK warns).
     */
    issuer: webUrl(['http', 'https']).nullable().default(null),
  })
  .refine((auth) => (auth.client_secret === null) !== (auth.private_key === null), {
    message: 'set exactly one of client_secret and private_key',
    path: ['client_secret'],
  });
/**
 * Workload identity federation (the `jwt-bearer` grant, RFC 7523): the
 * workload's platform-issued JWT (a Kubernetes service-account token, a cloud
 * instance identity) is traded for an access token. The JWT is read from
 * `assertion_file` for every token request, so a platform that rotates it is
 * followed; the file's content is a secret, its path is not.
 */
export const WorkloadIdentityAuth = z.strictObject({
  kind: z.literal('workload_identity'),
  client_id: z.string().min(1),
  assertion_file: z.string().min(1),
  scopes: z.array(z.string()).default([]),
});

/**
 * Enterprise-managed authorization (SEP-990, cross-app access): the user's ID
 * token from the enterprise identity provider (read from `id_token_file` when
 * a grant is needed) is exchanged at the IdP for an identity assertion grant,
 * and that at the MCP server's authorization server for an access token, with
 * this client's credentials there. No consent screen.
 */
export const EnterpriseAuth = z.strictObject({
  kind: z.literal('enterprise'),
  client_id: z.string().min(1),
  /** A secret. */
  client_secret: SecretString,
  idp_token_endpoint: webUrl(['http', 'https']),
  idp_client_id: z.string().min(1),
  /** A secret; `null` for a public client at the IdP. */
  idp_client_secret: SecretString.nullable().default(null),
  id_token_file: z.string().min(1),
  scopes: z.array(z.string()).default([]),
  /** The authorization server the client credentials belong to (as for client_credentials). */
  issuer: webUrl(['http', 'https']).nullable().default(null),
});

export const AuthConfig = z.discriminatedUnion('kind', [NoAuth, BearerAuth, OAuthAuth, ClientCredentialsAuth, WorkloadIdentityAuth, EnterpriseAuth]);
export type AuthConfig = z.infer<typeof AuthConfig>;

/** Every kind of `auth`: read off the variants above, so a new kind is named in one place. */
export const AuthKind = z.enum(AuthConfig.options.map((variant) => variant.shape.kind.value) as [AuthConfig['kind'], ...AuthConfig['kind'][]]);
export type AuthKind = z.infer<typeof AuthKind>;

export const RemoteServerConfig = z.strictObject({
  type: z.literal('remote'),
  // fetch refuses a URL with user:password@, and every status would show it.
  url: webUrl(['http', 'https']).refine((url) => !/^[a-z]+:\/\/[^/?#]*@/i.test(url), {
    message: 'must not contain credentials (user:password@): give them as auth or headers',
  }),
  /** `auto`: Streamable HTTP, falling back to SSE on a 4xx at connect. */
  transport: z.enum(['streamable_http', 'sse', 'auto']).default('auto'),
  /** Sent with every request. Every value is a secret. */
  headers: HeaderMap.default(() => ({})),
  auth: AuthConfig.default(() => ({ kind: 'none' as const })),
  ...common,
});
export type RemoteServerConfig = z.infer<typeof RemoteServerConfig>;

/** `${user.NAME}` in a value: replaced by the calling principal's input (per_user servers). */
export const USER_REFERENCE = /\$\{user\.([^}]*)\}/g;

/** The input names `text` refers to with `${user.NAME}`. */
export function userReferences(text: string): string[] {
  // Most values refer to none: no match iterator for them.
  if (!text.includes('${user.')) return [];
  return [...text.matchAll(USER_REFERENCE)].map((match) => match[1]!);
}

/** Where a config may refer to user inputs, as [field path, value]. */
export function referencingFields(config: { type: 'local' | 'remote'; command?: string[]; env?: Record<string, string>; headers?: Record<string, string> }): Array<[Array<string | number>, string]> {
  if (config.type === 'local') {
    const args = (config.command ?? []).map((arg, index): [Array<string | number>, string] => [['command', index], arg]);
    return args.concat(Object.entries(config.env ?? {}).map((entry): [Array<string | number>, string] => [['env', entry[0]], entry[1]]));
  }
  return Object.entries(config.headers ?? {}).map((entry): [Array<string | number>, string] => [['headers', entry[0]], entry[1]]);
}

/**
 * How a config is parsed: without zod's eval fast path. That path generates a
 * parser per object schema and compiles it, which pays for parses that run
 * all the time; a config is parsed when its file changes, and the generated
 * parser of `ServerConfig` alone became ~75 KB of machine code once a
 * worker's startup made it hot. What is kept of the output is copied
 * compactly (compact-copy.ts): without the fast path zod builds it as a hash
 * table.
 */
export const CONFIG_PARSE = { jitless: true } as const;

export const ServerConfig = z.discriminatedUnion('type', [LocalServerConfig, RemoteServerConfig]).superRefine((config, ctx) => {
  let referenced = false;
  // A reference to an input nobody can set would fail every call: refuse it where it is written.
  for (const [path, value] of referencingFields(config)) {
    for (const name of userReferences(value)) {
      referenced = true;
      if (Object.hasOwn(config.user_inputs, name)) continue;
      ctx.addIssue({ code: 'custom', path, message: `\${user.${name}} names no input of user_inputs` });
    }
  }
  if (config.scope === 'shared' && referenced) {
    ctx.addIssue({ code: 'custom', path: ['scope'], message: '${user.…} references need scope "per_user"' });
  }
});
/** A fully defaulted server entry, as the machines use it. */
export type ServerConfig = z.infer<typeof ServerConfig>;
/** A server entry as a user may write it (defaults optional). */
export type ServerConfigInput = z.input<typeof ServerConfig>;

export const ConfigFile = z.strictObject({
  servers: z.record(z.string(), z.unknown()).default({}),
});
