// Per-user OAuth grants on a fleet: real workers (`mcp-fleet serve
// --database-url --public-url`), a real PostgreSQL, a real authorization
// server (oidc-provider: PKCE, resource indicators, `iss` in the answer,
// rotating refresh tokens) in front of a real MCP server whose `whoami` tool
// answers the subject of the token each call carried. Two users (alice, bob)
// each connect their own account; the browsers are plain fetch clients that
// keep their cookies by hand, so each test says exactly which cookie which
// browser holds.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { openCredentialsRecord, sealCredentialsRecord } from '../../src/config/secrets/seal-credentials.js';
import { secretKeyFrom } from '../../src/config/secrets/secret-key.js';
import { CredentialsRecord } from '../../src/auth/credentials-file.js';
import { grantKey } from '../../src/auth/credentials-store.js';
import { CONSENT_COOKIE } from '../../src/auth/consent-binding.js';
import { consentAsUser } from '../oauth/servers.js';
import { oauthServersForFile } from './oauth-servers.js';
import { deadPort } from '../security/processes.js';
import { fleetTestBed, type FleetWorkerProcess } from './workers.js';
import { until } from '../support/wait.js';

const bed = fleetTestBed();
const oauth = oauthServersForFile();
/** The login each user signs in with at the authorization server: the subject of their tokens. */
const SUBJECT = { alice: 'alice-sub', bob: 'bob-sub' } as const;
type User = keyof typeof SUBJECT;

interface Fleet {
  url: string;
  /** The worker at the public URL: every callback lands here. */
  front: FleetWorkerProcess;
  /** Another worker, behind the same public URL. */
  back: FleetWorkerProcess;
  publicUrl: string;
  keys: Record<User, string>;
}

async function userFleet(): Promise<Fleet> {
  const url = await bed.database();
  const port = await deadPort();
  const publicUrl = `http://127.0.0.1:${port}`;
  const front = await bed.worker('w1', url, { port, args: ['--public-url', publicUrl] });
  const back = await bed.worker('w2', url, { args: ['--public-url', publicUrl] });
  const added = await front.request('/api/mcp/servers', { method: 'POST', json: { name: 'remote', ...oauth.serverConfig(), scope: 'per_user' } });
  expect(added.status, added.text).toBe(201);
  await until(async () => (await back.request('/api/mcp/servers/remote')).status === 200, 'remote on w2');
  const keys = {} as Record<User, string>;
  for (const name of ['alice', 'bob'] as const) {
    const reply = await front.request('/api/mcp/users', { method: 'POST', json: { name } });
    expect(reply.status, reply.text).toBe(201);
    keys[name] = reply.json.key;
  }
  return { url, front, back, publicUrl, keys };
}

/** A request as `user` (their key), with `cookie` when given. */
async function as(fleet: Fleet, on: FleetWorkerProcess, user: User, path: string, init: { method?: string; cookie?: string; json?: unknown } = {}) {
  const headers = new Headers({ authorization: `Bearer ${fleet.keys[user]}` });
  if (init.cookie !== undefined) headers.set('cookie', init.cookie);
  if (init.json !== undefined) headers.set('content-type', 'application/json');
  const response = await fetch(`${on.url}${path}`, {
    method: init.method ?? 'GET',
    headers,
    ...(init.json === undefined ? {} : { body: JSON.stringify(init.json) }),
  });
  const text = await response.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, text, json, headers: response.headers };
}

/** `user` begins their consent on `on`: the authorization URL and the binding cookie their browser now holds. */
async function begin(fleet: Fleet, on: FleetWorkerProcess, user: User, cookie?: string): Promise<{ url: string; cookie: string; setCookie: string }> {
  const begun = await as(fleet, on, user, '/api/mcp/servers/remote/auth', { method: 'POST', ...(cookie && { cookie }) });
  expect(begun.status, begun.text).toBe(200);
  const setCookie = begun.headers.get('set-cookie') ?? '';
  return { url: begun.json.authorization_url, cookie: setCookie.split(';')[0]!, setCookie };
}

/** The browser holding `cookie` (and, when given, signed in with `bearer`) comes back to the callback. */
const browser =
  (cookie: string | undefined, bearer?: string) =>
  (url: string): Promise<Response> =>
    fetch(url, {
      headers: { ...(cookie !== undefined && { cookie }), ...(bearer !== undefined && { authorization: `Bearer ${bearer}` }) },
      redirect: 'manual',
    });

/** Calls `remote__whoami` as `user`: the subject the MCP server saw, or the error text. */
async function whoami(fleet: Fleet, on: FleetWorkerProcess, user: User): Promise<{ error: boolean; text: string; sub?: string; token?: string }> {
  const reply = await as(fleet, on, user, '/api/mcp/tools/remote__whoami/call', { method: 'POST', json: { arguments: {} } });
  expect(reply.status, reply.text).toBe(200);
  const text: string = reply.json.content?.[0]?.text ?? '';
  if (reply.json.details.is_error) return { error: true, text };
  return { error: false, text, ...(JSON.parse(text) as { sub: string; token: string }) };
}

/** The stored grant of `user` (opened), or undefined when there is no row. */
async function storedGrant(fleet: Fleet, user: string): Promise<CredentialsRecord | undefined> {
  const client = new pg.Client({ connectionString: fleet.url });
  await client.connect();
  try {
    const key = grantKey('remote', user);
    const { rows } = await client.query('select record from credentials where server = $1', [key]);
    if (rows.length === 0) return undefined;
    return CredentialsRecord.parse(openCredentialsRecord(secretKeyFrom(bed.secretKey, 'test'), key, rows[0].record));
  } finally {
    await client.end();
  }
}

async function events(fleet: Fleet, type: string): Promise<Array<Record<string, unknown>>> {
  const reply = await fleet.front.request('/api/mcp/events');
  return (reply.json.events as Array<Record<string, unknown>>).filter((event) => event.type === type);
}

describe('per-user OAuth grants on a fleet', { timeout: 180_000 }, () => {
  it('each user connects their own account (begun on one worker, answered on another) and each call carries their own token', async () => {
    const fleet = await userFleet();
    const before = await whoami(fleet, fleet.front, 'alice');
    expect(before.error).toBe(true);
    expect(before.text).toContain('Connect');
    expect(before.text).toContain('POST /api/mcp/servers/remote/auth');

    // Begun on the back worker; the authorization server sends the browser to the public URL (the front one).
    const alice = await begin(fleet, fleet.back, 'alice');
    expect(alice.setCookie).toMatch(new RegExp(`^${CONSENT_COOKIE}=[^;]+; HttpOnly; Secure; SameSite=Lax; Path=/; Max-Age=\\d+$`));
    const request = new URL(alice.url);
    expect(request.searchParams.get('redirect_uri')).toBe(`${fleet.publicUrl}/oauth/callback`);
    expect(request.searchParams.get('code_challenge_method')).toBe('S256');
    expect(request.searchParams.get('resource')).toBe(oauth.mcp.url);
    expect(request.searchParams.get('state')?.length).toBeGreaterThanOrEqual(32);
    let callbackUrl = '';
    const answered = await consentAsUser(alice.url, SUBJECT.alice, (url) => {
      callbackUrl = url;
      return browser(alice.cookie)(url);
    });
    expect(answered.status, answered.text).toBe(200);
    expect(new URL(callbackUrl).searchParams.get('iss')).toBe(oauth.as.issuer);

    const onFront = await whoami(fleet, fleet.front, 'alice');
    const onBack = await whoami(fleet, fleet.back, 'alice');
    expect([onFront.sub, onBack.sub]).toEqual([SUBJECT.alice, SUBJECT.alice]);
    // bob has no grant: alice's is never his.
    const bobBefore = await whoami(fleet, fleet.front, 'bob');
    expect(bobBefore.error).toBe(true);
    expect(bobBefore.text).toContain('needs your own authorization');

    const bob = await begin(fleet, fleet.front, 'bob');
    expect((await consentAsUser(bob.url, SUBJECT.bob, browser(bob.cookie))).status).toBe(200);
    const bobs = await whoami(fleet, fleet.back, 'bob');
    expect(bobs.sub).toBe(SUBJECT.bob);
    expect(bobs.token).not.toBe(onBack.token);
    expect((await whoami(fleet, fleet.back, 'alice')).sub).toBe(SUBJECT.alice);

    // The audit trail names whose consent it was.
    const completed = await events(fleet, 'consent.completed');
    expect(completed.map((event) => [event.server, event.principal])).toEqual([
      ['remote', 'alice'],
      ['remote', 'bob'],
    ]);
    expect((await events(fleet, 'consent.begun')).map((event) => event.principal)).toEqual(['alice', 'bob']);
    // A user sees only their own consents.
    const bobSees = await as(fleet, fleet.front, 'bob', '/api/mcp/events');
    const consentEvents = (bobSees.json.events as Array<{ type: string; principal?: string }>).filter((event) => event.type.startsWith('consent.'));
    expect(consentEvents.every((event) => event.principal === 'bob')).toBe(true);

    // The same answer again: its state was taken.
    const replay = await browser(alice.cookie)(callbackUrl);
    expect(replay.status).toBe(400);
    expect(await replay.text()).toContain('does not match a pending authorization request');

    // A removed user's grants go with them; a removed server's go with it.
    expect((await fleet.front.request('/api/mcp/users/bob', { method: 'DELETE' })).status).toBe(204);
    expect(await storedGrant(fleet, 'bob')).toBeUndefined();
    expect((await storedGrant(fleet, 'alice'))?.tokens).not.toBeNull();
    expect((await fleet.front.request('/api/mcp/servers/remote', { method: 'DELETE' })).status).toBe(204);
    expect(await storedGrant(fleet, 'alice')).toBeUndefined();
  });

  it('a consent link sent to another user stores nothing on either account; nor does a callback under another signed-in user', async () => {
    const fleet = await userFleet();
    // alice (the attacker) begins a consent and sends the link to bob, who signs in at the authorization server in his own browser.
    const attack = await begin(fleet, fleet.front, 'alice');
    const bobsOwn = await begin(fleet, fleet.front, 'bob');
    const lured = await consentAsUser(attack.url, SUBJECT.bob, browser(bobsOwn.cookie, fleet.keys.bob));
    expect(lured.status).toBe(400);
    expect(lured.text).toContain('another user or in another browser');
    // bob's browser with no binding at all (and signed in to nothing) fares no better.
    const again = await begin(fleet, fleet.front, 'alice');
    expect((await consentAsUser(again.url, SUBJECT.bob, browser(undefined))).status).toBe(400);
    // alice's own browser cookie, but bob signed in there.
    const third = await begin(fleet, fleet.front, 'alice');
    expect((await consentAsUser(third.url, SUBJECT.alice, browser(third.cookie, fleet.keys.bob))).status).toBe(400);

    expect((await storedGrant(fleet, 'alice'))?.tokens ?? null).toBeNull();
    expect((await storedGrant(fleet, 'bob'))?.tokens ?? null).toBeNull();
    expect((await whoami(fleet, fleet.front, 'alice')).error).toBe(true);
    expect((await whoami(fleet, fleet.back, 'bob')).error).toBe(true);
    expect(await events(fleet, 'consent.completed')).toEqual([]);

    // bob's own consent, in his own browser, still works (his binding survived alice's attempts).
    expect((await consentAsUser(bobsOwn.url, SUBJECT.bob, browser(bobsOwn.cookie))).status).toBe(200);
    expect((await whoami(fleet, fleet.back, 'bob')).sub).toBe(SUBJECT.bob);
  });

  it('an expired state and a wrong iss are refused, and store nothing', async () => {
    const fleet = await userFleet();
    const expired = await begin(fleet, fleet.front, 'alice');
    const client = new pg.Client({ connectionString: fleet.url });
    await client.connect();
    try {
      // Its time is up, by the database's clock (the one every worker reads).
      await client.query(`update consents set record = jsonb_set(record, '{until}', to_jsonb(extract(epoch from now()) - 1))`);
    } finally {
      await client.end();
    }
    const late = await consentAsUser(expired.url, SUBJECT.alice, browser(expired.cookie));
    expect(late.status).toBe(400);
    expect(late.text).toContain('does not match a pending authorization request');

    const forged = await begin(fleet, fleet.front, 'alice');
    const wrongIss = await consentAsUser(forged.url, SUBJECT.alice, (url) => {
      const at = new URL(url);
      at.searchParams.set('iss', 'http://127.0.0.1:1/not-the-issuer');
      return browser(forged.cookie)(at.href);
    });
    expect(wrongIss.status).toBe(502);
    expect((await storedGrant(fleet, 'alice'))?.tokens ?? null).toBeNull();
    expect((await whoami(fleet, fleet.front, 'alice')).error).toBe(true);
  });

  it('one refresh per user and server across two workers, however many calls wait for it', async () => {
    const fleet = await userFleet();
    for (const user of ['alice', 'bob'] as const) {
      const begun = await begin(fleet, fleet.back, user);
      expect((await consentAsUser(begun.url, SUBJECT[user], browser(begun.cookie))).status).toBe(200);
    }
    await bed.stopAll();
    // Both users' access tokens look expired, as after a weekend off.
    const key = secretKeyFrom(bed.secretKey, 'test');
    const client = new pg.Client({ connectionString: fleet.url });
    await client.connect();
    try {
      for (const user of ['alice', 'bob']) {
        const row = grantKey('remote', user);
        const { rows } = await client.query('select record from credentials where server = $1', [row]);
        const record = CredentialsRecord.parse(openCredentialsRecord(key, row, rows[0].record));
        record.tokens!.expires_at = Date.now() - 1000;
        record.tokens!.obtained_at = Date.now() - 601_000;
        await client.query('update credentials set record = $1 where server = $2', [sealCredentialsRecord(key, row, record), row]);
      }
    } finally {
      await client.end();
    }
    const requestsBefore = oauth.as.tokenRequests.length;
    const front = await bed.worker('w1', fleet.url, { args: ['--public-url', fleet.publicUrl] });
    const back = await bed.worker('w2', fleet.url, { args: ['--public-url', fleet.publicUrl] });
    const restarted = { ...fleet, front, back };
    const calls = await Promise.all(
      [front, back].flatMap((on) => (['alice', 'bob'] as const).flatMap((user) => Array.from({ length: 8 }, () => whoami(restarted, on, user).then((answer) => [user, answer.sub])))),
    );
    expect(calls.filter(([user, sub]) => sub !== SUBJECT[user as User])).toEqual([]);
    expect(oauth.as.tokenRequests.slice(requestsBefore)).toEqual(['refresh_token', 'refresh_token']);
  });
});
