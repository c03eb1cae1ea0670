/**
 * A server once its handshake is done: the ServerConnection the rest of
 * mcp-fleet holds. It keeps the current tool listing, notices when the server
 * goes away by itself (onClose, and the text of the calls that broke), and
 * closes the session and the child exactly once.
 */
import { type Client, StreamableHTTPClientTransport, type Tool } from '@modelcontextprotocol/client';
import { secretValues } from '../config/masking.js';
import type { ServerConfig } from '../config/index.js';
import { FleetError } from '../errors.js';
import { createCaller, type CallFailure } from './calls.js';
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
  const secrets = secretValues(config);
  const version = client.getServerVersion();
  const child = local?.child;
  const allTools = listing.tools;
  let listedTools = allTools;
  // Calls hand the SDK the listed definition: it validates structured output against it.
  let byName = new Map(allTools.map((tool) => [tool.name, tool]));
  let closing: Promise<void> | undefined;
  let closedAlone = false;

  // Why the connection went away by itself: for onClose, and for the calls it broke.
  const lost: Promise<string> = child
    ? child.exited.then((info) => describeChildExit(child, info, local.stderrTail))
    : new Promise((resolve) => (client.onclose = () => resolve('the server closed the connection')));
  const reported = lost.then(async function reportClose(message) {
    if (closing !== undefined) return;
    closedAlone = true;
    await options.onClose?.(new FleetError('transport_closed', message));
  });

  const failure: CallFailureContext = {
    name,
    config,
    secrets,
    child,
    lost,
    reported,
    closing: () => closing !== undefined,
    closedAlone: () => closedAlone,
  };
  const fail: CallFailure = (err, tool, signal) => callFailure(err, tool, signal, failure);
  const call = createCaller(client, config, secrets, fail, (tool) => byName.get(tool), retryAfter, options.answerInput, name);

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

  const connection: ServerConnection = {
    client,
    pid: child?.pid ?? null,
    get tools() {
      return filterTools(listedTools, config.tools);
    },
    get allTools() {
      return listedTools;
    },
    connectTtlMs: listing.ttlMs,
    connectScope: listing.scope,
    listTools(signal = new AbortController().signal) {
      const bound = { signal, timeout: config.timeout_seconds * 1000 };
      return listAllTools(client, bound, { phase: 'tools/list' });
    },
    replaceTools(listing) {
      listedTools = listing;
      byName = new Map(listing.map((tool) => [tool.name, tool]));
    },
    serverInfo: version === undefined ? undefined : { name: version.name, version: version.version },
    async callTool(tool, args, { signal, onProgress } = {}) {
      if (closing !== undefined || closedAlone || child?.exitInfo !== undefined) {
        throw await fail(undefined, tool, signal);
      }
      return call(tool, args, signal, onProgress);
    },
    stderrTail: local?.stderrTail ?? (() => ''),
    close() {
      closing ??= shutdown();
      return closing;
    },
  };
  // The catalog's re-sync spans name the server by its connection.
  nameConnection(connection, name, config, options.lifecycle);
  return connection;
}
