// A user signs in to the management page with their own key, in a real
// browser (Debian chromium via playwright-core) against a real worker: they
// see their name, the servers the access policy lets them see and no other,
// no way to add servers, and nothing the page received names the hidden
// server or holds their key.
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { healthy, startFleet, untilState, type Fleet } from '../http/fleet.js';
import { launchBrowser, openRecordedPage, pageContent, type Recorder } from './browser.js';

let fleet: Fleet;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let recorder: Recorder;
let key: string;

beforeAll(async () => {
  [fleet, browser] = await Promise.all([
    startFleet((dir) => ({
      shared: healthy(dir, 'shared'),
      team: healthy(dir, 'team', { access: { groups: ['eng'] } }),
      hiddenbox: healthy(dir, 'hiddenbox', { access: { users: ['someone-else'] } }),
      // Stored secrets whose masks a user is not shown.
      keyed: { type: 'remote', url: 'http://127.0.0.1:9/mcp', auth: { kind: 'bearer', token: 'user-page-token-SECRET-1' }, enabled: false },
      machine: {
        type: 'remote',
        url: 'http://127.0.0.1:9/mcp',
        auth: { kind: 'client_credentials', client_id: 'fleet-client', client_secret: 'user-page-secret-SECRET-2' },
        enabled: false,
      },
    })),
    launchBrowser(),
  ]);
  ({ context, page, recorder } = await openRecordedPage(browser));
  await Promise.all(['shared', 'team', 'hiddenbox'].map((name) => untilState(fleet, name, 'ready')));
  key = (await fleet.request('/api/mcp/users', { method: 'POST', body: { name: 'alice', groups: ['eng'] } })).json.key;
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await fleet?.close();
});

describe('a user on the management page', () => {
  it('signs in with their key and sees only their servers, without management', async () => {
    await page.goto(fleet.served.url);
    await page.getByLabel('API token or user key').fill(key);
    await page.getByLabel('API token or user key').press('Enter');
    await page.locator('#servers-body tr[data-name="team"] .badge', { hasText: 'ready' }).waitFor();
    await page.locator('#who', { hasText: 'Signed in as alice' }).waitFor();

    const rows = await page.locator('#servers-body tr').evaluateAll((trs) => trs.map((tr) => (tr as { dataset: { name: string } }).dataset.name));
    expect(rows.sort()).toEqual(['keyed', 'machine', 'shared', 'team']);
    expect(await page.locator('#add-server').isHidden()).toBe(true);
    expect(await page.locator('#tab-registry').isHidden()).toBe(true);
    // A server's panel offers them no management action (edit, disable, restart, delete: the admin's alone).
    await page.locator('#servers-body tr[data-name="team"]').getByRole('button', { name: 'team' }).click();
    await page.locator('#detail-title', { hasText: 'team' }).waitFor();
    expect(await page.getByRole('group', { name: 'Actions for team' }).isHidden()).toBe(true);
    expect(await page.getByRole('button', { name: 'Restart' }).count()).toBe(0);
    // Of the config, the program's name and no row of what runs it on the worker.
    await page.getByRole('tab', { name: 'Configuration' }).click();
    const config = page.locator('#subpanel dl.config');
    await config.waitFor();
    expect(await config.locator('dt').allTextContents()).toEqual(expect.arrayContaining(['Type', 'Program']));
    expect(await config.locator('dt').allTextContents()).not.toEqual(expect.arrayContaining(['Working directory']));
    expect(await config.locator('dt').allTextContents()).not.toEqual(expect.arrayContaining(['Environment']));

    const cookies = await context.cookies(fleet.served.url);
    expect(cookies).toHaveLength(1);
    expect(cookies[0]!.value).not.toContain(key);
    expect(await pageContent(page)).not.toContain(key);
    for (const body of await recorder.bodies()) {
      expect(body.text, body.url).not.toContain('hiddenbox');
      expect(body.text, body.url).not.toContain(key);
      // Nothing of where the servers run: the state dir (their pid files' env) and the fixture's path.
      expect(body.text, body.url).not.toContain(fleet.dir);
      expect(body.text, body.url).not.toContain('healthy.mjs');
    }
    expect(recorder.errors).toEqual([]);
  });

  it("shows that a server's credentials are stored, and their kind, never a mask", async () => {
    for (const [name, text] of [
      ['keyed', 'bearer token stored'],
      ['machine', 'Client credentials (configured) · client fleet-client · client secret stored'],
    ] as const) {
      await page.locator(`#servers-body tr[data-name="${name}"]`).getByRole('button', { name }).click();
      await page.locator('#detail-title', { hasText: name }).waitFor();
      await page.getByRole('tab', { name: 'Configuration' }).click();
      const config = page.locator('#subpanel dl.config');
      await config.getByText(text, { exact: true }).waitFor();
      expect(await config.textContent()).not.toMatch(/null|••••/);
    }
  });

  it('signs out', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API token or user key').waitFor();
    expect((await fleet.request('/api/mcp/users')).json.users).toEqual([{ name: 'alice', groups: ['eng'] }]);
  });
});
