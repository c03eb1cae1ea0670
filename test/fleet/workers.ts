// Real `mcp-fleet serve --database-url` processes for the fleet tests: each
// with a state dir of its own (API token, worker.json), all on one database.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { generateSecretKeyText } from '../../src/config/secrets/secret-key.js';
import { newDatabase, startPostgres, type PgCluster } from '../support/postgres.js';
import { TOKEN } from '../http/helpers.js';
import { BIN } from '../support/cli.js';
import { cleanEnv } from '../support/env.js';
import { until } from '../support/wait.js';


export interface FleetWorkerProcess {
  id: string;
  url: string;
  child: ChildProcess;
  /** Everything it printed (stdout and stderr). */
  output(): string;
  request(path: string, init?: RequestInit & { json?: unknown }): Promise<{ status: number; json: any; text: string; headers: Headers }>;
  exited: Promise<unknown>;
  stop(): Promise<void>;
}

export interface StartWorkerOptions {
  id: string;
  databaseUrl: string;
  secretKey: string;
  /** Wait for this text on its output instead of the startup summary. */
  until?: RegExp;
  /** The port (default 0: any free one). */
  port?: number;
  /** More `serve` arguments (e.g. `--public-url U`). */
  args?: string[];
  env?: Record<string, string>;
}

/** Starts a worker; resolves once it printed `until` (default: the startup summary). */
export function startFleetWorker(options: StartWorkerOptions): Promise<FleetWorkerProcess> {
  const dir = mkdtempSync(join(tmpdir(), `mcp-fleet-worker-${options.id}-`));
  const child = spawn(
    process.execPath,
    [
      BIN,
      'serve',
      '--state-dir',
      dir,
      '--port',
      String(options.port ?? 0),
      '--database-url',
      options.databaseUrl,
      '--worker-id',
      options.id,
      ...(options.args ?? []),
    ],
    {
      env: cleanEnv({ MCP_FLEET_API_TOKEN: TOKEN, MCP_FLEET_SECRET_KEY: options.secretKey, ...options.env }),
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  const exited = new Promise((done) => child.once('exit', done));
  exited.then(() => rmSync(dir, { recursive: true, force: true }));
  const until = options.until ?? /enabled servers ready/;
  return new Promise((resolveWorker, reject) => {
    const check = () => {
      const match = /API\s+(http:\/\/127\.0\.0\.1:\d+)\//.exec(out);
      if (match && until.test(out)) {
        child.stdout!.off('data', onData);
        child.stderr!.off('data', onData);
        child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
        child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()));
        resolveWorker(workerOf(options.id, match[1]!, child, () => out, exited));
      }
    };
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      check();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`worker ${options.id} exited (${code}) before it was up:\n${out}`)));
  });
}

function workerOf(id: string, url: string, child: ChildProcess, output: () => string, exited: Promise<unknown>): FleetWorkerProcess {
  return {
    id,
    url,
    child,
    output,
    exited,
    async request(path, init = {}) {
      const { json, ...rest } = init;
      const headers = new Headers(rest.headers);
      headers.set('authorization', `Bearer ${TOKEN}`);
      if (json !== undefined) headers.set('content-type', 'application/json');
      const response = await fetch(`${url}${path}`, { ...rest, headers, ...(json === undefined ? {} : { body: JSON.stringify(json) }) });
      const text = await response.text();
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      return { status: response.status, json: parsed, text, headers: response.headers };
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * What a fleet test file shares: one real cluster for the file, one secret
 * key, and the workers each test starts, stopped after it.
 */
export function fleetTestBed() {
  let cluster: PgCluster | undefined;
  const started: FleetWorkerProcess[] = [];
  const secretKey = generateSecretKeyText();
  beforeAll(async () => {
    cluster = await startPostgres();
  });
  afterEach(async () => {
    await Promise.all(started.splice(0).map((worker) => worker.stop()));
  });
  afterAll(async () => {
    await cluster?.destroy();
  });
  return {
    secretKey,
    cluster: (): PgCluster => cluster!,
    /** A fresh database in the cluster: its URL. */
    database: () => newDatabase(cluster!),
    async worker(id: string, databaseUrl: string, extra: Omit<StartWorkerOptions, 'id' | 'databaseUrl' | 'secretKey'> = {}) {
      const worker = await startFleetWorker({ id, databaseUrl, secretKey, ...extra });
      started.push(worker);
      return worker;
    },
    /** Stops every worker started so far (a test that restarts its fleet). */
    async stopAll(): Promise<void> {
      await Promise.all(started.splice(0).map((worker) => worker.stop()));
    },
  };
}

/** Waits until `worker` shows `name` in `state`. */
export async function untilStateOn(worker: FleetWorkerProcess, name: string, state: string, timeout = 20_000): Promise<void> {
  let seen: unknown;
  await until(
    async () => (seen = (await worker.request(`/api/mcp/servers/${name}`)).json?.state) === state,
    `${name} to be ${state} on ${worker.id}`,
    timeout,
  ).catch((error: Error) => {
    throw new Error(`${error.message}: it is ${String(seen)}\n${worker.output().slice(-2000)}`);
  });
}
