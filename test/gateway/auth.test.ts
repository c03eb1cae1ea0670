// `/mcp`'s challenge and what it refuses, on a worker's app with a public URL:
// the resource is the public URL's, a malformed header, an unknown key and a
// JWT without a configured issuer are invalid tokens, and the page's session
// cookie is no way in.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createManagementApp } from '../../src/http/app.js';
import { listen, type Listening } from '../../src/http/bind.js';
import { healthy, startFleet, type Fleet } from '../http/fleet.js';
import { TOKEN } from '../http/helpers.js';

let fleet: Fleet;
let app: Listening;
const PUBLIC = 'https://fleet.example.com';

beforeAll(async () => {
  fleet = await startFleet((dir) => ({ one: healthy(dir, 'one') }));
  app = await listen(createManagementApp(fleet.host, { token: TOKEN, publicUrl: `${PUBLIC}/` }), { port: 0 });
}, 60_000);

afterAll(async () => {
  await app?.close();
  await fleet?.close();
});

async function post(headers: Record<string, string>): Promise<{ status: number; challenge: string | null; body: unknown }> {
  const answer = await fetch(`http://127.0.0.1:${app.port}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  return { status: answer.status, challenge: answer.headers.get('www-authenticate'), body: await answer.json().catch(() => null) };
}

const METADATA = `${PUBLIC}/.well-known/oauth-protected-resource/mcp`;

describe('/mcp auth', () => {
  it('names the public URL as the resource, in the challenge and in the metadata', async () => {
    const refused = await post({});
    expect(refused.status).toBe(401);
    expect(refused.challenge).toBe(`Bearer resource_metadata="${METADATA}"`);
    const metadata = await (await fetch(`http://127.0.0.1:${app.port}/.well-known/oauth-protected-resource/mcp`)).json();
    // No --oidc-issuer: no authorization server to name.
    expect(metadata).toEqual({ resource: `${PUBLIC}/mcp`, bearer_methods_supported: ['header'], resource_name: 'mcp-fleet' });
  });

  it.each([
    ['a malformed header', { authorization: 'Basic dXNlcjpwYXNz' }],
    ['an unknown user key', { authorization: 'Bearer mcpf_0000000000000000000000000000000000000000000' }],
    ['a JWT with no issuer configured', { authorization: 'Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2ln' }],
  ])('refuses %s as an invalid token', async (_what, headers) => {
    const refused = await post(headers);
    expect(refused.status).toBe(401);
    expect(refused.challenge).toMatch(new RegExp(`^Bearer resource_metadata="${METADATA.replace(/[.]/g, '\\.')}", error="invalid_token", error_description="[^"]+"$`));
    expect(refused.body).toMatchObject({ error: 'invalid_token' });
  });

  it('takes no session cookie, only a bearer', async () => {
    const signedIn = await fetch(`http://127.0.0.1:${app.port}/ui/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: `http://127.0.0.1:${app.port}` },
      body: JSON.stringify({ token: TOKEN }),
    });
    const cookie = signedIn.headers.getSetCookie()[0]?.split(';')[0];
    expect(cookie).toBeDefined();
    expect((await post({ cookie: cookie! })).status).toBe(401);
    expect((await post({ authorization: `Bearer ${TOKEN}` })).status).not.toBe(401);
  });
});
