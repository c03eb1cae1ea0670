import { describe, expect, it } from 'vitest';
import { CredentialsRecord, emptyRecord } from '../../src/auth/credentials-file.js';
import { createDpopKey } from '../../src/auth/dpop-key.js';
import { isSealed, SecretOpenError } from '../../src/config/secrets/sealed.js';
import { openCredentialsRecord, sealCredentialsRecord } from '../../src/config/secrets/seal-credentials.js';
import { leaks, newKey } from './keys.js';

const ISSUER = 'https://as.example.com/';

/** A record with every kind of secret a server's credentials hold, each a canary. */
async function fullRecord(): Promise<CredentialsRecord> {
  const { stored: dpopKey } = await createDpopKey();
  return CredentialsRecord.parse({
    ...emptyRecord('https://mcp.example.com/mcp', null),
    redirect_port: 43_210,
    clients: {
      [ISSUER]: { client_id: 'dyn-client', client_secret: 'canary-client-secret-6a6a', issuer: ISSUER, redirect_uris: ['http://127.0.0.1:43210/oauth/callback'] },
      'https://other-as.example.com': { client_id: 'public-client', issuer: 'https://other-as.example.com' },
    },
    tokens: {
      access_token: 'canary-access-4c4c',
      token_type: 'Bearer',
      refresh_token: 'canary-refresh-91b2',
      id_token: 'canary-id-token-7e7e',
      scope: 'read write',
      issuer: ISSUER,
      expires_at: 1_900_000_000_000,
      obtained_at: 1_800_000_000_000,
    },
    discovery: { authorizationServerUrl: ISSUER },
    code_verifier: 'canary-verifier-3d3d',
    step_up_scope: 'admin',
    dpop_key: dpopKey,
  });
}

function secretsOf(record: CredentialsRecord): string[] {
  return [
    record.tokens!.access_token,
    record.tokens!.refresh_token!,
    record.tokens!.id_token!,
    record.clients[ISSUER]!.client_secret as string,
    record.code_verifier!,
    record.dpop_key!.private_jwk.d,
  ];
}

describe('sealCredentialsRecord and openCredentialsRecord', () => {
  const key = newKey();

  it('round-trips a full record', async () => {
    const record = await fullRecord();
    const stored = sealCredentialsRecord(key, 'remote', record);
    expect(CredentialsRecord.parse(openCredentialsRecord(key, 'remote', stored))).toEqual(record);
  });

  it('round-trips an empty record, which has no secret to seal', () => {
    const record = emptyRecord('https://mcp.example.com/mcp', 'pre-registered');
    const stored = sealCredentialsRecord(key, 'remote', record);
    expect(stored).toEqual(record);
    expect(CredentialsRecord.parse(openCredentialsRecord(key, 'remote', stored))).toEqual(record);
  });

  it('leaves no token, client secret, verifier or DPoP private key readable, in any encoding', async () => {
    const record = await fullRecord();
    const dump = JSON.stringify(sealCredentialsRecord(key, 'remote', record));
    expect(dump).not.toContain('canary');
    expect(leaks(dump, secretsOf(record))).toEqual([]);
  });

  it('keeps what is not secret readable: issuers, scopes, expiry, the DPoP public key', async () => {
    const record = await fullRecord();
    const stored = sealCredentialsRecord(key, 'remote', record) as Record<string, any>;
    expect(stored.server_url).toBe(record.server_url);
    expect(stored.tokens.scope).toBe('read write');
    expect(stored.tokens.expires_at).toBe(1_900_000_000_000);
    expect(Object.keys(stored.clients)).toEqual(Object.keys(record.clients));
    expect(stored.clients[ISSUER].client_id).toBe('dyn-client');
    expect(isSealed(stored.clients[ISSUER].client_secret)).toBe(true);
    expect(stored.dpop_key.private_jwk.x).toBe(record.dpop_key!.private_jwk.x);
    expect(isSealed(stored.dpop_key.private_jwk.d)).toBe(true);
  });

  it('seals a server_url whose query carries a credential, and still opens a record written with it in plain text', () => {
    const record = emptyRecord('https://mcp.example.com/mcp?access_token=canary-url-token-5c5c', null);
    const stored = sealCredentialsRecord(key, 'remote', record) as Record<string, any>;
    expect(isSealed(stored.server_url)).toBe(true);
    expect(leaks(JSON.stringify(stored), ['canary-url-token-5c5c'])).toEqual([]);
    expect(CredentialsRecord.parse(openCredentialsRecord(key, 'remote', stored))).toEqual(record);
    expect(CredentialsRecord.parse(openCredentialsRecord(key, 'remote', { ...stored, server_url: record.server_url }))).toEqual(record);
  });

  it('does not open under another server name', async () => {
    const stored = sealCredentialsRecord(key, 'remote', await fullRecord());
    expect(() => openCredentialsRecord(key, 'other', stored)).toThrow(SecretOpenError);
  });

  it('does not open a refresh token moved into the access token', async () => {
    const stored = sealCredentialsRecord(key, 'remote', await fullRecord()) as Record<string, any>;
    const moved = { ...stored, tokens: { ...stored.tokens, access_token: stored.tokens.refresh_token } };
    try {
      openCredentialsRecord(key, 'remote', moved);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(SecretOpenError);
      expect((err as SecretOpenError).reason).toBe('authentication');
      expect((err as SecretOpenError).context).toBe('oauth:remote:tokens:access_token');
    }
  });

  it('binds a client secret to the issuer it was registered with (a URL, colons and all)', async () => {
    const stored = sealCredentialsRecord(key, 'remote', await fullRecord()) as Record<string, any>;
    const moved = {
      ...stored,
      clients: { 'https://evil.example.com/': { ...stored.clients[ISSUER], issuer: 'https://evil.example.com/' } },
    };
    expect(() => openCredentialsRecord(key, 'remote', moved)).toThrow(/oauth:remote:clients:https%3A\/\/evil\.example\.com\/:client_secret/);
  });

  it('names the key ids when the worker holds another key', async () => {
    const other = newKey();
    const stored = sealCredentialsRecord(key, 'remote', await fullRecord());
    expect(() => openCredentialsRecord(other, 'remote', stored)).toThrow(`sealed with key ${key.id}, but the worker's key is ${other.id}`);
  });
});
