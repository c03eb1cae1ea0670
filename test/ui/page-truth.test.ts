// What the page says agrees with the worker: its journal counts what the
// server's tabs show, an empty list says why in a sentence, the lifecycle
// diagram is readable at the default zoom, and while the worker cannot be
// reached no server claims a state the page no longer knows. A real worker
// process (`mcp-fleet serve`) on real servers, stopped and started again on
// the same port under the same page.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCommand } from '../fixtures/index.js';
import { launchBrowser, openRecordedPage } from './browser.js';
import { freePort } from '../support/ports.js';

// The project compiles without the DOM lib; these callbacks run in the page.
declare const window: any;
declare const document: any;

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'bin', 'mcp-fleet.js');
const TOKEN = 'page-truth-token-0123456789';

let dir: string;
let port: number;
let worker: ChildProcess | undefined;
let browser: Browser;
let page: Page;

/** Starts `mcp-fleet serve` on the state dir and port; resolves once every enabled server has settled. */
async function startWorker(): Promise<void> {
  const env: NodeJS.ProcessEnv = { ...process.env, MCP_FLEET_API_TOKEN: TOKEN };
  for (const key of ['MCP_FLEET_STATE_DIR', 'MCP_FLEET_PROFILE', 'MCP_FLEET_DATABASE_URL']) delete env[key];
  const child = spawn(process.execPath, [BIN, 'serve', '--state-dir', dir, '--port', String(port)], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  worker = child;
  let out = '';
  child.stdout!.on('data', (chunk) => (out += chunk));
  child.stderr!.on('data', (chunk) => (out += chunk));
  const deadline = Date.now() + 30_000;
  while (!/servers ready/.test(out)) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the worker did not start:\n${out}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function stopWorker(): Promise<void> {
  const child = worker;
  worker = undefined;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-page-truth-'));
  const everything = join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');
  const memory = join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-memory', 'dist', 'index.js');
  writeFileSync(
    join(dir, 'mcp_servers.json'),
    JSON.stringify({
      servers: {
        // A real server with resources and resource templates.
        everything: { type: 'local', command: [process.execPath, everything, 'stdio'], timeout_seconds: 30 },
        // Tools only.
        plain: { type: 'local', command: fixtureCommand('healthy'), timeout_seconds: 15 },
        // A real server that declares prompts and has none.
        memory: { type: 'local', command: [process.execPath, memory], env: { MEMORY_FILE_PATH: join(dir, 'memory.jsonl') }, timeout_seconds: 30 },
        broken: { type: 'local', command: [join(dir, 'no-such-program')], timeout_seconds: 5 },
      },
    }),
  );
  port = await freePort();
  [browser] = await Promise.all([launchBrowser(), startWorker()]);
  ({ page } = await openRecordedPage(browser));
  await page.goto(`http://127.0.0.1:${port}/?token=${TOKEN}`);
  await page.locator('#servers-body tr[data-name="plain"] .badge[data-state="ready"]').waitFor();
  await page.evaluate(() => (window.__sameDocument = true));
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await stopWorker();
  rmSync(dir, { recursive: true, force: true });
});

const row = (name: string) => page.locator(`#servers-body tr[data-name="${name}"]`);
const detail = () => page.locator('#detail');

async function select(name: string): Promise<void> {
  await page.getByRole('tab', { name: 'Servers' }).click();
  await row(name).getByRole('button', { name }).click();
  await detail().locator('h2', { hasText: name }).waitFor();
}

type Listed = { resources: unknown[] | null; resource_templates: unknown[] | null; prompts: unknown[] | null };

async function catalogOf(name: string): Promise<Listed> {
  const res = await fetch(`http://127.0.0.1:${port}/api/mcp/catalog`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const body = (await res.json()) as { servers: Array<{ name: string } & Listed> };
  return body.servers.find((server) => server.name === name)!;
}

describe('what the page says agrees with the worker', () => {
  it('counts resources and templates the same way in the server\'s tab and in the journal', async () => {
    // The catalog is listed in the background once the server is ready: `null` until it lands.
    let catalog = await catalogOf('everything');
    for (let i = 0; i < 100 && catalog.resources === null; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      catalog = await catalogOf('everything');
    }
    const resources = catalog.resources?.length ?? 0;
    const templates = catalog.resource_templates?.length ?? 0;
    expect(resources).toBeGreaterThan(0);
    expect(templates).toBeGreaterThan(0);

    await select('everything');
    const tab = detail().getByRole('tab', { name: /Resources/ });
    await tab.locator('.count', { hasText: String(resources + templates) }).waitFor();
    await tab.click();
    expect(await detail().locator('ul[aria-label="Resources"] > li').count()).toBe(resources);
    expect(await detail().locator('ul[aria-label="Resource templates"] > li').count()).toBe(templates);

    await page.getByRole('tab', { name: 'Journal' }).click();
    const rows = page.locator('#journal-body tr[data-server="everything"]');
    const listed = rows.filter({ hasText: /resources? and \d+ templates? listed/ });
    await expect(listed.first().textContent()).resolves.toContain(
      `${resources} resource${resources === 1 ? '' : 's'} and ${templates} template${templates === 1 ? '' : 's'} listed`,
    );
    // One listing of its resources, none journaled before they were listed.
    expect(await listed.count()).toBe(1);
    expect(await rows.filter({ hasText: 'offers no resources' }).count()).toBe(0);
  });

  it('journals only what was listed: no empty listing of a kind before it is listed, or that the server does not offer', async () => {
    // memory offers resources and no prompts; its resources are listed.
    await page.locator('#journal-body tr[data-server="memory"]', { hasText: '1 resource listed' }).first().waitFor();
    const journal = await page.locator('#journal-body').textContent();
    expect(journal).not.toMatch(/\b0 (prompts|resources|templates|tools) listed/);
    expect(await page.locator('#journal-body tr[data-server="memory"]', { hasText: 'prompt' }).count()).toBe(0);

    await select('memory');
    await detail().getByRole('tab', { name: /Prompts/ }).click();
    await detail().getByText('This server offers no prompts.').waitFor();
  });

  it('explains an empty list by the server\'s state, in a sentence', async () => {
    await select('broken');
    await detail().getByRole('tab', { name: /Tools/ }).click();
    await detail().locator('.badge[data-state="error"]').first().waitFor();
    await detail().getByText('The server failed to start, so it offers no tools now.', { exact: false }).waitFor();
    expect(await detail().textContent()).not.toContain('while the server is error');
    // "…" is for a ready server's listing on its way; a server that is not ready shows no count at all.
    expect(await detail().getByRole('tab', { name: /Resources/ }).locator('.count').count()).toBe(0);
  });

  /** Whether the lifecycle pane shows the current state whole. */
  const currentInView = () =>
    page.evaluate(() => {
      const pane = document.querySelector('#detail .diagram').getBoundingClientRect();
      const current = document.querySelector('#detail .diagram svg .current').getBoundingClientRect();
      return current.left >= pane.left && current.right <= pane.right && current.top >= pane.top && current.bottom <= pane.bottom;
    });

  it('draws the lifecycle at a readable size, zooms, and pans by dragging', async () => {
    await select('plain');
    const pageScroll = await page.evaluate(() => window.scrollY);
    await page.getByRole('tab', { name: 'Lifecycle' }).click();
    await detail().locator('svg #state_ready.current').waitFor();
    // The current state is brought into the pane's view by scrolling the pane, never the page.
    expect(await page.evaluate(() => window.scrollY)).toBe(pageScroll);
    expect(await currentInView()).toBe(true);
    const smallest = () =>
      page.evaluate(() => Math.min(...[...document.querySelectorAll('#detail .diagram svg text')].map((t: any) => t.getBoundingClientRect().height)));
    // Text boxes are about 1.2 times the font size: 12 px text or larger.
    expect(await smallest()).toBeGreaterThanOrEqual(12 * 1.1);

    await detail().getByRole('button', { name: 'Zoom out' }).click();
    await detail().locator('.zoom output', { hasText: '75 %' }).waitFor();
    const zoomedOut = await smallest();
    expect(zoomedOut).toBeLessThan(12 * 1.1);
    await detail().getByRole('button', { name: 'Actual size' }).click();
    await detail().locator('.zoom output', { hasText: '100 %' }).waitFor();

    const pane = detail().locator('.diagram');
    const before = await pane.evaluate((el: any) => [el.scrollLeft, el.scrollTop]);
    const box = (await pane.boundingBox())!;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width / 2 - 150, box.y + box.height / 2 - 100, { steps: 5 });
    await page.mouse.up();
    const after = await pane.evaluate((el: any) => [el.scrollLeft, el.scrollTop]);
    expect(after[0]).not.toBe(before[0]);

    // Another server chosen on this tab: its current state (error, a group of states drawn far from ready) comes into view.
    await select('broken');
    await detail().locator('svg #state_error.current').waitFor();
    const centred = await page.evaluate(() => {
      const pane = document.querySelector('#detail .diagram').getBoundingClientRect();
      const current = document.querySelector('#detail .diagram svg .current').getBoundingClientRect();
      const [x, y] = [current.left + current.width / 2, current.top + current.height / 2];
      return x >= pane.left && x <= pane.right && y >= pane.top && y <= pane.bottom;
    });
    expect(centred).toBe(true);
  });

  it('marks every server unknown while the worker is away, and reads the states again when it is back', async () => {
    await detail().getByRole('tab', { name: /Tools/ }).click();
    await stopWorker();
    for (const name of ['everything', 'plain', 'memory', 'broken']) {
      await row(name).locator('.badge[data-state="unknown"]').waitFor();
    }
    expect(await page.locator('#servers-body .badge[data-state="ready"]').count()).toBe(0);
    await expect(row('plain').locator('.badge').getAttribute('title')).resolves.toContain('last known state ready');
    await detail().locator('.badge[data-state="unknown"]').first().waitFor();
    await expect(page.locator('#live').getAttribute('data-state')).resolves.not.toBe('live');
    // An action tried meanwhile says it could not reach the worker, until the page reaches it again.
    await detail().getByRole('button', { name: 'Restart' }).click();
    await detail().getByText('The worker could not be reached.').waitFor();

    await startWorker();
    await row('plain').locator('.badge[data-state="ready"]').waitFor({ timeout: 40_000 });
    await row('broken').locator('.badge[data-state="error"]').waitFor();
    expect(await page.locator('#servers-body .badge[data-state="unknown"]').count()).toBe(0);
    await page.locator('#live[data-state="live"]').waitFor();
    expect(await detail().getByText('The worker could not be reached.').count()).toBe(0);
    // The same document all along: the page reconnected by itself.
    await expect(page.evaluate(() => window.__sameDocument)).resolves.toBe(true);
  }, 90_000);
});
