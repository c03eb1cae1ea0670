// Headless Debian chromium driven by playwright-core, and what the page tests
// record: every response body the page received (the event stream included)
// and every uncaught page error.
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

// The project compiles without the DOM lib; these callbacks run in the page.
declare const window: any;
declare const document: any;

/** Installed by `.ci/run` (Debian's package); playwright-core downloads no browser. */
export const CHROMIUM = '/usr/bin/chromium';

/** Screenshots land here (gitignored). */
export const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/ui/', import.meta.url));

export async function launchBrowser(): Promise<Browser> {
  mkdirSync(ARTIFACTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Without the background-networking flags chromium phones home, and this
    // machine's closed network refuses it noisily.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** A page of the page tests: a new context, a 15 s default timeout, and a recorder of what it receives. */
export interface RecordedPage {
  context: BrowserContext;
  page: Page;
  recorder: Recorder;
}

/**
 * Opens a recorded page, 1280 px wide (`height` tall, default 800). Reduced
 * motion: scrolling and the pending pulse settle at once, so screenshots are stable.
 */
export async function openRecordedPage(browser: Browser, { height = 800 } = {}): Promise<RecordedPage> {
  const context = await browser.newContext({ viewport: { width: 1280, height }, reducedMotion: 'reduce' });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  return { context, page, recorder: await record(page) };
}

export interface Recorder {
  /** Every response body the page received so far, and every server-sent event's data. */
  bodies(): Promise<Array<{ url: string; text: string }>>;
  /** Uncaught errors of the page's scripts. */
  errors: string[];
}

/**
 * Records what reaches `page`. The SSE stream never ends, so its body cannot
 * be read from the response: an init script wraps `EventSource` to keep each
 * message's data instead.
 */
async function record(page: Page): Promise<Recorder> {
  const pending: Array<Promise<{ url: string; text: string } | undefined>> = [];
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('response', (response) => {
    if (response.url().includes('/events/stream')) return;
    pending.push(
      response.text().then(
        (text) => ({ url: response.url(), text }),
        () => undefined,
      ),
    );
  });
  await page.addInitScript(() => {
    const Native = window.EventSource;
    const seen: string[] = [];
    window.__sse = seen;
    window.EventSource = class Recorded extends Native {
      constructor(url: string, init?: unknown) {
        super(url, init);
        this.addEventListener('journal', (event: { data: string }) => seen.push(event.data));
      }
    };
  });
  return {
    errors,
    async bodies() {
      const responses = (await Promise.all(pending)).filter((body) => body !== undefined);
      const sse: string[] = await page.evaluate(() => window.__sse);
      return [...responses, ...sse.map((text) => ({ url: 'sse', text }))];
    },
  };
}

/** All text the page shows plus every form control's value: where a leaked secret would be. */
export function pageContent(page: Page): Promise<string> {
  return page.evaluate(() => {
    const values = [...document.querySelectorAll('input, textarea, select')].map((el: { value: string }) => el.value);
    return `${document.documentElement.outerHTML}\n${values.join('\n')}`;
  });
}
