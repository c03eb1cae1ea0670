// The real worker (`bin/mcp-fleet.js serve`) and the HTTP fixture server as
// child processes, raw requests against them, and the CLI run in process
// with its output captured.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { buildProgram, type CliIO } from '../../src/cli.js';
import { fixture } from '../fixtures/index.js';
import { request as rawRequest, type Reply, type RequestOptions } from '../http/helpers.js';
import { cleanEnv } from '../support/env.js';
import { freePort } from '../support/ports.js';
import { until } from '../support/wait.js';
import { BIN } from '../support/cli.js';


/** A loopback port nothing listens on (bound, then released). */
export const deadPort = freePort;

/** A child whose stdout and stderr are kept whole. */
export interface Captured {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function capture(child: ChildProcess): Captured {
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.on('exit', (code, signal) => done({ code, signal })),
  );
  return { child, stdout: () => stdout, stderr: () => stderr, exit };
}

/** `test/fixtures/http-server.mjs` with `env`; resolves with its MCP URL once it listens. */
export async function startHttpFixture(env: Record<string, string>): Promise<Captured & { url: string }> {
  const child = spawn(process.execPath, [fixture('http-server')], { env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  const captured = capture(child);
  let url = '';
  await until(() => {
    url = /listening (\S+)/.exec(captured.stdout())?.[1] ?? '';
    return url !== '';
  }, 'the HTTP fixture to listen');
  return { ...captured, url };
}

/** A worker started by `mcp-fleet serve --port 0`, its token and a request function. */
export interface ChildWorker extends Captured {
  dir: string;
  port: number;
  token: string;
  /** A request with the worker's token (unless `headers.authorization` says otherwise). */
  request(path: string, options?: RequestOptions): Promise<Reply>;
  /** SIGTERM; resolves with the exit status. */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Runs the real binary on `dir` and waits until it listens (worker.json written). */
export async function startChildWorker(dir: string, args: string[] = []): Promise<ChildWorker> {
  const child = spawn(process.execPath, [BIN, 'serve', '--state-dir', dir, '--port', '0', ...args], {
    env: cleanEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const captured = capture(child);
  const workerFile = join(dir, 'worker.json');
  await until(() => existsSync(workerFile) || child.exitCode !== null, 'the worker to listen');
  if (child.exitCode !== null) throw new Error(`serve exited ${child.exitCode}: ${captured.stderr()}`);
  const { url } = JSON.parse(readFileSync(workerFile, 'utf8')) as { url: string };
  const port = Number(new URL(url).port);
  const token = readFileSync(join(dir, 'api_token'), 'utf8').trim();
  return {
    ...captured,
    dir,
    port,
    token,
    request: (path, options = {}) =>
      rawRequest(port, path, { ...options, headers: { authorization: `Bearer ${token}`, ...options.headers } }),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return captured.exit;
    },
  };
}

/**
 * Opens `GET path` as a server-sent event stream and reads it until `done`
 * holds for everything received so far, then hangs up; resolves with the
 * status and the text. Rejects (with what did arrive) after `timeoutMs`.
 */
export function readStream(
  worker: ChildWorker,
  path: string,
  done: (text: string) => boolean,
  timeoutMs = 20_000,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, fail) => {
    let text = '';
    const timer = setTimeout(() => {
      req.destroy();
      fail(new Error(`the stream ${path} did not deliver what was awaited within ${timeoutMs} ms; got: ${text.slice(-500)}`));
    }, timeoutMs);
    const req = http.request(
      {
        host: '127.0.0.1',
        port: worker.port,
        path,
        headers: { host: `127.0.0.1:${worker.port}`, authorization: `Bearer ${worker.token}` },
        agent: false,
      },
      (res) => {
        const finish = () => {
          clearTimeout(timer);
          req.destroy();
          resolve({ status: res.statusCode ?? 0, text });
        };
        // A refusal is a plain answer, not a stream: its body is all there is.
        if (res.statusCode !== 200) res.on('end', finish);
        res.setEncoding('utf8').on('data', (chunk: string) => {
          text += chunk;
          if (res.statusCode === 200 && done(text)) finish();
        });
      },
    );
    req.on('error', (err) => {
      if (req.destroyed) return;
      clearTimeout(timer);
      fail(err);
    });
    req.end();
  });
}

/** What one CLI command printed and its exit code (undefined = 0). */
export interface CliRun {
  out: string;
  err: string;
  code: number | undefined;
}

/** Runs `mcp-fleet ...args` in this process (the client commands are thin API clients); output captured. */
export async function cli(args: string[]): Promise<CliRun> {
  const run: CliRun = { out: '', err: '', code: undefined };
  const io: CliIO = {
    stdout: (text) => void (run.out += text),
    stderr: (text) => void (run.err += text),
    setExitCode: (code) => void (run.code = code),
  };
  try {
    await buildProgram(io).exitOverride().parseAsync(['node', 'mcp-fleet', ...args]);
  } catch (err) {
    // A bug would escape `action()`: keep what it would have printed, stack included.
    run.err += `${(err as Error).stack ?? String(err)}\n`;
    run.code = 1;
  }
  return run;
}
