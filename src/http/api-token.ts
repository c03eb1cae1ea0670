import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { apiTokenPath } from '../config/paths.js';
import { makeDirs } from '../files/make-dirs.js';

/** The environment variable that, when set, is the token (nothing is written). */
export const API_TOKEN_ENV = 'MCP_FLEET_API_TOKEN';

/** The management API's bearer token and where it came from (for `serve` to say where it is, not what it is). */
export type ApiToken = { token: string; source: 'env' } | { token: string; source: 'file'; path: string };

/**
 * `MCP_FLEET_API_TOKEN` if set; else the token in `<state_dir>/api_token`,
 * generated once (32 random bytes, base64url) with mode 0600 and reused
 * afterwards.
 */
export async function ensureApiToken(stateDir: string, env: NodeJS.ProcessEnv = process.env): Promise<ApiToken> {
  const fromEnv = env[API_TOKEN_ENV];
  if (fromEnv) return { token: fromEnv, source: 'env' };
  const file = apiTokenPath(stateDir);
  const existing = await readTokenFile(file);
  if (existing !== undefined) {
    // A token file someone left readable by others narrows to owner-only.
    await fs.chmod(file, 0o600);
    return { token: existing, source: 'file', path: file };
  }
  return { token: await createTokenFile(file), source: 'file', path: file };
}

/** The token a client should send: env first, else the file; `undefined` when neither exists. */
export async function readApiToken(stateDir: string, env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  return env[API_TOKEN_ENV] || (await readTokenFile(apiTokenPath(stateDir)));
}

/** Constant-time comparison; hashing first makes the buffers equal-length whatever was sent. */
export function tokensEqual(expected: string, presented: string): boolean {
  const b = hash('sha256', presented, 'buffer');
  return timingSafeEqual(digestOf(expected), b);
}

// The expected token is the same on every request: hash it once (one entry; it changes only with the token).
// The digest is a function of the token alone, so two apps in one process cannot get each other's.
let lastExpected: { token: string; digest: Buffer } | undefined;
function digestOf(token: string): Buffer {
  if (lastExpected?.token !== token) lastExpected = { token, digest: hash('sha256', token, 'buffer') };
  return lastExpected.digest;
}

async function readTokenFile(file: string): Promise<string | undefined> {
  try {
    const token = (await fs.readFile(file, 'utf8')).trim();
    return token === '' ? undefined : token;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * Writes a fresh token atomically: a 0600 temp file, fsynced, then hard-linked
 * to the final name. `link` fails if the name exists, so two workers starting
 * together agree on the first token instead of each overwriting the other's.
 */
async function createTokenFile(file: string): Promise<string> {
  const dir = path.dirname(file);
  await makeDirs(dir, 0o700);
  const token = randomBytes(32).toString('base64url');
  const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const handle = await fs.open(tmp, 'wx', 0o600);
  try {
    await handle.writeFile(`${token}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await fs.link(tmp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const winner = await readTokenFile(file);
    if (winner === undefined) throw err;
    return winner;
  } finally {
    await fs.rm(tmp, { force: true });
  }
  await fsyncDir(dir);
  return token;
}

async function fsyncDir(dir: string): Promise<void> {
  const handle = await fs.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
