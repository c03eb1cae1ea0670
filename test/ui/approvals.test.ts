// Approvals on the management page, in a real browser (Debian chromium via
// playwright-core) against a real worker with a real stdio fixture server: a
// call of an `ask` tool appears live, is allowed from the page, and completes.
// A config secret the model passed as an argument is never shown nor received.
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOKEN } from '../http/helpers.js';
import { healthy, startFleet, untilState, type Fleet } from '../http/fleet.js';
import { ARTIFACTS, launchBrowser, openRecordedPage, pageContent, type Recorder } from './browser.js';

declare const window: any;

const SECRET = 'ui-approval-SECRET-0042';

let fleet: Fleet;
let browser: Browser;
let page: Page;
let recorder: Recorder;

beforeAll(async () => {
  [fleet, browser] = await Promise.all([
    startFleet((dir) => ({
      alpha: healthy(dir, 'alpha', { env: { API_KEY: SECRET }, tools: { approval: { echo: 'ask' } } }),
    })),
    launchBrowser(),
  ]);
  ({ page, recorder } = await openRecordedPage(browser));
  await untilState(fleet, 'alpha', 'ready');
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await fleet?.close();
});

const panel = () => page.locator('#approvals-panel');

describe('approvals on the management page', () => {
  it('a waiting call appears live, is allowed from the page, and completes (by: page)', async () => {
    await page.goto(fleet.served.url);
    await page.getByLabel('API token').fill(TOKEN);
    await page.getByLabel('API token').press('Enter');
    await page.locator('#servers-body tr[data-name="alpha"] .badge', { hasText: 'ready' }).waitFor();
    await page.evaluate(() => (window.__sameDocument = true));
    expect(await panel().isHidden()).toBe(true);

    // The model's call, through the API as any client's: it waits for a decision.
    const call = fleet.served.request('/api/mcp/tools/alpha__echo/call', {
      method: 'POST',
      body: { arguments: { text: SECRET } },
    });
    const item = panel().locator('li.approval');
    await item.waitFor();
    expect(await item.locator('.approval-tool').textContent()).toBe('alpha__echo');
    const shown = (await item.textContent()) ?? '';
    expect(shown).toContain('on alpha');
    expect(JSON.parse((await item.locator('pre').textContent()) ?? '')).toEqual({ text: '••••' });
    expect(await page.locator('#approval-count').textContent()).toBe('1');
    await page.screenshot({ path: join(ARTIFACTS, 'approvals-1280.png') });

    await item.getByRole('button', { name: 'Allow' }).click();
    const result = await call;
    expect(result.json.details.is_error).toBe(false);
    await panel().waitFor({ state: 'hidden' });
    const decided = fleet.host.events().filter((event) => event.type === 'approval.decided');
    expect(decided.at(-1)).toMatchObject({ tool: 'alpha__echo', decision: 'allow', by: 'page' });
  });

  it('a call denied from the page gets an is_error answer naming the page', async () => {
    const call = fleet.served.request('/api/mcp/tools/alpha__echo/call', { method: 'POST', body: { arguments: { text: 'no' } } });
    const item = panel().locator('li.approval');
    await item.waitFor();
    await item.getByRole('button', { name: 'Deny' }).click();
    const result = await call;
    expect(result.json.details.is_error).toBe(true);
    expect(result.json.content[0].text).toContain('denied (by page)');
    await panel().waitFor({ state: 'hidden' });
  });

  it('the journal view shows the requests and decisions', async () => {
    await page.getByRole('tab', { name: 'Journal' }).click();
    const body = page.locator('#journal-body');
    await body.locator('tr', { hasText: 'approval.decided' }).first().waitFor();
    expect(await body.locator('tr', { hasText: 'approval.requested' }).count()).toBe(2);
    await expect(body.locator('tr', { hasText: 'approval.decided' }).first().textContent()).resolves.toContain('deny by page (admin), asked by admin');
    await expect(body.locator('tr', { hasText: 'approval.decided' }).last().textContent()).resolves.toContain('allow by page (admin), asked by admin');
  });

  it('never received or showed the secret passed as an argument, and was never reloaded', async () => {
    expect(await page.evaluate(() => window.__sameDocument)).toBe(true);
    const bodies = await recorder.bodies();
    // The page did receive the approval, masked, through the stream.
    expect(bodies.some((b) => b.url === 'sse' && b.text.includes('approval.requested') && b.text.includes('••••'))).toBe(true);
    for (const b of bodies) expect(b.text, `${b.url} carried a secret`).not.toContain(SECRET);
    expect(await pageContent(page)).not.toContain(SECRET);
    expect(recorder.errors).toEqual([]);
  });

  it('a decision the worker did not take keeps saying why on its row; focus goes on to the call still waiting, then back to the page', async () => {
    const call = fleet.served.request('/api/mcp/tools/alpha__echo/call', { method: 'POST', body: { arguments: { text: 'kept' } } });
    const item = panel().locator('li.approval');
    await item.waitFor();
    const decisions = '**/api/mcp/approvals/*';
    await page.route(decisions, (route) =>
      route.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify({ error: { code: 'unavailable', message: 'the worker is busy' } }) }),
    );
    await item.getByRole('button', { name: 'Allow' }).click();
    await panel().locator('.approval-error', { hasText: 'the worker is busy' }).waitFor();
    expect(await page.evaluate(() => window.document.activeElement?.textContent)).toBe('Allow');
    await page.unroute(decisions);
    await panel().locator('li.approval').getByRole('button', { name: 'Deny' }).click();
    expect((await call).json.details.is_error).toBe(true);
    await panel().waitFor({ state: 'hidden' });
    expect(await page.evaluate(() => window.document.activeElement?.id)).toBe('main');
  });
});
