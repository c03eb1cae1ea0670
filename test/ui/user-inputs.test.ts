// A per_user server's inputs on the management page, in a real browser
// (Debian chromium via playwright-core) against a real worker and the real
// `whoami` fixture: a user signed in with their key sees each input's
// description and whether it is set, sets their own token in a password
// field, the panel says set and no longer holds it, and a call through the
// playground answers with that user's own token.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFleet, type Fleet } from '../http/fleet.js';
import { fixtureCommand, whoamiPerUser } from '../fixtures/index.js';
import { launchBrowser, openRecordedPage, pageContent, type Recorder } from './browser.js';

const TOKEN = 'alice-page-token-SECRET-5151';
const ADMIN_TOKEN = 'admin-token-SECRET-5252';

let fleet: Fleet;
let browser: Browser;
let page: Page;
let recorder: Recorder;
let key: string;

beforeAll(async () => {
  [fleet, browser] = await Promise.all([
    startFleet(() => ({
      mine: {
        type: 'local',
        command: fixtureCommand('whoami'),
        env: { USER_TOKEN: '${user.TOKEN}' },
        scope: 'per_user',
        user_inputs: { TOKEN: { description: 'your whoami token' }, TEAM: { description: 'your team', secret: false } },
        timeout_seconds: 15,
      },
      // No session has listed its tools: the page lists them through the user's own.
      fresh: whoamiPerUser({ user_inputs: { TOKEN: { description: 'your fresh token' } } }),
    })),
    launchBrowser(),
  ]);
  ({ page, recorder } = await openRecordedPage(browser));
  // The admin's own session lists the server's tools, so the page has one to try.
  await fleet.host.setInputs('mine', { TOKEN: ADMIN_TOKEN });
  const admins = await fleet.host.callTool('mine__whoami', {});
  expect(JSON.stringify(admins.content)).toContain(ADMIN_TOKEN);
  key = (await fleet.request('/api/mcp/users', { method: 'POST', body: { name: 'alice' } })).json.key;
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await fleet?.close();
});

const panel = () => page.locator('#detail section.user-inputs');
const input = (name: string) => panel().locator(`[data-input="${name}"]`);

describe('a per_user server on the management page', () => {
  it('shows the signed-in user\'s inputs, set or not, and takes their own value in a password field', async () => {
    await page.goto(fleet.served.url);
    const refused: string[] = [];
    page.on('response', (response) => {
      if (response.status() >= 400) refused.push(`${response.status()} ${response.url()}`);
    });
    await page.getByLabel('API token or user key').fill(key);
    await page.getByLabel('API token or user key').press('Enter');
    await page.locator('#who', { hasText: 'Signed in as alice' }).waitFor();
    const row = page.locator('#servers-body tr[data-name="mine"]');
    // It waits for each person's first call by design: the row says so, not a pending that never ends.
    await expect(row.locator('.badge').textContent()).resolves.toBe('per user');
    await row.getByRole('button', { name: 'mine' }).click();
    await input('TOKEN').locator('[data-set="false"]').waitFor();
    await expect(page.locator('#detail .badge').first().textContent()).resolves.toBe('per user');
    expect(await panel().textContent()).not.toContain('null');

    await expect(input('TOKEN').textContent()).resolves.toContain('your whoami token');
    await expect(input('TEAM').textContent()).resolves.toContain('your team');
    await expect(input('TOKEN').locator('input').getAttribute('type')).resolves.toBe('password');
    await expect(input('TEAM').locator('input').getAttribute('type')).resolves.toBe('text');

    await page.getByLabel('TOKEN your whoami token').fill(TOKEN);
    await panel().getByRole('button', { name: 'Save' }).click();
    await input('TOKEN').locator('[data-set="true"]', { hasText: 'set' }).waitFor();
    await expect(input('TEAM').locator('[data-set]').getAttribute('data-set')).resolves.toBe('false');
    // The admin's value is the admin's: alice's is set, and neither is on the page nor in what it received.
    expect(await input('TOKEN').locator('input').inputValue()).toBe('');
    const content = await pageContent(page);
    expect(content).not.toContain(TOKEN);
    expect(content).not.toContain(ADMIN_TOKEN);
    for (const body of await recorder.bodies()) {
      expect(body.text, body.url).not.toContain(TOKEN);
      expect(body.text, body.url).not.toContain(ADMIN_TOKEN);
    }
    expect((await fleet.host.inputs('mine', { principal: { id: 'alice' } })).inputs.TOKEN?.set).toBe(true);
    // A user's page asks nothing only the admin may read (the fleet view was one).
    expect(refused).toEqual([]);
  });

  it('keeps the field being typed in focused through a live update', async () => {
    const team = page.getByLabel('TEAM your team');
    await team.click();
    await page.keyboard.type('first-');
    // A change the page shows live: a new server's row.
    expect((await fleet.request('/api/mcp/servers', { method: 'POST', body: { name: 'later', type: 'local', command: ['node', '-e', '0'], enabled: false } })).status).toBe(201);
    await page.locator('#servers-body tr[data-name="later"]').waitFor();
    await page.keyboard.type('second');
    expect(await team.inputValue()).toBe('first-second');
    expect(await team.evaluate((field: any) => field.matches(':focus'))).toBe(true);
    await team.fill('');
  });

  it('a call through the playground answers with the user\'s own value', async () => {
    await page.locator('#detail').getByRole('button', { name: 'Try mine__whoami', exact: true }).click();
    const drawer = page.locator('dialog#playground');
    await drawer.locator('h2', { hasText: 'mine__whoami' }).waitFor();
    await drawer.getByRole('button', { name: 'Run' }).click();
    await drawer.locator('.pg-result', { hasText: TOKEN }).waitFor();
    expect(await drawer.locator('.pg-result').textContent()).not.toContain(ADMIN_TOKEN);
  });

  it("lists a per_user server's tools through the user's own session, with no call made before, and calls one", async () => {
    await page.locator('dialog#playground').getByRole('button', { name: 'Close the playground' }).click();
    await page.locator('#servers-body tr[data-name="fresh"]').getByRole('button', { name: 'fresh' }).click();
    await page.locator('#detail-title', { hasText: 'fresh' }).waitFor();
    await page.getByLabel('TOKEN your fresh token').fill(TOKEN);
    await panel().getByRole('button', { name: 'Save' }).click();
    await input('TOKEN').locator('[data-set="true"]').waitFor();
    await page.locator('#detail').getByRole('tab', { name: /Tools/ }).click();
    await page.locator('#detail').getByRole('button', { name: 'List my tools' }).click();
    await page.locator('#detail').getByRole('button', { name: 'Try fresh__whoami', exact: true }).click();
    const drawer = page.locator('dialog#playground');
    await drawer.locator('h2', { hasText: 'fresh__whoami' }).waitFor();
    await drawer.getByRole('button', { name: 'Run' }).click();
    await drawer.locator('.pg-result', { hasText: TOKEN }).waitFor();
    // Mine only: nobody else's session was opened for it.
    expect((await fleet.request('/api/mcp/sessions')).json.sessions.filter((s: { server: string }) => s.server === 'fresh')).toEqual([
      expect.objectContaining({ principal: 'alice' }),
    ]);
  });

  it('clears the value: the panel says not set', async () => {
    await page.locator('dialog#playground').getByRole('button', { name: 'Close the playground' }).click();
    await page.locator('#servers-body tr[data-name="mine"]').getByRole('button', { name: 'mine' }).click();
    await page.locator('#detail-title', { hasText: 'mine' }).waitFor();
    await panel().getByRole('button', { name: 'Clear TOKEN' }).click();
    await input('TOKEN').locator('[data-set="false"]').waitFor();
    expect((await fleet.host.inputs('mine', { principal: { id: 'alice' } })).inputs.TOKEN?.set).toBe(false);
    expect(recorder.errors).toEqual([]);
  });
});
