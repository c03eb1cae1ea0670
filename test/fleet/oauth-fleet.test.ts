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

/** A code the authorization server never issued, as a tampered callback brings it. */
const FOREIGN_CODE = 'not-a-code-it-issued';

/** `count` workers behind the first one's public URL, with the OAuth server `lin` added and waiting for a consent on each. */
async function waitingFleet(url: string, count: number): Promise<FleetWorkerProcess[]> {
  const port = await deadPort();
  const args = ['--public-url', `http://127.0.0.1:${port}`];
  const workers: FleetWorkerProcess[] = [];
  for (let index = 0; index < count; index += 1) workers.push(await worker(`w${index + 1}`, url, { ...(index === 0 && { port }), args }));
  expect((await workers[0]!.request('/api/mcp/servers', { method: 'POST', json: { name: 'lin', ...oauthServer() } })).status).toBe(201);
  for (const on of workers) await untilStateOn(on, 'lin', 'needs_reauth');
  return workers;
}

/** Asks `on` for the consent of `lin`: its answer. */
async function askConsent(on: FleetWorkerProcess): Promise<{ authorization_url: string }> {
  const answer = await on.request('/api/mcp/servers/lin/auth', { method: 'POST' });
  expect(answer.status, answer.text).toBe(200);
  return answer.json;
}

/** The user consents, and the browser comes back with the consent's state and a code the authorization server never issued. */
async function refusedAtCallback(authorizationUrl: string): Promise<void> {
  const callback = await consentAsUser(authorizationUrl, 'alice', (at) => {
    const tampered = new URL(at);
    tampered.searchParams.set('code', FOREIGN_CODE);
    return fetch(tampered);
  });
  expect(callback.status, callback.text).toBe(502);
}

/** Until `on` shows `lin` in needs_reauth saying the authorization server refused the code. */
async function untilRefusedOn(on: FleetWorkerProcess): Promise<void> {
  let view: { state?: string; error?: string | null } = {};
  await until(async () => /refused the code/.test((view = (await on.request('/api/mcp/servers/lin')).json).error ?? ''), `the refusal on ${on.id}`, 15_000).catch(
    (error: Error) => {
      throw new Error(`${error.message}: ${JSON.stringify(view)}`);
    },
  );
  expect(view.state).toBe('needs_reauth');
}

/** The journal's events of `type` about `lin`, as `on` reads the shared journal. */
async function eventsOf(on: FleetWorkerProcess, type: string): Promise<Array<Record<string, unknown>>> {
  const { events } = (await on.request('/api/mcp/events?since=0&limit=10000')).json as { events: Array<{ type: string; server?: string }> };
  return events.filter((event) => event.type === type && event.server === 'lin');
}

/**
 * Until what `on` journaled so far is in the shared journal: `on` journals a sentinel (a disabled
 * server added) after it, in its own order, and the sentinel is awaited. No sleep stands for "by now".
 */
async function journaledBehind(on: FleetWorkerProcess): Promise<void> {
  const sentinel = `sentinel-${on.id}`;
  const added = await on.request('/api/mcp/servers', { method: 'POST', json: { name: sentinel, type: 'local', command: ['node', 'never-run.js'], enabled: false } });
  expect(added.status, added.text).toBe(201);
  await until(async () => {
    const { events } = (await on.request('/api/mcp/events?since=0&limit=10000')).json as { events: Array<{ type: string; server?: string }> };
    return events.some((event) => event.type === 'server.configured' && event.server === sentinel);
  }, `the sentinel journaled by ${on.id}`);
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
    const [a, b, c] = await waitingFleet(await bed.database(), 3);
    const first = await askConsent(c!);
    // The same consent: b neither began another nor replaced the verifier of c's.
    expect((await askConsent(b!)).authorization_url).toBe(first.authorization_url);
    const callback = await consentAsUser(first.authorization_url);
    expect(callback.status, callback.text).toBe(200);
    for (const on of [a, b, c]) await untilStateOn(on!, 'lin', 'ready');
  });

  it('a consent asked for twice on one worker is journaled once', async () => {
    const [a] = await waitingFleet(await bed.database(), 1);
    const first = await askConsent(a!);
    expect((await askConsent(a!)).authorization_url).toBe(first.authorization_url);
    await journaledBehind(a!);
    expect(await eventsOf(a!, 'consent.begun')).toHaveLength(1);
  });

  it('a code the authorization server refuses at the callback is recorded in the status and the journal of the worker it landed on', async () => {
    const [a, c] = await waitingFleet(await bed.database(), 2);
    await refusedAtCallback((await askConsent(c!)).authorization_url);
    // Where the callback's page sends the user: the status of the worker it landed on.
    await untilRefusedOn(a!);
    let failed: Array<Record<string, unknown>> = [];
    await until(async () => (failed = await eventsOf(a!, 'consent.failed')).length > 0, 'consent.failed in the journal');
    expect(failed).toHaveLength(1);
    expect(failed[0]!.error).toMatch(/refused the code/);
    expect(JSON.stringify(failed[0])).not.toContain(FOREIGN_CODE);
  });

  it('a consent refused at the callback ends on every worker waiting on it; asked again, a new one begins', async () => {
    const [a, b, c] = await waitingFleet(await bed.database(), 3);
    // c begins it, b joins it; the callback lands on a, with a code the authorization server never issued.
    const begun = await askConsent(c!);
    expect((await askConsent(b!)).authorization_url).toBe(begun.authorization_url);
    for (const on of [b, c]) await untilStateOn(on!, 'lin', 'authenticating');
    await refusedAtCallback(begun.authorization_url);
    // Neither waits for the ten-minute timeout: both say why, at once.
    for (const on of [b, c]) await untilRefusedOn(on!);
    // The old URL's state is used: asked again, c begins a new consent, which every worker then answers.
    const again = await askConsent(c!);
    expect(again.authorization_url).not.toBe(begun.authorization_url);
    const answered = await consentAsUser(again.authorization_url);
    expect(answered.status, answered.text).toBe(200);
    for (const on of [a, b, c]) await untilStateOn(on!, 'lin', 'ready');
  });

  it("a worker answering another's pending consent does not journal it again: one consent.begun for the fleet", async () => {
    const [a, b] = await waitingFleet(await bed.database(), 2);
    const first = await askConsent(a!);
    expect((await askConsent(b!)).authorization_url).toBe(first.authorization_url);
    for (const on of [a, b]) await journaledBehind(on!);
    // The shared journal, as each worker reads it.
    for (const on of [a, b]) expect(await eventsOf(on!, 'consent.begun')).toHaveLength(1);
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
