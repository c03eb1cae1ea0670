// What the fleet suite needs beyond processes.js: a throwaway PostgreSQL
// cluster (the tests' own helper, test/support/postgres.ts, loaded through tsx
// as contenders.js loads mcp-fleet's source), `mcp-fleet serve` workers on the
// file store or on a database, `mcp-fleet import`, and a keep-alive HTTP
// client for their API. Every worker started here is killed when this process
// exits, however it exits; the cluster's helper stops its cluster then too.
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { register } from 'tsx/esm/api';
import { ROOT } from './env.js';
import { API_TOKEN } from './processes.js';

register();
/** `startPostgres()`, `newDatabase(cluster)`: the throwaway cluster of the tests, straight from their TypeScript. */
export const postgres = await import('../../test/support/postgres.ts');

const BIN = join(ROOT, 'bin', 'mcp-fleet.js');
const run = promisify(execFile);

/** A fresh `MCP_FLEET_SECRET_KEY`: 32 random bytes, base64 (what `openssl rand -base64 32` prints). */
export const secretKeyText = () => randomBytes(32).toString('base64');

/** Worker processes not yet seen to exit, and temp dirs not yet removed: both gone when this process exits. */
const live = new Set();
const dirs = new Set();
process.on('exit', function killLeftWorkers() {
  for (const child of live) child.kill('SIGKILL');
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A temp dir removed with `remove()` (or at exit). */
export function tempDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), `mcp-fleet-bench-${prefix}-`));
  dirs.add(dir);
  return {
    dir,
    remove() {
      rmSync(dir, { recursive: true, force: true });
      dirs.delete(dir);
    },
  };
}
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    process.stderr.write(`  ${signal}: stopping the fleet suite's workers and cluster\n`);
    // 'exit' kills the workers; the cluster helper's own 'exit' hook stops the cluster.
    process.exit(130);
  });
}

/** The environment of a worker: the bench token, nothing inherited that would point it elsewhere. */
function workerEnv(secretKey) {
  return {
    ...process.env,
    MCP_FLEET_API_TOKEN: API_TOKEN,
    MCP_FLEET_STATE_DIR: '',
    MCP_FLEET_DATABASE_URL: '',
    ...(secretKey === undefined ? {} : { MCP_FLEET_SECRET_KEY: secretKey }),
  };
}

/**
 * `mcp-fleet serve --port 0` on `stateDir`, on the file store or, with
 * `databaseUrl`, on that PostgreSQL as `workerId`. Resolves once its API
 * listens (the banner names the URL), with `spawnedAt` (the clock just before
 * spawn) and `ready`: a promise of `{ at, line }` once it printed its
 * "N of M enabled servers ready" summary. `args`: more `serve` arguments.
 */
export async function startWorker({ stateDir, databaseUrl, workerId, secretKey, startupConcurrency = 1, args: extra = [] }) {
  const args = [BIN, 'serve', '--state-dir', stateDir, '--port', '0', '--log-level', 'warn', '--startup-concurrency', String(startupConcurrency)];
  if (databaseUrl !== undefined) args.push('--database-url', databaseUrl, '--worker-id', workerId);
  args.push(...extra);
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, args, { env: workerEnv(secretKey), stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(child);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  void exited.then(() => live.delete(child));
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  // Warnings stay on the worker's side unless it fails: the tail is in the error then.
  child.stderr.on('data', (chunk) => (stderr = (stderr + chunk).slice(-4000)));
  const name = workerId ?? 'file-store worker';
  const failure = (code) => new Error(`${name} exited (${code}) early:\n${stdout.slice(-2000)}\n${stderr}`);
  const ready = new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      const summary = /(\d+) of (\d+) enabled servers ready[^\n]*/.exec(stdout);
      if (summary) resolve({ at: performance.now(), line: summary[0] });
    });
    child.once('exit', (code) => reject(failure(code)));
  });
  ready.catch(() => {});
  const url = await new Promise((resolve, reject) => {
    const check = () => {
      const match = /API\s+(http:\/\/127\.0\.0\.1:\d+)\//.exec(stdout);
      if (match) {
        child.stdout.off('data', check);
        resolve(match[1]);
      }
    };
    child.stdout.on('data', check);
    child.once('exit', (code) => reject(failure(code)));
  });
  return {
    url,
    pid: child.pid,
    spawnedAt,
    ready,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** `mcp-fleet import FILE` into `stateDir`, or with `databaseUrl` into that PostgreSQL. */
export async function importServers(file, { stateDir, databaseUrl, secretKey }) {
  const args = [BIN, 'import', file, '--state-dir', stateDir, ...(databaseUrl === undefined ? [] : ['--database-url', databaseUrl])];
  const importing = run(process.execPath, args, { env: workerEnv(secretKey), timeout: 120_000 });
  live.add(importing.child);
  try {
    await importing;
  } finally {
    live.delete(importing.child);
  }
}

/**
 * A client of one worker's API over keep-alive connections (at most
 * `sockets` at once): `request(method, path, json, headers)` → `{ status, json, text, headers }`.
 * `node:http` rather than fetch: less of the client in what is timed.
 */
export function apiClient(url, { sockets = 1 } = {}) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: sockets });
  const { hostname, port } = new URL(url);
  return {
    request(method, path, json, extraHeaders = {}) {
      const body = json === undefined ? undefined : JSON.stringify(json);
      const headers = { ...extraHeaders, authorization: `Bearer ${API_TOKEN}` };
      if (body !== undefined) {
        headers['content-type'] = 'application/json';
        headers['content-length'] = Buffer.byteLength(body);
      }
      return new Promise((resolve, reject) => {
        const req = http.request({ hostname, port, path, method, headers, agent }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk) => (text += chunk));
          res.on('end', () => {
            let parsed;
            try {
              parsed = JSON.parse(text);
            } catch {
              parsed = undefined;
            }
            resolve({ status: res.statusCode, json: parsed, text, headers: res.headers });
          });
        });
        req.on('error', reject);
        req.end(body);
      });
    },
    close: () => agent.destroy(),
  };
}
