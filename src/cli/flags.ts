/**
 * Checks of flag and argument values. Each parser is given to commander as an
 * option's `argParser`, so a bad value stops the command before it does
 * anything, with one line naming the flag (`error: --url: not a URL: "x"`)
 * and exit code 2; the same parsers guard the values that reach a command
 * some other way (defaults, `serve`'s `startWorker`).
 */
import { statSync } from 'node:fs';
import { PROFILE_ENV, resolveStateDir, STATE_DIR_ENV } from '../config/paths.js';
import { HEADER_NAME, SERVER_NAME_RULE } from '../config/schema.js';
import { MASK, maskUrl } from '../config/masking.js';
import { ConfigError } from '../errors.js';
import { assertDatabaseUrl, DatabaseUrlError } from '../fleet/database-errors.js';
import { makeDirs } from '../files/make-dirs.js';
import { REGISTRY_URL_ENV } from '../mcp-registry/registry-url.js';
import { UsageError } from './errors.js';

/** The value as the user typed it, quoted, so an empty or blank one is visible. */
export function quoted(value: string): string {
  return JSON.stringify(value);
}

/** An `http:` or `https:` URL (no other scheme: every URL flag names something fetched over HTTP). */
export function httpUrl(flag: string): (value: string) => string {
  return function parseHttpUrl(value) {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw new UsageError(flag, `not a URL: ${quoted(shownUrl(value))}`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new UsageError(flag, `not an http(s) URL: ${quoted(shownUrl(value))}`);
    }
    // fetch refuses a URL with credentials in it; the API takes a bearer token, a server its headers or auth.
    if (url.username !== '' || url.password !== '') {
      throw new UsageError(flag, `must not contain credentials (user:password@): ${quoted(shownUrl(value))}`);
    }
    return value;
  };
}

/** A URL as a message may quote it: a password in it and credential-named query values masked. */
export function shownUrl(value: string): string {
  return maskUrl(value.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/?#@:]*):[^/?#@]*@/i, `$1:${MASK}@`));
}

/** An integer from `min` to `max`, given in decimal digits. */
export function integer(flag: string, min: number, max = Number.MAX_SAFE_INTEGER): (value: string) => number {
  return function parseInteger(value) {
    const text = value.trim();
    const n = Number(text);
    if (!/^\d+$/.test(text) || n < min || n > max) {
      const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`;
      throw new UsageError(flag, `not an integer ${range}: ${quoted(value)}`);
    }
    return n;
  };
}

/**
 * A quota limit: a positive integer, or `none` for no limit. `none` stays the
 * word (commander turns a parser's `null` into `''`); {@link limitValue} makes it `null`.
 */
export function quotaLimit(flag: string): (value: string) => number | 'none' {
  const count = integer(flag, 1, 1_000_000);
  return function parseQuotaLimit(value) {
    if (value.trim() === 'none') return 'none';
    try {
      return count(value);
    } catch {
      throw new UsageError(flag, `not an integer from 1 to 1000000 or "none": ${quoted(value)}`);
    }
  };
}

/** A parsed {@link quotaLimit} as a quota holds it: `none` is `null`. */
export function limitValue(value: number | 'none'): number | null {
  return value === 'none' ? null : value;
}

/** A number of seconds greater than zero (fractions allowed), at most `max`. */
export function seconds(flag: string, max = Number.MAX_VALUE): (value: string) => number {
  return function parseSeconds(value) {
    const n = Number(value.trim());
    if (value.trim() === '' || !Number.isFinite(n) || n <= 0) throw new UsageError(flag, `not a number of seconds > 0: ${quoted(value)}`);
    if (n > max) throw new UsageError(flag, `at most ${max} seconds: ${quoted(value)}`);
    return n;
  };
}

/** One of `choices`. */
export function choice<T extends string>(flag: string, choices: readonly T[]): (value: string) => T {
  return function parseChoice(value) {
    if (!(choices as readonly string[]).includes(value)) {
      throw new UsageError(flag, `expected one of ${choices.join(', ')}: ${quoted(value)}`);
    }
    return value as T;
  };
}

/** `KEY[=VALUE]` items collected over repeats; the key must not be empty. */
export function keyValues(flag: string): (value: string, previous: string[] | undefined) => string[] {
  return function collectKeyValue(value, previous) {
    const key = value.includes('=') ? value.slice(0, value.indexOf('=')) : value;
    // An empty key: what follows its `=` may be a secret, so not quoted.
    if (key.trim() === '') throw new UsageError(flag, value.includes('=') ? 'expected KEY or KEY=VALUE: the key is empty' : `expected KEY or KEY=VALUE: ${quoted(value)}`);
    return [...(previous ?? []), value];
  };
}

/** `NAME=VALUE` items collected over repeats: the `=` required, the name not empty. */
export function namedValues(flag: string): (value: string, previous: string[] | undefined) => string[] {
  return function collectNamedValue(value, previous) {
    const eq = value.indexOf('=');
    // No `=`: what was given is a name (quoted); an empty name: the value after it may be a secret (not quoted).
    if (eq < 0) throw new UsageError(flag, `expected NAME=VALUE: ${quoted(value)}`);
    if (value.slice(0, eq).trim() === '') throw new UsageError(flag, 'expected NAME=VALUE: the name is empty');
    return [...(previous ?? []), value];
  };
}

/** A JSON object (what `call` takes as arguments, `add --config` as a config). */
export function jsonObject(flag: string, example: string): (value: string) => Record<string, unknown> {
  return function parseJsonObject(value) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(value);
    } catch (error) {
      // Never the value itself (it may hold a secret), nor the parser's message (which quotes some of it): where it broke.
      const message = (error as Error).message;
      const at = /at position (\d+)/.exec(message)?.[1];
      const where = at !== undefined ? ` (at character ${Number(at) + 1})` : /end of JSON/.test(message) ? ' (it ends too early)' : '';
      throw new UsageError(flag, `not valid JSON${where}; e.g. ${example}`);
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      const kind = parsed === null ? 'null' : Array.isArray(parsed) ? 'an array' : `a ${typeof parsed}`;
      throw new UsageError(flag, `not a JSON object: got ${kind}; e.g. ${example}`);
    }
    return parsed as Record<string, unknown>;
  };
}

/**
 * A directory, or a path where one can be made: a file (or a path through
 * one) is refused before anything is read or written there.
 */
export function directory(flag: string): (value: string) => string {
  return function parseDirectory(value) {
    checkDirectory(flag, value);
    return value;
  };
}

/** Throws a UsageError when `dir` exists as something other than a directory, or lies under a file. */
function checkDirectory(flag: string, dir: string): void {
  let stats: ReturnType<typeof statSync> | undefined;
  try {
    stats = statSync(dir, { throwIfNoEntry: false });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unknown error';
    throw new UsageError(flag, `cannot use ${quoted(dir)} as a directory (${code})`);
  }
  if (stats !== undefined && !stats.isDirectory()) throw new UsageError(flag, `not a directory: ${quoted(dir)}`);
}

/**
 * The state dir (`--state-dir`, else `$MCP_FLEET_STATE_DIR`, else the
 * default), checked: a bad profile name or a file where the directory should
 * be is a usage error naming where the value came from.
 */
export function stateDirOf(flag: string | undefined): string {
  let dir: string;
  try {
    dir = resolveStateDir(flag);
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(`$${PROFILE_ENV}`, `not a profile name: ${quoted(process.env[PROFILE_ENV] ?? '')}; a profile name ${SERVER_NAME_RULE}`);
    throw err;
  }
  checkDirectory(stateDirSource(flag), dir);
  return dir;
}

/** Runs `parse` for its check only: the option keeps the text as given. */
export function checked(parse: (value: string) => unknown): (value: string) => string {
  return function checkedValue(value) {
    parse(value);
    return value;
  };
}

/** The name of an environment variable (`--token-env VAR`). */
export function envName(flag: string): (value: string) => string {
  return function parseEnvName(value) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(value)) throw new UsageError(flag, `not an environment variable name: ${quoted(value)}`);
    return value;
  };
}

/** `--database-url` (or `source`, the variable standing in for it): a PostgreSQL URL; the refusal never shows its password. */
export function checkDatabaseUrl(source: string, value: string): void {
  // Given empty (a deploy script's unset `$DB`), the worker would quietly keep a private config outside the fleet.
  if (value === '') throw new UsageError(source, 'empty; give postgres://user[:password]@host[:port]/database, or leave it out to keep the config in the state dir');
  // The library's own check (openDatabase makes it too), its words under the flag's name.
  try {
    assertDatabaseUrl(value);
  } catch (error) {
    throw error instanceof DatabaseUrlError ? new UsageError(source, error.detail) : error;
  }
}

/**
 * `KEY=VALUE` items of a repeatable flag as an object; a bare `KEY` takes its
 * value from the shell, so a secret need not appear in history or `ps`. A
 * header's name is often no shell variable's (`X-Api-Key`): it is looked up
 * as written, then in the shell's spelling (`X_API_KEY`).
 */
export function keyValuePairs(items: readonly string[], flag: string): Record<string, string> {
  const pairs = Object.fromEntries(
    items.map((item) => {
      const eq = item.indexOf('=');
      if (eq !== -1) return [item.slice(0, eq), item.slice(eq + 1)];
      const names = flag === '--header' ? [...new Set([item, item.toUpperCase().replace(/[^A-Z0-9_]/g, '_')])] : [item];
      const value = names.map((name) => process.env[name]).find((found) => found !== undefined);
      if (value === undefined) {
        throw new UsageError(flag, `${names.map((name) => `$${name}`).join(' and ')} ${names.length > 1 ? 'are' : 'is'} not set in this shell`);
      }
      return [item, value];
    }),
  );
  // What HTTP refuses, refused here, naming the header, never quoting its value (a secret).
  if (flag === '--header') {
    for (const [name, value] of Object.entries(pairs)) {
      if (!HEADER_NAME.test(name)) throw new UsageError(flag, `${quoted(name)} is not an HTTP header name: letters, digits and !#$%&'*+-.^_\`|~ only`);
      if (/[\r\n\0]/.test(value)) throw new UsageError(flag, `the value of ${name} holds a line break or NUL character`);
    }
  }
  return pairs;
}

/** Makes the state dir (owner only), or says why it cannot be, naming where it came from: a usage error. */
export async function makeStateDir(stateDir: string, source: string): Promise<void> {
  await makeDirs(stateDir, 0o700).catch((err: NodeJS.ErrnoException) => {
    throw new UsageError(source, `cannot create ${JSON.stringify(stateDir)} (${err.code ?? err.message})`);
  });
}

/** Where a command's state dir came from, for its messages: the flag, the variable, or the default. */
export function stateDirSource(flag: string | undefined): string {
  if (flag !== undefined && flag !== '') return '--state-dir';
  return process.env[STATE_DIR_ENV] ? `$${STATE_DIR_ENV}` : 'state dir';
}

/** `$MCP_FLEET_REGISTRY_URL`, standing in for `--registry-url` when that is not given: an http(s) URL as the flag is. */
export function checkRegistryUrlEnv(flag: string | undefined): void {
  const value = process.env[REGISTRY_URL_ENV];
  if (flag === undefined && value !== undefined && value !== '') httpUrl(`$${REGISTRY_URL_ENV}`)(value);
}
