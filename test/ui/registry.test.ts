// "Add from registry" in a real browser against a real worker and a local
// registry: search (through the worker's proxy route), pick an entry, fill its
// required secret header in a password field, add; the server appears and
// reaches ready. No secret is ever in the DOM or in what the page received.
// REGISTRY_SCREENSHOT=1 also writes docs/registry.png.
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import type { Browser, Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpFixture, type HttpFixture } from '../fixtures/index.js';
import { TOKEN } from '../http/helpers.js';
import { CANARIES, startFleet, untilState, type Fleet } from '../http/fleet.js';
import { headerSecretEntry, startRegistry, type LocalRegistry } from '../registry/fixture.js';
import { ARTIFACTS, launchBrowser, openRecordedPage, pageContent, type Recorder } from './browser.js';

const SECRET = CANARIES[2]!;
const DOCS_SHOT = fileURLToPath(new URL('../../docs/registry.png', import.meta.url));
const ENTRY = 'io.github.mcp-fleet-test/local-http';

let remote: HttpFixture;
let registry: LocalRegistry;
let fleet: Fleet;
let browser: Browser;
let page: Page;
let recorder: Recorder;
const installs: unknown[] = [];

beforeAll(async () => {
  remote = await startHttpFixture('http-server', [], { FIXTURE_REQUIRED_HEADER: `X-Api-Key: ${SECRET}` });
  registry = await startRegistry([headerSecretEntry(remote.url)]);
  [fleet, browser] = await Promise.all([startFleet(() => ({}), { registryUrl: registry.url }), launchBrowser()]);
  ({ page, recorder } = await openRecordedPage(browser));
  page.on('request', (request: Request) => {
    if (new URL(request.url()).pathname === '/api/mcp/registry/install') installs.push(request.postDataJSON());
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await fleet?.close();
  await registry?.close();
  await remote?.stop();
});

const viewTab = (name: string) => page.locator('#view-nav').getByRole('tab', { name, exact: true });
const entry = (name: string) => page.locator(`#registry-results li[data-name="${name}"]`);
const form = () => page.getByRole('form', { name: `Add ${ENTRY}` });

describe('Add from registry', { timeout: 60_000 }, () => {
  it('lists the registry when opened, and searches as the user types', async () => {
    await page.goto(`${fleet.served.url}?token=${encodeURIComponent(TOKEN)}`);
    await page.locator('#servers-empty').waitFor();
    await viewTab('Add from registry').click();
    await expect(page.locator('#registry-results li').first().waitFor()).resolves.toBeUndefined();
    await page.getByRole('searchbox', { name: 'Search the MCP Registry' }).fill('local-http');
    await page.waitForFunction(() => (globalThis as any).document.querySelectorAll('#registry-results li').length === 1);
    await expect(entry(ENTRY).textContent()).resolves.toContain('The HTTP fixture, needing a secret header');
    await expect(page.locator('#registry-status').textContent()).resolves.toBe('1 entry.');
    expect(registry.requests).toContain('/v0.1/servers?version=latest&limit=20&search=local-http');
  });

  it('an entry that cannot run here has its Add button disabled, with the reason', async () => {
    await page.getByRole('searchbox', { name: 'Search the MCP Registry' }).fill('knapcode');
    const button = entry('io.github.joelverhagen/knapcode-samplemcpserver').getByRole('button');
    await expect(button.isDisabled()).resolves.toBe(true);
    await expect(button.getAttribute('title')).resolves.toContain('package type nuget is not supported');
    await page.getByRole('searchbox', { name: 'Search the MCP Registry' }).fill('local-http');
    await entry(ENTRY).waitFor();
  });

  it('asks for the required secret header in a password field, adds the server, and it becomes ready', async () => {
    await entry(ENTRY).getByRole('button', { name: `Add ${ENTRY}` }).click();
    await expect(page.getByLabel('Server name').inputValue()).resolves.toBe('local-http');
    const key = form().getByLabel('Header X-Api-Key (required)');
    await expect(key.getAttribute('type')).resolves.toBe('password');
    // Empty: refused in the page, nothing sent.
    await form().getByRole('button', { name: 'Add server' }).click();
    await expect(form().getByRole('alert').textContent()).resolves.toBe('Required: X-Api-Key.');
    expect(installs).toEqual([]);
    await key.fill(SECRET);
    await page.screenshot({ path: join(ARTIFACTS, 'registry-form.png') });
    if (process.env.REGISTRY_SCREENSHOT) await page.screenshot({ path: DOCS_SHOT });
    await form().getByRole('button', { name: 'Add server' }).click();
    await page.locator('#servers-body tr[data-name="local-http"]').waitFor();
    await expect(page.locator('#registry-form').isHidden()).resolves.toBe(true);
    expect(installs).toEqual([{ name: 'local-http', server: ENTRY, version: '1.0.0', package: 'remote', values: { header: { 'X-Api-Key': SECRET } } }]);
    await untilState(fleet, 'local-http', 'ready');
    await page.locator('#servers-body tr[data-name="local-http"] .badge[data-state="ready"]').waitFor();
    expect(fleet.config().servers['local-http']).toMatchObject({ type: 'remote', url: remote.url, headers: { 'X-Api-Key': SECRET } });
  });

  it('no secret in the DOM, in any answer the page received, and no page error', async () => {
    expect(await pageContent(page)).not.toContain(SECRET);
    for (const body of await recorder.bodies()) expect(body.text, body.url).not.toContain(SECRET);
    expect(recorder.errors).toEqual([]);
  });
});
