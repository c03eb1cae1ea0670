/**
 * A server once its handshake is done: the ServerConnection the rest of
 * mcp-fleet holds. It keeps the current tool listing, notices when the server
 * goes away by itself (onClose, and the text of the calls that broke), and
 * closes the session and the child exactly once.
 */
import { type CallToolResult, type Client, ProtocolError, SdkError, SdkErrorCode, SSEClientTransport, SseError, StreamableHTTPClientTransport, type Tool } from '@modelcontextprotocol/client';
import { describeRemoteFailure } from './remote-transport.js';
import { networkFailure } from './reachability.js';
import { redact, secretValues } from '../config/masking.js';
import type { ServerConfig } from '../config/index.js';
import { FleetError, type ErrorKind } from '../errors.js';
import type { ExecuteOptions } from '../catalog/index.js';
import { Caller } from './calls.js';
import type { ChildTransport } from './child-transport.js';
import type { ConnectOptions, ServerConnection } from './connection.js';
import { settle } from './deadlines.js';
import { callFailure, describeChildExit, type CallFailureContext } from './failures.js';
import type { RetryAfterLog } from './rate-limits.js';
import { filterTools, listAllTools, type ToolListing } from './tool-listing.js';
import { nameConnection } from '../telemetry/lifecycle.js';

/** What a call's input round waiting on the host is told when the connection ends. */
const connectionEnded = () => new SdkError(SdkErrorCode.ConnectionClosed, 'the connection closed');

// How long close() waits for a remote server to acknowledge the end of its session.
const SESSION_END_MS = 1000;

/** The child side of a stdio connection; null for remote servers. */
export interface ChildSide {
  child: ChildTransport;
  stderrTail: () => string;
}

/** The connection to `client`, whose server listed `listing` at connect. */
export function openConnection(
  name: string,
  config: ServerConfig,
  client: Client,
  listing: ToolListing,
  options: ConnectOptions,
  local: ChildSide | null,
  retryAfter?: RetryAfterLog,
): ServerConnection {
  const connection = new OpenConnection(name, config, client, listing, options, local, retryAfter);
  // The catalog's re-sync spans name the server by its connection.
  nameConnection(connection, name, config, options.lifecycle);
  return connection;
}

/**
 * A class, not an object of closures: a host keeps one per ready server. It is
 * also what its failed calls are explained against (`CallFailureContext`).
 */
class OpenConnection implements ServerConnection, CallFailureContext {
  readonly secrets: string[];
  readonly child: ChildTransport | undefined;
  readonly pid: number | null;
  readonly connectTtlMs: number | null;
  readonly connectScope: ServerConnection['connectScope'];
  readonly serverInfo: { name: string; version: string } | undefined;
  readonly reported: Promise<void>;
  /** Why it went away by itself, and as what kind of failure; settles only if it does. */
  private readonly lostAs: Promise<[string, ErrorKind]>;
  private lostWhy: Promise<string> | undefined;
  lostReach?: (why: string, kind?: ErrorKind) => void;
  readonly fleetSecrets: (() => readonly string[]) | undefined;
  private listedTools: Tool[];
  // Calls hand the SDK the listed definition: it validates structured output against it.
  private byName: Map<string, Tool>;
  private ending: Promise<void> | undefined;
  private reason: FleetError | undefined;
  private endedAlone = false;
  private readonly caller: Caller;
  private endedController: AbortController | undefined;

  constructor(
    readonly name: string,
    readonly config: ServerConfig,
    readonly client: Client,
    listing: ToolListing,
    options: ConnectOptions,
    private readonly local: ChildSide | null,
    retryAfter?: RetryAfterLog,
  ) {
    this.secrets = options.secrets === undefined ? secretValues(config) : [...secretValues(config), ...options.secrets];
    // The host's function, shared by every connection: nothing of this one is kept with it.
    this.fleetSecrets = options.fleetSecrets;
    const version = client.getServerVersion();
    const child = local?.child;
    this.child = child;
    this.pid = child?.pid ?? null;
    this.connectTtlMs = listing.ttlMs;
    this.connectScope = listing.scope;
    this.serverInfo = version === undefined ? undefined : { name: version.name, version: version.version };
    this.listedTools = listing.tools;
    this.byName = byToolName(listing.tools);
    // Why the connection went away by itself: for onClose, and for the calls it broke. Over HTTP it is
    // `auth` when the server refused the credentials (a person replaces them), else `transport_closed`.
    this.lostAs = child
      ? child.exited.then(async (info): Promise<[string, ErrorKind]> => [await describeChildExit(child, info, local!.stderrTail), 'transport_closed'])
      : new Promise<[string, ErrorKind]>((resolve) => {
          client.onclose = () => resolve(['the server closed the connection', 'transport_closed']);
          // Over HTTP nothing closes when the server goes away: a call that cannot reach it says so.
          this.lostReach = (why, kind = 'transport_closed') => resolve([`connection lost: ${why}`, kind]);
          // A legacy SSE connection is its stream: once that breaks, the session it named is gone with it
          // (the stream's own reconnect would open a new session the client never initialized).
          if (config.type === 'remote' && client.transport instanceof SSEClientTransport) {
            const origin = new URL(config.url).origin;
            client.onerror = (error) => {
              if (error instanceof SseError) resolve([`connection lost: the event stream of ${origin} ended`, 'transport_closed']);
            };
          }
        });
    // Only `onClose` is kept: the connect's options hold its signal and hooks, done with once connected.
    const { onClose } = options;
    this.reported = this.lostAs.then(async ([message, kind]) => {
      if (this.ending !== undefined) return;
      this.endedAlone = true;
      // Its stderr tail may quote another server's secret: the loss is told without it.
      await onClose?.(new FleetError(kind, this.fleetSecrets === undefined ? message : redact(message, this.fleetSecrets())));
    });
    this.caller = new Caller(client, this, this.byName, retryAfter, options.answerInput);
  }

  /** Made when first asked for (a failed call, the end signal of a 2026-07-28 call): most connections never are. */
  get lost(): Promise<string> {
    return (this.lostWhy ??= this.lostAs.then(([why]) => why));
  }

  pingFailure(error: unknown): FleetError | null {
    if (this.child !== undefined || error instanceof ProtocolError) return null;
    const secrets = this.fleetSecrets === undefined ? this.secrets : [...this.secrets, ...this.fleetSecrets()];
    // Described by status and origin: an error body may echo the request's own Authorization header.
    const remote = this.config.type === 'remote' ? describeRemoteFailure(error, this.config.url) : null;
    if (remote?.[0] === 'auth') return new FleetError('auth', redact(`connection lost: ${remote[1]}`, secrets));
    const why = networkFailure(error)?.reason ?? remote?.[1] ?? (error instanceof Error ? error.message : String(error));
    return new FleetError('transport_closed', redact(`connection lost: a ping could not reach the server: ${why}`, secrets));
  }

  get tools(): Tool[] {
    return filterTools(this.listedTools, this.config.tools);
  }

  get allTools(): Tool[] {
    return this.listedTools;
  }

  listTools(signal = new AbortController().signal): Promise<ToolListing> {
    const bound = { signal, timeout: this.config.timeout_seconds * 1000 };
    return listAllTools(this.client, bound, { phase: 'tools/list' });
  }

  replaceTools(listing: Tool[]): void {
    this.listedTools = listing;
    this.byName = byToolName(listing);
    this.caller.definitions = this.byName;
  }

  async callTool(tool: string, args: Record<string, unknown>, { signal, onProgress }: ExecuteOptions = {}): Promise<CallToolResult> {
    if (this.ending !== undefined || this.endedAlone || this.child?.exitInfo !== undefined) {
      throw await callFailure(undefined, tool, signal, this);
    }
    return this.caller.call(tool, args, signal, onProgress);
  }

  stderrTail(): string {
    return this.local?.stderrTail() ?? '';
  }

  close(reason?: FleetError): Promise<void> {
    if (this.ending === undefined) this.reason = reason;
    this.ending ??= this.shutdown();
    this.endedController?.abort(connectionEnded());
    return this.ending;
  }

  ended(): AbortSignal {
    // Made on first use (a 2026-07-28 call): most connections never need one.
    if (this.endedController === undefined) {
      const controller = (this.endedController = new AbortController());
      if (this.ending !== undefined || this.endedAlone) controller.abort(connectionEnded());
      else void this.lost.then(() => controller.abort(connectionEnded()));
    }
    return this.endedController.signal;
  }

  closing(): boolean {
    return this.ending !== undefined;
  }

  closeReason(): FleetError | undefined {
    return this.reason;
  }

  closedAlone(): boolean {
    return this.endedAlone;
  }

  private async shutdown(): Promise<void> {
    const transport = this.client.transport;
    // Ending the session is a courtesy the server may refuse (405) or ignore; it
    // expires sessions anyway, so its failure is not an error of close().
    if (transport instanceof StreamableHTTPClientTransport && transport.sessionId !== undefined) {
      await settle(transport.terminateSession().catch(() => undefined), SESSION_END_MS);
    }
    await this.client.close();
    await this.child?.close();
  }
}

function byToolName(tools: readonly Tool[]): Map<string, Tool> {
  return new Map(tools.map((tool) => [tool.name, tool]));
}
