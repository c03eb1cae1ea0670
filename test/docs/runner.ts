// Runs documentation examples the way a reader would, in the project where the
// packed tarball is installed (test/support/packed-project.ts):
// - js: saved as <name>.mjs, run with `node`;
// - ts: saved as <name>.ts, type-checked and compiled with the repository's
//   tsc and compiler options against the installed declarations, then run;
// - sh: run with bash (-euo pipefail), the installed `mcp-fleet` on PATH and
//   MCP_FLEET_STATE_DIR naming a worker (`mcp-fleet serve`) on a copy of the
//   demo config, started at the first sh example and shared by the rest.
// Each example runs in a process group of its own: it must exit 0 by itself
// within the bound and leave no process of that group running.
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { cleanEnv } from '../support/env.js';
import { ROOT, type PackedProject } from '../support/packed-project.js';
import type { DocExample } from './extract.js';

/** How long an example may run before it is killed and fails (ms). */
export const DEFAULT_EXAMPLE_TIMEOUT_MS = 60_000;
/** How long the processes of an example's group may take to go once it has exited (ms). */
const EXIT_GRACE_MS = 1_000;
/** The demo config the sh examples' worker runs a copy of. */
const DEMO_DIR = join(ROOT, 'examples', 'demo');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

/** Where an example failed; `undefined` when it passed. */
export type FailureKind = 'packages' | 'typecheck' | 'exit' | 'timeout' | 'left-processes';

/** What running one example did. */
export interface ExampleOutcome {
  example: DocExample;
  passed: boolean;
  failure?: FailureKind;
  /** One line: what went wrong (or `passed`). */
  message: string;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Processes of the example's group still running after it exited: `pid command`. */
  leftBehind: string[];
  ms: number;
}

/** Options of one run. */
export interface RunOptions {
  /** Bound on the example's own run, not counting type-checking (ms). */
  timeoutMs?: number;
}

/** The whole report of a failed example, for a test's error: message, then stdout and stderr. */
export function explain(outcome: ExampleOutcome): string {
  const parts = [`${outcome.example.name}: ${outcome.message}`];
  if (outcome.leftBehind.length > 0) parts.push(`left running:\n${outcome.leftBehind.join('\n')}`);
  if (outcome.stdout.trim() !== '') parts.push(`stdout:\n${outcome.stdout.trimEnd()}`);
  if (outcome.stderr.trim() !== '') parts.push(`stderr:\n${outcome.stderr.trimEnd()}`);
  return parts.join('\n\n');
}

/** Throws an Error carrying explain(outcome) unless the example passed. */
export function assertPassed(outcome: ExampleOutcome): void {
  if (!outcome.passed) throw new Error(explain(outcome));
}

/** The worker the sh examples talk to. */
interface Worker {
  child: ChildProcess;
  stateDir: string;
  token: string;
  /** The line `serve` printed once startup had gone through every server. */
  readyLine: string;
}

/** Runs examples one at a time in one installed project. */
export class ExampleRunner {
  #worker: Promise<Worker> | undefined;
  readonly #home: string;

  constructor(readonly project: PackedProject) {
    this.#home = join(project.temp, 'home');
    mkdirSync(this.#home, { recursive: true });
  }

  /** Runs one example to completion; never throws for a failing example, only reports it. */
  async run(example: DocExample, options: RunOptions = {}): Promise<ExampleOutcome> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_EXAMPLE_TIMEOUT_MS;
    const started = Date.now();
    const slug = `${example.file.replace(/[^A-Za-z0-9]+/g, '_')}_${example.line}`;
    const outcome = (fields: Partial<ExampleOutcome> & Pick<ExampleOutcome, 'message'>): ExampleOutcome => ({
      example,
      passed: fields.failure === undefined,
      exitCode: null,
      signal: null,
      stdout: '',
      stderr: '',
      leftBehind: [],
      ...fields,
      ms: Date.now() - started,
    });

    const missing = this.#provide(example.packages);
    if (missing.length > 0) {
      return outcome({
        failure: 'packages',
        message: `\`// npm install\` names ${missing.join(', ')}, not in the repository's node_modules: add it to devDependencies`,
      });
    }

    const { app } = this.project;
    let command: string[];
    let env: NodeJS.ProcessEnv;
    if (example.lang === 'sh') {
      const worker = await this.#startWorker();
      writeFileSync(join(app, `${slug}.sh`), `set -euo pipefail; ${example.code}`);
      command = ['bash', `${slug}.sh`];
      env = {
        ...this.#baseEnv(),
        PATH: `${join(app, 'node_modules', '.bin')}:${process.env.PATH ?? ''}`,
        MCP_FLEET_STATE_DIR: worker.stateDir,
        MCP_FLEET_API_TOKEN: worker.token,
      };
    } else {
      env = { ...this.#baseEnv(), MCP_FLEET_STATE_DIR: this.#freshDir(`${slug}-state`) };
      if (example.lang === 'js') {
        writeFileSync(join(app, `${slug}.mjs`), example.code);
        command = [process.execPath, `${slug}.mjs`];
      } else {
        const checked = await this.#compile(slug, example.code);
        if (checked !== undefined) return outcome({ failure: 'typecheck', message: 'tsc rejected it', ...checked });
        command = [process.execPath, `${slug}.js`];
      }
    }

    const run = await runInGroup(command, { cwd: app, env, timeoutMs });
    const result = { exitCode: run.exitCode, signal: run.signal, stdout: run.stdout, stderr: run.stderr, leftBehind: run.leftBehind };
    if (run.timedOut) return outcome({ ...result, failure: 'timeout', message: `did not exit within ${timeoutMs / 1000} s (killed)` });
    if (run.exitCode !== 0) {
      return outcome({ ...result, failure: 'exit', message: `exited with ${run.exitCode === null ? `signal ${run.signal}` : `code ${run.exitCode}`}` });
    }
    if (run.leftBehind.length > 0) {
      return outcome({ ...result, failure: 'left-processes', message: `exited 0 but left ${run.leftBehind.length} process(es) running (killed now)` });
    }
    return outcome({ ...result, message: 'passed' });
  }

  /** The sh examples' worker, started on first use: its readiness line (for tests of the harness). */
  async workerReadyLine(): Promise<string> {
    return (await this.#startWorker()).readyLine;
  }

  /** Stops the worker (SIGTERM, then the whole group with SIGKILL if it lingers). */
  async close(): Promise<void> {
    const worker = await this.#worker?.catch(() => undefined);
    if (!worker) return;
    const { child } = worker;
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await Promise.race([exited, delay(10_000)]);
    }
    killGroup(child.pid!);
  }

  /** Links each package from the repository's node_modules unless the project has it; returns those it has nowhere. */
  #provide(packages: string[]): string[] {
    const missing: string[] = [];
    for (const name of packages) {
      const target = join(this.project.app, 'node_modules', name);
      if (existsSync(target)) continue;
      const source = join(ROOT, 'node_modules', name);
      if (!existsSync(join(source, 'package.json'))) {
        missing.push(name);
        continue;
      }
      mkdirSync(dirname(target), { recursive: true });
      symlinkSync(source, target, 'dir');
    }
    return missing;
  }

  /** Type-checks and compiles <slug>.ts to <slug>.js; the compiler's report when it fails. */
  async #compile(slug: string, code: string): Promise<Pick<ExampleOutcome, 'exitCode' | 'stdout' | 'stderr'> | undefined> {
    const { app } = this.project;
    // A consumer adds @types/node as any Node project does: here the repository's.
    this.#provide(['@types/node']);
    const repo = JSON.parse(readFileSync(join(ROOT, 'tsconfig.json'), 'utf8')) as { compilerOptions: Record<string, unknown> };
    // The repository's options (strict, NodeNext, noUncheckedIndexedAccess…), made to emit JavaScript.
    const { noEmit: _noEmit, allowImportingTsExtensions: _allow, ...options } = repo.compilerOptions;
    writeFileSync(join(app, `${slug}.ts`), code);
    writeFileSync(join(app, `${slug}.tsconfig.json`), JSON.stringify({ compilerOptions: { ...options, noEmitOnError: true }, files: [`${slug}.ts`] }));
    const run = await runInGroup([process.execPath, TSC, '-p', `${slug}.tsconfig.json`], { cwd: app, env: cleanEnv(), timeoutMs: 120_000 });
    if (run.exitCode === 0 && !run.timedOut) return undefined;
    return { exitCode: run.exitCode, stdout: run.stdout, stderr: run.stderr };
  }

  /** What every example gets: no MCP_FLEET_* of the caller, a HOME of its own, the usual npm cache. */
  #baseEnv(): NodeJS.ProcessEnv {
    return { ...cleanEnv(), HOME: this.#home, npm_config_cache: process.env.npm_config_cache ?? join(homedir(), '.npm') };
  }

  #freshDir(name: string): string {
    const dir = join(this.project.temp, 'examples', name);
    mkdirSync(dir, { recursive: true });
    return dir;
  }

  #startWorker(): Promise<Worker> {
    this.#worker ??= startDemoWorker(this.project.app, this.#baseEnv());
    return this.#worker;
  }
}

/**
 * `mcp-fleet serve` from the installed package, in the project, on a copy of
 * examples/demo (as `npm start` runs it): the servers it names are linked from
 * the repository's node_modules, its sandbox copied, its memory file kept in
 * the copy rather than in the repository.
 */
async function startDemoWorker(app: string, env: NodeJS.ProcessEnv): Promise<Worker> {
  const stateDir = join(app, 'examples', 'demo');
  cpSync(DEMO_DIR, stateDir, { recursive: true, filter: (path) => !/(worker\.json|api_token|memory\.jsonl|\.db)$/.test(path) });
  const config = JSON.parse(readFileSync(join(DEMO_DIR, 'mcp_servers.json'), 'utf8')) as {
    servers: Record<string, { command?: string[]; env?: Record<string, string> }>;
  };
  for (const server of Object.values(config.servers)) {
    for (const arg of server.command ?? []) {
      const name = /^node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(arg)?.[1];
      const target = name && join(app, 'node_modules', name);
      if (name && target && !existsSync(target)) {
        mkdirSync(dirname(target), { recursive: true });
        symlinkSync(join(ROOT, 'node_modules', name), target, 'dir');
      }
    }
    // Relative to server-memory's own file, which the link resolves into the repository.
    if (server.env?.MEMORY_FILE_PATH !== undefined) server.env.MEMORY_FILE_PATH = join(stateDir, 'memory.jsonl');
  }
  writeFileSync(join(stateDir, 'mcp_servers.json'), JSON.stringify(config, null, 2));

  const bin = join(app, 'node_modules', 'mcp-fleet', 'bin', 'mcp-fleet.js');
  const child = spawn(process.execPath, [bin, 'serve', '--state-dir', stateDir, '--port', '0'], {
    cwd: app,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 60_000;
  for (;;) {
    const ready = /^.*servers ready.*$/m.exec(stdout);
    if (ready) {
      const token = readFileSync(join(stateDir, 'api_token'), 'utf8').trim();
      return { child, stateDir, token, readyLine: ready[0].trim() };
    }
    const done = await Promise.race([exited.then(() => true), delay(100).then(() => false)]);
    if (done || Date.now() > deadline) {
      killGroup(child.pid!); // with whatever servers it had started
      throw new Error(`the sh examples' worker did not get ready (${done ? `exited ${child.exitCode}` : 'timed out'})\nstdout:\n${stdout}\nstderr:\n${stderr}`);
    }
  }
}

interface GroupRun {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  leftBehind: string[];
}

/**
 * Runs argv in a new process group (and session) and waits for it to exit,
 * killing the group at the bound. Any process of the group still running a
 * moment after the leader exited is reported and killed.
 */
function runInGroup(argv: string[], { cwd, env, timeoutMs }: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number }): Promise<GroupRun> {
  const [command = '', ...args] = argv;
  const child = spawn(command, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return new Promise<GroupRun>((resolve, reject) => {
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child.pid!);
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('exit', (exitCode, signal) => {
      clearTimeout(timer);
      void (async () => {
        const pgid = child.pid!;
        let members = groupMembers(pgid);
        for (const until = Date.now() + EXIT_GRACE_MS; members.length > 0 && Date.now() < until; members = groupMembers(pgid)) await delay(50);
        const leftBehind = timedOut ? [] : members.map((member) => `${member.pid} ${member.command}`);
        killGroup(pgid);
        // A grandchild that held the pipes is gone now; the rest of the output comes with 'close'.
        await Promise.race([closed, delay(5_000)]);
        resolve({ exitCode, signal, stdout, stderr, timedOut, leftBehind });
      })();
    });
  });
}

/** Running (not zombie) processes whose process group is `pgid`, from /proc. */
function groupMembers(pgid: number): { pid: number; command: string }[] {
  if (!existsSync('/proc/self/stat')) return probeGroup(pgid) ? [{ pid: pgid, command: '(some process of the group)' }] : [];
  const members: { pid: number; command: string }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited while we looked
    }
    // pid (comm) state ppid pgrp …; comm may hold spaces and parentheses, so split after the last ')'.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) !== pgid || state === 'Z' || state === 'X') continue;
    let command = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    try {
      command = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').trim() || command;
    } catch {
      // keep the short name
    }
    members.push({ pid: Number(entry), command });
  }
  return members;
}

/** True when some process is in group `pgid` (signal 0 probes without sending anything). */
function probeGroup(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
