// The page's sign-in cookie and static files, over plain HTTP against a real
// host: what the browser tests rely on, checked header by header.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOKEN } from '../http/helpers.js';
import { startFleet, type Fleet } from '../http/fleet.js';

let fleet: Fleet;
let own: string;
beforeAll(async () => {
  fleet = await startFleet(() => ({}));
  own = `http://127.0.0.1:${fleet.served.port}`;
});
afterAll(async () => {
  await fleet.close();
});

/** Signs in and returns the `name=value` pair to send back as `Cookie`. */
async function signIn(): Promise<string> {
  const reply = await fleet.request('/ui/session', { method: 'POST', body: { token: TOKEN }, noAuth: true });
  expect(reply.status).toBe(204);
  const setCookie = reply.headers['set-cookie']?.[0] ?? '';
  return setCookie.split(';')[0]!;
}

describe('POST /ui/session', () => {
  it('answers the right token with an HttpOnly, SameSite=Strict, Path=/ cookie that is not the token', async () => {
    const reply = await fleet.request('/ui/session', { method: 'POST', body: { token: TOKEN }, noAuth: true });
    expect(reply.status).toBe(204);
    const cookies = reply.headers['set-cookie'] ?? [];
    expect(cookies).toHaveLength(1);
    expect(cookies[0]).toMatch(
      new RegExp(`^mcp_fleet_session_${fleet.served.port}=[A-Za-z0-9_-]{43}; HttpOnly; SameSite=Strict; Path=/$`),
    );
    expect(cookies[0]).not.toContain(TOKEN);
  });

  it.each([
    ['a wrong token', { token: 'nope' }, 401],
    ['no token', {}, 400],
    ['an extra field', { token: TOKEN, remember: true }, 400],
  ])('refuses %s with no cookie', async (_label, body, status) => {
    const reply = await fleet.request('/ui/session', { method: 'POST', body, noAuth: true });
    expect(reply.status).toBe(status);
    expect(reply.json.error.field).toBe('token');
    expect(reply.headers['set-cookie']).toBeUndefined();
  });

  it('is refused from a foreign Origin (no login CSRF)', async () => {
    const reply = await fleet.request('/ui/session', {
      method: 'POST',
      body: { token: TOKEN },
      noAuth: true,
      headers: { origin: 'http://evil.example' },
    });
    expect(reply.status).toBe(403);
    expect(reply.json.error.code).toBe('forbidden_origin');
    expect(reply.headers['set-cookie']).toBeUndefined();
  });

  it('GET says whether the request carries a valid session', async () => {
    const cookie = await signIn();
    expect((await fleet.request('/ui/session', { noAuth: true })).json).toEqual({ signed_in: false, oidc: false });
    expect((await fleet.request('/ui/session', { noAuth: true, headers: { cookie } })).json).toEqual({ signed_in: true, oidc: false });
  });

  it('DELETE clears the cookie', async () => {
    const reply = await fleet.request('/ui/session', { method: 'DELETE', noAuth: true, headers: { origin: own } });
    expect(reply.status).toBe(204);
    expect(reply.headers['set-cookie']?.[0]).toBe(
      `mcp_fleet_session_${fleet.served.port}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0`,
    );
  });
});

describe('the API with the session cookie', () => {
  it('accepts the cookie instead of the bearer header', async () => {
    const cookie = await signIn();
    const reply = await fleet.request('/api/mcp/servers', { noAuth: true, headers: { cookie } });
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ servers: [] });
  });

  it.each([
    ['a forged value', (c: string) => c.replace(/=.*/, `=${'A'.repeat(43)}`)],
    ['the raw token as value', (c: string) => c.replace(/=.*/, `=${TOKEN}`)],
    ["another port's cookie name", (c: string) => c.replace(/session_\d+/, 'session_1')],
  ])('refuses %s with 401', async (_label, tamper) => {
    const cookie = tamper(await signIn());
    const reply = await fleet.request('/api/mcp/servers', { noAuth: true, headers: { cookie } });
    expect(reply.status).toBe(401);
  });

  it('a cookie mutation from the own origin passes the checks (404: no such server)', async () => {
    const cookie = await signIn();
    const reply = await fleet.request('/api/mcp/servers/nope', { method: 'DELETE', noAuth: true, headers: { cookie, origin: own } });
    expect(reply.status).toBe(404);
  });

  it('a cookie mutation from a foreign origin is refused with 403', async () => {
    const cookie = await signIn();
    for (const origin of ['http://evil.example', `http://127.0.0.1:${fleet.served.port + 1}`, 'null']) {
      const reply = await fleet.request('/api/mcp/servers/nope', { method: 'DELETE', noAuth: true, headers: { cookie, origin } });
      expect(reply.status, origin).toBe(403);
      expect(reply.json.error.code).toBe('forbidden_origin');
    }
  });

  it('a cookie mutation without Origin is refused (browsers always send one); a bearer one is not', async () => {
    const cookie = await signIn();
    const withCookie = await fleet.request('/api/mcp/servers/nope', { method: 'DELETE', noAuth: true, headers: { cookie } });
    expect(withCookie.status).toBe(403);
    expect(withCookie.json.error.code).toBe('forbidden_origin');
    const withBearer = await fleet.request('/api/mcp/servers/nope', { method: 'DELETE' });
    expect(withBearer.status).toBe(404);
  });

  it('a wrong bearer header is not rescued by a valid cookie', async () => {
    const cookie = await signIn();
    const reply = await fleet.request('/api/mcp/servers', { headers: { cookie, authorization: 'Bearer wrong' } });
    expect(reply.status).toBe(401);
  });
});

describe('the page', () => {
  it('is served at / with a strict CSP, no referrer, no framing', async () => {
    const reply = await fleet.request('/', { noAuth: true });
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toMatch(/^text\/html/);
    expect(reply.text).toContain('<script type="module" src="/ui/app.js">');
    expect(reply.headers['content-security-policy']).toContain("script-src 'self'");
    expect(reply.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(reply.headers['referrer-policy']).toBe('no-referrer');
    expect(reply.headers['x-frame-options']).toBe('DENY');
  });

  it('serves its modules and styles without a token', async () => {
    for (const [path, type] of [
      ['/ui/app.js', /javascript/],
      ['/ui/server-form.js', /javascript/],
      ['/ui/style.css', /text\/css/],
    ] as const) {
      const reply = await fleet.request(path, { noAuth: true });
      expect(reply.status, path).toBe(200);
      expect(reply.headers['content-type'], path).toMatch(type);
    }
  });

  it('serves the server diagram with its state ids, and nothing else from diagrams/', async () => {
    const svg = await fleet.request('/ui/diagrams/server.svg', { noAuth: true });
    expect(svg.status).toBe(200);
    expect(svg.headers['content-type']).toMatch(/^image\/svg\+xml/);
    for (const state of ['ready', 'pending', 'error', 'disabled', 'needs_reauth']) expect(svg.text).toContain(`id="state_${state}"`);
    const outside = ['/ui/diagrams/README.md', '/ui/diagrams/server.mmd', '/ui/diagrams/..%2Fpackage.json', '/ui/..%2F..%2F..%2Fpackage.json'];
    for (const path of outside) {
      expect((await fleet.request(path, { noAuth: true })).status, path).toBe(404);
    }
  });

  it('is Host-checked like every route (DNS rebinding)', async () => {
    const reply = await fleet.request('/', { noAuth: true, headers: { host: `evil.example:${fleet.served.port}` } });
    expect(reply.status).toBe(403);
  });
});
