// Per-user OAuth in a real browser (Debian chromium via playwright-core): a
// worker on files with a loopback public URL, a real authorization server
// (oidc-provider) in front of a real MCP server whose `whoami` answers the
// subject of the token a call carried. Two browser contexts are two people's
// browsers. alice's link, opened in bob's browser and signed in there as bob,
// stores nothing on either account; alice's own Connect in her own browser
// (the `__Host-` binding cookie set by the page over loopback http) stores
// her grant, which only her calls carry.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMcpHost, type McpHost } from '../../src/host.js';
import { createManagementApp } from '../../src/http/app.js';
import { listen, type Listening } from '../../src/http/bind.js';
import { CONSENT_COOKIE } from '../../src/auth/consent-binding.js';
import { grantKey } from '../../src/auth/credentials-store.js';
import { TOKEN } from '../http/helpers.js';
import { BIN } from '../support/cli.js';
import { cleanEnv } from '../support/env.js';
import { deadPort } from '../security/processes.js';
import { startAuthorizationServer, startMcpResourceServer, type AuthorizationServer, type McpResourceServer } from '../oauth/servers.js';
import { launchBrowser } from './browser.js';

let as: AuthorizationServer;
let mcp: McpResourceServer;
let host: McpHost;
let served: Listening;
let browser: Browser;
let dir: string;
let url: string;
const keys: Record<string, string> = {};

beforeAll(async () => {
  as = await startAuthorizationServer({ accessTokenTtl: 600 });
  mcp = await startMcpResourceServer(as.issuer);
  dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-user-oauth-'));
  const config = { type: 'remote', url: mcp.url, transport: 'streamable_http', timeout_seconds: 15, scope: 'per_user', auth: { kind: 'oauth' } };
  writeFileSync(join(dir, 'mcp_servers.json'), `${JSON.stringify({ servers: { remote: config } })}\n`);
  const port = await deadPort();
  url = `http://127.0.0.1:${port}`;
  host = createMcpHost({ stateDir: dir, persistJournal: false, publicUrl: url, logger: { info: () => {}, warn: () => {} } });
  served = await listen(createManagementApp(host, { token: TOKEN, publicUrl: url }), { port });
  await host.start();
  for (const name of ['alice', 'bob']) {
    const added = await fetch(`${url}/api/mcp/users`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name }),
    });
    keys[name] = ((await added.json()) as { key: string }).key;
  }
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await served?.close();
  await host?.shutdown();
  await mcp?.close();
  await as?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A browser of its own, signed in to the page as `user`, with the server selected. */
async function signedIn(user: string): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  await page.goto(url);
  await page.getByLabel('API token or user key').fill(keys[user]!);
  await page.getByLabel('API token or user key').press('Enter');
  await page.locator('#who', { hasText: `Signed in as ${user}` }).waitFor();
  await page.locator('#servers-body tr[data-name="remote"]').getByRole('button', { name: 'remote' }).click();
  return { context, page };
}

/** Presses Connect; the tab the authorization server opened in, and the authorization URL the worker answered. */
async function connect(context: BrowserContext, page: Page): Promise<{ tab: Page; link: string }> {
  const opened = context.waitForEvent('page');
  const answered = page.waitForResponse((response) => response.url().endsWith('/api/mcp/servers/remote/auth'));
  await page.getByRole('button', { name: 'Connect / Reconnect' }).click();
  const link = ((await (await answered).json()) as { authorization_url: string }).authorization_url;
  const tab = await opened;
  tab.setDefaultTimeout(15_000);
  return { tab, link };
}

/** Signs in at oidc-provider's pages as `subject` and consents; resolves with the callback page's text. */
async function authorize(tab: Page, subject: string): Promise<string> {
  await tab.locator('input[name="login"]').fill(subject);
  await tab.locator('input[name="password"]').fill('any');
  await tab.locator('button[type="submit"]').click();
  for (let step = 0; step < 3 && !tab.url().includes('/oauth/callback'); step++) {
    await Promise.race([tab.waitForURL(/\/oauth\/callback/), tab.locator('button[type="submit"]').waitFor()]);
    if (!tab.url().includes('/oauth/callback')) await tab.locator('button[type="submit"]').click();
  }
  await tab.waitForURL(/\/oauth\/callback/);
  return (await tab.locator('body').textContent()) ?? '';
}

async function whoami(user: string): Promise<{ error: boolean; text: string }> {
  const result = await host.callTool('remote__whoami', {}, { principal: { id: user } });
  const text = (result.content[0] as { text: string }).text;
  return { error: result.details.is_error, text };
}

describe('per-user OAuth on the page', { timeout: 90_000 }, () => {
  it('`mcp-fleet auth` refuses a per_user server: its consent is begun in the browser that completes it', async () => {
    const run = await new Promise<{ code: number; stderr: string }>((done) =>
      execFile(process.execPath, [BIN, 'auth', 'remote', '--url', url], { env: cleanEnv({ MCP_FLEET_API_TOKEN: TOKEN }), timeout: 30_000 }, (err, _out, stderr) =>
        done({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stderr }),
      ),
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('server "remote" is per_user: each user connects their own account on the page');
  });

  it("alice's consent link completed in bob's browser stores nothing; her own Connect stores her grant alone", async () => {
    const alice = await signedIn('alice');
    const bob = await signedIn('bob');

    // alice begins, and sends the authorization URL to bob instead of finishing it.
    const { tab: lure, link } = await connect(alice.context, alice.page);
    await lure.close();
    const cookie = (await alice.context.cookies(url)).find((found) => found.name === CONSENT_COOKIE);
    expect(cookie).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Lax', path: '/' });

    const victim = await bob.context.newPage();
    await victim.goto(link);
    expect(await authorize(victim, 'bob-sub')).toContain('begun by another user or in another browser');
    for (const user of ['alice', 'bob']) {
      const answer = await whoami(user);
      expect(answer.error, answer.text).toBe(true);
      expect(answer.text).toContain('needs your own authorization');
    }

    // alice, in her own browser.
    const { tab } = await connect(alice.context, alice.page);
    expect(await authorize(tab, 'alice-sub')).toContain('Authorized remote');
    const hers = await whoami('alice');
    expect(hers.error, hers.text).toBe(false);
    expect(JSON.parse(hers.text).sub).toBe('alice-sub');
    expect((await whoami('bob')).error).toBe(true);

    // Her grant withdrawn at the authorization server: her next call says the authorization is hers to give again.
    const file = join(dir, 'oauth', `${grantKey('remote', 'alice')}.json`);
    const stored = JSON.parse(readFileSync(file, 'utf8')) as { tokens: { refresh_token: string } };
    await as.revokeGrantOf(stored.tokens.refresh_token);
    mcp.refuseTokensSoFar();
    const lost = await whoami('alice');
    expect(lost.error, lost.text).toBe(true);
    expect(lost.text).toContain('server "remote" needs your own authorization');
    expect(lost.text).not.toContain('.u-');

    // A removed user's grant is gone from the file store too.
    const removed = await fetch(`${url}/api/mcp/users/alice`, { method: 'DELETE', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(removed.status).toBe(204);
    expect(existsSync(file)).toBe(false);
    await alice.context.close();
    await bob.context.close();
  });
});
