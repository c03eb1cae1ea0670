// The MCP conformance suite's server scenarios (`conformance server
// --requirements 2025-11-25` and `2026-07-28`) against the conformance fixture
// server directly, then through `/mcp/servers/:name` of a real host that has
// it as a remote server (twice: connected in the 2025 era for the 2025-11-25
// run, in the 2026 era for the other, as a client of that era would want it):
// each scenario must pass the same checks both ways (the server's sampling
// and elicitation requests reach the suite's client through the endpoint). The
// suite sends no credentials, so the endpoint's one auth parameter is a test
// auth here that lets every request in as one user (the principal path, not
// the admin's); Host checking is the management app's own.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMcpHost, type McpHost } from '../../src/host.js';
import { serverEndpoint } from '../../src/gateway/server-endpoint.js';
import { setCaller } from '../../src/http/caller.js';
import { hostCheck } from '../../src/http/security.js';
import { loadExpress } from '../../src/http/express.js';
import { listen, type Listening } from '../../src/http/bind.js';
import { startHttpFixture, type HttpFixture } from '../fixtures/index.js';
import { until } from '../support/wait.js';

const BIN = resolve('node_modules/@modelcontextprotocol/conformance/dist/index.js');
const HOOK = resolve('test/conformance/node20-globsync.mjs');
const TIMEOUT_MS = 5 * 60_000;

/** The fleet's name of the fixture for each run, connected in that run's era. */
const SERVER: Record<string, string> = { '2025-11-25': 'conformance-2025', '2026-07-28': 'conformance-2026' };

interface Scenario {
  passed: number;
  failed: number;
}

function runSuite(url: string, requirements: string): Promise<{ code: number | null; output: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      ['--import', HOOK, BIN, 'server', '--url', url, '--requirements', requirements],
      { timeout: TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => done({ code: error ? ((error as { code?: number }).code ?? 1) : 0, output: `${stdout}\n${stderr}` }),
    );
  });
}

/** `✓ name: P passed, F failed` lines of the summary, by scenario. */
function scenarios(output: string): Map<string, Scenario> {
  const found = new Map<string, Scenario>();
  const summary = output.slice(output.indexOf('=== SUMMARY ==='));
  for (const match of summary.matchAll(/^[✓✗] (\S+): (\d+) passed, (\d+) failed/gmu)) {
    found.set(match[1]!, { passed: Number(match[2]), failed: Number(match[3]) });
  }
  return found;
}

let fixture: HttpFixture;
let host: McpHost;
let served: Listening;
let dir: string;

beforeAll(async () => {
  fixture = await startHttpFixture('conformance-server');
  dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-gateway-one-'));
  const remote = { type: 'remote', url: fixture.url, timeout_seconds: 15 };
  writeFileSync(join(dir, 'mcp_servers.json'), JSON.stringify({ servers: { [SERVER['2025-11-25']!]: { ...remote, protocol: '2025' }, [SERVER['2026-07-28']!]: { ...remote, protocol: '2026' } } }));
  host = createMcpHost({ stateDir: dir, persistJournal: false, samplingForCallers: true, logger: { info: () => {}, warn: () => {} } });
  await host.start();
  await until(() => Object.values(SERVER).every((name) => host.server(name)?.state === 'ready'), 'both servers to be ready');
  const app = loadExpress()();
  app.use(hostCheck('127.0.0.1', []));
  const endpoint = serverEndpoint(host, {
    auth(_req, res, next) {
      setCaller(res, { id: 'conformance', groups: [] });
      next();
    },
  });
  app.use('/mcp/servers', endpoint.router);
  served = await listen(app, { port: 0 });
}, 60_000);

afterAll(async () => {
  await served?.close();
  await host?.shutdown();
  await fixture?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('conformance server scenarios through /mcp/servers/:name', () => {
  it.each(['2025-11-25', '2026-07-28'])(
    '--requirements %s: every scenario passes the same checks as against the server itself',
    async (requirements) => {
      // One after the other: on a loaded core, parallel runs may report fewer checks.
      const direct = scenarios((await runSuite(fixture.url, requirements)).output);
      const proxied = scenarios((await runSuite(new URL(`/mcp/servers/${SERVER[requirements]}`, served.url).href, requirements)).output);
      expect(direct.size).toBeGreaterThan(20);
      expect([...proxied.keys()].sort()).toEqual([...direct.keys()].sort());
      const differing = [...direct].filter(([name, counts]) => {
        const through = proxied.get(name);
        return through === undefined || through.passed !== counts.passed || through.failed !== counts.failed;
      });
      expect(
        differing.map(([name, counts]) => `${name}: direct ${counts.passed}/${counts.failed}, proxied ${proxied.get(name)?.passed}/${proxied.get(name)?.failed}`),
      ).toEqual([]);
      const total = (from: Map<string, Scenario>) => [...from.values()].reduce((sum, each) => sum + each.passed, 0);
      expect(total(proxied)).toBe(total(direct));
    },
    2 * TIMEOUT_MS,
  );
});
