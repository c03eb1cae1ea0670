// The management page in a real browser (Debian chromium via playwright-core)
// against a real worker with real stdio fixture servers. One story, step by
// step, on one page that is never reloaded: sign in, add, edit a secret,
// restart, disable, OAuth sign-in, journal, delete, sign out. At the end,
// no secret value may appear anywhere the page saw.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCommand } from '../fixtures/index.js';
import { TOKEN } from '../http/helpers.js';
import { allGone, CANARIES, healthy, isAlive, readPid, startFleet, untilState, type Fleet } from '../http/fleet.js';
import { ARTIFACTS, launchBrowser, openRecordedPage, pageContent, type Recorder } from './browser.js';

// The project compiles without the DOM lib; these callbacks run in the page.
declare const window: any;
declare const document: any;

const [API_KEY_OLD, API_KEY_NEW, DB_PASSWORD, ADDED_SECRET] = CANARIES as [string, string, string, string];
/** The remote server's secrets, and the value one is replaced with. */
const HEADER = 'ui-header-SECRET-0005';
const BEARER = 'ui-bearer-SECRET-0006';
const MACHINE_SECRET = 'ui-machine-SECRET-0010';
const HEADER_NEW = 'ui-header-SECRET-0007';
const SECRETS = [...CANARIES, HEADER, BEARER, HEADER_NEW, MACHINE_SECRET, 'obsolete-value-0000', TOKEN];

let fleet: Fleet;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let recorder: Recorder;
let url: string;

beforeAll(async () => {
  [fleet, browser] = await Promise.all([
    startFleet((dir) => ({
      alpha: healthy(dir, 'alpha', { env: { API_KEY: API_KEY_OLD, DB_PASSWORD, OBSOLETE: 'obsolete-value-0000' } }),
      // Disabled: never contacted, but its stored header and token go through the same forms.
      delta: {
        type: 'remote',
        url: 'https://example.invalid/mcp',
        enabled: false,
        headers: { 'X-Team': HEADER, 'X-Trace': 'trace-value' },
        auth: { kind: 'bearer', token: BEARER },
      },
      // Machine-to-machine credentials the form does not edit: an edit must keep them.
      mach: {
        type: 'remote',
        url: 'https://example.invalid/mcp',
        enabled: false,
        auth: { kind: 'client_credentials', client_id: 'job', client_secret: MACHINE_SECRET },
      },
    })),
    launchBrowser(),
  ]);
  url = fleet.served.url;
  ({ context, page, recorder } = await openRecordedPage(browser));
  await untilState(fleet, 'alpha', 'ready');
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await fleet?.close();
});

const row = (name: string) => page.locator(`#servers-body tr[data-name="${name}"]`);
const badgeOf = (name: string) => row(name).locator('.badge');
const detail = () => page.locator('#detail');
const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`) });

async function select(name: string): Promise<void> {
  await row(name).getByRole('button', { name }).click();
  await detail().locator('h2', { hasText: name }).waitFor();
}

/** Sets the limit `label` of `server` to `value` through the edit form (after `inspect` looked at the form); the PATCH it sent. */
async function saveLimit(server: string, label: string, value: string, inspect?: (dialog: Locator) => Promise<unknown>): Promise<unknown> {
  await select(server);
  await detail().getByRole('button', { name: 'Edit' }).click();
  const dialog = page.locator('#server-dialog');
  await inspect?.(dialog);
  await dialog.locator('summary', { hasText: 'Limits and tool filter' }).click();
  await dialog.getByLabel(label).fill(value);
  const patch = page.waitForRequest((r) => r.method() === 'PATCH');
  await dialog.getByRole('button', { name: 'Save changes' }).click();
  const body = (await patch).postDataJSON();
  await dialog.waitFor({ state: 'hidden' });
  return body;
}

describe('the management page', () => {
  it('signs in with the token; a wrong token is answered next to the field', async () => {
    await page.goto(url);
    await page.getByLabel('API token').fill('not-the-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#token-error', { hasText: 'That is neither the API token of this worker nor a user key.' }).waitFor();

    await page.getByLabel('API token').fill(TOKEN);
    await page.getByLabel('API token').press('Enter');
    await badgeOf('alpha').locator('text=ready').waitFor();
    // Set now and checked at the end: the page was never reloaded.
    await page.evaluate(() => (window.__sameDocument = true));

    const cookies = await context.cookies(url);
    expect(cookies).toHaveLength(1);
    expect(cookies[0]).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/' });
    expect(cookies[0]!.value).not.toContain(TOKEN);
    // Nothing a script can read holds the token.
    const readable = await page.evaluate(() =>
      [document.cookie, window.localStorage, window.sessionStorage].map((v) => (typeof v === 'string' ? v : JSON.stringify(v))),
    );
    expect(readable).toEqual(['', '{}', '{}']);
    expect(await pageContent(page)).not.toContain(TOKEN);
  });

  it('shows tools with namespaced and original names, and the diagram with the state highlighted', async () => {
    await select('alpha');
    const tools = detail().locator('.item-list .item');
    expect(await tools.count()).toBe(8);
    const echo = tools.filter({ hasText: 'alpha__echo' });
    await expect(echo.textContent()).resolves.toContain('original echo');
    await expect(echo.textContent()).resolves.toContain('Returns its text');
    await echo.getByText('Input schema').click();
    expect(JSON.parse((await echo.locator('pre').textContent()) ?? '')).toMatchObject({ properties: { text: { type: 'string' } } });
    await shot('servers-1280');

    await page.getByRole('tab', { name: 'Lifecycle' }).click();
    await detail().locator('svg #state_ready.current').waitFor();
    expect(await detail().locator('svg .current').count()).toBe(1);
    await shot('lifecycle-1280');
    // Keyboard: arrow keys move between the detail tabs.
    await page.getByRole('tab', { name: 'Lifecycle' }).press('ArrowLeft');
    await expect(page.evaluate(() => document.activeElement?.textContent)).resolves.toBe('Configuration');
    await detail().getByText('stored ••••0001').waitFor();
    await page.getByRole('tab', { name: 'Configuration' }).press('Home');
  });

  it('the API answers the page with the cookie alone; a same-site page on another port is refused', async () => {
    const fromPage = await page.evaluate(async () => {
      const res = await fetch('/api/mcp/servers');
      const body: any = await res.json();
      return { status: res.status, names: body.servers.map((s: { name: string }) => s.name) };
    });
    expect(fromPage).toEqual({ status: 200, names: ['alpha', 'delta', 'mach'] });

    const before = fleet.host.events().length;
    const attacker = await serveAttacker(`${url}api/mcp/servers/alpha/restart`);
    const evil = await context.newPage();
    try {
      const refused = evil.waitForResponse((r) => r.url().endsWith('/api/mcp/servers/alpha/restart'));
      await evil.goto(attacker.url);
      // 403, not 401: the browser did send the cookie, and the Origin check refused it.
      expect((await refused).status()).toBe(403);
    } finally {
      await evil.close();
      await new Promise((resolve) => attacker.server.close(resolve));
    }
    expect(fleet.host.events().slice(before).filter((e) => e.type === 'server.configured')).toEqual([]);
  });

  it('adds a server; its badge turns ready from the event stream while the form waits', async () => {
    await page.getByRole('button', { name: 'Add server' }).click();
    const dialog = page.locator('#server-dialog');
    await dialog.getByLabel('Name', { exact: true }).fill('not valid!');
    await dialog.getByLabel('Command').fill([...fixtureCommand('slow-start')].join('\n'));
    for (const [key, value] of [
      ['FIXTURE_DELAY_MS', '1200'],
      ['FIXTURE_PID_FILE', join(fleet.dir, 'beta.pid')],
      ['ADDED_SECRET', ADDED_SECRET],
    ]) {
      await dialog.getByRole('button', { name: 'Add variable' }).click();
      await dialog.getByLabel('New variable name').last().fill(key!);
      await dialog.getByLabel('New variable value').last().fill(value!);
    }
    await dialog.getByRole('button', { name: 'Add server' }).click();
    // The 400 names the field; the page shows it there, and focuses it.
    await dialog.locator('[data-field="name"] .field-error', { hasText: 'must be 1 to 64 characters' }).waitFor();
    await expect(dialog.getByLabel('Name', { exact: true }).getAttribute('aria-invalid')).resolves.toBe('true');
    await shot('add-form-error-1280');

    // Record every state the row shows from now on, without polling.
    await page.evaluate(() => {
      window.__betaStates = [];
      const body = document.querySelector('#servers-body');
      new window.MutationObserver(() => {
        const state = body.querySelector('tr[data-name="beta"] .badge')?.dataset.state;
        if (state && window.__betaStates.at(-1) !== state) window.__betaStates.push(state);
      }).observe(body, { childList: true, subtree: true });
    });
    await dialog.getByLabel('Name', { exact: true }).fill('beta');
    await dialog.getByRole('button', { name: 'Add server' }).click();
    await badgeOf('beta').locator('text=ready').waitFor();
    await dialog.waitFor({ state: 'hidden' });
    const states: string[] = await page.evaluate(() => window.__betaStates);
    expect(states[0]).toBe('pending');
    expect(states.at(-1)).toBe('ready');
    // Its tool arrives with the catalog read that the stream's events trigger.
    await row('beta').locator('td.num', { hasText: /^1$/ }).waitFor();
    expect(fleet.config().servers.beta.env).toEqual({
      FIXTURE_DELAY_MS: '1200',
      FIXTURE_PID_FILE: join(fleet.dir, 'beta.pid'),
      ADDED_SECRET,
    });
    // What was typed left the DOM with the form.
    expect(await dialog.innerHTML()).toBe('');
  });

  it('says what it cannot send, on the field, before sending anything: a number it cannot read, a value with no name', async () => {
    const sent: string[] = [];
    const onRequest = (request: { method(): string; url(): string }) => {
      if (request.method() !== 'GET') sent.push(`${request.method()} ${request.url()}`);
    };
    page.on('request', onRequest);
    await page.getByRole('button', { name: 'Add server' }).click();
    const dialog = page.locator('#server-dialog');
    await dialog.getByLabel('Name', { exact: true }).fill('gamma');
    await dialog.getByLabel('Command').fill(fixtureCommand('healthy').join('\n'));
    await dialog.getByRole('button', { name: 'Add variable' }).click();
    await dialog.getByLabel('New variable value').last().fill('typed-but-nameless');
    await dialog.getByRole('button', { name: 'Add server' }).click();
    const rowError = dialog.locator('.secret-row.new .field-error', { hasText: 'a variable needs a NAME; or Discard it' });
    await rowError.waitFor();
    // The name input is at fault, described by the error, and focused; the value is still there.
    const nameInput = dialog.getByLabel('New variable name').last();
    await expect(nameInput.getAttribute('aria-invalid')).resolves.toBe('true');
    await expect(nameInput.evaluate((el: any) => document.getElementById(el.getAttribute('aria-describedby'))?.textContent)).resolves.toContain('needs a NAME');
    await expect(nameInput.evaluate((el: any) => el === document.activeElement)).resolves.toBe(true);
    await expect(dialog.getByLabel('New variable value').last().inputValue()).resolves.toBe('typed-but-nameless');
    await dialog.getByRole('button', { name: 'Discard new variable' }).click();

    // A number the browser cannot read reads as empty: said, not dropped.
    await dialog.locator('summary', { hasText: 'Limits and tool filter' }).click();
    await dialog.getByLabel('Connect timeout (s)').pressSequentially('1e');
    await dialog.getByRole('button', { name: 'Add server' }).click();
    await dialog.locator('[data-field="timeout_seconds"] .field-error', { hasText: 'is not a number' }).waitFor();
    await expect(dialog.getByLabel('Connect timeout (s)').getAttribute('aria-invalid')).resolves.toBe('true');
    expect(sent).toEqual([]);
    page.off('request', onRequest);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect(fleet.config().servers.gamma).toBeUndefined();
  });

  it('edits one secret and removes another; the untouched ones survive on disk', async () => {
    await select('alpha');
    await detail().getByRole('button', { name: 'Edit' }).click();
    const dialog = page.locator('#server-dialog');
    const apiKey = dialog.getByLabel('API_KEY', { exact: true });
    // Secret inputs open empty; only the names and masks are shown.
    for (const key of ['API_KEY', 'DB_PASSWORD', 'OBSOLETE', 'FIXTURE_PID_FILE']) {
      await expect(dialog.getByLabel(key, { exact: true }).inputValue()).resolves.toBe('');
    }
    await dialog.locator('[data-field="env.DB_PASSWORD"]').getByText('stored ••••0003').waitFor();
    await shot('edit-form-1280');
    await apiKey.fill(API_KEY_NEW);
    await dialog.getByRole('button', { name: 'Remove OBSOLETE' }).click();

    const patch = page.waitForRequest((r) => r.method() === 'PATCH');
    await dialog.getByRole('button', { name: 'Save changes' }).click();
    // Only what changed is sent: the untouched secrets are absent, the removed one is null.
    expect((await patch).postDataJSON()).toEqual({ env: { API_KEY: API_KEY_NEW, OBSOLETE: null } });
    await dialog.waitFor({ state: 'hidden' });
    await untilState(fleet, 'alpha', 'ready');
    expect(fleet.config().servers.alpha.env).toEqual({
      FIXTURE_PID_FILE: join(fleet.dir, 'alpha.pid'),
      API_KEY: API_KEY_NEW,
      DB_PASSWORD,
    });
    await badgeOf('alpha').locator('text=ready').waitFor();
  });

  it('keeps a stored bearer token when only a header is replaced', async () => {
    await select('delta');
    await detail().getByRole('button', { name: 'Edit' }).click();
    const dialog = page.locator('#server-dialog');
    const token = dialog.locator('[data-field="auth.token"]');
    await token.getByText('stored ••••0006').waitFor();
    await expect(token.locator('input').inputValue()).resolves.toBe('');
    // A bearer token is replaced, never removed: its kind requires one.
    expect(await token.getByRole('button', { name: /Remove/ }).count()).toBe(0);
    await dialog.locator('[data-field="headers.X-Team"]').getByText('stored ••••0005').waitFor();
    await dialog.getByLabel('X-Team', { exact: true }).fill(HEADER_NEW);

    const patch = page.waitForRequest((r) => r.method() === 'PATCH');
    await dialog.getByRole('button', { name: 'Save changes' }).click();
    expect((await patch).postDataJSON()).toEqual({ headers: { 'X-Team': HEADER_NEW } });
    await dialog.waitFor({ state: 'hidden' });
    const stored = fleet.config().servers.delta;
    expect(stored.headers).toEqual({ 'X-Team': HEADER_NEW, 'X-Trace': 'trace-value' });
    expect(stored.auth).toEqual({ kind: 'bearer', token: BEARER });
  });

  it('keeps client_credentials it cannot edit when another field changes', async () => {
    const showsKind = (dialog: Locator) => expect(dialog.getByLabel('Authentication').inputValue()).resolves.toBe('client_credentials');
    expect(await saveLimit('mach', 'Connect timeout (s)', '30', showsKind)).toEqual({ timeout_seconds: 30 });
    expect(fleet.config().servers.mach.auth).toMatchObject({ kind: 'client_credentials', client_id: 'job', client_secret: MACHINE_SECRET });
    expect(fleet.config().servers.mach.timeout_seconds).toBe(30);
    // Emptied, a limit goes back to its default (the placeholder), which the file then leaves out.
    expect(await saveLimit('mach', 'Connect timeout (s)', '')).toEqual({ timeout_seconds: 60 });
    expect(fleet.config().servers.mach.timeout_seconds).toBeUndefined();
    // Focus comes back to Edit after a save, as after a cancel.
    await expect(page.evaluate(() => document.activeElement?.textContent)).resolves.toBe('Edit');
  });

  it('sets a catalog max age, and clears it back to none', async () => {
    expect(await saveLimit('mach', 'Catalog max age (s)', '300')).toEqual({ catalog_max_age_seconds: 300 });
    expect(fleet.config().servers.mach.catalog_max_age_seconds).toBe(300);
    expect(await saveLimit('mach', 'Catalog max age (s)', '')).toEqual({ catalog_max_age_seconds: null });
    expect(fleet.config().servers.mach.catalog_max_age_seconds ?? null).toBeNull();
  });

  it('a server that does not start is reported in the form, and nothing is saved', async () => {
    await page.getByRole('button', { name: 'Add server' }).click();
    const dialog = page.locator('#server-dialog');
    await dialog.getByLabel('Name', { exact: true }).fill('crashy');
    await dialog.getByLabel('Command').fill(fixtureCommand('crash-on-start').join('\n'));
    await dialog.getByRole('button', { name: 'Add server' }).click();
    const error = dialog.locator('.form-error');
    await error.getByText('Nothing was saved.', { exact: false }).waitFor();
    // The reason comes from the worker: the kind, and the child's own last words.
    const reason = /^server "crashy" failed to start \(spawn_failed\): .*config file \/nonexistent\/fixture\.toml is missing.*\. Nothing was saved\.$/;
    await expect(error.textContent()).resolves.toMatch(reason);
    expect(fleet.config().servers.crashy).toBeUndefined();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
  });

  it('restarts a server: a new process, the old one gone', async () => {
    const before = readPid(join(fleet.dir, 'alpha.pid'));
    await select('alpha');
    // Every state and tool count the row shows from now on: back to ready, it shows its tools at once.
    await page.evaluate(() => {
      window.__alphaRows = [];
      const body = document.querySelector('#servers-body');
      new window.MutationObserver(() => {
        const tr = body.querySelector('tr[data-name="alpha"]');
        const shown = `${tr?.querySelector('.badge')?.dataset.state} ${tr?.querySelector('td.num')?.textContent}`;
        if (window.__alphaRows.at(-1) !== shown) window.__alphaRows.push(shown);
      }).observe(body, { childList: true, subtree: true, characterData: true });
    });
    // By keyboard; the focus stays on the button through the busy state and the re-render.
    await detail().getByRole('button', { name: 'Restart' }).focus();
    await page.keyboard.press('Enter');
    await page.locator('#toast', { hasText: 'Restarted alpha: ready.' }).waitFor();
    await expect(page.evaluate(() => document.activeElement?.textContent)).resolves.toBe('Restart');
    const rows: string[] = await page.evaluate(() => window.__alphaRows);
    const back = rows.slice(rows.indexOf('pending 0')).find((shown) => shown.startsWith('ready'));
    expect(back, rows.join(' → ')).toBe('ready 8');
    const after = readPid(join(fleet.dir, 'alpha.pid'));
    expect(after).not.toBe(before);
    expect(isAlive(after)).toBe(true);
    expect(await allGone([before])).toBe(true);
  });

  it('disables and enables a server', async () => {
    await select('beta');
    await detail().getByRole('button', { name: 'Disable' }).click();
    await badgeOf('beta').locator('text=disabled').waitFor();
    // The badge follows the stream; the toast follows the API's answer, after the file is written.
    await page.locator('#toast', { hasText: 'beta disabled.' }).waitFor();
    expect(fleet.config().servers.beta.enabled).toBe(false);
    // Nothing to restart while disabled: Enable is the way back.
    await detail().getByRole('button', { name: 'Enable' }).waitFor();
    expect(await detail().getByRole('button', { name: 'Restart' }).count()).toBe(0);
    await detail().getByRole('button', { name: 'Enable' }).click();
    await badgeOf('beta').locator('text=ready').waitFor();
    await page.locator('#toast', { hasText: 'beta enabled.' }).waitFor();
    // Enabled is the default: the entry written for it leaves the field out.
    expect(fleet.config().servers.beta).not.toHaveProperty('enabled');
  });

  it('"Sign in" asks the worker; its error is shown, an authorization URL is opened', async () => {
    // Added by someone else (the CLI, say): the page learns of it from the stream.
    const added = await fleet.request('/api/mcp/servers', {
      method: 'POST',
      body: { name: 'gamma', type: 'remote', url: 'https://example.invalid/mcp', enabled: false, auth: { kind: 'oauth' } },
    });
    expect(added.status).toBe(201);
    await badgeOf('gamma').locator('text=disabled').waitFor();
    await select('gamma');
    await detail().getByRole('button', { name: 'Sign in' }).click();
    // A disabled server needs no consent: the worker says so and the page shows it.
    await detail().locator('.notice.error', { hasText: 'consent starts only from needs_reauth' }).waitFor();

    // The consent itself is tested against a real authorization server in test/oauth;
    // here the worker's answer is stood in for, to see what the page does with a URL.
    const consent = `${url}healthz?consent=gamma`;
    await page.route('**/api/mcp/servers/gamma/auth', (route) =>
      route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify({ authorization_url: consent }) }),
    );
    const popup = context.waitForEvent('page');
    await detail().getByRole('button', { name: 'Sign in' }).click();
    const opened = await popup;
    await opened.waitForLoadState();
    expect(opened.url()).toBe(consent);
    await opened.close();
    await page.unroute('**/api/mcp/servers/gamma/auth');
  });

  it('shows the journal, filterable by server', async () => {
    await page.getByRole('tab', { name: 'Journal' }).click();
    // One choice per server and "All servers": the worker's own events (no server) add no empty one.
    const choices = await page.locator('#journal-filter option').evaluateAll((options) => options.map((o) => (o as any).textContent));
    expect(choices[0]).toBe('All servers');
    expect(choices.slice(1).every((label: string) => label !== '')).toBe(true);
    // Fewer events than the page shows: no line saying some are left out.
    expect(await page.locator('#journal-more').isHidden()).toBe(true);
    await page.getByLabel('Server', { exact: true }).selectOption('beta');
    const servers = await page.locator('#journal-body tr').evaluateAll((rows) => rows.map((r) => (r as any).dataset.server));
    expect(servers.length).toBeGreaterThan(3);
    expect(new Set(servers)).toEqual(new Set(['beta']));
    await expect(page.locator('#journal-body').textContent()).resolves.toContain('pending → ready');
    await page.getByLabel('Server', { exact: true }).selectOption('');
    await shot('journal-1280');
    await page.getByRole('tab', { name: 'Servers' }).click();
  });

  it('reads well at phone width', async () => {
    await page.setViewportSize({ width: 375, height: 800 });
    await select('alpha');
    // Nothing wider than the screen: no sideways scrolling of the page.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    // Selecting scrolled the details into view (they stack below the list here).
    expect(await page.evaluate(() => window.scrollY)).toBeGreaterThan(0);
    await page.screenshot({ path: join(ARTIFACTS, 'details-375.png') });
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: join(ARTIFACTS, 'servers-375.png'), fullPage: true });
    await page.getByRole('tab', { name: 'Journal' }).click();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await page.screenshot({ path: join(ARTIFACTS, 'journal-375.png') });
    await page.getByRole('tab', { name: 'Servers' }).click();
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it('deletes a server after confirmation', async () => {
    const pid = readPid(join(fleet.dir, 'beta.pid'));
    await select('beta');
    await detail().getByRole('button', { name: 'Delete' }).click();
    const confirm = page.locator('#confirm-dialog');
    await expect(confirm.locator('h2').textContent()).resolves.toBe('Delete beta?');
    // Cancel first: nothing happens.
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    expect(fleet.config().servers.beta).toBeDefined();
    await detail().getByRole('button', { name: 'Delete' }).click();
    await confirm.getByRole('button', { name: 'Delete server' }).click();
    await row('beta').waitFor({ state: 'detached' });
    await page.locator('#toast', { hasText: 'Deleted beta.' }).waitFor();
    expect(fleet.config().servers.beta).toBeUndefined();
    expect(await allGone([pid])).toBe(true);
  });

  it('never received or showed a secret value, and was never reloaded', async () => {
    expect(await page.evaluate(() => window.__sameDocument)).toBe(true);
    const bodies = await recorder.bodies();
    // The page did receive the masked forms, so the check looks at real data.
    expect(bodies.some((b) => b.text.includes('••••0003'))).toBe(true);
    expect(bodies.some((b) => b.url === 'sse')).toBe(true);
    const content = await pageContent(page);
    for (const secret of SECRETS) {
      for (const body of bodies) expect(body.text, `${body.url} carried a secret`).not.toContain(secret);
      expect(content).not.toContain(secret);
    }
    expect(recorder.errors).toEqual([]);
  });

  it('signs out: the cookie is gone and the API refuses the page', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API token').waitFor();
    expect(await context.cookies(url)).toEqual([]);
    expect(await page.evaluate(async () => (await fetch('/api/mcp/servers')).status)).toBe(401);
  });

  it('signs in once from ?token= and removes it from the address bar', async () => {
    const other = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      const tab = await other.newPage();
      await tab.goto(`${url}?token=${encodeURIComponent(TOKEN)}`);
      await tab.locator('#servers-body tr[data-name="alpha"]').waitFor();
      expect(tab.url()).not.toContain('token');
      expect(await other.cookies(url)).toHaveLength(1);
      // The entry was replaced, not added to: one step back is the blank tab, not the tokened URL.
      await tab.goBack();
      expect(tab.url()).toBe('about:blank');
    } finally {
      await other.close();
    }
  });
});

/** A page on another port of 127.0.0.1 (same site, other origin) that fires a cookie-carrying POST at `target`. */
async function serveAttacker(target: string): Promise<{ server: Server; url: string }> {
  const request = `fetch(${JSON.stringify(target)}, { method: 'POST', mode: 'no-cors', credentials: 'include' })`;
  const html = `<!doctype html><script>${request}</script>`;
  const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(html));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/` };
}
