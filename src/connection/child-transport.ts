/**
 * The stdio transport: spawns the server's command (argv, never a shell),
 * speaks newline-delimited JSON-RPC on its stdin/stdout, and knows what a
 * fleet needs from the child: its exit code and signal, a stop that escalates
 * SIGTERM → SIGKILL and resolves only once the process is gone, and a precise
 * spawn-failure text. Our own rather than the SDK's StdioClientTransport: the
 * SDK keeps the child and its read buffer private (its buffer re-copies
 * everything per chunk and refuses lines over 10 MiB), and it probes the era
 * of its own transport on a sibling process every connect; this one probes in
 * place and the verdict is remembered (era.ts).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter } from 'node:path';
import type { Readable } from 'node:stream';
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/client';
import { getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';
import { $ZodError } from 'zod/v4/core';
import { oneLine } from '../errors.js';
import { LineBuffer, MessageTooLargeError } from './line-buffer.js';

/** How long a child may take to exit after SIGTERM before it gets SIGKILL. */
export const KILL_GRACE_MS = 2000;
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
export class ChildTransport implements Transport {
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
    const child = spawn(command ?? '', args, {
      env: { ...getDefaultEnvironment(), ...this.#spec.env },
      stdio: ['pipe', 'pipe', 'pipe'],
      shell: false,
      windowsHide: true,
      ...(this.#spec.cwd === null ? {} : { cwd: this.#spec.cwd }),
    });
    this.#child = child;
    // Listened to in the same tick as the spawn: no early line is lost.
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', this.#onStderr);
    // `on`, not `once`: each of these comes once anyway, and `once` keeps a wrapper per listener for the child's life.
    child.stderr.on('end', this.#stderrDone);
    child.stderr.on('close', this.#stderrDone);
    child.stdout.on('data', (chunk: Buffer) => this.#read(chunk));
    child.stdout.on('error', (error) => this.onerror?.(error));
    child.stdin.on('error', (error) => this.onerror?.(error));
    child.on('exit', (code, signal) => {
      this.exitInfo = { code, signal };
      this.exitedOnItsOwn = this.#stopping === undefined;
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

  send(message: JSONRPCMessage): Promise<void> {
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

  /** Stops the child: SIGTERM, SIGKILL after {@link KILL_GRACE_MS}; resolves once it has exited. Idempotent. */
  close(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    const child = this.#child;
    if (child === undefined || this.spawnError !== undefined || this.exitInfo !== undefined) {
      this.#closeOnce();
      return;
    }
    child.stdin.end();
    child.kill('SIGTERM');
    const escalate = setTimeout(() => child.kill('SIGKILL'), KILL_GRACE_MS);
    await this.exited;
    clearTimeout(escalate);
    this.#closeOnce();
  }
}

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
