/**
 * One live MCP connection: spawn (or open), initialize, list every tool, then
 * call tools through a per-server limiter. Every failure is a one-line
 * FleetError with the spec's error kind and no secret in it (SPEC §2, §4, §5).
 */
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { JsonSchemaType, JsonSchemaValidator, jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { ErrorCode, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ExecuteOptions, ToolProgress } from '../tools/agent-tool.js';
import { AbortError, createCallLimiter } from './call-limiter.js';
import { ChildTransport, describeExit, describeSpawnError, type ChildSpec } from './child-transport.js';
import { redact, secretValues } from '../config/credentials.js';
import type { LocalServerConfig, RemoteServerConfig, ServerConfig, ToolFilter } from '../config/schema.js';
import { $ZodError } from 'zod/v4/core';
import { FleetError, type ErrorKind } from '../support/errors.js';
import { allPages, linkedSignal } from '../catalog/paging.js';
import { describeRemoteFailure, openRemote, type RequestBound } from './remote-transport.js';
import { createStderrTail } from './stderr-tail.js';
import { notificationsOf } from './notifications.js';

/** How mcp-fleet introduces itself in `initialize`. */
export const CLIENT_INFO = { name: 'mcp-fleet', version: '0.1.0' } as const;
// How long to wait for the rest of a dead child's stderr before writing the error.
const STDERR_FLUSH_MS = 500;
// How long close() waits for a remote server to acknowledge the end of its session.
const SESSION_END_MS = 1000;

export interface ConnectOptions {
  /** Aborting cancels the connect and kills the child; connect rejects with an AbortError. */
  signal?: AbortSignal;
  /** Called once if the connection ends on its own after connect (crash, exit); never for close(). */
  onClose?: (error: FleetError) => void;
  /** Called on each new SDK client before it connects: extra capabilities and request handlers. */
  setupClient?: (client: Client) => void;
  /** Authorizes a remote server's requests (SDK OAuth provider); `mcp-fleet connect` passes its own. */
  authProvider?: OAuthClientProvider;
}

/** A connected server: its tools, a way to call them, and its stderr. */
export interface ServerConnection {
  /** The SDK client, for resources and prompts. */
  readonly client: Client;
  /** The child's pid for stdio (kept after it exits); null for remote servers. */
  readonly pid: number | null;
  /** Every page of tools/list, after the config's include/exclude filter, in server order. */
  readonly tools: Tool[];
  /** Every tool the server listed, before the filter: a changed filter applies without reconnecting. */
  readonly allTools: Tool[];
  /** Lists every page of tools again (after `notifications/tools/list_changed`); changes nothing by itself. */
  listTools(signal?: AbortSignal): Promise<Tool[]>;
  /** Makes `listing` the server's tools: `tools`/`allTools` and the output-schema validation of calls follow it. */
  replaceTools(listing: Tool[]): void;
  /** What the server said it is in `initialize`. */
  readonly serverInfo: { name: string; version: string } | undefined;
  /** Calls `tool`; bounded by call_timeout_seconds (reset by progress) and max_concurrent_calls. */
  callTool(tool: string, args: Record<string, unknown>, options?: ExecuteOptions): Promise<CallToolResult>;
  /** The last lines of the child's stderr, every configured secret redacted; '' for remote servers. */
  stderrTail(): string;
  /** Ends the connection; resolves once the child has exited. Idempotent. */
  close(): Promise<void>;
}

/** Where a connect is, for the error it gives if it stops there. */
interface Progress {
  phase: 'initialize' | 'tools/list';
  listed: number;
}

/** The deadline and the caller's signal, as one signal for every request of a connect. */
interface ConnectBound extends RequestBound {
  timedOut(): boolean;
  dispose(): void;
}

/** Connects to server `name`: spawn or open, initialize and list all tools, within `timeout_seconds`. */
export async function connect(
  name: string,
  config: ServerConfig,
  options: ConnectOptions = {},
): Promise<ServerConnection> {
  if (options.signal?.aborted) throw new AbortError(`connect to server "${name}" was aborted`);
  if (config.type === 'remote' && config.auth.kind === 'oauth' && options.authProvider === undefined) {
    throw new FleetError('config', `server "${name}" uses OAuth: connect it with an authProvider (see services/oauth)`);
  }
  const bound = connectBound(config.timeout_seconds, options.signal);
  try {
    return config.type === 'local'
      ? await connectLocal(name, config, bound, options)
      : await connectRemote(name, config, bound, options);
  } finally {
    bound.dispose();
  }
}

function connectBound(seconds: number, callerSignal: AbortSignal | undefined): ConnectBound {
  const controller = new AbortController();
  let timedOut = false;
  const deadline = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error('connect timed out'));
  }, seconds * 1000);
  const onCallerAbort = (): void => controller.abort(callerSignal?.reason);
  callerSignal?.addEventListener('abort', onCallerAbort, { once: true });
  return {
    signal: controller.signal,
    // The SDK's own per-request timeout must never win over the deadline.
    timeout: seconds * 1000 + 1000,
    timedOut: () => timedOut,
    dispose() {
      clearTimeout(deadline);
      callerSignal?.removeEventListener('abort', onCallerAbort);
    },
  };
}

async function connectLocal(
  name: string,
  config: LocalServerConfig,
  bound: ConnectBound,
  options: ConnectOptions,
): Promise<ServerConnection> {
  const inherited = inheritedEnv(config.inherit_env);
  // Inherited values may be credentials too (an API key in the worker's environment).
  const secrets = [...secretValues(config), ...Object.values(inherited)];
  const tail = createStderrTail(secrets);
  const spec: ChildSpec = { command: config.command, env: { ...inherited, ...config.env }, cwd: config.cwd };
  const child = new ChildTransport(spec, (chunk) => tail.append(chunk));
  const client = newClient(options.setupClient);
  const progress: Progress = { phase: 'initialize', listed: 0 };
  try {
    await client.connect(child, bound);
    const tools = await listAllTools(client, bound, progress);
    return openConnection(name, config, client, tools, options, { child, stderrTail: tail.read });
  } catch (err) {
    const exitedAlone = child.exitedOnItsOwn ? child.exitInfo : undefined;
    await child.close();
    if (options.signal?.aborted) throw new AbortError(`connect to server "${name}" was aborted`);
    if (child.spawnError !== undefined) {
      throw new FleetError('spawn_failed', redact(describeSpawnError(child.spawnError, spec), secrets), { cause: err });
    }
    if (exitedAlone !== undefined) {
      await settle(child.stderrEnded, STDERR_FLUSH_MS);
      const early = progress.phase === 'initialize';
      const during = early ? 'before initialize completed' : 'during tools/list';
      const message = `process ${describeExit(exitedAlone)} ${during}${withTail(tail.read())}`;
      throw new FleetError(early ? 'spawn_failed' : 'transport_closed', message);
    }
    const broken = brokenStdout(child, progress.phase, bound.timedOut() ? config.timeout_seconds : null);
    if (broken !== null) throw new FleetError('protocol', redact(broken, secrets));
    throw connectFailure(err, config, bound, progress, null);
  }
}

async function connectRemote(
  name: string,
  config: RemoteServerConfig,
  bound: ConnectBound,
  options: ConnectOptions,
): Promise<ServerConnection> {
  const progress: Progress = { phase: 'initialize', listed: 0 };
  let client: Client | undefined;
  try {
    const session = await openRemote(config, () => newClient(options.setupClient), bound, options.authProvider);
    client = session.client;
    const tools = await listAllTools(client, bound, progress);
    return openConnection(name, config, client, tools, options, null);
  } catch (err) {
    await client?.close();
    if (options.signal?.aborted) throw new AbortError(`connect to server "${name}" was aborted`);
    throw connectFailure(err, config, bound, progress, describeRemoteFailure(err, config.url));
  }
}

/**
 * Why a handshake over stdout failed, when stdout itself was the problem: a
 * message over the size limit, or no answer but lines that are not JSON-RPC
 * (a server logging to stdout, or not an MCP server at all). Null otherwise.
 */
function brokenStdout(child: ChildTransport, phase: Progress['phase'], timedOutAfter: number | null): string | null {
  if (child.overflow !== undefined) return `${phase} failed: ${child.overflow.message}`;
  if (timedOutAfter === null || child.junk.lines === 0) return null;
  return (
    `no valid answer to ${phase} within ${timedOutAfter}s: the server wrote ${child.junk.lines} ` +
    `line(s) on stdout that are not JSON-RPC (last: ${child.junk.last}); stdout must carry only MCP messages`
  );
}

/** The worker's values of the named variables; a name the worker does not have is left out. */
function inheritedEnv(names: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of names) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

/** The error for a connect that neither failed to spawn nor lost its child. */
function connectFailure(
  err: unknown,
  config: ServerConfig,
  bound: ConnectBound,
  progress: Progress,
  transportFailure: [ErrorKind, string] | null,
): FleetError {
  const secrets = secretValues(config);
  if (bound.timedOut()) {
    const seconds = `${config.timeout_seconds}s`;
    return new FleetError(
      'timeout',
      progress.phase === 'initialize'
        ? `no answer to initialize within ${seconds}`
        : `tools/list did not complete within ${seconds} (${progress.listed} tools received)`,
    );
  }
  if (transportFailure !== null) return new FleetError(transportFailure[0], redact(transportFailure[1], secrets));
  const why = err instanceof $ZodError ? describeInvalidAnswer(err) : messageOf(err);
  return new FleetError('protocol', `${progress.phase} failed: ${redact(why, secrets)}`);
}

/** "the server's answer does not follow the MCP schema: tools[1].inputSchema: …": the first problem, and how many more. */
function describeInvalidAnswer(err: $ZodError): string {
  const [first] = err.issues;
  if (first === undefined) return "the server's answer does not follow the MCP schema";
  const path = first.path.reduce<string>(
    (at, key) => (typeof key === 'number' ? `${at}[${key}]` : at === '' ? String(key) : `${at}.${String(key)}`),
    '',
  );
  const more = err.issues.length > 1 ? ` (and ${err.issues.length - 1} more problems)` : '';
  return `the server's answer does not follow the MCP schema: ${path || 'the answer'}: ${first.message}${more}`;
}

function newClient(setup: ConnectOptions['setupClient']): Client {
  const client = new Client({ ...CLIENT_INFO }, { capabilities: {}, jsonSchemaValidator: new LazyValidator() });
  // Before connect: a server may announce changes or log right after initialize.
  notificationsOf(client);
  setup?.(client);
  return client;
}

/**
 * The SDK's Ajv validator (output schemas of tools), built on first use, and
 * each schema compiled on its first use. By default every Client builds its own
 * Ajv instance up front (~1–2 ms of blocking work and tens of KiB per server,
 * also for the many servers whose tools declare no output schema), and the
 * SDK asks for a validator of every listed output schema at each listing:
 * compiled eagerly, 5,000 of them block for seconds on every re-sync. One Ajv
 * per client still, since schema `$id`s of different servers must not meet.
 */
class LazyValidator implements jsonSchemaValidator {
  #ajv: AjvJsonSchemaValidator | undefined;

  getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
    let compiled: JsonSchemaValidator<T> | undefined;
    return (input) => {
      this.#ajv ??= new AjvJsonSchemaValidator();
      compiled ??= this.#ajv.getValidator<T>(schema);
      return compiled(input);
    };
  }
}

/** Every page of the server's tools. */
async function listAllTools(client: Client, bound: RequestBound, progress: Progress): Promise<Tool[]> {
  progress.phase = 'tools/list';
  let pages = 0;
  const tools = await allPages(
    async (cursor, request) => {
      const page = await client.listTools(cursor === undefined ? {} : { cursor }, request);
      return [page.tools, page.nextCursor];
    },
    bound,
    (listed) => {
      progress.listed = listed;
      pages += 1;
    },
  );
  // listTools caches output-schema validators per page, forgetting the
  // earlier pages; re-cache them all so every tool is validated alike.
  if (pages > 1) cacheToolMetadata(client, tools);
  return tools;
}

/** The SDK client's (private) cache of output-schema validators, set to exactly `tools`. */
function cacheToolMetadata(client: Client, tools: Tool[]): void {
  (client as unknown as { cacheToolMetadata?: (t: Tool[]) => void }).cacheToolMetadata?.(tools);
}

/** Applies `include` (null = all) and then `exclude`, keeping the server's order. */
export function filterTools<T extends { name: string }>(tools: readonly T[], filter: ToolFilter): T[] {
  const include = filter.include === null ? null : new Set(filter.include);
  const exclude = new Set(filter.exclude);
  return tools.filter((tool) => (include === null || include.has(tool.name)) && !exclude.has(tool.name));
}

/** The child side of a stdio connection; null for remote servers. */
interface ChildSide {
  child: ChildTransport;
  stderrTail: () => string;
}

function openConnection(
  name: string,
  config: ServerConfig,
  client: Client,
  allTools: Tool[],
  options: ConnectOptions,
  local: ChildSide | null,
): ServerConnection {
  const secrets = secretValues(config);
  const limiter = createCallLimiter(config.max_concurrent_calls);
  const callTimeoutMs = config.call_timeout_seconds * 1000;
  const maxTotalSeconds = config.max_total_timeout_seconds ?? null;
  const version = client.getServerVersion();
  const child = local?.child;
  let listedTools = allTools;
  let closing: Promise<void> | undefined;
  let closedAlone = false;

  // Why the connection went away by itself: for onClose, and for the calls it broke.
  const lost: Promise<string> = child
    ? child.exited.then(async function describeChildExit(info) {
        await settle(child.stderrEnded, STDERR_FLUSH_MS);
        // A message over the limit makes the SDK close the transport, which stops the child.
        const why = child.overflow ? `${child.overflow.message}; the connection was closed and the ` : '';
        return `${why}process ${describeExit(info)}${withTail(local.stderrTail())}`;
      })
    : new Promise((resolve) => (client.onclose = () => resolve('the server closed the connection')));
  void lost.then(function reportClose(message) {
    if (closing !== undefined) return;
    closedAlone = true;
    options.onClose?.(new FleetError('transport_closed', message));
  });

  async function callFailure(err: unknown, tool: string, signal: AbortSignal | undefined): Promise<Error> {
    const [kind, message] = await classifyCallFailure(err, tool, signal);
    // The tool name or server text may echo a secret; no cause is kept, as it could carry one.
    const text = redact(message, secrets);
    return kind === 'cancelled' ? new AbortError(text) : new FleetError(kind, text);
  }

  async function classifyCallFailure(
    err: unknown,
    tool: string,
    signal: AbortSignal | undefined,
  ): Promise<[ErrorKind | 'cancelled', string]> {
    if (signal?.aborted) return ['cancelled', `call to tool "${tool}" on server "${name}" was cancelled`];
    // A loss the server caused explains the failure better than the close that followed it.
    if (child?.exitInfo !== undefined || closedAlone) {
      return ['transport_closed', `call to tool "${tool}" failed: ${await lost}`];
    }
    if (closing !== undefined) return ['transport_closed', `connection to server "${name}" was closed`];
    if (err instanceof McpError && err.code === ErrorCode.ConnectionClosed) {
      // stdout can close a moment before the exit is reported: wait briefly for the exit code.
      const why = child
        ? await Promise.race([lost, sleep(2 * STDERR_FLUSH_MS).then(() => 'connection closed')])
        : 'connection closed';
      return ['transport_closed', `call to tool "${tool}" failed: ${why}`];
    }
    if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) {
      return ['timeout', `tool "${tool}" did not answer within ${config.call_timeout_seconds}s`];
    }
    const remote = config.type === 'remote' ? describeRemoteFailure(err, config.url) : null;
    if (remote !== null) return [remote[0], `call to tool "${tool}" failed: ${remote[1]}`];
    return ['protocol', `tool "${tool}" failed: ${messageOf(err)}`];
  }

  /** One call, once the limiter gave it a slot. */
  async function runCall(
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal | undefined,
    onProgress: ExecuteOptions['onProgress'],
  ): Promise<CallToolResult> {
    const total = maxTotalSeconds === null ? undefined : totalDeadline(maxTotalSeconds * 1000, signal);
    const link = total ?? (signal === undefined ? undefined : linkedSignal(signal));
    try {
      // onprogress is always passed: the SDK only resets the timeout on progress when it is set.
      const result = await client.callTool({ name: tool, arguments: args }, undefined, {
        signal: link?.signal,
        timeout: callTimeoutMs,
        resetTimeoutOnProgress: true,
        onprogress: progressHandler(onProgress),
      });
      return result as CallToolResult;
    } catch (err) {
      if (total?.expired() && !signal?.aborted) {
        const why = `tool "${tool}" did not finish within max_total_timeout_seconds (${maxTotalSeconds}s)`;
        throw new FleetError('timeout', redact(why, secrets));
      }
      throw await callFailure(err, tool, signal);
    } finally {
      link?.dispose();
    }
  }

  async function shutdown(): Promise<void> {
    const transport = client.transport;
    // Ending the session is a courtesy the server may refuse (405) or ignore; it
    // expires sessions anyway, so its failure is not an error of close().
    if (transport instanceof StreamableHTTPClientTransport && transport.sessionId !== undefined) {
      await settle(transport.terminateSession().catch(() => undefined), SESSION_END_MS);
    }
    await client.close();
    await child?.close();
  }

  return {
    client,
    pid: child?.pid ?? null,
    get tools() {
      return filterTools(listedTools, config.tools);
    },
    get allTools() {
      return listedTools;
    },
    async listTools(signal = new AbortController().signal) {
      const bound = { signal, timeout: config.timeout_seconds * 1000 };
      try {
        return await listAllTools(client, bound, { phase: 'tools/list', listed: 0 });
      } finally {
        // The SDK re-caches output-schema validators per listed page; until replaceTools, the current listing rules.
        cacheToolMetadata(client, listedTools);
      }
    },
    replaceTools(listing) {
      listedTools = listing;
      cacheToolMetadata(client, listing);
    },
    serverInfo: version === undefined ? undefined : { name: version.name, version: version.version },
    async callTool(tool, args, { signal, onProgress } = {}) {
      if (closing !== undefined || closedAlone || child?.exitInfo !== undefined) {
        throw await callFailure(undefined, tool, signal);
      }
      // An inline arrow, not a named function expression: under tsx (how mcp-fleet runs)
      // esbuild's keepNames makes every named function created per call pay a defineProperty.
      return limiter.run(() => runCall(tool, args, signal, onProgress), signal);
    },
    stderrTail: local?.stderrTail ?? (() => ''),
    close() {
      closing ??= shutdown();
      return closing;
    },
  };
}

type SdkProgress = { progress: number; total?: number; message?: string };
const ignoreProgress = (): void => {};

/** The SDK's `onprogress` for a call: forwards to `onProgress`, or ignores progress (it still resets the timeout). */
function progressHandler(onProgress: ExecuteOptions['onProgress']): (progress: SdkProgress) => void {
  if (onProgress === undefined) return ignoreProgress;
  // Returned, not assigned to a property: no per-call naming of the function (see runCall).
  return (progress) => onProgress(toToolProgress(progress));
}

function toToolProgress(progress: SdkProgress): ToolProgress {
  const out: ToolProgress = { progress: progress.progress };
  if (progress.total !== undefined) out.total = progress.total;
  if (progress.message !== undefined) out.message = progress.message;
  return out;
}

function withTail(tail: string): string {
  return tail === '' ? ' (no stderr output)' : `: ${tail}`;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * A signal that follows `source` and also aborts after `ms`: the bound on a
 * whole call. Not the SDK's `maxTotalTimeout`, which is only checked when
 * progress arrives and then fails the call without telling the server; an
 * abort sends `notifications/cancelled`.
 */
function totalDeadline(
  ms: number,
  source: AbortSignal | undefined,
): { signal: AbortSignal; expired: () => boolean; dispose: () => void } {
  const controller = new AbortController();
  let expired = false;
  const timer = setTimeout(() => {
    expired = true;
    controller.abort(new Error('max_total_timeout_seconds elapsed'));
  }, ms);
  const forward = (): void => controller.abort(source?.reason);
  if (source?.aborted) forward();
  else source?.addEventListener('abort', forward, { once: true });
  return {
    signal: controller.signal,
    expired: () => expired,
    dispose() {
      clearTimeout(timer);
      source?.removeEventListener('abort', forward);
    },
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** Waits for `promise`, but at most `ms`. */
function settle(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.then(() => undefined),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))),
  ]).finally(() => clearTimeout(timer));
}
