/**
 * What "the database is away" looks like, apart from the driver: the error
 * the stores throw, how a driver's error is told apart from a wrong query,
 * and URLs without their password. No import of `pg`, so the HTTP layer can
 * map the error without loading the driver.
 */

/** The database cannot be reached; the message names host:port, never the password. */
export class DatabaseUnavailableError extends Error {
  override readonly name = 'DatabaseUnavailableError';
  readonly code = 'database_unavailable';
  constructor(url: string, options?: { cause?: unknown }) {
    super(`the database at ${databaseAddress(url)} is unavailable${causeText(url, options?.cause)}`, options);
  }
}

/** Node's socket errors that mean no connection could be made or kept. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'ENOENT', // a Unix socket that is not there: the server is not running
]);

/** SQLSTATEs outside class 08 (connection_exception) that mean the server is going or not there yet. */
const UNAVAILABLE_SQLSTATES = new Set([
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: starting up or in recovery
  '53300', // too_many_connections: reachable, but no connection for us now
]);

/**
 * pg raises these without a code, so their text is all there is to go by
 * (pg/lib/client.js, pg-pool/index.js); prefixes, so "…unexpectedly" and
 * "…due to connection timeout" match too.
 */
const CODELESS_CONNECTION_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error and is not queryable',
];

/**
 * Whether `error` says the database is away (refused, reset, shutting down,
 * a broken connection) rather than that a query was wrong: the first is worth
 * a retry once it is back, the second is not.
 */
export function isConnectionError(error: unknown): boolean {
  if (error instanceof DatabaseUnavailableError) return true;
  if (typeof error !== 'object' || error === null) return false;
  const { code, message, errors, cause } = error as { code?: unknown; message?: unknown; errors?: unknown; cause?: unknown };
  if (typeof code === 'string') {
    if (NETWORK_CODES.has(code) || UNAVAILABLE_SQLSTATES.has(code) || /^08[0-9A-Z]{3}$/.test(code)) return true;
  }
  if (typeof message === 'string' && CODELESS_CONNECTION_MESSAGES.some((prefix) => message.startsWith(prefix))) return true;
  // Node reports a connect tried on several addresses (localhost: ::1 and
  // 127.0.0.1) as an AggregateError; pg-pool wraps a connect timeout's cause.
  if (Array.isArray(errors) && errors.some(isConnectionError)) return true;
  return cause !== undefined && cause !== error && isConnectionError(cause);
}

/** `url` without its password (in the userinfo or a `password=` parameter), for log lines and messages. */
export function redactUrl(url: string): string {
  const parsed = parseDatabaseUrl(url);
  if (parsed === null) {
    // Not a URL either parser takes (an unencoded `/` or `#` in the password, a missing `:`): everything
    // up to the last `@` may be a password, so none of it is shown.
    return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)?.*@/is, (_, scheme: string | undefined) => `${scheme ?? ''}…@`).replace(/([?&]password=)[^&]*/gi, '$1');
  }
  parsed.password = '';
  parsed.searchParams.delete('password');
  return parsed.toString();
}

/**
 * `url` as a URL, or null. Beside what the WHATWG parser takes, the socket
 * form with a user and no host (`postgresql://user@/db?host=/var/run/postgresql`),
 * which PostgreSQL's own parser takes: read as the same URL without the user.
 * Null without `scheme://`: the WHATWG parser reads `postgres:u:pw@h/db` (or
 * `db.example:5432/db`) as a scheme and an opaque path, with no user or
 * password to redact and no host.
 */
function parseDatabaseUrl(url: string): URL | null {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) return null;
  try {
    return new URL(url);
  } catch {
    const socket = /^(postgres(?:ql)?:\/\/)[^@/]*@(\/.*)$/is.exec(url);
    if (socket === null) return null;
    try {
      return new URL(`${socket[1]}${socket[2]}`);
    } catch {
      return null;
    }
  }
}

/** `host:port` of a database URL, for messages. */
export function databaseAddress(url: string): string {
  try {
    const parsed = new URL(url);
    const host = parsed.hostname || parsed.searchParams.get('host') || 'localhost';
    return `${host}:${parsed.port || '5432'}`;
  } catch {
    return redactUrl(url);
  }
}

function causeText(url: string, cause: unknown): string {
  if (cause === undefined) return '';
  const code = typeof cause === 'object' && cause !== null ? (cause as { code?: unknown }).code : undefined;
  const message = cause instanceof Error ? cause.message : String(cause);
  // Driver messages name hosts and users, not passwords; strip it anyway should one echo the URL.
  let password = '';
  try {
    password = decodeURIComponent(new URL(url).password);
  } catch {
    // no parsable password, nothing to strip
  }
  const safe = password ? message.replaceAll(password, '***') : message;
  return `: ${typeof code === 'string' && !safe.includes(code) ? `${code} ` : ''}${safe}`;
}

/** Where `serve` and `import` read the database URL when `--database-url` is not given. */
export const DATABASE_URL_ENV = 'MCP_FLEET_DATABASE_URL';

/** The form a database URL takes, as the refusals name it. */
const DATABASE_URL_FORM = 'postgres://user[:password]@host[:port]/database';

/**
 * A database URL refused before any connection (`openDatabase`,
 * `openSharedStores`, `serve --database-url`): `problem` is what is wrong
 * (`databaseUrlProblem`), `detail` that with the URL shown without its password.
 */
export class DatabaseUrlError extends Error {
  override readonly name = 'DatabaseUrlError';
  readonly code = 'invalid_database_url';
  readonly detail: string;
  constructor(
    url: string,
    readonly problem: string,
  ) {
    const detail = `${problem}: ${JSON.stringify(redactUrl(url))}; expected ${DATABASE_URL_FORM}`;
    super(`invalid database URL: ${detail}`);
    this.detail = detail;
  }
}

/** Throws `DatabaseUrlError` when `url` is no PostgreSQL URL pg would take as meant. */
export function assertDatabaseUrl(url: string): void {
  const problem = databaseUrlProblem(url);
  if (problem !== null) throw new DatabaseUrlError(url, problem);
}

/** What is wrong with `url` as a PostgreSQL URL (`postgres://user[:password]@host[:port]/database`), or null. */
export function databaseUrlProblem(url: string): string | null {
  // pg reads an empty string as "no URL": the PG* variables, else localhost.
  if (url === '') return 'empty';
  const parsed = parseDatabaseUrl(url);
  if (parsed === null) return unparsableProblem(url);
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') return `the scheme is ${parsed.protocol.replace(/:$/, '')}, not postgres`;
  if (parsed.hostname === '' && !parsed.searchParams.has('host')) return 'no host';
  // pg takes any other sslmode silently as "SSL, verified": the failure came later, as the server's "does not support SSL".
  const sslModes = parsed.searchParams.get('uselibpqcompat') === 'true' ? LIBPQ_SSL_MODES : SSL_MODES;
  if (parsed.searchParams.getAll('sslmode').some((mode) => !sslModes.includes(mode))) return `sslmode is not one of ${sslModes.join(', ')}`;
  return null;
}

/** The sslmode values pg's connection-string parser (pg-connection-string 2.x) acts on; `uselibpqcompat=true` drops `no-verify`. */
const SSL_MODES = ['disable', 'prefer', 'require', 'verify-ca', 'verify-full', 'no-verify'];
const LIBPQ_SSL_MODES = SSL_MODES.filter((mode) => mode !== 'no-verify');

/**
 * Why `url` does not parse: a postgres scheme without `://` and a port that
 * is no number (or above 65535) named as such; how to write the password
 * only when the URL has its `scheme://` and parses with a plain user and
 * password in place of what was given (so they are the problem).
 */
function unparsableProblem(url: string): string {
  // postgres//u:pw@h/db, postgres:/…: the password may be fine; what is missing is the ://.
  if (/^postgres(?:ql)?(?!:\/\/)[:/]/i.test(url)) return 'the scheme is not followed by ://';
  const authority = /^([a-z][a-z0-9+.-]*:\/\/)(?:(.*)@)?([^@]*)$/is.exec(url);
  if (authority === null) return 'not a URL';
  const [, scheme, userinfo, rest] = authority as unknown as [string, string, string | undefined, string];
  const hostPort = rest.split(/[/?#]/)[0]!;
  const port = /^(?:\[[^\]]*\]|[^:[\]]*)(?::(.*))?$/s.exec(hostPort)?.[1] ?? '';
  if (!/^\d*$/.test(port) || Number(port) > 65_535) return 'the port is not a number from 0 to 65535';
  if (userinfo === undefined || parseDatabaseUrl(`${scheme}user:password@${rest}`) === null) return 'not a URL';
  return 'not a URL (in the password, write / ? # @ : as %2F %3F %23 %40 %3A)';
}
