// MCP Apps on the page, in real Chromium against a real worker: the app's
// frame on the sandbox origin, its bridge relayed by the page to the worker.
// A hostile app (test/fixtures/hostile-app.mjs) tries what an app must not
// do; server-basic-vanillajs shows the happy path (the app asks its server
// for the time through the bridge, and the page shows it); server-pdf's
// viewer reads a local PDF through its app-only tool and draws it.
//
// APPS_SCREENSHOT=1 also writes docs/apps.png (the picture of the README's apps section).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, FrameLocator, Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCommand } from '../fixtures/index.js';
import { TOKEN } from '../http/helpers.js';
import { healthy, startFleet, untilState, type Fleet } from '../http/fleet.js';
import { listen, type Listening } from '../../src/http/bind.js';
import { createAppFrames, type AppFrames } from '../../src/http/apps/frames.js';
import { sessionValue } from '../../src/http/session.js';
import { untilValue } from '../support/wait.js';
import { ARTIFACTS, launchBrowser, openRecordedPage, type Recorder } from './browser.js';

// The project compiles without the DOM lib; these callbacks run in the page.
declare const document: any;
declare const window: any;

const VANILLA = fileURLToPath(new URL('../../node_modules/@modelcontextprotocol/server-basic-vanillajs/dist/index.js', import.meta.url));
const PDF_SERVER = fileURLToPath(new URL('../../node_modules/@modelcontextprotocol/server-pdf/dist/index.js', import.meta.url));
const PDF = fileURLToPath(new URL('../fixtures/apps/one-page.pdf', import.meta.url));
const DOCS_SHOT = fileURLToPath(new URL('../../docs/apps.png', import.meta.url));
const PAGE_COOKIE = 'page-only-cookie-value-7781';

/** A plain HTTP origin that records each request's path; CORS-open, so only CSP can stop an app reaching it. */
interface Origin {
  url: string;
  paths: string[];
  server: Server;
}

async function origin(answer: string): Promise<Origin> {
  const paths: string[] = [];
  const server = createServer((req, res) => {
    paths.push(req.url ?? '');
    res.writeHead(200, { 'access-control-allow-origin': '*', 'content-type': 'text/plain' }).end(answer);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, paths, server };
}

let fleet: Fleet;
let frames: AppFrames;
let appsPort: Listening;
let allowed: Origin;
let forbidden: Origin;
let browser: Browser;
let page: Page;
let recorder: Recorder;
/** Every message the page relayed from a frame to the worker, in order. */
const relayed: any[] = [];
/** Every URL the top window navigated to. */
const topNavigations: string[] = [];

beforeAll(async () => {
  [allowed, forbidden] = await Promise.all([origin('allowed-ok'), origin('forbidden-ok')]);
  frames = createAppFrames({ bindHost: '127.0.0.1' });
  appsPort = await listen(frames.app, { port: 0 });
  frames.listeningOn(appsPort.port);
  [fleet, browser] = await Promise.all([
    startFleet(
      (dir) => ({
        alpha: healthy(dir, 'alpha'),
        hostile: {
          type: 'local',
          command: fixtureCommand('hostile-app'),
          env: { FIXTURE_ALLOWED_ORIGIN: allowed.url, FIXTURE_FORBIDDEN_ORIGIN: forbidden.url },
          timeout_seconds: 15,
        },
        clock: { type: 'local', command: [process.execPath, VANILLA, '--stdio'], timeout_seconds: 30 },
        pdf: { type: 'local', command: [process.execPath, PDF_SERVER, '--stdio', PDF], timeout_seconds: 30 },
      }),
      { apps: frames },
    ),
    launchBrowser(),
  ]);
  ({ page, recorder } = await openRecordedPage(browser, { height: 900 }));
  page.on('framenavigated', (frame) => {
    if (frame === page.mainFrame()) topNavigations.push(frame.url());
  });
  page.on('request', (request: Request) => {
    if (request.method() === 'POST' && new URL(request.url()).pathname.endsWith('/messages')) relayed.push(request.postDataJSON().message);
  });
  await Promise.all([untilState(fleet, 'alpha', 'ready'), untilState(fleet, 'hostile', 'ready'), untilState(fleet, 'clock', 'ready', 30_000), untilState(fleet, 'pdf', 'ready', 30_000)]);
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await frames?.closeAll();
  await appsPort?.close();
  await fleet?.close();
  for (const o of [allowed, forbidden]) o?.server.close();
});

const drawer = () => page.locator('dialog#playground');
const problems = () => drawer().locator('.app-problems');

async function tryTool(server: string, tool: string): Promise<void> {
  if (await drawer().isVisible()) await drawer().getByRole('button', { name: 'Close the playground' }).click();
  await page.locator(`#servers-body tr[data-name="${server}"]`).getByRole('button', { name: server }).click();
  await page.locator('#detail h2', { hasText: server }).waitFor();
  await page.locator('#detail').getByRole('button', { name: `Try ${tool}`, exact: true }).click();
  await drawer().locator('h2', { hasText: tool }).waitFor();
}

/** What the hostile app wrote into its page, once `ready(results)` holds. */
async function hostileResults(app: FrameLocator, ready: (results: any) => boolean): Promise<any> {
  return untilValue(async () => {
    const results = JSON.parse((await app.locator('#results').textContent()) ?? '{}');
    return ready(results) ? results : undefined;
  }, 'the hostile app to finish its probes');
}

describe('MCP Apps on the page', { timeout: 60_000 }, () => {
  let hostile: any;

  it('marks app tools in the tools view; an app-only tool has no Try and never reaches a model', async () => {
    const pageUrl = `${fleet.served.url}?token=${encodeURIComponent(TOKEN)}`;
    await page.context().addCookies([{ name: 'page_secret', value: PAGE_COOKIE, url: fleet.served.url }]);
    await page.goto(pageUrl);
    await page.locator('#servers-body tr[data-name="hostile"] .badge[data-state="ready"]').waitFor();
    await page.locator('#servers-body tr[data-name="hostile"]').getByRole('button', { name: 'hostile' }).click();
    const appOnly = page.locator('#detail [data-tool="hostile__secret_state"]');
    await appOnly.locator('.tag.app-only').waitFor();
    await expect(appOnly.getByRole('button', { name: 'Try hostile__secret_state' }).count()).resolves.toBe(0);
    await expect(appOnly.getByRole('button', { name: 'Open the app of hostile__secret_state' }).count()).resolves.toBe(1);
    await expect(page.locator('#detail [data-tool="hostile__probe"] .tag.app').count()).resolves.toBe(1);
    // The page lists it (model_visible false); what a model is offered does not.
    const listed = (await fleet.request('/api/mcp/tools')).json.tools;
    expect(listed.find((tool: any) => tool.name === 'hostile__secret_state')).toMatchObject({ model_visible: false });
    expect(fleet.host.tools().map((tool) => tool.name)).not.toContain('hostile__secret_state');
    expect(fleet.host.tools().map((tool) => tool.name)).toContain('hostile__probe');
    const search = (await fleet.request('/api/mcp/tools/search?q=secret%20state%20app')).json.tools;
    expect(search.map((tool: any) => tool.name)).not.toContain('hostile__secret_state');
  });

  it('shows the app in the playground result, framed from the sandbox origin with the tool call handed over', async () => {
    await tryTool('hostile', 'hostile__probe');
    await drawer().getByRole('button', { name: 'Run' }).click();
    const iframe = drawer().locator('iframe[data-mcp-app="hostile__probe"]');
    await iframe.waitFor();
    await expect(iframe.getAttribute('sandbox')).resolves.toBe('allow-scripts allow-forms');
    const src = new URL((await iframe.getAttribute('src')) ?? '');
    expect(src.port).toBe(String(appsPort.port));
    expect(src.port).not.toBe(new URL(fleet.served.url).port);
    hostile = await hostileResults(page.frameLocator('iframe[data-mcp-app="hostile__probe"]'), (r) => r.done && r.toolResult);
    expect(hostile.initialized).toBe(true);
    expect(hostile.toolInput).toEqual({ arguments: {} });
    expect(hostile.toolResult.content).toEqual([{ type: 'text', text: 'probed' }]);
    // Its frame has an opaque origin: not the page's, not even the sandbox port's.
    const frame = page.frames().find((f) => f.url().startsWith(`http://127.0.0.1:${appsPort.port}/frames/`));
    await expect(frame?.evaluate(() => window.origin)).resolves.toBe('null');
  });

  it('resizes the frame to the size the app reports', async () => {
    const iframe = drawer().locator('iframe[data-mcp-app="hostile__probe"]');
    await untilValue(async () => (await iframe.evaluate((el: any) => el.style.height)) === '321px', 'the frame to take the app’s height');
  });

  it('lets the app call its own app-only tool, and no tool of another server', () => {
    expect(hostile.ownAppOnly.result.content).toEqual([{ type: 'text', text: 'app-only answer' }]);
    for (const call of [hostile.otherServer, hostile.otherOriginal]) {
      expect(call.result.isError).toBe(true);
      expect(call.result.content[0].text).toMatch(/is not a tool of server "hostile"/);
    }
  });

  it('rejects malformed bridge messages', async () => {
    // Valid JSON-RPC, params that break the method's schema: an error answer, no call.
    expect(hostile.badParams.error).toBeDefined();
    expect(hostile.badParams.result).toBeUndefined();
    // Not JSON-RPC at all: dropped by the page, and said so.
    await problems().locator('li', { hasText: 'not JSON-RPC; it was dropped' }).waitFor();
    expect(relayed.some((message) => message?.hello !== undefined)).toBe(false);
    // And by the worker, when sent to it directly.
    const id = await drawer().locator('iframe[data-mcp-app]').getAttribute('data-app-id');
    const refused = await fleet.request(`/api/mcp/apps/${id}/messages`, { method: 'POST', body: { message: { hello: 'not json-rpc' } } });
    expect(refused.status).toBe(400);
    expect(refused.json.error.code).toBe('invalid_request');
  });

  it('blocks a fetch to an origin the app did not declare, allows the declared one, and shows the violation', async () => {
    expect(hostile.allowedFetch).toBe('allowed-ok');
    expect(allowed.paths).toContain('/ok');
    expect(hostile.forbiddenFetch).toMatch(/^blocked: /);
    expect(forbidden.paths).not.toContain('/steal');
    await problems().locator('li', { hasText: `connect-src` }).filter({ hasText: forbidden.url }).waitFor();
    // The declared values that are not origins were ignored, and the page says so.
    await problems().locator('li', { hasText: 'not a plain origin: *' }).waitFor();
    await problems().locator('li', { hasText: "not a plain origin: 'unsafe-eval'" }).waitFor();
  });

  it('cannot read the page’s cookie, nor its own', () => {
    expect(hostile.ownCookie).toMatch(/^threw SecurityError/);
    expect(hostile.parentCookie).toMatch(/^threw SecurityError/);
    const text = JSON.stringify(hostile);
    expect(text).not.toContain(PAGE_COOKIE);
    expect(text).not.toContain(sessionValue(TOKEN));
  });

  it('cannot navigate the top window', () => {
    expect(hostile.topNavigation).toMatch(/^threw /);
    expect(new URL(page.url()).origin).toBe(new URL(fleet.served.url).origin);
    expect(topNavigations.filter((url) => !url.startsWith(fleet.served.url))).toEqual([]);
    expect(forbidden.paths).not.toContain('/navigated');
  });

  it('opens the app of an app-only tool from the tools view', async () => {
    await drawer().getByRole('button', { name: 'Close the playground' }).click();
    await page.locator('#detail').getByRole('button', { name: 'Open the app of hostile__secret_state' }).click();
    const results = await hostileResults(page.frameLocator('iframe[data-mcp-app="hostile__secret_state"]'), (r) => r.done);
    expect(results.ownAppOnly.result.content).toEqual([{ type: 'text', text: 'app-only answer' }]);
    // Opened without a call: no input or result handed over.
    expect(results.toolInput).toBeUndefined();
    // An app the worker closes says so beside its frame.
    const id = await drawer().locator('iframe[data-mcp-app="hostile__secret_state"]').getAttribute('data-app-id');
    expect((await fleet.request(`/api/mcp/apps/${id}`, { method: 'DELETE' })).status).toBe(204);
    await problems().locator('li', { hasText: 'The app was closed: closed by the page' }).waitFor();
  });

  it('runs server-basic-vanillajs: the app asks its server for the time through the bridge', async () => {
    await tryTool('clock', 'clock__get-time');
    await drawer().getByRole('button', { name: 'Run' }).click();
    const app = page.frameLocator('iframe[data-mcp-app="clock__get-time"]');
    const time = app.locator('#server-time');
    // The result of the playground's call, handed to the app.
    const first = await untilValue(async () => {
      const text = (await time.textContent()) ?? '';
      return /^\d{4}-\d\d-\d\dT/.test(text) ? text : undefined;
    }, 'the app to show the time of the call');
    // A message from another window of the page is not the app's: never relayed.
    await page.evaluate(() => window.postMessage({ jsonrpc: '2.0', id: 777, method: 'tools/call', params: { name: 'get-time' } }, '*'));
    const before = relayed.length;
    await app.getByRole('button', { name: 'Get Server Time' }).click();
    await untilValue(async () => {
      const text = (await time.textContent()) ?? '';
      return text !== first && /^\d{4}-\d\d-\d\dT/.test(text) ? text : undefined;
    }, 'the app to show a new time from its server');
    const calls = relayed.slice(before).filter((message) => message.method === 'tools/call');
    expect(calls).toEqual([expect.objectContaining({ params: expect.objectContaining({ name: 'get-time' }) })]);
    expect(relayed.some((message) => message.id === 777)).toBe(false);
    // What the app asks of the user is shown beside it, never acted on by itself.
    await app.getByRole('button', { name: 'Send Message' }).click();
    await drawer().locator('.app-note', { hasText: 'The app says: This is message text.' }).waitFor();
    await app.getByRole('button', { name: 'Open Link' }).click();
    await drawer().locator('.app-note a[href="https://modelcontextprotocol.io/"]').waitFor();
    // Its bundled zod probes `new Function` once and works without it: the policy refuses eval, and the page says so
    // (the browser's report comes when it comes: waited for, then it must be the only problem).
    await problems().locator('li', { hasText: '(script-src): eval' }).waitFor();
    await expect(problems().locator('li').allTextContents()).resolves.toEqual([
      "blocked by the app's content security policy (script-src): eval",
    ]);
    await page.screenshot({ path: join(ARTIFACTS, 'apps-vanilla-1280.png') });
    if (process.env.APPS_SCREENSHOT === '1') await page.screenshot({ path: DOCS_SHOT });
  });

  it('runs server-pdf: its viewer reads a local PDF through its app-only tool and draws it', async () => {
    const listing = JSON.stringify(await fleet.host.callTool('pdf__list_pdfs', {}));
    const url = listing.match(/file:\/\/[^\s"\\]*one-page\.pdf/)?.[0];
    expect(url, listing).toBeDefined();
    const before = relayed.length;
    await tryTool('pdf', 'pdf__display_pdf');
    await drawer().getByRole('button', { name: 'JSON' }).click();
    await drawer().locator('textarea.pg-json').fill(JSON.stringify({ url }));
    await drawer().getByRole('button', { name: 'Run' }).click();
    const id = await drawer().locator('iframe[data-mcp-app="pdf__display_pdf"]').getAttribute('data-app-id');
    // The bytes come through the page's relay, by the app-only tool a model never sees.
    await untilValue(
      () => relayed.slice(before).some((m) => m.method === 'tools/call' && m.params?.name === 'read_pdf_bytes'),
      'the viewer to read the PDF through the bridge',
    );
    // And the page is drawn: some canvas of the viewer has ink on it.
    const frame = () => page.frames().find((f) => f.url().endsWith(`/frames/${id}`));
    await untilValue(async () => {
      const inked = await frame()?.evaluate(() =>
        [...document.querySelectorAll('canvas')].some((canvas: any) => {
          if (canvas.width === 0 || canvas.height === 0) return false;
          const data = canvas.getContext('2d')?.getImageData(0, 0, canvas.width, canvas.height).data;
          for (let i = 0; data && i < data.length; i += 4) if (data[i] < 128 && data[i + 3] > 0) return true;
          return false;
        }),
      ).catch(() => false);
      return inked === true;
    }, 'the viewer to draw the PDF');
    // What the viewer would tell a model (its current page, its file) is shown, not refused.
    await drawer().locator('.app-context', { hasText: 'For the model, the app offers' }).waitFor();
    await drawer().locator('.app-view').screenshot({ path: join(ARTIFACTS, 'apps-pdf-1280.png') });
  });

  it('closes the app with the playground', async () => {
    const id = (await drawer().locator('iframe[data-mcp-app]').getAttribute('data-app-id')) ?? '';
    expect(frames.get(id)).toBeDefined();
    await drawer().getByRole('button', { name: 'Close the playground' }).click();
    await untilValue(() => frames.get(id) === undefined, 'the worker to close the app');
    const gone = await fleet.request(`/api/mcp/apps/${id}/messages`, { method: 'POST', body: { message: { jsonrpc: '2.0', method: 'ping' } } });
    expect(gone.status).toBe(404);
    expect(recorder.errors).toEqual([]);
  });
});
