// What a user is shown of a server's config: no mask of any stored secret, of any auth kind.
import { describe, expect, it } from 'vitest';
import { toResponse } from '../../src/config/masking.js';
import { ServerConfig } from '../../src/config/schema.js';
import { configForUser } from '../../src/http/caller.js';

const remote = (auth: Record<string, unknown>, url = 'https://mcp.example/mcp') =>
  toResponse(ServerConfig.parse({ type: 'remote', url, headers: { 'X-Key': 'header-secret-0123456789' }, auth }));

describe('configForUser', () => {
  it.each([
    ['bearer', { kind: 'bearer', token: 'bearer-token-0123456789' }],
    ['oauth', { kind: 'oauth', client_id: 'c', client_secret: 'oauth-secret-0123456789' }],
    ['client_credentials', { kind: 'client_credentials', client_id: 'job', client_secret: 'machine-secret-0123456789' }],
    [
      'enterprise',
      {
        kind: 'enterprise',
        client_id: 'c',
        client_secret: 'enterprise-secret-0123456789',
        idp_token_endpoint: 'https://idp.example/token',
        idp_client_id: 'i',
        idp_client_secret: 'idp-secret-0123456789',
        id_token_file: '/run/id-token',
      },
    ],
  ])('%s: every mask is null, the presence flags stay, no header is shown', (_kind, auth) => {
    const shown = configForUser(remote(auth)) as Extract<ReturnType<typeof configForUser>, { type: 'remote' }>;
    const masks = Object.entries(shown.auth).filter(([key]) => key.endsWith('_masked'));
    expect(masks.length).toBeGreaterThan(0);
    expect(masks.every(([, value]) => value === null)).toBe(true);
    expect(Object.entries(shown.auth).some(([key, value]) => key.startsWith('has_') && value === true)).toBe(true);
    expect(shown.headers).toEqual({});
    expect(JSON.stringify(shown)).not.toMatch(/••••\w/);
  });

  it("a credential in the URL's query is a bare mask, without the last characters an admin sees", () => {
    const config = remote({ kind: 'none' }, 'https://mcp.example/sse?api_key=query-key-0123456789&v=2');
    expect((config as { url: string }).url).toBe('https://mcp.example/sse?api_key=••••6789&v=2');
    expect((configForUser(config) as { url: string }).url).toBe('https://mcp.example/sse?api_key=••••&v=2');
  });
});
