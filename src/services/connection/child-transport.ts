/**
 * The SDK's stdio client transport, plus what a fleet needs from the child:
 * its exit code and signal, a stop that escalates SIGTERM → SIGKILL and
 * resolves only once the process is gone, and a precise spawn-failure text.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter } from 'node:path';
import type { Readable } from 'node:stream';
import {
  StdioClientTransport,
  getDefaultEnvironment,
  type StdioServerParameters,
} from '@modelcontextprotocol/sdk/client/stdio.js';
import { $ZodError } from 'zod/v4/core';
import { oneLine } from '../support/errors.js';
import { LineBuffer, MessageTooLargeError } from './line-buffer.js';
import { childProcessOf, replaceReadBuffer } from './sdk-internals.js';

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
 * of stdout lines that are not JSON-RPC (skipped, as the SDK does).
 */
export class ChildTransport extends StdioClientTransport {
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
  /** Set when a message outgrew the limit: the SDK then closes the transport (and this stops the child). */
  overflow: MessageTooLargeError | undefined;
  readonly junk: StdoutJunk = { lines: 0, last: '' };
  #resolveExit!: (info: ExitInfo) => void;
  #child: ChildProcess | undefined;
  #stopping: Promise<void> | undefined;

  /** Spawns `spec` on start; every decoded stderr chunk goes to `onStderr`. */
  constructor(spec: ChildSpec, onStderr: (chunk: string) => void) {
    const [command, ...args] = spec.command;
    const params: StdioServerParameters = {
      command: command ?? '',
      args,
      env: { ...getDefaultEnvironment(), ...spec.env },
      stderr: 'pipe',
      ...(spec.cwd === null ? {} : { cwd: spec.cwd }),
    };
    super(params);
    // A hostile test sends a 20 MB line, which the SDK's own buffer refuses.
    replaceReadBuffer(this, new LineBuffer());
    // Set before connect, this handler is kept (and chained) by the SDK's Protocol.
    this.onerror = (error) => this.#noteError(error);
    this.exited = new Promise((resolve) => (this.#resolveExit = resolve));
    // With stderr: 'pipe' the SDK hands out a PassThrough before spawning, so no early line is lost.
    const stderr = this.stderr as Readable | null;
    if (stderr === null) throw new Error('stdio transport did not provide a stderr pipe');
    stderr.setEncoding('utf8');
    stderr.on('data', (chunk: string) => onStderr(chunk));
    this.stderrEnded = new Promise((resolve) => {
      stderr.once('end', resolve);
      stderr.once('close', resolve);
    });
  }

  /** Spawns the child (via the SDK) and starts watching for its exit. */
  override async start(): Promise<void> {
    try {
      await super.start();
    } catch (err) {
      this.spawnError = err as NodeJS.ErrnoException;
      throw err;
    }
    // The exit code and signal, which the SDK drops, are read from the process itself.
    const child = childProcessOf(this);
    this.#child = child;
    child.once('exit', (code, signal) => {
      this.exitInfo = { code, signal };
      this.exitedOnItsOwn = this.#stopping === undefined;
      this.#resolveExit(this.exitInfo);
      // A grandchild may still hold the pipes open, and then 'close' (which
      // tells the SDK the connection ended) would never come.
      setTimeout(() => {
        child.stdin?.destroy();
        child.stdout?.destroy();
        child.stderr?.destroy();
      }, STDIO_DRAIN_MS).unref();
    });
  }

  /** Notes the read errors the SDK reports and reads on from (or, for an overflow, closes on). */
  #noteError(error: Error): void {
    if (error instanceof MessageTooLargeError) this.overflow = error;
    else if (error instanceof SyntaxError || error instanceof $ZodError) {
      this.junk.lines += 1;
      this.junk.last =
        error instanceof $ZodError ? 'JSON that is not a JSON-RPC message' : `not JSON (${oneLine(error.message).slice(0, 160)})`;
    }
  }

  /** Stops the child: SIGTERM, SIGKILL after {@link KILL_GRACE_MS}; resolves once it has exited. Idempotent. */
  override close(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    const child = this.#child;
    if (child === undefined || this.exitInfo !== undefined) return;
    child.stdin?.end();
    child.kill('SIGTERM');
    const escalate = setTimeout(() => child.kill('SIGKILL'), KILL_GRACE_MS);
    await this.exited;
    clearTimeout(escalate);
  }
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
  // Every value of the server's env is a secret (SPEC §3), its PATH too.
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
