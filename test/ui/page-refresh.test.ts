// The page reads the catalog again after an event that may change it, and
// only then: a server that logs, or a tool called again and again, shows in
// the journal without the whole catalog being fetched once per event.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { fixtureCommand } from '../fixtures/index.js';
import { TOKEN } from '../http/helpers.js';
import { startFleet, untilState, type Fleet } from '../http/fleet.js';
import { launchBrowser, openRecordedPage } from './browser.js';

let fleet: Fleet;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  [fleet, browser] = await Promise.all([
    startFleet(() => ({ chatty: { type: 'local', command: fixtureCommand('changing-catalog'), timeout_seconds: 15 } })),
    launchBrowser(),
  ]);
  ({ page } = await openRecordedPage(browser));
  await untilState(fleet, 'chatty', 'ready');
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await fleet?.close();
});

it('shows log lines and calls in the journal without reading the catalog again for each', async () => {
  await page.goto(fleet.served.url);
  await page.getByLabel('API token').fill(TOKEN);
  await page.getByLabel('API token').press('Enter');
  await page.locator('#servers-body tr[data-name="chatty"] .badge[data-state="ready"]').waitFor();
  await page.getByRole('tab', { name: 'Journal' }).click();
  const catalogReads: string[] = [];
  page.on('request', (request) => {
    if (new URL(request.url()).pathname === '/api/mcp/catalog') catalogReads.push(request.url());
  });
  // Apart in time, so that no debounce folds them into one read.
  for (const word of ['first', 'second', 'third']) {
    const result = await fleet.host.callTool('chatty__log', { level: 'info', data: `note ${word}` });
    expect(result.details.is_error).toBe(false);
    await page.locator('#journal-body tr', { hasText: `note ${word}` }).waitFor();
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  expect(catalogReads).toEqual([]);

  // An event that does change the catalog still has it read.
  await fleet.host.callTool('chatty__add_tool', { name: 'fresh_tool' });
  await page.getByRole('tab', { name: 'Servers' }).click();
  await page.locator('#servers-body tr[data-name="chatty"]').click();
  await page.getByText('fresh_tool').first().waitFor();
  // The tool shows from the event itself; the catalog read it schedules follows (debounced).
  await expect.poll(() => catalogReads.length).toBeGreaterThan(0);
});
