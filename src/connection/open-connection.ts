/**
 * A server once its handshake is done: the ServerConnection the rest of
 * mcp-fleet holds. It keeps the current tool listing, notices when the server
 * goes away by itself (onClose, and the text of the calls that broke), and
 * closes the session and the child exactly once.
 */
import { type CallToolResult, type Client, SSEClientTransport, SseError, StreamableHTTPClientTransport, type Tool } from '@modelcontextprotocol/client';
import { redact, secretValues } from '../config/masking.js';
import type { ServerConfig } from '../config/index.js';
import { FleetError } from '../errors.js';
import type { ExecuteOptions } from '../catalog/index.js';
import { Caller } from './calls.js';
import type { ChildTransport } from './child-transport.js';
import type { ConnectOptions, ServerConnection } from './connection.js';
import { settle } from './deadlines.js';
import { callFailure, describeChildExit, type CallFailureContext } from './failures.js';
import type { RetryAfterLog } from './rate-limits.js';
import { filterTools, listAllTools, type ToolListing } from './tool-listing.js';
import { nameConnection } from '../telemetry/lifecycle.js';

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
  readonly lost: Promise<string>;
  readonly reported: Promise<void>;
  lostReach?: (why: string) => void;
  readonly fleetSecrets: (() => readonly string[]) | undefined;
  private listedTools: Tool[];
  // Calls hand the SDK the listed definition: it validates structured output against it.
  private byName: Map<string, Tool>;
  private ending: Promise<void> | undefined;
  private reason: FleetError | undefined;
  private endedAlone = false;
  private readonly caller: Caller;

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
    // Why the connection went away by itself: for onClose, and for the calls it broke.
    this.lost = child
      ? child.exited.then((info) => describeChildExit(child, info, local!.stderrTail))
      : new Promise((resolve) => {
          client.onclose = () => resolve('the server closed the connection');
          // Over HTTP nothing closes when the server goes away: a call that cannot reach it says so.
          this.lostReach = (why) => resolve(`connection lost: ${why}`);
          // A legacy SSE connection is its stream: once that breaks, the session it named is gone with it
          // (the stream's own reconnect would open a new session the client never initialized).
          if (config.type === 'remote' && client.transport instanceof SSEClientTransport) {
            const origin = new URL(config.url).origin;
            client.onerror = (error) => {
              if (error instanceof SseError) resolve(`connection lost: the event stream of ${origin} ended`);
            };
          }
        });
    // Only `onClose` is kept: the connect's options hold its signal and hooks, done with once connected.
    const { onClose } = options;
    this.reported = this.lost.then(async (message) => {
      if (this.ending !== undefined) return;
      this.endedAlone = true;
      // Its stderr tail may quote another server's secret: the loss is told without it.
      await onClose?.(new FleetError('transport_closed', this.fleetSecrets === undefined ? message : redact(message, this.fleetSecrets())));
    });
    this.caller = new Caller(client, this, this.byName, retryAfter, options.answerInput);
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
    return this.ending;
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
