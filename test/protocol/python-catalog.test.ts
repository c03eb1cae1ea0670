// A real Python MCP server (mcp 2.3.0's MCPServer, test/fixtures/python/
// growing_catalog.py) adds tools at run time and announces them in either of
// the SDK's two idioms, over stdio and Streamable HTTP, on both protocol eras.
// Which announcements reach mcp-fleet, and how a change it never hears of
// still arrives: catalog_max_age_seconds, the server's ttlMs, a forced refresh.
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { pythonCommand, startPythonHttpFixture, type HttpFixture } from '../fixtures/index.js';
import { isAlive } from '../support/processes.js';
import { collectGarbage } from '../support/gc.js';
import { until } from '../support/wait.js';
import { startHost, textOf, type Running } from './helpers.js';

type Transport = 'stdio' | 'http';
type Era = '2025' | '2026';

let running: Running | undefined;
let http: HttpFixture | undefined;
afterEach(async () => {
  // Each taken before it is awaited: one that hangs fails its own test, not the next.
  const [run, fixture] = [running, http];
  running = undefined;
  http = undefined;
  await run?.close();
  await fixture?.stop();
  if (fixture) expect(isAlive(fixture.child.pid!)).toBe(false);
});

/** A host on one growing_catalog server named `py`, ready. */
async function pythonHost(
  transport: Transport,
  protocol: Era,
  { env = {}, config = {} }: { env?: Record<string, string>; config?: Record<string, unknown> } = {},
): Promise<Running> {
  // A start that fails says why (the server's error is only logged).
  const warnings: string[] = [];
  const options = { logger: { info() {}, warn: (message: string) => void warnings.push(message) } };
  const started = (promise: Promise<Running>) =>
    promise.catch((error: Error) => {
      throw new Error(`${error.message}: ${warnings.join(' / ')}`);
    });
  if (transport === 'http') {
    http = await startPythonHttpFixture('growing_catalog', ['--http'], env);
    const url = http.url;
    running = await started(
      startHost(() => ({ py: { type: 'remote', url, transport: 'streamable_http', protocol, timeout_seconds: 20, ...config } }), ['py'], options),
    );
  } else {
    running = await started(
      startHost(
        (dir) => ({
          py: {
            type: 'local',
            command: pythonCommand('growing_catalog'),
            env: { FIXTURE_PID_FILE: join(dir, 'py.pid'), ...env },
            protocol,
            timeout_seconds: 20,
            ...config,
          },
        }),
        ['py'],
        options,
      ),
    );
  }
  return running;
}

/** Has the server add tool `name`, announced by `idiom`. */
async function grow(run: Running, idiom: 'old' | 'new', name: string): Promise<void> {
  const result = await run.host.callTool(`py__add_tool_${idiom}`, { name });
  expect(textOf(result)).toBe(name);
}

/** The added tool answers a call through its mounted name. */
async function expectCallable(run: Running, name: string): Promise<void> {
  expect(run.host.hasTool(`py__${name}`)).toBe(true);
  const result = await run.host.callTool(`py__${name}`, { text: 'hi' });
  expect(result.details.is_error).toBe(false);
  expect(textOf(result)).toBe(`${name} says hi`);
}

/** Waits until tool `name` is mounted, then calls it. */
async function untilCallable(run: Running, name: string): Promise<void> {
  await until(() => run.host.hasTool(`py__${name}`), `py__${name} to be mounted`, 10_000);
  await expectCallable(run, name);
}

/** What the journal says tool listings added, in order. */
const toolsAdded = (run: Running) => run.events('catalog.changed').filter((e) => e.kind === 'tools').flatMap((e) => e.added);

// Long enough for a delivered announcement's re-list (tens of ms) on a busy machine.
const HEARING_MS = 1500;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each([
  ['stdio', '2025'],
  ['stdio', '2026'],
  ['http', '2025'],
  ['http', '2026'],
] as Array<[Transport, Era]>)('growing_catalog.py over %s, protocol %s', (transport, protocol) => {
  it('hears the idiom of its era only; a forced refresh finds what it did not hear', { timeout: 60_000 }, async () => {
    const run = await pythonHost(transport, protocol);
    expect(run.host.hasTool('py__echo')).toBe(true);

    // ctx.session.send_tool_list_changed(): the 2025 way, dropped on a 2026-07-28 connection.
    await grow(run, 'old', 'by_old');
    if (protocol === '2025') {
      await untilCallable(run, 'by_old');
    } else {
      await sleep(HEARING_MS);
      expect(run.host.hasTool('py__by_old')).toBe(false);
      expect(toolsAdded(run)).toEqual([]);
    }

    // ctx.notify_tools_changed(): published to subscriptions/listen streams, which only the 2026 era opens.
    await grow(run, 'new', 'by_new');
    if (protocol === '2026') {
      await untilCallable(run, 'by_new');
      // Its re-list also finds the tool whose announcement was dropped.
      await expectCallable(run, 'by_old');
      expect(toolsAdded(run)).toEqual(['by_old', 'by_new']);
    } else {
      await sleep(HEARING_MS);
      expect(run.host.hasTool('py__by_new')).toBe(false);
      expect(toolsAdded(run)).toEqual(['by_old']);
    }

    // Unheard in either era, until a forced re-list.
    await grow(run, protocol === '2025' ? 'new' : 'old', 'by_refresh');
    const counts = await run.host.refreshCatalog('py');
    await expectCallable(run, 'by_refresh');
    expect(counts).toEqual({ tools: run.host.tools().filter((tool) => tool.server === 'py').length, resources: 1, prompts: 1 });
    expect(toolsAdded(run).at(-1)).toBe('by_refresh');
  });
});

describe('a 2026 connection to a server announcing the 2025 way', () => {
  it('catalog_max_age_seconds: an older tool listing is listed again when next read', { timeout: 60_000 }, async () => {
    const run = await pythonHost('stdio', '2026', { config: { catalog_max_age_seconds: 1 } });
    await grow(run, 'old', 'aged');
    // A listing gets old by time alone: wait past catalog_max_age_seconds (1 s).
    await sleep(1100);
    // tools() answers at once and re-lists behind it; the next read has the tool.
    expect(run.host.tools().some((tool) => tool.name === 'py__aged')).toBe(false);
    await untilCallable(run, 'aged');
    expect(toolsAdded(run)).toEqual(['aged']);

    // freshen() (what the API routes and agent turns wait for) answers with the listing re-listed.
    await grow(run, 'old', 'aged_again');
    await sleep(1100);
    await run.host.freshen();
    await expectCallable(run, 'aged_again');
  });

  it("the server's ttlMs: a listing past it is listed again when next read", { timeout: 60_000 }, async () => {
    const run = await pythonHost('http', '2026', { env: { TOOLS_TTL_MS: '1000' } });
    await grow(run, 'old', 'expired');
    // A listing expires by time alone: wait past the server's ttlMs (1 s).
    await sleep(1100);
    await run.host.freshen();
    await expectCallable(run, 'expired');
    expect(toolsAdded(run)).toEqual(['expired']);
  });

  it('without either, the tool stays unheard however often the catalog is read', { timeout: 60_000 }, async () => {
    const run = await pythonHost('stdio', '2026');
    await grow(run, 'old', 'unheard');
    // As long as the other tests wait for their listing to age: here none does.
    await sleep(1100);
    await run.host.freshen();
    run.host.tools();
    await sleep(HEARING_MS);
    expect(run.host.hasTool('py__unheard')).toBe(false);
  });
});

describe('shutdown', () => {
  it('ends the 2026 listen stream after a garbage collection: the server, waiting for its streams, exits', { timeout: 60_000 }, async () => {
    const run = await pythonHost('http', '2026');
    const fixture = http!;
    // The stream is open once an announcement on it is heard.
    await grow(run, 'new', 'heard');
    await untilCallable(run, 'heard');
    await collectGarbage();
    running = undefined;
    await run.close();
    // uvicorn lets its open requests end before it exits: a stream left open keeps it running.
    const exited = fixture.stop().then(() => 'exited');
    const outcome = await Promise.race([exited, sleep(10_000).then(() => 'still running 10 s after SIGTERM')]);
    if (outcome !== 'exited') fixture.child.kill('SIGKILL');
    expect(outcome).toBe('exited');
  });
});

describe('refreshCatalog', () => {
  it('refuses an unknown server and one that is not ready', { timeout: 30_000 }, async () => {
    running = await startHost(() => ({ off: { type: 'local', command: pythonCommand('growing_catalog'), enabled: false } }), []);
    await expect(running.host.refreshCatalog('nope')).rejects.toThrow(/nope/);
    await expect(running.host.refreshCatalog('off')).rejects.toThrow('server "off" is not ready (state: disabled)');
  });
});

