import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ensureApiToken, readApiToken, tokensEqual } from '../../src/http/api-token.js';

let dir: string;
beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'fleet-token-'));
});
afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

describe('ensureApiToken', () => {
  it('generates 32 random bytes (base64url) once, into api_token with mode 0600', async () => {
    const stateDir = path.join(dir, 'state');
    const first = await ensureApiToken(stateDir, {});
    expect(first.source).toBe('file');
    expect(first.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const file = path.join(stateDir, 'api_token');
    expect((await fs.stat(file)).mode & 0o777).toBe(0o600);
    expect((await fs.readFile(file, 'utf8')).trim()).toBe(first.token);
    // No temp file left behind.
    expect(await fs.readdir(stateDir)).toEqual(['api_token']);

    const second = await ensureApiToken(stateDir, {});
    expect(second.token).toBe(first.token);
  });

  it('two workers starting together agree on one token', async () => {
    const tokens = await Promise.all(Array.from({ length: 8 }, () => ensureApiToken(dir, {})));
    expect(new Set(tokens.map((t) => t.token)).size).toBe(1);
  });

  it('MCP_FLEET_API_TOKEN wins and nothing is written', async () => {
    const token = await ensureApiToken(dir, { MCP_FLEET_API_TOKEN: 'from-env-token' });
    expect(token).toEqual({ token: 'from-env-token', source: 'env' });
    expect(await fs.readdir(dir)).toEqual([]);
  });

  it('narrows a token file left readable by others to 0600', async () => {
    const file = path.join(dir, 'api_token');
    await fs.writeFile(file, 'kept-token\n', { mode: 0o644 });
    await fs.chmod(file, 0o644);
    expect((await ensureApiToken(dir, {})).token).toBe('kept-token');
    expect((await fs.stat(file)).mode & 0o777).toBe(0o600);
  });
});

describe('readApiToken', () => {
  it('reads env first, then the file, and never creates one', async () => {
    expect(await readApiToken(dir, {})).toBeUndefined();
    expect(await fs.readdir(dir)).toEqual([]);
    await fs.writeFile(path.join(dir, 'api_token'), 'file-token\n');
    expect(await readApiToken(dir, {})).toBe('file-token');
    expect(await readApiToken(dir, { MCP_FLEET_API_TOKEN: 'env-token' })).toBe('env-token');
  });
});

describe('tokensEqual', () => {
  it('compares whole values of any length', () => {
    expect(tokensEqual('abc', 'abc')).toBe(true);
    expect(tokensEqual('abc', 'abd')).toBe(false);
    expect(tokensEqual('abc', 'abcd')).toBe(false);
    expect(tokensEqual('abc', '')).toBe(false);
  });
});
