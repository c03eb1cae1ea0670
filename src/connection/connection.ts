/**
 * One live MCP connection: spawn (or open), initialize, list every tool, then
 * call tools through a per-server limiter. Every failure is a one-line
 * FleetError with its error kind (docs/contract.md, Error kinds) and no secret in it.
 *
 * This file is the entry point; each step has its own file:
 * connect-local.ts / connect-remote.ts (handshakes), tool-listing.ts,
 * open-connection.ts with calls.ts (the connected server), failures.ts
 * (error kinds and texts), deadlines.ts, sdk-internals.ts. Which era a
 * connect speaks is decided in src/connection/era-negotiation.ts.
 */
import {
  Client,
  type CallToolResult,
  type InputRequest,
  type InputResponse,
  type OAuthClientProvider,
  type PriorDiscovery,
  type Tool,
  type VersionNegotiationOptions,
} from '@modelcontextprotocol/client';
import type { ExecuteOptions } from '../catalog/index.js';
import type { RemoteServerConfig, ServerConfig } from '../config/index.js';
import { eraKey, openInKnownEra, versionNegotiation } from './era-negotiation.js';
import type { EraVerdicts } from './era-verdicts.js';
import { isMachineAuth, machineAuthProvider } from '../auth/machine-auth.js';
import { withoutSecrets } from './failures.js';
import { FleetError } from '../errors.js';
import { AbortError } from './call-limiter.js';
import { connectLocal } from './connect-local.js';
import { connectRemote } from './connect-remote.js';
import { connectBound } from './deadlines.js';
import { notificationsOf } from './notifications.js';
import { TASKS_EXTENSION } from './tasks.js';
import { APP_MIME_TYPE, UI_EXTENSION } from '../apps/tool-meta.js';
import { LazyValidator, type ToolListing } from './tool-listing.js';
import type { CacheScope } from './cache-scope.js';
import { traceConnect } from '../telemetry/connects.js';
import type { LifecycleSpan } from '../telemetry/index.js';

export { filterTools } from './tool-listing.js';

/**
 * Pages one listing may take before it fails: the SDK's default (64) would
 * refuse a large catalog; a server whose cursors go round in a circle still
 * ends here rather than never.
 */
export const LIST_MAX_PAGES = 10_000;

/** Rounds of `input_required` one request may take (each answered by our handlers) before it fails. */
export const INPUT_REQUIRED_MAX_ROUNDS = 8;

/** How mcp-fleet introduces itself in `initialize`. */
export const CLIENT_INFO = { name: 'mcp-fleet', version: '0.1.0' } as const;

export interface ConnectOptions {
  /** Aborting cancels the connect and kills the child; connect rejects with an AbortError. */
  signal?: AbortSignal;
  /**
   * Called once if the connection ends on its own after connect (crash, exit); never for close().
   * The calls that loss broke reject only once a returned promise settles: whoever
   * watches the connection has taken the loss in before a caller hears of it.
   */
  onClose?: (error: FleetError) => void | Promise<void>;
  /** Called on each new SDK client before it connects: extra capabilities and request handlers. */
  setupClient?: (client: Client) => void;
  /** Authorizes a remote server's requests (SDK OAuth provider); `mcp-fleet connect` passes its own. */
  authProvider?: OAuthClientProvider;
  /** Remembered era verdicts: read to skip the probe, updated after each connect. */
  eras?: EraVerdicts;
  /** Answers what a task asks for while it runs (2026-07-28 tasks): the host's elicitation, sampling and roots. */
  answerInput?: (request: InputRequest, signal: AbortSignal) => Promise<InputResponse>;
  /** The server's lifecycle span in its host, read when a connect or re-sync span starts: they go under it. */
  lifecycle?: LifecycleSpan;
  /**
   * Whether a Streamable HTTP connection in the 2025 era holds the standalone
   * `GET` event stream open (default true). It carries only what the server
   * sends outside a request (list_changed, logs, requests of its own); a
   * connection nobody watches for those goes without it, and saves an open
   * socket with its parser and buffers.
   */
  standaloneStream?: boolean;
  /**
   * More values this connection's errors must never show, beside its
   * config's secrets: a principal's inputs resolved into its command.
   */
  secrets?: readonly string[];
  /**
   * Every other server's secrets, asked when a connect's or a call's failure
   * is told: a server's stderr may quote another's key.
   */
  fleetSecrets?: () => readonly string[];
}

/** How a connect opens its MCP session: a fresh client, and what is known of the server's era. */
export interface Handshake {
  newClient(): Client;
  prior: PriorDiscovery | undefined;
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
  /** The `ttlMs` of the listing made at connect (null: none); the catalog sync keeps track from there. */
  readonly connectTtlMs: number | null;
  /** The `cacheScope` of the listing made at connect: null on the 2025 era (see tool-listing.ts). */
  readonly connectScope: CacheScope | null;
  /** Lists every page of tools again (after `notifications/tools/list_changed`, or an expired listing); changes nothing by itself. */
  listTools(signal?: AbortSignal): Promise<ToolListing>;
  /** Makes `listing` the server's tools: `tools`/`allTools` and the output-schema validation of calls follow it. */
  replaceTools(listing: Tool[]): void;
  /** What the server said it is in `initialize`. */
  readonly serverInfo: { name: string; version: string } | undefined;
  /** Calls `tool`; bounded by call_timeout_seconds (reset by progress) and max_concurrent_calls. */
  callTool(tool: string, args: Record<string, unknown>, options?: ExecuteOptions): Promise<CallToolResult>;
  /** The last lines of the child's stderr, every configured secret redacted; '' for remote servers. */
  stderrTail(): string;
  /**
   * Why a ping that failed with `error` ends the connection, every secret
   * redacted and no response body quoted; null when it does not (the
   * server's own error answer means it is alive; a stdio server's exit is
   * reported by itself).
   */
  pingFailure(error: unknown): FleetError | null;
  /**
   * Ends the connection; resolves once the child has exited. Idempotent.
   * `reason`: why the server let it go (a token lost, say), which the calls it cuts off are told.
   */
  close(reason?: FleetError): Promise<void>;
}

/** Connects to server `name`: spawn or open, initialize and list all tools, within `timeout_seconds`. */
export async function connect(
  name: string,
  config: ServerConfig,
  options: ConnectOptions = {},
): Promise<ServerConnection> {
  if (options.signal?.aborted) throw new AbortError(`connect to server "${name}" was aborted`);
  if (config.type === 'remote') options = remoteOptions(name, config, options);
  const bound = connectBound(config.timeout_seconds, options.signal);
  const negotiation = versionNegotiation(config);
  const newClient = (): Client => createClient(options.setupClient, negotiation);
  const open = (prior: PriorDiscovery | undefined): Promise<ServerConnection> =>
    config.type === 'local'
      ? connectLocal(name, config, bound, { newClient, prior }, options)
      : connectRemote(name, config, bound, { newClient, prior }, options);
  try {
    return await traceConnect(name, config, options.lifecycle, () =>
      openInKnownEra(open, { config, key: eraKey(name, config), eras: options.eras, signal: bound.signal }),
    );
  } catch (error) {
    // Its own secrets are redacted where the failure is worded; a stderr tail may quote another server's too.
    throw options.fleetSecrets === undefined ? error : withoutSecrets(error, options.fleetSecrets());
  } finally {
    bound.dispose();
  }
}

/** A remote server's connect options: an OAuth server needs a provider given; one with machine auth gets its own. */
function remoteOptions(name: string, config: RemoteServerConfig, options: ConnectOptions): ConnectOptions {
  if (options.authProvider !== undefined) return options;
  if (config.auth.kind === 'oauth') {
    throw new FleetError('config', `server "${name}" uses OAuth: connect it with an authProvider (see src/auth)`);
  }
  return isMachineAuth(config.auth) ? { ...options, authProvider: machineAuthProvider(config.auth, CLIENT_INFO.name) } : options;
}

function createClient(setup: ConnectOptions['setupClient'], versionNegotiation: VersionNegotiationOptions): Client {
  const client = new Client({ ...CLIENT_INFO }, {
    // Tool calls may be answered with a task handle (tasks.ts); the transports are watched for them.
    // MCP Apps: tools may name an HTML app the host renders (src/apps/).
    capabilities: { extensions: { [TASKS_EXTENSION]: {}, [UI_EXTENSION]: { mimeTypes: [APP_MIME_TYPE] } } },
    jsonSchemaValidator: new LazyValidator(),
    versionNegotiation,
    inputRequired: { maxRounds: INPUT_REQUIRED_MAX_ROUNDS },
    listMaxPages: LIST_MAX_PAGES,
  });
  // Before connect: a server may announce changes or log right after initialize.
  notificationsOf(client);
  setup?.(client);
  return client;
}
