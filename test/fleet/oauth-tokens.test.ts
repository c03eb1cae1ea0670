// Tokens across a fleet, with three real workers, a real PostgreSQL and a
// real authorization server (oidc-provider: rotating refresh tokens, a reused
// one revokes the whole grant): tokens stored by any worker move a server
// waiting for them on every worker, by the notification or, when that was
// lost, by the re-read once the notification connection is back; and an
// access token the resource server refuses is refreshed once, fleet-wide.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { consentAsUser } from '../oauth/servers.js';
import { oauthServersForFile } from './oauth-servers.js';
import { deadPort } from '../security/processes.js';
import { fleetTestBed, untilStateOn, type FleetWorkerProcess } from './workers.js';

const bed = fleetTestBed();
const oauth = oauthServersForFile();
const oauthServer = () => oauth.serverConfig();
const LISTENERS = "select pid from pg_stat_activity where application_name = 'mcp-fleet listen mcp_fleet_tokens'";

/** Three workers behind one public URL (a balancer nobody runs: the test sends each callback to the worker it picks). */
async function fleet(url: string): Promise<FleetWorkerProcess[]> {
  const publicUrl = `http://127.0.0.1:${await deadPort()}`;
  return Promise.all(['w1', 'w2', 'w3'].map((id) => bed.worker(id, url, { args: ['--public-url', publicUrl] })));
}

async function addOAuthServer(all: FleetWorkerProcess[], name: string): Promise<void> {
  const added = await all[0]!.request('/api/mcp/servers', { method: 'POST', json: { name, ...oauthServer() } });
  expect(added.status, added.text).toBe(201);
  for (const on of all) await untilStateOn(on, name, 'needs_reauth');
}

/** Begins the consent of `name` on `begin`; resolves with the authorization URL. */
async function beginOn(begin: FleetWorkerProcess, name: string): Promise<string> {
  const begun = await begin.request(`/api/mcp/servers/${name}/auth`, { method: 'POST' });
  expect(begun.status, begun.text).toBe(200);
  return begun.json.authorization_url;
}

/** Consents as the user; the browser's return to the public URL lands on `finish`. */
async function finishOn(finish: FleetWorkerProcess, authorizationUrl: string): Promise<void> {
  const callback = await consentAsUser(authorizationUrl, 'alice', (at) => {
    const url = new URL(at);
    return fetch(`${finish.url}${url.pathname}${url.search}`);
  });
  expect(callback.status, callback.text).toBe(200);
}

const call = (on: FleetWorkerProcess, text: string) =>
  on.request('/api/mcp/tools/remote__echo/call', { method: 'POST', json: { arguments: { text } } });

describe('tokens across several workers', { timeout: 240_000 }, () => {
  // How soon (≤ 1 s, p99) is measured by bench/suites/fleet.js; here: every worker gets there.
  it('a consent finished on any worker makes every worker ready (three consents)', async () => {
    const all = await fleet(await bed.database());
    for (const [index, name] of ['r1', 'r2', 'r3'].entries()) {
      await addOAuthServer(all, name);
      // Begun on the next worker (there it is authenticating), waiting on the third (needs_reauth), finished on this one.
      const authorizationUrl = await beginOn(all[(index + 1) % 3]!, name);
      await finishOn(all[index]!, authorizationUrl);
      await Promise.all(all.map((on) => untilStateOn(on, name, 'ready', 10_000)));
    }
    for (const on of all) expect(on.output()).not.toContain('the token was refused');
  });

  it('with the notification lost (its connection cut at that moment), the re-read on reconnect moves every worker on', async () => {
    const url = await bed.database();
    const all = await fleet(url);
    await addOAuthServer(all, 'lost');
    const authorizationUrl = await beginOn(all[1]!, 'lost');
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      // The lock every credentials write takes: the tokens are committed (and notified) only once it is let go.
      await admin.query("select pg_advisory_lock(hashtext('mcp-fleet:credentials'), hashtext('lost'))");
      const finished = finishOn(all[0]!, authorizationUrl);
      // Cut every tokens LISTEN connection three times, so the next reconnect is seconds away when the commit notifies.
      for (const pause of [300, 600, 1200]) {
        await expect.poll(async () => (await admin.query(LISTENERS)).rowCount, { timeout: 10_000, interval: 10 }).toBe(3);
        await admin.query(`select pg_terminate_backend(pid) from (${LISTENERS}) listeners`);
        await new Promise((resolve) => setTimeout(resolve, pause));
      }
      await admin.query(`select pg_terminate_backend(pid) from (${LISTENERS}) listeners`);
      await expect.poll(async () => (await admin.query(LISTENERS)).rowCount, { timeout: 1000, interval: 10 }).toBe(0);
      await admin.query("select pg_advisory_unlock(hashtext('mcp-fleet:credentials'), hashtext('lost'))");
      await finished;
      // Nobody listened when the tokens were notified.
      expect((await admin.query(LISTENERS)).rowCount).toBe(0);
    } finally {
      await admin.end();
    }
    for (const on of all) await untilStateOn(on, 'lost', 'ready', 15_000);
  });

  it('an access token refused by the resource server, 3 workers x 20 concurrent calls: one refresh grant, every call succeeds', async () => {
    const all = await fleet(await bed.database());
    await addOAuthServer(all, 'remote');
    await finishOn(all[1]!, await beginOn(all[0]!, 'remote'));
    for (const on of all) await untilStateOn(on, 'remote', 'ready');
    for (const on of all) expect((await call(on, on.id)).json?.details?.is_error).toBe(false);

    oauth.mcp.refuseTokensSoFar();
    const requestsBefore = oauth.as.tokenRequests.length;
    const calls = await Promise.all(all.flatMap((on) => Array.from({ length: 20 }, (_, index) => call(on, `${on.id}-${index}`))));
    expect(
      calls.map((answer) => [answer.status, answer.json?.details?.is_error]),
      calls.map((answer) => answer.text).join('\n'),
    ).toEqual(Array(60).fill([200, false]));
    expect(oauth.as.tokenRequests.slice(requestsBefore)).toEqual(['refresh_token']);
    for (const on of all) expect((await on.request('/api/mcp/servers/remote')).json.state).toBe('ready');
  });
});
