// The tools view of the management page in a real browser against a real
// worker with real stdio fixture servers: typing searches the fleet's tools
// (debounced), results show name, server, score, availability and
// description, choosing one opens it in its server's panel. At the end, no
// secret value may appear anywhere the page saw.
import { join } from 'node:path';
import type { Browser, Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCommand } from '../fixtures/index.js';
import { TOKEN } from '../http/helpers.js';
import { CANARIES, healthy, startFleet, untilState, type Fleet } from '../http/fleet.js';
import { ARTIFACTS, launchBrowser, openRecordedPage, pageContent, type Recorder } from './browser.js';

// The project compiles without the DOM lib; these callbacks run in the page.
declare const document: any;

const [API_KEY, DB_PASSWORD] = CANARIES as [string, string];
const SECRETS = [API_KEY, DB_PASSWORD, TOKEN];

let fleet: Fleet;
let browser: Browser;
let page: Page;
let recorder: Recorder;
/** Every search request the page sent, in order. */
const searches: string[] = [];

beforeAll(async () => {
  [fleet, browser] = await Promise.all([
    startFleet((dir) => ({ alpha: healthy(dir, 'alpha', { env: { API_KEY, DB_PASSWORD }, tools: { approval: { fail: 'deny' } } }) })),
    launchBrowser(),
  ]);
  ({ page, recorder } = await openRecordedPage(browser));
  page.on('request', (request: Request) => {
    const url = new URL(request.url());
    if (url.pathname === '/api/mcp/tools/search') searches.push(url.search);
  });
  await untilState(fleet, 'alpha', 'ready');
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await fleet?.close();
});

const results = () => page.locator('#tool-results li');
const result = (name: string) => page.locator(`#tool-results li[data-name="${name}"]`);
/** A tab of the view navigation (the server panel has a "Tools" tab of its own). */
const viewTab = (name: string) => page.locator('#view-nav').getByRole('tab', { name, exact: true });
const searchBox = () => page.getByRole('searchbox', { name: 'Search tools' });
const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`) });

describe('the tools view', { timeout: 60_000 }, () => {
  it('opens from the view tabs with an empty search box and a hint', async () => {
    await page.goto(`${fleet.served.url}?token=${encodeURIComponent(TOKEN)}`);
    await page.locator('#servers-body tr[data-name="alpha"] .badge[data-state="ready"]').waitFor();
    await viewTab('Tools').click();
    await searchBox().waitFor();
    await expect(page.locator('#tool-search-status').textContent()).resolves.toContain('Type what you want to do');
    expect(await results().count()).toBe(0);
    expect(searches).toEqual([]);
  });

  it('searches as the user types, once the typing pauses; best match first', async () => {
    await searchBox().pressSequentially('add two numbers', { delay: 20 });
    await result('alpha__add').waitFor();
    // Debounced: not one request per keystroke (15 of them).
    expect(searches.length).toBeGreaterThan(0);
    expect(searches.length).toBeLessThan(4);
    expect(new URLSearchParams(searches.at(-1)).get('q')).toBe('add two numbers');

    const first = results().first();
    await expect(first.getAttribute('data-name')).resolves.toBe('alpha__add');
    const text = await first.textContent();
    expect(text).toContain('alpha__add');
    expect(text).toContain('on alpha');
    expect(text).toContain('Adds two numbers');
    expect(text).toMatch(/score \d+\.\d\d/);
    await expect(first.getAttribute('data-available')).resolves.toBe('true');
    await first.getByText('available', { exact: true }).waitFor();
    await expect(page.locator('#tool-search-status').textContent()).resolves.toMatch(/^\d+ tools?, best match first\.$/);
    await shot('tools-search-1280');
  });

  it('says when nothing matches, and clears when the box is emptied', async () => {
    await searchBox().fill('zyxwvutsrq');
    await page.locator('#tool-search-status', { hasText: 'No tool matches “zyxwvutsrq”.' }).waitFor();
    expect(await results().count()).toBe(0);
    const before = searches.length;
    await searchBox().fill('');
    await page.locator('#tool-search-status', { hasText: 'Type what you want to do' }).waitFor();
    // A blank box asks the worker nothing.
    await page.waitForTimeout(400);
    expect(searches.length).toBe(before);
  });

  it('marks a tool its server\'s approval policy denies as denied', async () => {
    // alpha's config says `fail: deny`: the tool is indexed (it can be found) but never offered or called.
    await searchBox().fill('always fails');
    await result('alpha__fail').waitFor();
    const denied = result('alpha__fail');
    await expect(denied.getAttribute('data-available')).resolves.toBe('false');
    await expect(denied.getAttribute('data-denied')).resolves.toBe('true');
    const tag = denied.getByText('denied', { exact: true });
    await tag.waitFor();
    await expect(tag.getAttribute('title')).resolves.toContain('tools.approval denies it');
    expect(await denied.getByText('not available').count()).toBe(0);
    await shot('tools-unavailable-1280');
    // Chosen, it opens in its server's panel, marked there too, with no Try button: a call would be refused.
    await denied.getByRole('button', { name: 'alpha__fail' }).click();
    const item = page.locator('#detail li[data-tool="alpha__fail"]');
    await item.getByText('denied', { exact: true }).waitFor();
    expect(await item.getByRole('button', { name: 'Try alpha__fail' }).count()).toBe(0);
    const allowed = page.locator('#detail li[data-tool="alpha__echo"]');
    expect(await allowed.getByRole('button', { name: 'Try alpha__echo' }).count()).toBe(1);
    expect(await allowed.getByText('denied', { exact: true }).count()).toBe(0);
    await viewTab('Tools').click();
    await searchBox().fill('adds two numbers');
    await result('alpha__add').waitFor();
    expect(await result('alpha__add').getByText('not available').count()).toBe(0);
  });

  it('follows the fleet: a server added elsewhere shows up in the results without typing', async () => {
    await searchBox().fill('adds');
    await result('alpha__add').waitFor();
    expect(await result('beta__add').count()).toBe(0);
    const added = await fleet.request('/api/mcp/servers', {
      method: 'POST',
      body: { name: 'beta', type: 'local', command: fixtureCommand('healthy'), timeout_seconds: 15 },
    });
    expect(added.status).toBe(201);
    await result('beta__add').waitFor();
    await expect(result('beta__add').textContent()).resolves.toContain('on beta');
  });

  it('choosing a result opens the tool in its server\'s panel, schema open, focus on it', async () => {
    await searchBox().fill('echo');
    await result('alpha__echo').waitFor();
    await result('alpha__echo').getByRole('button', { name: 'alpha__echo' }).click();
    await page.locator('#servers-view').waitFor();
    expect(await page.locator('#tools-view').isVisible()).toBe(false);
    await expect(viewTab('Servers').getAttribute('aria-selected')).resolves.toBe('true');
    await page.locator('#detail h2', { hasText: 'alpha' }).waitFor();
    await expect(page.locator('#detail').getByRole('tab', { name: /^Tools/ }).getAttribute('aria-selected')).resolves.toBe('true');
    const item = page.locator('#detail li[data-tool="alpha__echo"]');
    await expect(item.locator('details.schema').getAttribute('open')).resolves.toBe('');
    await expect(page.evaluate(() => document.activeElement?.getAttribute('data-tool'))).resolves.toBe('alpha__echo');
    expect(page.url()).toContain('#server=alpha');
    await shot('tools-opened-1280');

    // Back on the tools view, the search is as it was left.
    await viewTab('Tools').click();
    await expect(searchBox().inputValue()).resolves.toBe('echo');
    await result('alpha__echo').waitFor();
  });

  it('reads well at phone width', async () => {
    await page.setViewportSize({ width: 375, height: 800 });
    await searchBox().fill('text numbers fails');
    await result('alpha__fail').waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await page.screenshot({ path: join(ARTIFACTS, 'tools-search-375.png'), fullPage: true });
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it('never received or showed a secret value', async () => {
    const bodies = await recorder.bodies();
    expect(bodies.some((b) => b.url.includes('/api/mcp/tools/search'))).toBe(true);
    // The page did receive the masked forms, so the check looks at real data.
    expect(bodies.some((b) => b.text.includes('••••0001'))).toBe(true);
    const content = await pageContent(page);
    for (const secret of SECRETS) {
      for (const body of bodies) expect(body.text, `${body.url} carried a secret`).not.toContain(secret);
      expect(content).not.toContain(secret);
    }
    expect(recorder.errors).toEqual([]);
  });
});
