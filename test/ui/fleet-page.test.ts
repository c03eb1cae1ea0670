// The management page of one worker in a fleet of two on a real PostgreSQL,
// in a real browser: the Fleet tab appears, lists both workers and each
// server's state on each, and the other worker's events fill the journal
// without moving this worker's server states.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSecretKeyText } from '../../src/config/secrets/secret-key.js';
import { fixtureCommand } from '../fixtures/index.js';
import { TOKEN } from '../http/helpers.js';
import { newDatabase, startPostgres, type PgCluster } from '../support/postgres.js';
import { startFleetWorker, type FleetWorkerProcess } from '../fleet/workers.js';
import { launchBrowser, openRecordedPage } from './browser.js';

let cluster: PgCluster;
let browser: Browser;
let page: Page;
const workers: FleetWorkerProcess[] = [];

beforeAll(async () => {
  [cluster, browser] = await Promise.all([startPostgres(), launchBrowser()]);
  const url = await newDatabase(cluster);
  const secretKey = generateSecretKeyText();
  for (const id of ['alpha-worker', 'beta-worker']) workers.push(await startFleetWorker({ id, databaseUrl: url, secretKey }));
  ({ page } = await openRecordedPage(browser));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await Promise.all(workers.map((worker) => worker.stop()));
  await cluster?.destroy();
});

describe('the fleet view', { timeout: 120_000 }, () => {
  it('shows both workers and each server on each; the other worker restarting a server does not move this page\'s state', async () => {
    const [alpha, beta] = workers as [FleetWorkerProcess, FleetWorkerProcess];
    const added = await alpha.request('/api/mcp/servers', {
      method: 'POST',
      json: { name: 'echo', type: 'local', command: fixtureCommand('healthy.mjs') },
    });
    expect(added.status, added.text).toBe(201);

    await page.goto(`${alpha.url}/?token=${TOKEN}`);
    const fleetTab = page.getByRole('tab', { name: 'Fleet' });
    await fleetTab.waitFor();
    await fleetTab.click();
    await expect.poll(() => page.locator('#workers-body tr').count()).toBe(2);
    await expect.poll(() => page.locator('#workers-body').textContent()).toContain('(this page)');
    // Each worker's state of `echo`, from its heartbeat.
    await expect
      .poll(() => page.locator('#fleet-body tr[data-name="echo"] .badge').evaluateAll((badges) => badges.map((b) => b.getAttribute('data-state'))), {
        timeout: 20_000,
      })
      .toEqual(['ready', 'ready']);

    await page.getByRole('tab', { name: 'Servers' }).click();
    const badge = page.locator('#servers-body tr[data-name="echo"] .badge');
    await expect.poll(() => badge.getAttribute('data-state')).toBe('ready');
    // Beta restarts its own `echo`: its transitions reach this page's journal, not this worker's row.
    const states: string[] = [];
    await page.exposeFunction('noteState', (state: string) => states.push(state));
    await badge.evaluate((element) => {
      new MutationObserver(() => (globalThis as any).noteState(document.querySelector('#servers-body tr[data-name="echo"] .badge')?.getAttribute('data-state'))).observe(
        element.closest('tbody')!,
        { subtree: true, childList: true, attributes: true },
      );
    });
    expect((await beta.request('/api/mcp/servers/echo/restart', { method: 'POST' })).status).toBe(200);
    await page.getByRole('tab', { name: 'Journal' }).click();
    await expect
      .poll(() => page.locator('#journal-body tr[data-worker="beta-worker"][data-server="echo"]').filter({ hasText: 'pending' }).count(), {
        timeout: 10_000,
      })
      .toBeGreaterThan(0);
    expect(states.filter((state) => state !== 'ready')).toEqual([]);
  });
});

declare const document: any;
declare const MutationObserver: any;
