// Child processes of the bench: the real `mcp-fleet serve` worker, the bare
// Express baseline, and waiting until no child of this process is left.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { BENCH_DIR, ROOT, sleep } from './env.js';

export const API_TOKEN = 'bench-token-0123456789abcdef';

/**
 * Pids of this process's live children (Linux /proc), but not the esbuild
 * service that tsx (which runs mcp-fleet's TypeScript) keeps for its whole life.
 */
export function childPids(pid = process.pid) {
  const pids = [];
  try {
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      const text = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
      if (text) pids.push(...text.split(/\s+/).map(Number));
    }
  } catch {
    // Not Linux: nothing to wait for.
  }
  return pids.filter((child) => !commandOf(child).includes('esbuild'));
}

function commandOf(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}

/**
 * Resolves once this process has no child left, so each run starts from the
 * same quiet machine. A child still there after `timeoutMs` is described
 * (a contender that leaks a process is worth knowing about) and killed.
 */
export async function noChildren(timeoutMs = 15_000) {
  const until = Date.now() + timeoutMs;
  while (childPids().length > 0) {
    if (Date.now() > until) {
      for (const pid of childPids()) {
        let what = '';
        try {
          what = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
          what += ` (${readFileSync(`/proc/${pid}/stat`, 'utf8').split(' ')[2]})`;
        } catch {
          // gone meanwhile
        }
        process.stderr.write(`  warning: child ${pid} still running ${timeoutMs} ms after close: ${what}; killing it\n`);
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone meanwhile
        }
      }
      await sleep(100);
      return;
    }
    await sleep(20);
  }
}

/**
 * Starts `mcp-fleet serve` on `stateDir` (port 0) as its own process and
 * resolves once it listens (its worker.json appeared). `ready` resolves when
 * it printed its "N of M enabled servers ready" summary.
 */
export async function startServe(stateDir, { startupConcurrency = 1 } = {}) {
  const child = spawn(
    process.execPath,
    [
      // BENCH_SERVE_NODE_ARGS: node options for the worker alone (`--cpu-prof --cpu-prof-dir=DIR`, which NODE_OPTIONS refuses).
      ...(process.env.BENCH_SERVE_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
      join(ROOT, 'bin', 'mcp-fleet.js'),
      'serve',
      '--state-dir',
      stateDir,
      '--port',
      '0',
      '--log-level',
      'warn',
      '--startup-concurrency',
      String(startupConcurrency),
    ],
    { env: { ...process.env, MCP_FLEET_API_TOKEN: API_TOKEN }, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let stdout = '';
  const ready = new Promise((resolve, reject) => {
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      const summary = /(\d+) of (\d+) enabled servers ready[^\n]*/.exec(stdout);
      if (summary) resolve({ at: performance.now(), line: summary[0] });
    });
    child.once('exit', (code) => reject(new Error(`mcp-fleet serve exited with ${code}: ${stdout}`)));
  });
  ready.catch(() => {});
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const file = join(stateDir, 'worker.json');
  const until = Date.now() + 30_000;
  while (!existsSync(file)) {
    if (child.exitCode !== null) throw new Error(`mcp-fleet serve exited: ${stdout}`);
    if (Date.now() > until) throw new Error('mcp-fleet serve did not listen within 30 s');
    await sleep(5);
  }
  let url;
  for (;;) {
    try {
      url = JSON.parse(readFileSync(file, 'utf8')).url;
      break;
    } catch {
      await sleep(5);
    }
  }
  return {
    url: url.replace(/\/$/, ''),
    pid: child.pid,
    ready,
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * Starts `node ...args` and resolves once its stdout shows where it listens: the
 * first line matching `pattern`'s group 1 (the whole first line without a
 * pattern). Resolves with that URL, the child's pid and a stop.
 */
export async function startListening(args, { env = process.env, pattern, name = args[0] } = {}) {
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const url = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const found = pattern === undefined ? (out.includes('\n') ? [out, out.split('\n')[0].trim()] : null) : pattern.exec(out);
      if (found) resolve(found[1]);
    });
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code}: ${out}`)));
  });
  return {
    url,
    pid: child.pid,
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** A fixture server over HTTP (`script` prints its URL as its first line). */
export function startHttpServer(script) {
  return startListening([script]);
}

/** The bare Express baseline: serves `bodies` ({ path: bytes }) as JSON (behind mcp-fleet's middleware chain with `chain`); resolves with its URL. */
export function startBareExpress(bodyFile, { chain = false } = {}) {
  return startListening([join(BENCH_DIR, 'fixtures', 'bare-express.mjs'), bodyFile, ...(chain ? ['--chain'] : [])], {
    env: { ...process.env, MCP_FLEET_API_TOKEN: API_TOKEN },
    pattern: /listening (http:\/\/\S+)/,
    name: 'bare express',
  });
}
