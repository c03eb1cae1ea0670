// 9. Package: what running the built package (dist/, plain JavaScript) costs at
// start against the previous way, mcp-fleet's TypeScript source through tsx's
// ESM loader (the old bin/mcp-fleet.js), measured in the same run. Every sample
// is a fresh process, the contenders taking turns:
// - `mcp-fleet --help`: spawn → exit;
// - `mcp-fleet serve` on an empty config: spawn → first `/healthz` 200;
// - RSS after `import('mcp-fleet')` (then a full GC), beside bare Node and the
//   raw SDK alone (`import('@modelcontextprotocol/client')`).
//   Also after `createManagementApp`, which loads express (lazily, not with the import).
// One unmeasured run of each first, so tsx's transform cache and the OS file
// cache are warm for both: the steady state of a machine that ran it before.
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT, sleep } from '../lib/env.js';
import { alternate, fmt, fmtRange, ratio, summarize, table } from '../lib/stats.js';
import { log, runSuite } from '../lib/suite.js';

const run = promisify(execFile);
const BIN = join(ROOT, 'bin', 'mcp-fleet.js');
const CLI_SOURCE = join(ROOT, 'src', 'cli.ts');
const TOKEN = 'bench-token-0123456789abcdef';
/** `node ARGS` of the CLI, built or through tsx. */
const CLI = { built: [BIN], tsx: ['--import', 'tsx/esm', CLI_SOURCE] };
/** What each RSS sample imports, and the Node flags it needs. */
const IMPORTS = {
  node: { label: 'Node alone (nothing imported)', flags: [], specifier: null },
  sdk: { label: "raw SDK: import('@modelcontextprotocol/client')", flags: [], specifier: '@modelcontextprotocol/client' },
  built: { label: "mcp-fleet built: import('mcp-fleet') → dist/", flags: [], specifier: 'mcp-fleet' },
  tsx: { label: "mcp-fleet source through tsx: import('./src/index.ts')", flags: ['--import', 'tsx/esm'], specifier: './src/index.ts' },
  // Express loads with the first management app, not with the import: what an embedder serving the API pays.
  app: {
    label: "mcp-fleet built, then `createManagementApp(createMcpHost(…))` (loads express)",
    flags: [],
    specifier: 'mcp-fleet',
    then: `const { mkdtempSync } = await import('node:fs');
      const { tmpdir } = await import('node:os');
      const host = loaded.createMcpHost({ stateDir: mkdtempSync(tmpdir() + '/mcp-fleet-bench-rss-') });
      loaded.createManagementApp(host, { token: ${JSON.stringify(TOKEN)} });`,
  },
};
/** The issue's target: 75 MiB where the raw SDK alone was about 60, so this much over the SDK measured in the same run. */
const OVER_SDK_MIB = 15;
const MiB = 1024 * 1024;

function env() {
  const clean = { ...process.env, MCP_FLEET_API_TOKEN: TOKEN };
  for (const key of ['MCP_FLEET_STATE_DIR', 'MCP_FLEET_PROFILE', 'MCP_FLEET_DATABASE_URL']) delete clean[key];
  return clean;
}

/** ms from spawn to exit of `mcp-fleet --help`. */
async function helpOnce(key) {
  const started = performance.now();
  const { stdout } = await run(process.execPath, [...CLI[key], '--help'], { cwd: ROOT, env: env() });
  const elapsed = performance.now() - started;
  if (!stdout.startsWith('Usage: mcp-fleet')) throw new Error(`--help (${key}) printed: ${stdout.slice(0, 200)}`);
  return elapsed;
}

/** ms from spawn of `mcp-fleet serve` (empty config, port 0) to its first `/healthz` 200; then stops it. */
async function healthzOnce(key) {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-bench-package-'));
  writeFileSync(join(dir, 'mcp_servers.json'), '{"servers":{}}', { mode: 0o600 });
  const started = performance.now();
  const child = spawn(process.execPath, [...CLI[key], 'serve', '--state-dir', dir, '--port', '0', '--log-level', 'warn'], {
    cwd: ROOT,
    env: env(),
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    const file = join(dir, 'worker.json');
    for (;;) {
      if (child.exitCode !== null) throw new Error(`mcp-fleet serve (${key}) exited with ${child.exitCode}`);
      if (performance.now() - started > 30_000) throw new Error(`mcp-fleet serve (${key}) did not answer within 30 s`);
      const url = existsSync(file) ? workerUrl(file) : undefined;
      if (url && (await healthy(url))) return performance.now() - started;
      await sleep(2);
    }
  } finally {
    child.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  }
}

function workerUrl(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8')).url;
  } catch {
    return undefined; // being written
  }
}

async function healthy(url) {
  try {
    return (await fetch(new URL('healthz', url))).status === 200;
  } catch {
    return false;
  }
}

/** MiB of RSS (and heap) of a fresh Node after importing `specifier` and a full GC. */
async function rssOnce(key) {
  const { flags, specifier, then = '' } = IMPORTS[key];
  const script = `${specifier ? `const loaded = await import(${JSON.stringify(specifier)});` : ''}
    ${then}
    for (let i = 0; i < 4; i += 1) globalThis.gc();
    const { rss, heapUsed } = process.memoryUsage();
    console.log(JSON.stringify({ rss, heapUsed }));`;
  const { stdout } = await run(process.execPath, [...flags, '--expose-gc', '--input-type=module', '-e', script], { cwd: ROOT, env: env() });
  const { rss, heapUsed } = JSON.parse(stdout.trim().split('\n').at(-1));
  return { rss: rss / MiB, heap: heapUsed / MiB };
}

await runSuite('package', async ({ reps }) => {
  if (!existsSync(join(ROOT, 'dist', 'cli.js'))) throw new Error('dist/ is not built: run `npm run build` (npm run bench does)');
  const sample = (what) => (key, rep, value) => log(`${what} ${key} rep ${rep + 1}: ${typeof value === 'number' ? fmt(value) : JSON.stringify(value)}`);

  for (const key of Object.keys(CLI)) {
    await helpOnce(key);
    await healthzOnce(key);
  }
  for (const key of Object.keys(IMPORTS)) await rssOnce(key);

  const help = await alternate(Object.keys(CLI), reps, helpOnce, { onSample: sample('--help ms') });
  const healthz = await alternate(Object.keys(CLI), reps, healthzOnce, { onSample: sample('serve → /healthz ms') });
  const memory = await alternate(Object.keys(IMPORTS), reps, rssOnce, { onSample: sample('import MiB') });

  const stats = {
    help: { built: summarize(help.built), tsx: summarize(help.tsx) },
    healthz: { built: summarize(healthz.built), tsx: summarize(healthz.tsx) },
    rss: Object.fromEntries(Object.entries(memory).map(([key, values]) => [key, summarize(values.map((v) => v.rss))])),
    heap: Object.fromEntries(Object.entries(memory).map(([key, values]) => [key, summarize(values.map((v) => v.heap))])),
  };
  const startRows = [
    ['`mcp-fleet --help`: spawn → exit, ms', fmtRange(stats.help.built, 0), fmtRange(stats.help.tsx, 0), ratio(stats.help.built, stats.help.tsx)],
    [
      '`mcp-fleet serve` (empty config): spawn → `/healthz` 200, ms',
      fmtRange(stats.healthz.built, 0),
      fmtRange(stats.healthz.tsx, 0),
      ratio(stats.healthz.built, stats.healthz.tsx),
    ],
    [
      "RSS after `import('mcp-fleet')`, MiB",
      fmtRange(stats.rss.built),
      fmtRange(stats.rss.tsx),
      ratio(stats.rss.built, stats.rss.tsx),
    ],
  ];
  const memoryRows = Object.entries(IMPORTS).map(([key, { label }]) => [
    label,
    fmtRange(stats.rss[key]),
    ratio(stats.rss[key], stats.rss.sdk),
    fmtRange(stats.heap[key]),
  ]);
  return {
    title: 'Package: the built package (dist/) against the source through tsx, fresh process per sample',
    stats,
    targets: [
      {
        name: "≤ 75 MiB RSS after import('mcp-fleet') (built)",
        value: `${fmt(stats.rss.built.median)} MiB (raw SDK alone ${fmt(stats.rss.sdk.median)} MiB)`,
        pass: stats.rss.built.median <= 75,
      },
      {
        name: `≤ ${OVER_SDK_MIB} MiB over the raw SDK after import('mcp-fleet') (the issue's 75 MiB against its 60 MiB SDK)`,
        value: `${fmt(stats.rss.built.median - stats.rss.sdk.median)} MiB over`,
        pass: stats.rss.built.median - stats.rss.sdk.median <= OVER_SDK_MIB,
      },
    ],
    markdown: [
      table(['measure', 'built (dist/): median (min–max)', 'source through tsx: median (min–max)', 'built vs tsx'], startRows),
      '',
      table(['fresh `node --expose-gc`, after a full GC', 'RSS MiB: median (min–max)', 'RSS vs raw SDK', 'heap used MiB: median (min–max)'], memoryRows),
    ].join('\n'),
  };
});
