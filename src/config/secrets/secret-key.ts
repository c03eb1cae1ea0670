/**
 * The key every secret is sealed with when the worker stores them in
 * PostgreSQL: `MCP_FLEET_SECRET_KEY`, else the file `secret_key` beside the
 * config. 32 bytes, written as base64 or 64 hex characters. A worker without
 * it does not start: sealing with a made-up key would lose every secret at
 * the next restart.
 */
import { createHash, hkdfSync, randomBytes } from 'node:crypto';
import { closeSync, fstatSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { oneLine } from '../../errors.js';
import { writeOwnerOnly } from '../../files/owner-only-file.js';

/** The environment variable that holds the key; it wins over the file. */
export const SECRET_KEY_ENV = 'MCP_FLEET_SECRET_KEY';
/** The key file's name, in the config's directory. */
export const SECRET_KEY_FILE = 'secret_key';
const KEY_BYTES = 32;
const HOW_TO_MAKE_ONE = '32 random bytes, base64: `openssl rand -base64 32`';

/** A loaded key. */
export interface SecretKey {
  /** 16 hex characters of the key's SHA-256: names the key in sealed values and messages; never the key. */
  readonly id: string;
  /** The 32 key bytes. Not enumerable, so a key that reaches a log or JSON shows only its id. */
  readonly bytes: Buffer;
}

/** The key is missing, malformed or exposed. Messages name the source and the fix, never the key. */
export class SecretKeyError extends Error {
  override readonly name = 'SecretKeyError';
  constructor(
    /** `missing`: no source set; `malformed`: not 32 bytes of base64/hex; `exposed`: the file is open to group or others; `unreadable`: the file cannot be read. */
    readonly reason: 'missing' | 'malformed' | 'exposed' | 'unreadable',
    message: string,
  ) {
    super(oneLine(message));
  }
}

export interface LoadSecretKeyOptions {
  /** Where `MCP_FLEET_SECRET_KEY` is read (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** The config's directory (the state dir): `secret_key` is looked for there. */
  configDir: string;
}

/** The worker's key, from `MCP_FLEET_SECRET_KEY` or else `<configDir>/secret_key`; throws SecretKeyError. */
export function loadSecretKey({ env = process.env, configDir }: LoadSecretKeyOptions): SecretKey {
  const file = path.join(configDir, SECRET_KEY_FILE);
  const fromEnv = env[SECRET_KEY_ENV];
  if (fromEnv !== undefined) {
    // Set but empty is a mistake (an unset variable interpolated), not a request to use the file.
    if (fromEnv.trim() === '') {
      throw new SecretKeyError('malformed', `${SECRET_KEY_ENV} is empty: set it to the key (${HOW_TO_MAKE_ONE}) or unset it to use ${file}`);
    }
    return secretKeyFrom(fromEnv, SECRET_KEY_ENV);
  }
  const text = readKeyFile(file);
  if (text === null) {
    throw new SecretKeyError(
      'missing',
      `no secret key: set ${SECRET_KEY_ENV} or write ${file} (${HOW_TO_MAKE_ONE}); a worker on PostgreSQL stores every secret encrypted with it`,
    );
  }
  return secretKeyFrom(text, file);
}

/**
 * The worker's key, made (owner-only) when neither the variable nor the file
 * exists: a worker on files has no key until the first secret it seals.
 */
export async function loadOrMakeSecretKey({ env = process.env, configDir }: LoadSecretKeyOptions): Promise<SecretKey> {
  try {
    return loadSecretKey({ env, configDir });
  } catch (error) {
    if (!(error instanceof SecretKeyError) || error.reason !== 'missing') throw error;
    const text = generateSecretKeyText();
    await writeOwnerOnly(path.join(configDir, SECRET_KEY_FILE), `${text}\n`);
    return secretKeyFrom(text, SECRET_KEY_FILE);
  }
}

/** A key for one purpose (`label`) derived from the worker's key (HKDF-SHA256): the same on every worker that shares the key. */
export function derivedKey(key: SecretKey, label: string): Buffer {
  return Buffer.from(hkdfSync('sha256', key.bytes, Buffer.alloc(0), `mcp-fleet ${label}`, 32));
}

/** A new key as text for `MCP_FLEET_SECRET_KEY` or `secret_key`: base64 of 32 random bytes. */
export function generateSecretKeyText(): string {
  return randomBytes(KEY_BYTES).toString('base64');
}

/** The key written as `text` (base64 or hex, whitespace trimmed); `source` names it in errors. */
export function secretKeyFrom(text: string, source: string): SecretKey {
  const bytes = decodeKey(text.trim());
  if (bytes === null) {
    throw new SecretKeyError('malformed', `${source} is not 32 bytes of base64 or hex (it is neither): write ${HOW_TO_MAKE_ONE}`);
  }
  if (bytes.length !== KEY_BYTES) {
    throw new SecretKeyError(
      'malformed',
      `${source} is not 32 bytes of base64 or hex (got ${bytes.length} bytes): write ${HOW_TO_MAKE_ONE}`,
    );
  }
  const id = createHash('sha256').update(bytes).digest('hex').slice(0, 16);
  const key = { id } as SecretKey;
  Object.defineProperty(key, 'bytes', { value: bytes, enumerable: false });
  return Object.freeze(key);
}

/**
 * Hex when it is exactly 64 hex digits, else strict base64 (standard or
 * URL-safe); `null` when it is neither. A wrong-length run of hex digits is
 * measured as hex, so the byte count in the message is the one meant.
 */
function decodeKey(text: string): Buffer | null {
  const isHex = /^(?:[0-9a-fA-F]{2})+$/.test(text);
  if (isHex && text.length === KEY_BYTES * 2) return Buffer.from(text, 'hex');
  const base64 = /^[A-Za-z0-9+/]+={0,2}$/.test(text) ? 'base64' : /^[A-Za-z0-9_-]+={0,2}$/.test(text) ? 'base64url' : null;
  const fromBase64 = base64 === null ? null : Buffer.from(text, base64);
  if (fromBase64?.length === KEY_BYTES) return fromBase64;
  return isHex ? Buffer.from(text, 'hex') : fromBase64;
}

/**
 * The key file's text, or `null` when there is none. Like ssh with a private
 * key, a file with any permission for group or others is refused: the key opens every
 * secret of the fleet. (Windows has no such mode bits; there it is not checked.)
 */
function readKeyFile(file: string): string | null {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    throw new SecretKeyError('unreadable', `cannot read ${file} (${code ?? 'unknown error'}): make it readable by the worker's user only (chmod 600)`);
  }
  try {
    // fstat of the open file, not stat of the path: the mode checked is the one of the file read.
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new SecretKeyError('unreadable', `${file} is not a regular file`);
    if (process.platform !== 'win32' && (stat.mode & 0o077) !== 0) {
      const mode = (stat.mode & 0o777).toString(8).padStart(4, '0');
      throw new SecretKeyError('exposed', `${file} is open to group or others (mode ${mode}): run \`chmod 600 ${file}\``);
    }
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}
