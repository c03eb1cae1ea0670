// OAuth across a fleet, with real workers, a real PostgreSQL and a real
// authorization server (oidc-provider, rotating refresh tokens): a consent
// begun on one worker is finished on another (`--public-url`), every worker
// then uses the same tokens, and three workers starting on an expired token
// with twenty calls each make exactly one refresh request.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { openCredentialsRecord, sealCredentialsRecord } from '../../src/config/secrets/seal-credentials.js';
import { secretKeyFrom } from '../../src/config/secrets/secret-key.js';
import { CredentialsRecord } from '../../src/auth/credentials-file.js';
import { consentAsUser } from '../oauth/servers.js';
import { oauthServersForFile } from './oauth-servers.js';
import { deadPort } from '../security/processes.js';
import { fleetTestBed, untilStateOn, type FleetWorkerProcess } from './workers.js';
import { until } from '../support/wait.js';

const bed = fleetTestBed();
const { secretKey } = bed;
const worker = bed.worker;
const oauth = oauthServersForFile();
const oauthServer = () => oauth.serverConfig();

/** Three workers, the second one the public URL of all; a consent begun on the first, finished on the second. */
async function consentedFleet(url: string): Promise<FleetWorkerProcess[]> {
  const port = await deadPort();
  const publicUrl = `http://127.0.0.1:${port}`;
  const b = await worker('w2', url, { port, args: ['--public-url', publicUrl] });
  const a = await worker('w1', url, { args: ['--public-url', publicUrl] });
  const c = await worker('w3', url, { args: ['--public-url', publicUrl] });
  expect((await a.request('/api/mcp/servers', { method: 'POST', json: { name: 'remote', ...oauthServer() } })).status).toBe(201);
  for (const on of [a, b, c]) await untilStateOn(on, 'remote', 'needs_reauth');

  const begun = await a.request('/api/mcp/servers/remote/auth', { method: 'POST' });
  expect(begun.status, begun.text).toBe(200);
  const authorizationUrl = new URL(begun.json.authorization_url);
  expect(authorizationUrl.searchParams.get('redirect_uri')).toBe(`${publicUrl}/oauth/callback`);
  const callback = await consentAsUser(begun.json.authorization_url);
  expect(callback.status, callback.text).toBe(200);
  expect(callback.text).toContain('Authorized remote');
  for (const on of [a, b, c]) await untilStateOn(on, 'remote', 'ready');
  return [a, b, c];
}

describe('OAuth across several workers', { timeout: 180_000 }, () => {
  it('a consent begun on one worker finishes on another (--public-url); every worker becomes ready on the one grant', async () => {
    const grantsBefore = oauth.as.grants.length;
    const url = await bed.database();
    const all = await consentedFleet(url);
    for (const on of all) {
      const call = await on.request('/api/mcp/tools/remote__echo/call', { method: 'POST', json: { arguments: { text: on.id } } });
      expect(call.status, call.text).toBe(200);
      expect(call.json.details.is_error, call.text).toBe(false);
    }
    expect(oauth.as.grants.slice(grantsBefore)).toEqual(['authorization_code']);
    // The state was taken: the same answer again changes nothing.
    const replay = await fetch(`${all[1]!.url}/oauth/callback?state=made-up&code=x`);
    expect(replay.status).toBe(400);
  });

  it('a consent asked for on a second worker while it waits answers the same URL; the first one finishes on a third', async () => {
    const url = await bed.database();
    const port = await deadPort();
    const publicUrl = `http://127.0.0.1:${port}`;
    const a = await worker('w1', url, { port, args: ['--public-url', publicUrl] });
    const b = await worker('w2', url, { args: ['--public-url', publicUrl] });
    const c = await worker('w3', url, { args: ['--public-url', publicUrl] });
    expect((await a.request('/api/mcp/servers', { method: 'POST', json: { name: 'lin', ...oauthServer() } })).status).toBe(201);
    for (const on of [a, b, c]) await untilStateOn(on, 'lin', 'needs_reauth');

    const first = await c.request('/api/mcp/servers/lin/auth', { method: 'POST' });
    expect(first.status, first.text).toBe(200);
    const second = await b.request('/api/mcp/servers/lin/auth', { method: 'POST' });
    expect(second.status, second.text).toBe(200);
    // The same consent: b neither began another nor replaced the verifier of c's.
    expect(second.json.authorization_url).toBe(first.json.authorization_url);

    const callback = await consentAsUser(first.json.authorization_url);
    expect(callback.status, callback.text).toBe(200);
    for (const on of [a, b, c]) await untilStateOn(on, 'lin', 'ready');
  });

  it('a consent asked for twice on one worker is journaled once', async () => {
    const url = await bed.database();
    const port = await deadPort();
    const a = await worker('w1', url, { port, args: ['--public-url', `http://127.0.0.1:${port}`] });
    expect((await a.request('/api/mcp/servers', { method: 'POST', json: { name: 'lin', ...oauthServer() } })).status).toBe(201);
    await untilStateOn(a, 'lin', 'needs_reauth');
    const first = await a.request('/api/mcp/servers/lin/auth', { method: 'POST' });
    const again = await a.request('/api/mcp/servers/lin/auth', { method: 'POST' });
    expect(again.json.authorization_url).toBe(first.json.authorization_url);
    const begun = async () =>
      (await a.request('/api/mcp/events?since=0&limit=10000')).json.events.filter(
        (event: { type: string; server?: string }) => event.type === 'consent.begun' && event.server === 'lin',
      );
    // The journal is written behind the answer: once the first is in, a second would be too.
    await until(async () => (await begun()).length > 0, 'consent.begun in the journal');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await begun()).toHaveLength(1);
  });

  it('a code the authorization server refuses at the callback is recorded in the status and the journal of the worker it landed on', async () => {
    const url = await bed.database();
    const port = await deadPort();
    const publicUrl = `http://127.0.0.1:${port}`;
    const a = await worker('w1', url, { port, args: ['--public-url', publicUrl] });
    const c = await worker('w3', url, { args: ['--public-url', publicUrl] });
    expect((await a.request('/api/mcp/servers', { method: 'POST', json: { name: 'lin', ...oauthServer() } })).status).toBe(201);
    for (const on of [a, c]) await untilStateOn(on, 'lin', 'needs_reauth');

    const begun = await c.request('/api/mcp/servers/lin/auth', { method: 'POST' });
    expect(begun.status, begun.text).toBe(200);
    // The browser comes back with our state and a code the authorization server never issued.
    const callback = await consentAsUser(begun.json.authorization_url, 'alice', (at) => {
      const tampered = new URL(at);
      tampered.searchParams.set('code', 'not-a-code-it-issued');
      return fetch(tampered);
    });
    expect(callback.status, callback.text).toBe(502);
    // Where the callback's page sends the user: the status of the worker it landed on (written behind the answer).
    let view: any;
    await until(async () => /refused the code/.test((view = (await a.request('/api/mcp/servers/lin')).json).error ?? ''), 'the refusal in the status').catch(
      (error: Error) => {
        throw new Error(`${error.message}: ${JSON.stringify(view)}`);
      },
    );
    expect(view.state).toBe('needs_reauth');
    let failed: any[] = [];
    await until(async () => {
      failed = (await a.request('/api/mcp/events?since=0&limit=10000')).json.events.filter(
        (event: { type: string; server?: string }) => event.type === 'consent.failed' && event.server === 'lin',
      );
      return failed.length > 0;
    }, 'consent.failed in the journal');
    expect(failed).toHaveLength(1);
    expect(failed[0].error).toMatch(/refused the code/);
    expect(JSON.stringify(failed[0])).not.toContain('not-a-code-it-issued');
  });

  it('a consent refused at the callback ends on every worker waiting on it; asked again, a new one begins', async () => {
    const url = await bed.database();
    const port = await deadPort();
    const publicUrl = `http://127.0.0.1:${port}`;
    const a = await worker('w1', url, { port, args: ['--public-url', publicUrl] });
    const b = await worker('w2', url, { args: ['--public-url', publicUrl] });
    const c = await worker('w3', url, { args: ['--public-url', publicUrl] });
    expect((await a.request('/api/mcp/servers', { method: 'POST', json: { name: 'lin', ...oauthServer() } })).status).toBe(201);
    for (const on of [a, b, c]) await untilStateOn(on, 'lin', 'needs_reauth');

    // c begins it, b joins it; the callback lands on a, with a code the authorization server never issued.
    const begun = await c.request('/api/mcp/servers/lin/auth', { method: 'POST' });
    expect(begun.status, begun.text).toBe(200);
    const joined = await b.request('/api/mcp/servers/lin/auth', { method: 'POST' });
    expect(joined.json.authorization_url).toBe(begun.json.authorization_url);
    for (const on of [b, c]) await untilStateOn(on, 'lin', 'authenticating');
    const callback = await consentAsUser(begun.json.authorization_url, 'alice', (at) => {
      const tampered = new URL(at);
      tampered.searchParams.set('code', 'not-a-code-it-issued');
      return fetch(tampered);
    });
    expect(callback.status, callback.text).toBe(502);

    // Neither waits for the ten-minute timeout: both say why, at once.
    for (const on of [b, c]) {
      let view: any;
      await until(async () => /refused the code/.test((view = (await on.request('/api/mcp/servers/lin')).json).error ?? ''), `the refusal on ${on.id}`, 15_000).catch(
        (error: Error) => {
          throw new Error(`${error.message}: ${JSON.stringify(view)}`);
        },
      );
      expect(view.state).toBe('needs_reauth');
    }
    // The old URL's state is used: asked again, c begins a new consent, which every worker then answers.
    const again = await c.request('/api/mcp/servers/lin/auth', { method: 'POST' });
    expect(again.status, again.text).toBe(200);
    expect(again.json.authorization_url).not.toBe(begun.json.authorization_url);
    const answered = await consentAsUser(again.json.authorization_url);
    expect(answered.status, answered.text).toBe(200);
    for (const on of [a, b, c]) await untilStateOn(on, 'lin', 'ready');
  });

  it("a worker answering another's pending consent does not journal it again: one consent.begun for the fleet", async () => {
    const url = await bed.database();
    const port = await deadPort();
    const publicUrl = `http://127.0.0.1:${port}`;
    const a = await worker('w1', url, { port, args: ['--public-url', publicUrl] });
    const b = await worker('w2', url, { args: ['--public-url', publicUrl] });
    expect((await a.request('/api/mcp/servers', { method: 'POST', json: { name: 'lin', ...oauthServer() } })).status).toBe(201);
    for (const on of [a, b]) await untilStateOn(on, 'lin', 'needs_reauth');
    const first = await a.request('/api/mcp/servers/lin/auth', { method: 'POST' });
    const joined = await b.request('/api/mcp/servers/lin/auth', { method: 'POST' });
    expect(joined.json.authorization_url).toBe(first.json.authorization_url);
    const begun = async (on: FleetWorkerProcess) =>
      (await on.request('/api/mcp/events?since=0&limit=10000')).json.events.filter(
        (event: { type: string; server?: string }) => event.type === 'consent.begun' && event.server === 'lin',
      );
    // The shared journal, as each worker reads it: a's event is in; b's would be by now.
    for (const on of [a, b]) await until(async () => (await begun(on)).length > 0, `consent.begun on ${on.id}`);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    for (const on of [a, b]) expect(await begun(on)).toHaveLength(1);
  });

  it('three workers starting on an expired token, twenty concurrent calls each: one refresh request, every call succeeds', async () => {
    const url = await bed.database();
    await consentedFleet(url);
    await bed.stopAll();

    // The stored access token is made to look expired, as after a weekend off.
    const key = secretKeyFrom(secretKey, 'test');
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const { rows } = await admin.query("select record from credentials where server = 'remote'");
      const record = CredentialsRecord.parse(openCredentialsRecord(key, 'remote', rows[0].record));
      record.tokens!.expires_at = Date.now() - 1000;
      record.tokens!.obtained_at = Date.now() - 601_000;
      await admin.query("update credentials set record = $1 where server = 'remote'", [sealCredentialsRecord(key, 'remote', record)]);
    } finally {
      await admin.end();
    }
    const requestsBefore = oauth.as.tokenRequests.length;
    const again = await Promise.all(['w1', 'w2', 'w3'].map((id) => worker(id, url)));
    for (const on of again) await untilStateOn(on, 'remote', 'ready');
    const calls = await Promise.all(
      again.flatMap((on) =>
        Array.from({ length: 20 }, (_, index) =>
          on.request('/api/mcp/tools/remote__echo/call', { method: 'POST', json: { arguments: { text: `${on.id}-${index}` } } }),
        ),
      ),
    );
    expect(calls.map((call) => [call.status, call.json?.details?.is_error])).toEqual(Array(60).fill([200, false]));
    expect(oauth.as.tokenRequests.slice(requestsBefore)).toEqual(['refresh_token']);
  });
});
