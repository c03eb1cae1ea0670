// The pieces a user's consent is bound with, on their own: the signed binding
// cookie (real HMAC, real keys), whether a public URL can hold a Secure
// cookie, a pending consent's expiry, and the grants of the file store
// (real files), deleted by server, by principal or both.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import {
  bindingCookieValue,
  bindingFor,
  bindingHash,
  canBindBrowser,
  openBindingCookie,
  readBindingCookie,
} from '../../src/auth/consent-binding.js';
import { createFileCredentialsStore, grantKey } from '../../src/auth/credentials-store.js';
import { emptyRecord } from '../../src/auth/credentials-file.js';
import { memoryPendingConsents } from '../../src/auth/pending-consents.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

describe('the binding cookie', () => {
  const key = randomBytes(32);

  it('opens only under the key it was signed with, for the principal and binding it was made for', () => {
    const binding = bindingFor(key, 'alice', undefined);
    const value = bindingCookieValue(key, binding);
    expect(openBindingCookie(key, value)).toEqual(binding);
    expect(openBindingCookie(randomBytes(32), value)).toBeNull();
    const [, nonce, signature] = value.split('.');
    // alice's signature on a cookie claiming bob.
    expect(openBindingCookie(key, `${Buffer.from('bob').toString('base64url')}.${nonce}.${signature}`)).toBeNull();
    const flipped = Buffer.from(signature!, 'base64url');
    flipped[0] = flipped[0]! ^ 1;
    expect(openBindingCookie(key, `${value.split('.')[0]}.${nonce}.${flipped.toString('base64url')}`)).toBeNull();
    expect(openBindingCookie(key, 'garbage')).toBeNull();
    expect(openBindingCookie(key, undefined)).toBeNull();
  });

  it("keeps the browser's binding for consents of the same principal, and makes a new one for another", () => {
    const alices = bindingFor(key, 'alice', undefined);
    const cookie = bindingCookieValue(key, alices);
    expect(bindingFor(key, 'alice', cookie)).toEqual(alices);
    const bobs = bindingFor(key, 'bob', cookie);
    expect(bobs.principal).toBe('bob');
    expect(bobs.nonce).not.toBe(alices.nonce);
    expect(bindingHash(alices.nonce)).not.toBe(alices.nonce);
  });

  it('is read from a Cookie header among others', () => {
    expect(readBindingCookie('a=1; __Host-mcp-fleet-consent=x.y.z; b=2')).toBe('x.y.z');
    expect(readBindingCookie('mcp-fleet-consent=x.y.z')).toBeUndefined();
  });

  it('is only offered where a browser keeps a Secure cookie: https, or a loopback host', () => {
    expect(canBindBrowser('https://fleet.example.com')).toBe(true);
    expect(canBindBrowser('http://127.0.0.1:8080')).toBe(true);
    expect(canBindBrowser('http://localhost:8080')).toBe(true);
    expect(canBindBrowser('http://fleet.example.com')).toBe(false);
    expect(canBindBrowser('http://10.0.0.5:8080')).toBe(false);
  });
});

describe('pending user consents', () => {
  it('answer once, for whom and which browser, and not past their time', async () => {
    const pending = memoryPendingConsents();
    await pending.add('s1', 'remote', 'w1', { principal: 'alice', binding: 'h1', ttlMs: 60_000 });
    await pending.add('s2', 'remote', 'w1', { principal: 'alice', binding: 'h2', ttlMs: -1 });
    await pending.add('s3', 'shared', 'w1');
    expect(await pending.take('s1')).toEqual({ server: 'remote', owner: { principal: 'alice', binding: 'h1' } });
    expect(await pending.take('s1')).toBeNull();
    expect(await pending.take('s2')).toBeNull();
    expect(await pending.take('s3')).toEqual({ server: 'shared' });
  });
});

describe('grants in the file store', () => {
  it('are files of their own, deleted by server, by principal or both; a server\'s own record stays', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-grants-'));
    dirs.push(dir);
    const store = createFileCredentialsStore(dir);
    const record = emptyRecord('https://mcp.example.com/mcp', null);
    const names = ['one', grantKey('one', 'alice'), grantKey('one', 'bob'), grantKey('two', 'alice')];
    for (const name of names) await store.save(name, record);
    const file = (name: string) => join(dir, 'oauth', `${name}.json`);
    await store.deleteGrants!({ principal: 'alice', server: 'one' });
    expect(names.map((name) => existsSync(file(name)))).toEqual([true, false, true, true]);
    await store.deleteGrants!({ principal: 'alice' });
    expect(names.map((name) => existsSync(file(name)))).toEqual([true, false, true, false]);
    await store.deleteGrants!({ server: 'one' });
    expect(names.map((name) => existsSync(file(name)))).toEqual([true, false, false, false]);
    // The binding key is derived from the state dir's secret key, made on first use and the same after.
    const first = await store.bindingKey!();
    expect((await createFileCredentialsStore(dir).bindingKey!()).equals(first)).toBe(true);
  });
});
