/**
 * The stdio transport: spawns the server's command (argv, never a shell),
 * speaks newline-delimited JSON-RPC on its stdin/stdout, and knows what a
 * fleet needs from the child: its exit code and signal, a stop that escalates
 * SIGTERM → SIGKILL over the child's process group (a wrapper's server too)
 * and resolves only once they are gone, and a precise
 * spawn-failure text. Our own rather than the SDK's StdioClientTransport: the
 * SDK keeps the child and its read buffer private (its buffer re-copies
 * everything per chunk and refuses lines over 10 MiB), and it probes the era
 * of its own transport on a sibling process every connect; this one probes in
 * place and the verdict is remembered (era.ts).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { delimiter } from 'node:path';
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/client';
import { getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';
import { $ZodError } from 'zod/v4/core';
import { oneLine } from '../errors.js';
import { LineBuffer, MessageTooLargeError } from './line-buffer.js';
import type { TappableTransport, TransportTap } from './transport-proxy.js';

/** How long a child may take to exit after SIGTERM before it gets SIGKILL. */
export const KILL_GRACE_MS = 2000;
/**
 * After SIGKILL, how long a stop still waits for the rest of the child's process
 * group: only a zombie nobody reaps can be left by then, and it holds nothing.
 */
const GROUP_SIGKILL_WAIT_MS = 1000;
/** How often a stop looks whether the child's process group is gone. */
const GROUP_POLL_MS = 20;
/**
 * Each child leads a process group of its own, so a stop reaches what it
 * started too: the real server behind `npx` or a shell script. Not on
 * Windows, where a detached child gets a console of its own instead.
 */
const OWN_GROUP = process.platform !== 'win32';
// After exit, how long stdout/stderr may stay open (held by a grandchild) before we stop waiting for them.
const STDIO_DRAIN_MS = 1000;

/** How a child process ended. */
export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Spawn parameters: argv, environment (merged over the SDK's safe default), cwd. */
export interface ChildSpec {
  command: readonly string[];
  env: Record<string, string>;
  cwd: string | null;
}

/** Lines on stdout that were not JSON-RPC messages: skipped, counted, the last one described. */
export interface StdoutJunk {
  lines: number;
  /** What was wrong with the last one, in one line (may quote a few characters of it). */
  last: string;
}

/**
 * A stdio transport that knows how its child ended and stops it for sure,
 * reads lines in linear time up to `MAX_MESSAGE_BYTES`, and keeps count
 * of stdout lines that are not JSON-RPC (skipped).
 */
export class ChildTransport implements Transport, TappableTransport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** The error from spawning (ENOENT, EACCES, …), if the child never started. */
  spawnError: NodeJS.ErrnoException | undefined;
  /** Set once the child has exited (and been reaped). */
  exitInfo: ExitInfo | undefined;
  /** True when the child exited before anyone asked it to stop: a crash or an early exit. */
  exitedOnItsOwn = false;
  /** Resolves when the child has exited. Never resolves if it never started. */
  readonly exited: Promise<ExitInfo>;
  /** Resolves when the child's stderr has been read to its end. */
  readonly stderrEnded: Promise<void>;
  /** Set when a message outgrew the limit: the transport then closes (and stops the child). */
  overflow: MessageTooLargeError | undefined;
  readonly junk: StdoutJunk = { lines: 0, last: '' };
  readonly #spec: ChildSpec;
  readonly #onStderr: (chunk: string) => void;
  #stderrDone!: () => void;
  readonly #buffer = new LineBuffer();
  #resolveExit!: (info: ExitInfo) => void;
  #child: ChildProcessWithoutNullStreams | undefined;
  #stopping: Promise<void> | undefined;
  #closed = false;
  /** Messages wait in the buffer for a delivery queued behind a notification's handler. */
  #deferred = false;
  #taps: readonly TransportTap[] = [];
  #stderrDecoder: StringDecoder | undefined;

  /** Spawns `spec` on start; every decoded stderr chunk goes to `onStderr`. */
  constructor(spec: ChildSpec, onStderr: (chunk: string) => void) {
    this.#spec = spec;
    this.exited = new Promise((resolve) => (this.#resolveExit = resolve));
    this.#onStderr = onStderr;
    this.stderrEnded = new Promise((resolve) => (this.#stderrDone = resolve));
  }

  /**
   * The child's stderr once spawned (also what tells the SDK this is a stdio
   * transport). Read here directly, not through a pipe of our own: a stream
   * pair per server kept ~4 KiB alive for nothing.
   */
  get stderr(): Readable | null {
    return this.#child?.stderr ?? null;
  }

  /** The child's pid once spawned, else null. */
  get pid(): number | null {
    return this.#child?.pid ?? null;
  }

  /** Spawns the child; resolves once it runs, rejects (and keeps `spawnError`) when it cannot. */
  start(): Promise<void> {
    if (this.#child !== undefined) throw new Error('ChildTransport already started');
    const [command, ...args] = this.#spec.command;
    let child: ChildProcessWithoutNullStreams;
    try {
      child = spawn(command ?? '', args, {
        env: { ...getDefaultEnvironment(), ...this.#spec.env },
        stdio: ['pipe', 'pipe', 'pipe'],
        shell: false,
        windowsHide: true,
        detached: OWN_GROUP,
        ...(this.#spec.cwd === null ? {} : { cwd: this.#spec.cwd }),
      });
    } catch (error) {
      // Node throws some spawn failures (a cwd that is a file: ENOTDIR) rather than emit them: a failed spawn all the same.
      this.spawnError = error as NodeJS.ErrnoException;
      this.#stderrDone();
      return Promise.reject(error);
    }
    this.#child = child;
    // Listened to in the same tick as the spawn: no early line is lost.
    child.stderr.on('data', (chunk: Buffer) => this.#stderrText(chunk));
    // `on`, not `once`: each of these comes once anyway, and `once` keeps a wrapper per listener for the child's life.
    child.stderr.on('end', () => this.#stderrText(null));
    child.stderr.on('close', this.#stderrDone);
    child.stdout.on('data', (chunk: Buffer) => this.#read(chunk));
    child.stdout.on('error', (error) => this.onerror?.(error));
    child.stdin.on('error', (error) => this.onerror?.(error));
    child.on('exit', (code, signal) => {
      this.exitInfo = { code, signal };
      this.exitedOnItsOwn = this.#stopping === undefined;
      // What it started does not outlive it (a wrapper that crashed leaves no orphaned server).
      if (this.exitedOnItsOwn) signalGroup(child, 'SIGTERM');
      this.#resolveExit(this.exitInfo);
      // A grandchild may still hold the pipes open, and then 'close' (which
      // tells the client the connection ended) would never come. Cleared when
      // it comes: a pending timer would keep this transport, and through it
      // the client, alive for nothing.
      const drain = setTimeout(destroyPipes, STDIO_DRAIN_MS, child).unref();
      child.on('close', () => clearTimeout(drain));
    });
    child.on('close', () => this.#closeOnce());
    // An error once the child runs is the transport's; one before is a failed spawn.
    child.on('error', (error) => {
      if (child.pid !== undefined) this.onerror?.(error);
    });
    // The spawn's own listeners go once the child runs, rather than keeping this
    // promise's resolving functions (and a `once` wrapper each) for the child's life.
    return new Promise((resolve, reject) => {
      const failed = (error: NodeJS.ErrnoException): void => {
        child.off('spawn', spawned);
        this.spawnError = error;
        this.#stderrDone();
        reject(error);
      };
      const spawned = (): void => {
        child.off('error', failed);
        resolve();
      };
      child.once('spawn', spawned);
      child.once('error', failed);
    });
  }

  /**
   * Decodes stderr as UTF-8 across chunk boundaries (`null`: its end). The
   * decoder is made with the first chunk: most servers never write to stderr.
   */
  #stderrText(chunk: Buffer | null): void {
    if (chunk !== null) {
      const text = (this.#stderrDecoder ??= new StringDecoder('utf8')).write(chunk);
      if (text !== '') this.#onStderr(text);
      return;
    }
    const rest = this.#stderrDecoder?.end() ?? '';
    if (rest !== '') this.#onStderr(rest);
    this.#stderrDone();
  }

  /** Shows `taps` what is sent and delivered from now on (see transport-proxy.ts), with no proxy in between. */
  tap(taps: readonly TransportTap[]): void {
    this.#taps = taps;
  }

  send(message: JSONRPCMessage): Promise<void> {
    for (const tap of this.#taps) tap.sent?.(message);
    const stdin = this.#child?.stdin;
    if (stdin === undefined || this.#closed) return Promise.reject(new Error('not connected'));
    return new Promise((resolve) => {
      if (stdin.write(`${JSON.stringify(message)}\n`)) resolve();
      else stdin.once('drain', resolve);
    });
  }

  /** Reads every whole line; a line that is not JSON-RPC is skipped and counted, an overflow closes. */
  #read(chunk: Buffer): void {
    try {
      this.#buffer.append(chunk);
    } catch (error) {
      this.overflow = error as MessageTooLargeError;
      this.onerror?.(error as Error);
      void this.close();
      return;
    }
    if (!this.#deferred) this.#deliver();
  }

  /**
   * Hands the buffered messages on in order. The SDK runs a notification's handler a
   * microtask later but a response at once: a progress notification read together with
   * its call's result would find the call already answered and be dropped. So after a
   * notification the rest waits a microtask, queued behind the notification's handler.
   */
  #deliver(): void {
    this.#deferred = false;
    for (;;) {
      let message: JSONRPCMessage | null;
      try {
        message = this.#buffer.readMessage();
      } catch (error) {
        this.#noteJunk(error);
        continue;
      }
      if (message === null) return;
      for (const tap of this.#taps) if (tap.delivered !== undefined) message = tap.delivered(message);
      this.onmessage?.(message);
      if (!('id' in message) && this.#buffer.pending()) {
        this.#deferred = true;
        queueMicrotask(() => this.#deliver());
        return;
      }
    }
  }

  #noteJunk(error: unknown): void {
    this.junk.lines += 1;
    this.junk.last =
      error instanceof $ZodError
        ? 'JSON that is not a JSON-RPC message'
        : `not JSON (${oneLine(error instanceof Error ? error.message : String(error)).slice(0, 160)})`;
  }

  #closeOnce(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#buffer.clear();
    this.onclose?.();
  }

  /**
   * Stops the child and every process it started (its process group): SIGTERM,
   * SIGKILL after {@link KILL_GRACE_MS}; resolves once they have exited. Idempotent.
   */
  close(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    const child = this.#child;
    if (child === undefined || this.spawnError !== undefined || (this.exitInfo !== undefined && !groupAlive(child))) {
      this.#closeOnce();
      return;
    }
    if (this.exitInfo === undefined) child.stdin.end();
    signalGroup(child, 'SIGTERM');
    let killed = false;
    const escalate = setTimeout(() => {
      killed = true;
      signalGroup(child, 'SIGKILL');
    }, KILL_GRACE_MS);
    await this.exited;
    // The rest of the group (a wrapper's server) may take longer than the wrapper did.
    const deadline = Date.now() + KILL_GRACE_MS + GROUP_SIGKILL_WAIT_MS;
    while (groupAlive(child) && Date.now() < deadline) await sleep(GROUP_POLL_MS);
    clearTimeout(escalate);
    if (!killed && groupAlive(child)) signalGroup(child, 'SIGKILL');
    this.#closeOnce();
  }
}

/** Sends `signal` to the child's process group (to the child alone where it has none); one already gone is no error. */
function signalGroup(child: ChildProcessWithoutNullStreams, signal: NodeJS.Signals): void {
  if (!OWN_GROUP || child.pid === undefined) {
    child.kill(signal);
    return;
  }
  try {
    process.kill(-child.pid, signal);
  } catch {
    // ESRCH: every process of the group has exited.
  }
}

/** Whether a process of the child's group still runs (without a group of its own: whether the child does). */
function groupAlive(child: ChildProcessWithoutNullStreams): boolean {
  if (child.pid === undefined) return false;
  if (!OWN_GROUP) return child.exitCode === null && child.signalCode === null;
  try {
    process.kill(-child.pid, 0);
  } catch {
    // ESRCH: none is left. EPERM: a process of the group runs as another user (it changed its own); it is not ours to wait for.
    return false;
  }
  // An orphan that exited stays in the group as a zombie until init reaps it, which some
  // container inits do only every few seconds: on Linux, zombies do not count.
  return process.platform !== 'linux' || livingMember(child.pid);
}

/** Whether a process that is not a zombie belongs to process group `group`, from /proc (Linux). */
function livingMember(group: number): boolean {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return true;
  }
  for (const entry of entries) {
    const first = entry.charCodeAt(0);
    if (first < 48 || first > 57) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
    } catch {
      continue;
    }
    // `pid (comm) state ppid pgrp …`; comm may hold spaces and parentheses itself.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ', 3);
    if (state !== 'Z' && Number(pgrp) === group) return true;
  }
  return false;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Ends the child's side of its pipes, whoever else still holds them open. */
function destroyPipes(child: ChildProcessWithoutNullStreams): void {
  child.stdin.destroy();
  child.stdout.destroy();
  child.stderr.destroy();
}

/** Says in one line why `spec` could not be spawned; names the PATH searched for a bare command. */
export function describeSpawnError(err: NodeJS.ErrnoException, spec: ChildSpec): string {
  const program = spec.command[0] ?? '';
  if (err.code === 'ENOENT') {
    // Node reports a missing cwd as ENOENT of the program, which misleads.
    if (spec.cwd !== null && !existsSync(spec.cwd)) return `working directory "${spec.cwd}" does not exist`;
    if (program.includes('/')) return `command "${program}" not found: no such file`;
    return `command "${program}" not found on PATH (${describePath(spec)})`;
  }
  if (err.code === 'EACCES') return `command "${program}" cannot be executed: permission denied`;
  if (err.code === 'ENOTDIR' && spec.cwd !== null) return `working directory "${spec.cwd}" is not a directory`;
  return `could not start "${program}": ${err.code ?? err.message}`;
}

function describePath(spec: ChildSpec): string {
  // Every value of the server's env is a secret, its PATH too.
  if (spec.env.PATH !== undefined) return "searched the PATH set in the server's env";
  const path = getDefaultEnvironment().PATH;
  if (path === undefined || path === '') return 'PATH is empty';
  return `searched PATH: ${path.split(delimiter).join(', ')}`;
}

/** "exited with code 3" / "was killed by SIGKILL". */
export function describeExit(info: ExitInfo): string {
  if (info.signal !== null) return `was killed by ${info.signal}`;
  return `exited with code ${info.code ?? 'unknown'}`;
}
