import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { inspect } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  generateSecretKeyText,
  loadSecretKey,
  SECRET_KEY_ENV,
  SecretKeyError,
  type SecretKey,
} from '../../src/config/secrets/secret-key.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'mcp-fleet-secret-key-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const keyFile = () => path.join(dir, 'secret_key');
async function writeKeyFile(text: string, mode = 0o600): Promise<void> {
  await writeFile(keyFile(), text, { mode });
  await chmod(keyFile(), mode);
}

/** The SecretKeyError `load` throws. */
function failure(load: () => SecretKey): SecretKeyError {
  try {
    load();
  } catch (err) {
    if (err instanceof SecretKeyError) return err;
    throw err;
  }
  throw new Error('expected a SecretKeyError');
}

describe('loadSecretKey', () => {
  const bytes = randomBytes(32);

  it.each([
    ['base64', bytes.toString('base64')],
    ['base64 without padding', bytes.toString('base64').replace(/=+$/, '')],
    ['base64url', bytes.toString('base64url')],
    ['hex', bytes.toString('hex')],
    ['upper-case hex', bytes.toString('hex').toUpperCase()],
    ['base64 with surrounding whitespace', `  ${bytes.toString('base64')}\n`],
  ])('reads %s from MCP_FLEET_SECRET_KEY', (_name, text) => {
    const key = loadSecretKey({ env: { [SECRET_KEY_ENV]: text }, configDir: dir });
    expect(key.bytes.equals(bytes)).toBe(true);
    expect(key.id).toMatch(/^[0-9a-f]{16}$/);
  });

  it('gives one key one id, and another key another', () => {
    const a = loadSecretKey({ env: { [SECRET_KEY_ENV]: bytes.toString('base64') }, configDir: dir });
    const b = loadSecretKey({ env: { [SECRET_KEY_ENV]: bytes.toString('hex') }, configDir: dir });
    const c = loadSecretKey({ env: { [SECRET_KEY_ENV]: generateSecretKeyText() }, configDir: dir });
    expect(a.id).toBe(b.id);
    expect(c.id).not.toBe(a.id);
  });

  it('reads the secret_key file beside the config, newline and all', async () => {
    await writeKeyFile(`${bytes.toString('base64')}\n`);
    expect(loadSecretKey({ env: {}, configDir: dir }).bytes.equals(bytes)).toBe(true);
    await writeKeyFile(`${bytes.toString('hex')}\n`);
    expect(loadSecretKey({ env: {}, configDir: dir }).bytes.equals(bytes)).toBe(true);
  });

  it('prefers the environment to the file, and then does not look at the file at all', async () => {
    await writeKeyFile(generateSecretKeyText(), 0o644);
    const key = loadSecretKey({ env: { [SECRET_KEY_ENV]: bytes.toString('base64') }, configDir: dir });
    expect(key.bytes.equals(bytes)).toBe(true);
  });

  it('without either, names both sources and how to make a key', () => {
    const err = failure(() => loadSecretKey({ env: {}, configDir: dir }));
    expect(err.reason).toBe('missing');
    expect(err.message).toContain(SECRET_KEY_ENV);
    expect(err.message).toContain(keyFile());
    expect(err.message).toContain('openssl rand -base64 32');
    expect(err.message).toContain('PostgreSQL');
  });

  it.each([
    ['16 bytes of base64', randomBytes(16).toString('base64'), 'got 16 bytes'],
    ['33 bytes of base64', randomBytes(33).toString('base64'), 'got 33 bytes'],
    ['62 hex digits', randomBytes(31).toString('hex'), 'got 31 bytes'],
    ['a passphrase', 'correct horse battery staple', 'neither'],
  ])('refuses %s in the environment, naming the variable and never the value', (_name, text, why) => {
    const err = failure(() => loadSecretKey({ env: { [SECRET_KEY_ENV]: text }, configDir: dir }));
    expect(err.reason).toBe('malformed');
    expect(err.message).toContain(`${SECRET_KEY_ENV} is not 32 bytes of base64 or hex`);
    expect(err.message).toContain(why);
    expect(err.message).not.toContain(text);
  });

  it('refuses a malformed file, naming the file', async () => {
    const text = randomBytes(24).toString('base64');
    await writeKeyFile(text);
    const err = failure(() => loadSecretKey({ env: {}, configDir: dir }));
    expect(err.message).toContain(`${keyFile()} is not 32 bytes of base64 or hex (got 24 bytes)`);
    expect(err.message).not.toContain(text);
  });

  it('refuses an empty MCP_FLEET_SECRET_KEY rather than quietly using the file', async () => {
    await writeKeyFile(generateSecretKeyText());
    const err = failure(() => loadSecretKey({ env: { [SECRET_KEY_ENV]: ' ' }, configDir: dir }));
    expect(err.reason).toBe('malformed');
    expect(err.message).toContain(`${SECRET_KEY_ENV} is empty`);
  });

  it.skipIf(process.platform === 'win32').each([0o640, 0o604, 0o660, 0o620])(
    'refuses a key file open to group or others (mode %o), as ssh does',
    async (mode) => {
      const text = generateSecretKeyText();
      await writeKeyFile(text, mode);
      const err = failure(() => loadSecretKey({ env: {}, configDir: dir }));
      expect(err.reason).toBe('exposed');
      expect(err.message).toContain(`chmod 600 ${keyFile()}`);
      expect(err.message).toContain(`mode 0${mode.toString(8)}`);
      expect(err.message).not.toContain(text);
    },
  );

  it.skipIf(process.platform === 'win32')('takes a key file readable by its owner only (0600, 0400)', async () => {
    await writeKeyFile(bytes.toString('base64'), 0o400);
    expect(loadSecretKey({ env: {}, configDir: dir }).bytes.equals(bytes)).toBe(true);
  });

  it('never shows the key bytes when the key is logged or serialized', () => {
    const text = bytes.toString('base64');
    const key = loadSecretKey({ env: { [SECRET_KEY_ENV]: text }, configDir: dir });
    for (const shown of [JSON.stringify(key), inspect(key), inspect(key, { depth: 5 }), String(Object.values(key))]) {
      expect(shown).not.toContain(text);
      expect(shown).not.toContain(bytes.toString('hex'));
      expect(shown).toContain(key.id);
    }
  });
});

describe('generateSecretKeyText', () => {
  it('makes a fresh 32-byte key each time, in a form loadSecretKey reads', () => {
    const [a, b] = [generateSecretKeyText(), generateSecretKeyText()];
    expect(a).not.toBe(b);
    expect(Buffer.from(a, 'base64')).toHaveLength(32);
    expect(loadSecretKey({ env: { [SECRET_KEY_ENV]: a }, configDir: dir }).bytes.toString('base64')).toBe(a);
  });
});
