// Runs the built `mcp-fleet` command as a user would, in an environment with
// nothing that would redirect it (no token, state dir or profile of the
// test's own environment).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { cleanEnv } from './env.js';
import { until } from './wait.js';

export const BIN = resolve('bin/mcp-fleet.js');

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `mcp-fleet ARGS` (in `cwd`), with `env` added; resolves with its exit code and output. */
export function cli(args: string[], env: Record<string, string> = {}, { cwd }: { cwd?: string } = {}): Promise<Run> {
  return new Promise((done) => {
    execFile(process.execPath, [BIN, ...args], { env: cleanEnv(env), cwd, timeout: 30_000 }, (err, stdout, stderr) => {
      done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** A `mcp-fleet serve` child: what it printed on stdout so far, and its exit. */
export interface ServeProcess {
  child: ChildProcess;
  stdout(): string;
  exited: Promise<void>;
}

/** Spawns `mcp-fleet serve ARGS` (in `cwd`) with `env` added to a clean environment; its stderr is read and dropped. */
export function spawnServe(args: string[], { env = {}, cwd }: { env?: Record<string, string>; cwd?: string } = {}): ServeProcess {
  const child = spawn(process.execPath, [BIN, 'serve', ...args], { env: cleanEnv(env), cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  let stdout = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.resume();
  return { child, stdout: () => stdout, exited };
}

/** A real `mcp-fleet serve` on a fresh state dir holding `servers`, until `stop()`. */
export interface ServeWorker {
  dir: string;
  /** SIGTERM, waits for the exit, removes the state dir. */
  stop(): Promise<void>;
}

/** Starts `mcp-fleet serve --port 0` on `servers` and resolves once it printed that its servers are ready. */
export async function startServe(prefix: string, servers: Record<string, unknown>, serveArgs: string[] = []): Promise<ServeWorker> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  writeFileSync(join(dir, 'mcp_servers.json'), JSON.stringify({ servers }));
  const { child: worker, stdout, exited } = spawnServe(['--state-dir', dir, '--port', '0', ...serveArgs]);
  const stop = async () => {
    if (worker.exitCode === null && worker.signalCode === null) {
      worker.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  // A Python fixture server can take tens of seconds to start on a machine busy with other tests.
  await until(() => /servers ready/.test(stdout()), 'the worker to start', 60_000).catch(async (error: Error) => {
    await stop();
    throw new Error(`${error.message}: ${stdout()}`);
  });
  return { dir, stop };
}
