// The page's "Sign in with your identity provider" in a real browser (Debian
// chromium via playwright-core): the worker sends it to a real OpenID Connect
// provider (oidc-provider), the user signs in and consents on its pages, and
// comes back to the page signed in as themselves, seeing the servers of their
// groups.
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOidcWorker, type OidcWorker } from '../users/oidc-worker.js';
import { launchBrowser, openRecordedPage, type Recorder } from './browser.js';

let worker: OidcWorker;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let recorder: Recorder;

beforeAll(async () => {
  [worker, browser] = await Promise.all([startOidcWorker(), launchBrowser()]);
  ({ context, page, recorder } = await openRecordedPage(browser));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await worker?.close();
});

describe('OIDC sign-in on the management page', () => {
  it('signs alice in through the provider and back: her name in the bar, the servers of her groups', async () => {
    const url = `http://127.0.0.1:${worker.app.port}/`;
    await page.goto(url);
    await page.getByRole('link', { name: 'Sign in with your identity provider' }).click();
    // oidc-provider's development pages: a login form, then a consent.
    await page.waitForURL((at) => at.origin === worker.idp.issuer);
    await page.locator('input[name="login"]').fill('alice');
    await page.locator('input[name="password"]').fill('any');
    await page.locator('button[type="submit"]').click();
    await page.locator('button[type="submit"]', { hasText: /continue/i }).click();

    await page.locator('#who', { hasText: 'Signed in as alice' }).waitFor();
    await page.locator('#servers-body tr[data-name="eng"] .badge', { hasText: 'ready' }).waitFor();
    const rows = await page.locator('#servers-body tr').evaluateAll((trs) => trs.map((tr) => (tr as { dataset: { name: string } }).dataset.name));
    expect(rows).toEqual(['eng']);
    expect(await page.locator('#add-server').isHidden()).toBe(true);
    expect(new URL(page.url()).pathname).toBe('/');
    expect(worker.idp.logins).toContain('alice');

    const session = (await context.cookies(url)).find((cookie) => cookie.name === `mcp_fleet_session_${worker.app.port}`);
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax', secure: false });
    for (const body of await recorder.bodies()) expect(body.text, body.url).not.toContain('"sales"');
  });

  it('signs out back to the sign-in, which offers the provider again', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('link', { name: 'Sign in with your identity provider' }).waitFor();
  });
});
