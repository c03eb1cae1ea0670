import type { Command } from 'commander';
import type { CliIO } from '../cli.js';
import { readApiToken } from '../http/api-token.js';
import { CliError } from './errors.js';
import { directory, httpUrl, stateDirOf } from './flags.js';
import { isAlive, readWorkerFile } from './worker-file.js';

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
      if (!worker || !isAlive(worker.pid)) {
        throw new CliError(`no running worker for ${stateDir}: start one with \`mcp-fleet serve --state-dir ${stateDir}\`, or pass --url`);
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
    const url = new URL(path.replace(/^\//, ''), this.baseUrl.endsWith('/') ? this.baseUrl : `${this.baseUrl}/`);
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers: {
          authorization: `Bearer ${this.token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
      throw new CliError(`cannot reach the worker at ${this.baseUrl} (${cause})`);
    }
    if (response.status === 204) return undefined as T;
    const text = await response.text();
    const parsed = parseJson(text);
    if (!response.ok) {
      const error = (parsed as { error?: { code?: string; message?: string; field?: string } } | undefined)?.error;
      throw new ApiError(response.status, error?.code ?? 'http_error', error?.message ?? `HTTP ${response.status}`, error?.field);
    }
    return parsed as T;
  }
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
