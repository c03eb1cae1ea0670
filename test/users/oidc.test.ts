// The page's sign-in through a real OpenID Connect provider (oidc-provider):
// a browser played over plain HTTP with a cookie jar (redirects followed by
// hand, the provider's login and consent forms posted), end to end: the
// worker sends it to the provider with PKCE, state and nonce, the provider
// sends it back, the worker checks everything and signs the user in; then
// GET /api/mcp/me says who, and the access policy applies to their groups.
// Also what must be refused: a callback this browser did not begin, a state
// that does not match, a replay, an account named `admin`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOidcWorker, type OidcWorker } from './oidc-worker.js';

let worker: OidcWorker;
let app: OidcWorker['app'];
let idp: OidcWorker['idp'];

beforeAll(async () => {
  worker = await startOidcWorker();
  ({ app, idp } = worker);
});
afterAll(async () => {
  await worker?.close();
});

/** A browser: one cookie jar for 127.0.0.1 (cookies do not tell ports apart), redirects by hand. */
class Browser {
  readonly cookies = new Map<string, string>();
  /** The raw `Set-Cookie` lines seen, by cookie name. */
  readonly setCookies = new Map<string, string>();

  async get(url: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.cookies.size > 0) headers.set('cookie', [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    const response = await fetch(url, { ...init, headers, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair!.indexOf('=');
      const name = pair!.slice(0, at);
      const value = pair!.slice(at + 1);
      this.setCookies.set(name, line);
      if (value === '' || /max-age=0/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return response;
  }

  /**
   * From the page's sign-in link through the provider's login and consent
   * forms, up to (not into) the worker's callback: its URL.
   */
  async toCallback(account: string): Promise<string> {
    let response = await this.get(`http://127.0.0.1:${app.port}/ui/oidc/login`);
    expect(response.status).toBe(302);
    let url = response.headers.get('location')!;
    const authorize = new URL(url);
    expect(authorize.origin).toBe(idp.issuer);
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorize.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(authorize.searchParams.get('state')).toBeTruthy();
    expect(authorize.searchParams.get('nonce')).toBeTruthy();
    expect(authorize.searchParams.get('scope')).toBe('openid profile groups');
    for (let step = 0; step < 20; step++) {
      if (url.startsWith(`http://127.0.0.1:${app.port}/ui/oidc/callback`)) return url;
      response = await this.get(url);
      const location = response.headers.get('location');
      if (location !== null) {
        await response.body?.cancel();
        url = new URL(location, url).href;
        continue;
      }
      const html = await response.text();
      const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
      const prompt = /name="prompt" value="([^"]+)"/.exec(html)?.[1];
      if (action === undefined || prompt === undefined) throw new Error(`unexpected page (HTTP ${response.status}): ${html.slice(0, 300)}`);
      const form = new URLSearchParams({ prompt });
      if (prompt === 'login') {
        form.set('login', account);
        form.set('password', 'any');
      }
      response = await this.get(new URL(action.replaceAll('&amp;', '&'), url).href, {
        method: 'POST',
        body: form,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      const next = response.headers.get('location');
      if (next === null) throw new Error(`the form was not accepted (HTTP ${response.status})`);
      url = new URL(next, url).href;
    }
    throw new Error('the sign-in never came back to the worker');
  }

  async api(path: string): Promise<{ status: number; json: any }> {
    const response = await this.get(`http://127.0.0.1:${app.port}${path}`);
    return { status: response.status, json: await response.json() };
  }
}

describe('OIDC sign-in for the page', () => {
  it('a real round trip: the user comes back signed in, GET /api/mcp/me says who with their groups, and they see their servers', async () => {
    const browser = new Browser();
    expect((await browser.api('/ui/session')).json).toEqual({ signed_in: false, oidc: true });
    const callback = await browser.toCallback('alice');
    const query = new URL(callback).searchParams;
    expect(query.get('iss')).toBe(idp.issuer);
    const back = await browser.get(callback);
    expect(back.status, await back.clone().text()).toBe(302);
    expect(back.headers.get('location')).toBe('/');
    const session = browser.setCookies.get(`mcp_fleet_session_${app.port}`)!;
    expect(session).toMatch(/HttpOnly/);
    expect(session).toMatch(/SameSite=Lax/);
    expect(session).not.toMatch(/Secure/);
    expect(idp.logins).toContain('alice');

    expect((await browser.api('/ui/session')).json).toEqual({ signed_in: true, oidc: true });
    expect((await browser.api('/api/mcp/me')).json).toEqual({ principal: 'alice', groups: ['eng', 'staff'], admin: false });
    const servers = (await browser.api('/api/mcp/servers')).json.servers.map((server: { name: string }) => server.name);
    expect(servers).toEqual(['eng']);
    // A user, not the admin.
    expect((await browser.api('/api/mcp/users')).status).toBe(403);

    // The callback again (a replay, the back button): the sign-in it belonged to is over.
    const replayed = await browser.get(callback);
    expect(replayed.status).toBe(400);
    expect(((await replayed.json()) as any).error.code).toBe('sign_in_refused');
  });

  it('a callback link from another browser signs nobody in, there or here', async () => {
    const attacker = new Browser();
    const callback = await attacker.toCallback('bob');
    // Sent to the victim, who began no sign-in: refused, and no session cookie is set.
    const victim = new Browser();
    const answer = await victim.get(callback);
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as any).error.message).toMatch(/no sign-in was begun in this browser/);
    expect(victim.cookies.has(`mcp_fleet_session_${app.port}`)).toBe(false);
    expect((await victim.api('/api/mcp/me')).status).toBe(401);
  });

  it('a state that is not the one this browser began is refused', async () => {
    const browser = new Browser();
    const callback = new URL(await browser.toCallback('bob'));
    callback.searchParams.set('state', 'not-the-state');
    const answer = await browser.get(callback.href);
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as any).error.message).toBe('the state does not match the sign-in this browser began');
    expect((await browser.api('/api/mcp/me')).status).toBe(401);
  });

  it('a response naming another issuer is refused', async () => {
    const browser = new Browser();
    const callback = new URL(await browser.toCallback('bob'));
    callback.searchParams.set('iss', 'http://127.0.0.1:1/elsewhere');
    const answer = await browser.get(callback.href);
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as any).error.message).toBe('the response does not come from the configured issuer');
  });

  it('an account named admin cannot sign in (that name is the API token’s)', async () => {
    const browser = new Browser();
    const answer = await browser.get(await browser.toCallback('admin'));
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as any).error.message).toMatch(/"admin" is the admin token's principal/);
    expect((await browser.api('/api/mcp/me')).status).toBe(401);
  });

  it('a forged session cookie is refused', async () => {
    const browser = new Browser();
    const claims = Buffer.from(JSON.stringify({ id: 'mallory', groups: ['eng'], exp: 9_999_999_999 })).toString('base64url');
    browser.cookies.set(`mcp_fleet_session_${app.port}`, `o.${claims}.${'A'.repeat(43)}`);
    expect((await browser.api('/api/mcp/me')).status).toBe(401);
  });
});
