import type { Command } from 'commander';
import type { CliIO } from '../cli.js';
import { readApiToken } from '../http/api-token.js';
import { CliError } from './errors.js';
import { directory, httpUrl, stateDirOf } from './flags.js';
import { commandFor } from './invocation.js';
import { readWorkerFile } from './worker-file.js';
import { processAlive } from '../files/process-alive.js';

/** Options every client command takes. */
export interface ClientFlags {
  /** State dir of the worker to talk to (its worker.json and api_token). */
  stateDir?: string;
  /** Base URL of the worker, instead of the one in worker.json. */
  url?: string;
  /** Print the API's JSON instead of a table. */
  json?: boolean;
}

export { CliError, UsageError } from './errors.js';

/** An error answer of the API (`{error:{code,message,field?}}`). */
export class ApiError extends CliError {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

/**
 * Adds `--state-dir`, `--url` and `--json` to a client command; `urlFlag`
 * renames `--url` where the command has a `--url` of its own.
 */
export function withClientOptions(command: Command, { urlFlag = '--url <url>' } = {}): Command {
  const urlName = urlFlag.split(' ')[0]!;
  return command
    .option('--state-dir <dir>', 'state dir of the running worker (default: $MCP_FLEET_STATE_DIR or ~/.mcp-fleet)', directory('--state-dir'))
    .option(urlFlag, 'base URL of the worker (default: from <state_dir>/worker.json)', httpUrl(urlName))
    .option('--json', 'print JSON instead of a table');
}

/** Talks to a running worker through the management API. */
export class ApiClient {
  constructor(
    readonly baseUrl: string,
    private readonly token: string,
  ) {}

  /** Finds the worker (`--url`, else worker.json) and its token (env, else `<state_dir>/api_token`). */
  static async connect(flags: ClientFlags): Promise<ApiClient> {
    const stateDir = stateDirOf(flags.stateDir);
    let url = flags.url;
    if (url === undefined) {
      const worker = await readable(stateDir, () => readWorkerFile(stateDir));
      if (!worker || !processAlive(worker.pid)) {
        throw new CliError(`no running worker for ${stateDir}: start one with \`${commandFor('serve', stateDir)}\`, or pass --url`);
      }
      url = worker.url;
    }
    const token = await readable(stateDir, () => readApiToken(stateDir));
    if (token === undefined) {
      throw new CliError(`no API token: set MCP_FLEET_API_TOKEN or point --state-dir at the worker's state dir`);
    }
    return new ApiClient(url, token);
  }

  /** One request; a non-2xx answer throws ApiError, a 204 returns `undefined`. */
  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await this.send(method, path, body, 'application/json');
    if (response.status === 204) return undefined as T;
    const parsed = parseJson(await response.text());
    if (!response.ok) throw apiError(response.status, parsed);
    return parsed as T;
  }

  /**
   * A request answered as server-sent events: `onEvent` gets each event's
   * name and parsed data as it arrives; resolves when the stream ends. A
   * non-2xx answer throws ApiError, as `request` does.
   */
  async stream(method: string, path: string, body: unknown, onEvent: (event: string, data: unknown) => void): Promise<void> {
    const response = await this.send(method, path, body, 'text/event-stream');
    if (!response.ok) throw apiError(response.status, parseJson(await response.text()));
    if (response.body === null) return;
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of response.body) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true });
        for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event = parseEvent(block);
          if (event) onEvent(event.name, event.data);
        }
      }
    } catch (err) {
      if (err instanceof CliError) throw err;
      throw new CliError(`lost the worker at ${this.baseUrl} mid-answer (${(err as Error).message})`);
    }
  }

  private async send(method: string, path: string, body: unknown, accept: string): Promise<Response> {
    const url = new URL(path.replace(/^\//, ''), this.baseUrl.endsWith('/') ? this.baseUrl : `${this.baseUrl}/`);
    try {
      return await fetch(url, {
        method,
        headers: {
          authorization: `Bearer ${this.token}`,
          accept,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
      throw new CliError(`cannot reach the worker at ${this.baseUrl} (${cause})`);
    }
  }
}

function apiError(status: number, parsed: unknown): ApiError {
  const error = (parsed as { error?: { code?: string; message?: string; field?: string } } | undefined)?.error;
  return new ApiError(status, error?.code ?? 'http_error', error?.message ?? `HTTP ${status}`, error?.field);
}

/** One server-sent event block: its `event:` name (default `message`) and its `data:` as JSON; a comment-only block is none. */
function parseEvent(block: string): { name: string; data: unknown } | undefined {
  let name = 'message';
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith('event:')) name = line.slice(6).trim();
    else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
  }
  return data.length === 0 ? undefined : { name, data: parseJson(data.join('\n')) };
}

/** A state dir that cannot be read (permissions, say) is one line naming it and the system's code. */
async function readable<T>(stateDir: string, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === undefined) throw err;
    throw new CliError(`cannot read the state dir ${stateDir} (${code})`);
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Wraps a command action: a CliError prints one line and sets its exit code
 * (2 for a UsageError, else 1); anything else is a bug and keeps its stack.
 */
export function action<A extends unknown[]>(io: CliIO, run: (...args: A) => Promise<void>): (...args: A) => Promise<void> {
  return async function runAction(...args: A) {
    try {
      await run(...args);
    } catch (err) {
      if (!(err instanceof CliError)) throw err;
      io.stderr(`error: ${err.message}\n`);
      io.setExitCode(err.exitCode);
    }
  };
}

/** Aligned columns with a header row; the last column is not padded. */
export function formatTable(header: string[], rows: string[][]): string {
  const all = [header, ...rows];
  const widths = header.map((_, col) => Math.max(...all.map((row) => (row[col] ?? '').length)));
  return all
    .map((row) => row.map((cell, col) => (col === row.length - 1 ? cell : cell.padEnd(widths[col] ?? 0))).join('  ').trimEnd())
    .join('\n');
}

/** Pretty JSON for `--json`, one trailing newline. */
export function printJson(io: CliIO, value: unknown): void {
  io.stdout(`${JSON.stringify(value, null, 2)}\n`);
}
