// What both conformance runners share: starting the tool's CLI (on Node 20,
// with the globSync hook), the `mcp-fleet connect` command line they test, and
// running scenarios a few at a time.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HOOK = fileURLToPath(new URL('./node20-globsync.mjs', import.meta.url));
const BIN = fileURLToPath(new URL('../../bin/mcp-fleet.js', import.meta.url));
// The client ID metadata document URL the suite's CIMD scenarios expect (SEP-991).
const CLIENT_METADATA_URL = 'https://conformance-test.local/client-metadata.json';
/** Per scenario, as the tool counts it; sse-retry alone takes ~1 s, OAuth flows a few. */
export const SCENARIO_TIMEOUT_MS = 60_000;
/** Scenarios running at once; each is a client process (node + tsx) plus the tool's mock servers. */
export const JOBS = 3;

/** The CLI entry point of the installed package `name` (its package.json `bin`); `version` must match. */
export function conformanceBin(name, version) {
  const require = createRequire(import.meta.url);
  const manifestPath = require.resolve(`${name}/package.json`);
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
  if (!version.test(manifest.version)) throw new Error(`${name} is ${manifest.version}; this runner reads ${version} output`);
  return join(dirname(manifestPath), manifest.bin.conformance);
}

/** Runs the conformance CLI at `bin` with `args`; resolves to its exit code and output. */
export function runCli(bin, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', HOOK, bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** `mcp-fleet connect` on state dir `stateDir`, as one shell command line (the tool runs it through a shell). */
export function connectCommand(stateDir) {
  return [process.execPath, BIN, 'connect', '--state-dir', stateDir, '--client-metadata-url', CLIENT_METADATA_URL]
    .map(shellQuote)
    .join(' ');
}

/** Runs `task` over `items`, at most `jobs` at a time, keeping their order. */
export async function pool(items, jobs, task) {
  const results = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await task(items[index]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(jobs, items.length) }, worker));
  return results;
}

function shellQuote(word) {
  return /^[\w@%+=:,./-]+$/u.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}
