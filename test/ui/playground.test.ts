// The tool playground in a real browser against a real worker with real stdio
// servers: a form generated from an input schema (strings, numbers, integers,
// booleans, enums, arrays, a nested object, a JSON box for a map), refused
// arguments shown before anything is sent, a run with progress, a cancelled
// run the server saw cancelled, a call waiting for an approval, an image, a
// tool error, the raw JSON. At the end, no secret value may appear anywhere
// the page saw.
//
// PLAYGROUND_SCREENSHOT=1 also writes docs/playground.png (the picture of docs/people-in-the-loop.md).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
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
const EVERYTHING = fileURLToPath(new URL('../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url));
const DOCS_SHOT = fileURLToPath(new URL('../../docs/playground.png', import.meta.url));

let fleet: Fleet;
let browser: Browser;
let page: Page;
let recorder: Recorder;
/** Bodies of every tool call the page sent, in order. */
const calls: Array<{ path: string; body: any; accept: string | undefined }> = [];

beforeAll(async () => {
  [fleet, browser] = await Promise.all([
    startFleet((dir) => ({
      alpha: healthy(dir, 'alpha', {
        env: { API_KEY, DB_PASSWORD, FIXTURE_WAIT_LOG: join(dir, 'wait.log'), FIXTURE_CANCEL_LOG: join(dir, 'cancel.log') },
        // The playground is gated like the model: echo waits for a decision.
        tools: { approval: { echo: 'ask' } },
      }),
      trips: { type: 'local', command: fixtureCommand('playground-tools'), timeout_seconds: 15 },
      every: { type: 'local', command: [process.execPath, EVERYTHING, 'stdio'], timeout_seconds: 30 },
    })),
    launchBrowser(),
  ]);
  ({ page, recorder } = await openRecordedPage(browser, { height: 860 }));
  page.on('request', (request: Request) => {
    const url = new URL(request.url());
    if (url.pathname.endsWith('/call')) calls.push({ path: url.pathname, body: request.postDataJSON(), accept: request.headers().accept });
  });
  await Promise.all([untilState(fleet, 'alpha', 'ready'), untilState(fleet, 'trips', 'ready'), untilState(fleet, 'every', 'ready', 30_000)]);
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await fleet?.close();
});

const drawer = () => page.locator('dialog#playground');
const field = (name: string) => drawer().locator(`[data-field="${name}"]`);
const status = () => drawer().locator('.pg-status');
const result = () => drawer().locator('.pg-result');
const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`) });

/** Selects `server` and opens the playground on its tool `tool` (namespaced name). */
async function tryTool(server: string, tool: string): Promise<void> {
  if (await drawer().isVisible()) await drawer().getByRole('button', { name: 'Close the playground' }).click();
  await page.locator(`#servers-body tr[data-name="${server}"]`).getByRole('button', { name: server }).click();
  await page.locator('#detail h2', { hasText: server }).waitFor();
  await page.locator('#detail').getByRole('button', { name: `Try ${tool}`, exact: true }).click();
  await drawer().locator('h2', { hasText: tool }).waitFor();
}

async function untilLogged(file: string, text: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (existsSync(file) && readFileSync(file, 'utf8').includes(text)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${file} never said "${text}"`);
}

describe('the tool playground', { timeout: 60_000 }, () => {
  it('generates a form from the input schema', async () => {
    await page.goto(`${fleet.served.url}?token=${encodeURIComponent(TOKEN)}`);
    await page.locator('#servers-body tr[data-name="trips"] .badge[data-state="ready"]').waitFor();
    await tryTool('trips', 'trips__book_trip');
    await expect(drawer().textContent()).resolves.toContain('Books a pretend trip');
    await expect(field('destination').locator('input[type=text]').count()).resolves.toBe(1);
    await expect(field('travellers').locator('input[type=number]').getAttribute('step')).resolves.toBe('1');
    await expect(field('travellers').locator('input').getAttribute('min')).resolves.toBe('1');
    await expect(field('budget').locator('input[type=number]').getAttribute('step')).resolves.toBe('any');
    await expect(field('refundable').locator('input[type=checkbox]').count()).resolves.toBe(1);
    const cabins = await field('cabin').locator('option').allTextContents();
    expect(cabins).toEqual(['choose…', 'economy', 'business', 'first']);
    await expect(field('stops').getByRole('button', { name: 'Add stops' }).count()).resolves.toBe(1);
    // The nested object is a fieldset of its own fields.
    await expect(field('contact').evaluate((el: any) => el.tagName)).resolves.toBe('FIELDSET');
    await expect(field('contact').locator('[data-field="email"] input').count()).resolves.toBe(1);
    await expect(field('contact').locator('[data-field="phone"] input').count()).resolves.toBe(1);
    // A map (additionalProperties) is left to a JSON box.
    await expect(field('extras').locator('textarea').count()).resolves.toBe(1);
    // Descriptions and required marks.
    await expect(field('destination').textContent()).resolves.toContain('Where to go');
    await expect(field('destination').textContent()).resolves.toContain('required');
    await expect(field('budget').textContent()).resolves.not.toContain('required');
  });

  it('refuses arguments that do not fit the schema before sending anything', async () => {
    await field('destination').locator('input').fill('X');
    await field('travellers').locator('input').fill('12');
    await field('extras').locator('textarea').fill('{"bags": ');
    await drawer().getByRole('button', { name: 'Run' }).click();
    // Invalid JSON is named first: nothing else is judged until the input can be read.
    await field('extras').locator('.field-error', { hasText: 'is not valid JSON' }).waitFor();
    await field('extras').locator('textarea').fill('{"bags": "two"}');
    await drawer().getByRole('button', { name: 'Run' }).click();
    await field('destination').locator('.field-error', { hasText: 'must be at least 2 characters' }).waitFor();
    await expect(field('travellers').locator('.field-error').textContent()).resolves.toBe('must be ≤ 9');
    await expect(field('cabin').locator('.field-error').textContent()).resolves.toBe('is required');
    await expect(field('email').locator('.field-error').textContent()).resolves.toBe('is required');
    await expect(field('extras').locator('.field-error').textContent()).resolves.toBe('must be a number');
    await expect(field('travellers').locator('input').getAttribute('aria-invalid')).resolves.toBe('true');
    await expect(drawer().locator('.sf-summary').textContent()).resolves.toBe('Not sent: 5 problems in the arguments.');
    await shot('playground-invalid-1280');
    expect(calls).toEqual([]);
  });

  it('sends what the form says and shows the result, structured content and raw JSON', async () => {
    await field('destination').locator('input').fill('Lisbon');
    await field('travellers').locator('input').fill('2');
    await field('refundable').locator('input').check();
    await field('cabin').locator('select').selectOption({ label: 'business' });
    await field('stops').getByRole('button', { name: 'Add stops' }).click();
    await field('stops').getByRole('button', { name: 'Add stops' }).click();
    await field('stops').locator('input').nth(0).fill('Madrid');
    await field('stops').locator('input').nth(1).fill('Porto');
    await field('email').locator('input').fill('ada@example.org');
    await field('extras').locator('textarea').fill('{"bags": 2}');
    await drawer().getByRole('button', { name: 'Run' }).click();
    await result().locator('[data-is-error="false"]').waitFor();

    const sent = {
      destination: 'Lisbon',
      travellers: 2,
      refundable: true,
      cabin: 'business',
      stops: ['Madrid', 'Porto'],
      contact: { email: 'ada@example.org' },
      extras: { bags: 2 },
    };
    expect(calls).toEqual([{ path: '/api/mcp/tools/trips__book_trip/call', body: { arguments: sent }, accept: 'text/event-stream' }]);
    await expect(result().locator('.pg-block[data-type="text"]').textContent()).resolves.toBe(`Booked: ${JSON.stringify(sent)}`);
    expect(JSON.parse((await result().locator('.pg-structured pre').textContent()) ?? '')).toEqual({ booked: true, received: sent });
    await expect(drawer().locator('.sf-summary').isVisible()).resolves.toBe(false);
    await expect(status().textContent()).resolves.toMatch(/^Answered in \d+\.\d s\.$/);
    await shot('playground-result-1280');
    if (process.env.PLAYGROUND_SCREENSHOT) {
      // Tall enough for the whole form and its result in one picture.
      await page.setViewportSize({ width: 1280, height: 1640 });
      await drawer().locator('.pg-body').evaluate((el: any) => el.scrollTo(0, 0));
      await page.screenshot({ path: DOCS_SHOT });
      await page.setViewportSize({ width: 1280, height: 860 });
    }

    await result().getByText('Raw JSON').click();
    const raw = JSON.parse((await result().locator('.pg-raw pre').textContent()) ?? '');
    expect(raw).toMatchObject({ details: { is_error: false, server: 'trips', tool: 'book_trip', structured: { booked: true } } });
  });

  it('takes the arguments as JSON too, validated the same way', async () => {
    await drawer().getByRole('button', { name: 'JSON' }).click();
    const json = drawer().getByRole('textbox', { name: 'Arguments as JSON' });
    expect(JSON.parse(await json.inputValue())).toMatchObject({ destination: 'Lisbon', stops: ['Madrid', 'Porto'] });
    await json.fill('{"destination": "Oslo", "travellers": 1.5, "refundable": false, "cabin": "first", "contact": {"email": "x@y.z"}}');
    await drawer().getByRole('button', { name: 'Run' }).click();
    await drawer().locator('#pg-json-error', { hasText: 'travellers must be an integer' }).waitFor();
    await json.fill('[1]');
    await drawer().getByRole('button', { name: 'Run' }).click();
    await drawer().locator('#pg-json-error', { hasText: 'must be a JSON object' }).waitFor();
    expect(calls).toHaveLength(1);
    await json.fill('{"destination": "Oslo", "travellers": 1, "refundable": false, "cabin": "first", "contact": {"email": "x@y.z"}}');
    await drawer().getByRole('button', { name: 'Run' }).click();
    await result().locator('.pg-block', { hasText: 'Booked: {"destination":"Oslo"' }).waitFor();
    expect(calls).toHaveLength(2);
  });

  it('gives a union a JSON box, checked against each of its shapes', async () => {
    await tryTool('trips', 'trips__either');
    const box = field('value').locator('textarea');
    await box.fill('true');
    await drawer().getByRole('button', { name: 'Run' }).click();
    await field('value').locator('.field-error', { hasText: 'matches none of the allowed shapes (anyOf)' }).waitFor();
    expect(calls).toHaveLength(2);
    await box.fill('{"amount": "42"}');
    await drawer().getByRole('button', { name: 'Run' }).click();
    await drawer().locator('.sf-summary', { hasText: 'Not sent: 1 problem' }).waitFor();
    expect(calls).toHaveLength(2);
    await box.fill('{"amount": 42}');
    await drawer().getByRole('button', { name: 'Run' }).click();
    await result().locator('.pg-block', { hasText: 'got object {"amount":42}' }).waitFor();
  });

  it('shows progress while a call runs', async () => {
    await tryTool('alpha', 'alpha__slow');
    await field('ms').locator('input').fill('2400');
    await field('steps').locator('input').fill('3');
    await drawer().getByRole('button', { name: 'Run' }).click();
    await drawer().getByRole('button', { name: 'Cancel' }).waitFor();
    await status().locator('.pg-running').waitFor();
    await status().locator('.pg-progress-text', { hasText: /of 3 · step [12]/ }).waitFor();
    await expect(status().locator('progress').getAttribute('max')).resolves.toBe('3');
    await shot('playground-progress-1280');
    await result().locator('.pg-block', { hasText: '"done":true' }).waitFor();
    await expect(drawer().getByRole('button', { name: 'Cancel' }).isVisible()).resolves.toBe(false);
    expect(calls.at(-1)?.body).toEqual({ arguments: { ms: 2400, steps: 3 } });
  });

  it('cancels a running call: the server sees the cancellation', async () => {
    await tryTool('alpha', 'alpha__wait_for_cancel');
    await expect(drawer().textContent()).resolves.toContain('This tool takes no arguments.');
    // From the keyboard: Run goes away, and the focus with it goes to Cancel, not to the page.
    await drawer().getByRole('button', { name: 'Run' }).focus();
    await page.keyboard.press('Enter');
    await untilLogged(join(fleet.dir, 'wait.log'), 'waiting');
    await expect(page.evaluate(() => document.activeElement?.textContent)).resolves.toBe('Cancel');
    // A call that says nothing for a while: the page says what it may be waiting for.
    await status().locator('.pg-waiting', { hasText: 'needs an approval' }).waitFor();
    await drawer().getByRole('button', { name: 'Cancel' }).click();
    await status().locator('[data-outcome="cancelled"]', { hasText: 'the server was told to stop' }).waitFor();
    await untilLogged(join(fleet.dir, 'cancel.log'), 'cancelled');
    await expect(result().textContent()).resolves.toBe('');
    await expect(drawer().getByRole('button', { name: 'Run' }).isVisible()).resolves.toBe(true);
  });

  it('waits for an approval like the model does, and can give it', async () => {
    await tryTool('alpha', 'alpha__echo');
    await field('text').locator('input').fill('approved hello');
    await drawer().getByRole('button', { name: 'Run' }).click();
    await status().locator('[data-outcome="approval"]', { hasText: 'Waiting for approval' }).waitFor();
    // The page's approvals panel lists the same call.
    await page.locator('#approvals-panel li', { hasText: 'alpha__echo' }).waitFor();
    await shot('playground-approval-1280');
    await status().getByRole('button', { name: 'Allow' }).click();
    await result().locator('.pg-block', { hasText: 'approved hello' }).waitFor();
    const decided = fleet.host.events().filter((event) => event.type === 'approval.decided');
    expect(decided.at(-1)).toMatchObject({ decision: 'allow', by: 'page' });

    // Denied: the tool is not called, and the agent would see a tool error.
    await drawer().getByRole('button', { name: 'Run' }).click();
    await status().getByRole('button', { name: 'Deny' }).click();
    await result().locator('[data-is-error="true"]').waitFor();
    await expect(page.locator('#approvals-panel').isVisible()).resolves.toBe(false);

    // Cancelled while it waits: it never reached the server, and the page does not say it told the server to stop.
    await drawer().getByRole('button', { name: 'Run' }).click();
    await status().locator('[data-outcome="approval"]').waitFor();
    await drawer().getByRole('button', { name: 'Cancel' }).click();
    await status().locator('[data-outcome="cancelled"]', { hasText: 'the call waited for approval and was not made' }).waitFor();
    // The wait ended with the call: the panel learns it from the stream.
    await page.locator('#approvals-panel').waitFor({ state: 'hidden' });
  });

  it('shows a tool error as is_error', async () => {
    await tryTool('alpha', 'alpha__fail');
    await drawer().getByRole('button', { name: 'Run' }).click();
    await result().locator('[data-is-error="true"]', { hasText: 'is_error' }).waitFor();
    await expect(result().locator('.pg-block').textContent()).resolves.toBe('this tool always fails');
    await result().getByText('Raw JSON').click();
    expect(JSON.parse((await result().locator('.pg-raw pre').textContent()) ?? '')).toMatchObject({ details: { is_error: true } });
  });

  it('shows an image the tool returned', async () => {
    await tryTool('every', 'every__get-tiny-image');
    await drawer().getByRole('button', { name: 'Run' }).click();
    const image = result().locator('img.pg-image');
    await image.waitFor();
    await expect(image.getAttribute('src')).resolves.toMatch(/^data:image\/png;base64,[A-Za-z0-9+/]+=*$/);
    // It really rendered (the page's CSP allows data: images).
    await expect(image.evaluate((img: any) => img.complete && img.naturalWidth > 0)).resolves.toBe(true);
    // The text around it is there too, and nothing stray (no structured content here).
    await expect(result().locator('.pg-block[data-type="text"]').count()).resolves.toBe(2);
    expect(await result().evaluate((el: any) => [...el.childNodes].filter((n: any) => n.nodeType === 3).length)).toBe(0);
    await shot('playground-image-1280');
  });

  it('reads well at phone width', async () => {
    await page.setViewportSize({ width: 375, height: 800 });
    const box = await drawer().boundingBox();
    expect(box).toMatchObject({ x: 0, width: 375 });
    expect(await drawer().evaluate((el: any) => el.scrollWidth)).toBeLessThanOrEqual(375);
    await page.screenshot({ path: join(ARTIFACTS, 'playground-375.png') });
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  it('closes with Esc', async () => {
    await drawer().getByRole('button', { name: 'Run' }).focus();
    await page.keyboard.press('Escape');
    await expect(drawer().isVisible()).resolves.toBe(false);
    // Back on the Try button it was opened from.
    await expect(page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).resolves.toBe('Try every__get-tiny-image');
  });

  it('never received or showed a secret value', async () => {
    const bodies = await recorder.bodies();
    expect(bodies.some((b) => b.url.includes('/call'))).toBe(true);
    const content = await pageContent(page);
    for (const secret of SECRETS) {
      for (const body of bodies) expect(body.text, `${body.url} carried a secret`).not.toContain(secret);
      expect(content).not.toContain(secret);
    }
    expect(recorder.errors).toEqual([]);
  });
});
