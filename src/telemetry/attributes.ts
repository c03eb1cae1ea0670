/**
 * Attribute names and the builders of the attribute sets mcp-fleet records,
 * after the OpenTelemetry semantic conventions for MCP and GenAI tool
 * execution (`mcp.*`, `gen_ai.*`, `jsonrpc.*`, `network.*`, `server.*`,
 * `error.type`); `mcp_fleet.*` where the conventions have no name. Only
 * identifiers go in: never an env or header value, a token, a tool's
 * arguments or a result.
 */
import { createHash } from 'node:crypto';
import type { Attributes } from '@opentelemetry/api';
import { ProtocolError, SdkError, SdkErrorCode, StreamableHTTPClientTransport, type Client } from '@modelcontextprotocol/client';
import type { ServerConfig } from '../config/index.js';
import { FleetError } from '../errors.js';

export const ATTR = {
  methodName: 'mcp.method.name',
  sessionId: 'mcp.session.id',
  protocolVersion: 'mcp.protocol.version',
  resourceUri: 'mcp.resource.uri',
  requestId: 'jsonrpc.request.id',
  toolName: 'gen_ai.tool.name',
  promptName: 'gen_ai.prompt.name',
  operationName: 'gen_ai.operation.name',
  errorType: 'error.type',
  networkTransport: 'network.transport',
  networkProtocol: 'network.protocol.name',
  serverAddress: 'server.address',
  serverPort: 'server.port',
  processPid: 'process.pid',
  /** The server's name in mcp_servers.json. */
  server: 'mcp_fleet.server.name',
  /** A state of the server machine, as views show it. */
  state: 'mcp_fleet.server.state',
  fromState: 'mcp_fleet.server.state.from',
  catalogKind: 'mcp_fleet.catalog.kind',
  catalogChanged: 'mcp_fleet.catalog.changed',
  /** Why a catalog listing ran: `connect` (the first) or `list_changed`. */
  catalogTrigger: 'mcp_fleet.catalog.trigger',
  /** How many tools a server listed at connect. */
  toolCount: 'mcp_fleet.tools.count',
  outcome: 'mcp_fleet.outcome',
} as const;

/** `error.type` of a tool result with `isError` (the conventions' value). */
export const TOOL_ERROR = 'tool_error';
/** `error.type` when nothing more precise is known (the conventions' fallback). */
export const OTHER_ERROR = '_OTHER';

/** Where a server is: stdio is a pipe; a remote server's host and port, never its path or query. */
export function peerAttributes(config: ServerConfig, into: Attributes): Attributes {
  if (config.type === 'local') {
    into[ATTR.networkTransport] = 'pipe';
    return into;
  }
  into[ATTR.networkTransport] = 'tcp';
  into[ATTR.networkProtocol] = 'http';
  try {
    const url = new URL(config.url);
    into[ATTR.serverAddress] = url.hostname;
    into[ATTR.serverPort] = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  } catch {
    // A config's URL was validated on load; nothing to add if it is not one.
  }
  return into;
}

/** The negotiated protocol version and, over Streamable HTTP, the session id. */
export function sessionAttributes(client: Client, into: Attributes): Attributes {
  const version = client.getNegotiatedProtocolVersion();
  if (version !== undefined) into[ATTR.protocolVersion] = version;
  const transport = client.transport;
  if (transport instanceof StreamableHTTPClientTransport && transport.sessionId !== undefined) {
    into[ATTR.sessionId] = sessionDigest(transport.sessionId);
  }
  return into;
}

// The digest is a function of the id alone, so whichever host asks gets the same answer.
let lastSession: { id: string; digest: string } | undefined;

/**
 * What `mcp.session.id` records: a digest of the session id, not the id. A
 * Streamable HTTP session id lets whoever holds it speak in that session, so
 * it is kept out of telemetry like a credential; the digest still groups a
 * session's spans.
 */
function sessionDigest(id: string): string {
  if (lastSession?.id !== id) lastSession = { id, digest: createHash('sha256').update(id).digest('hex').slice(0, 32) };
  return lastSession.digest;
}

/** The attributes of one request span to `server`: method, peer, session. */
export function requestAttributes(server: string, config: ServerConfig, client: Client, method: string): Attributes {
  const attributes: Attributes = { [ATTR.methodName]: method, [ATTR.server]: server };
  peerAttributes(config, attributes);
  return sessionAttributes(client, attributes);
}

/**
 * A low-cardinality `error.type` for a failure: an error kind. A FleetError's
 * own; the SDK's, before the connection words it so (a handshake's), as the
 * connection would kind it (a timeout, a closed connection, else the
 * protocol); a network failure, unreachable; anything else `_OTHER`.
 */
export function errorType(error: unknown): string {
  if (error instanceof FleetError) return error.kind;
  if (error instanceof SdkError) {
    if (error.code === SdkErrorCode.RequestTimeout) return 'timeout';
    if (error.code === SdkErrorCode.ConnectionClosed || error.code === SdkErrorCode.SendFailed || error.code === SdkErrorCode.NotConnected) return 'transport_closed';
    if (error.code === SdkErrorCode.ClientHttpAuthentication || error.code === SdkErrorCode.ClientHttpForbidden) return 'auth';
    if (error.code === SdkErrorCode.ClientHttpFailedToOpenStream) return 'unreachable';
    // A failed version probe: its cause's kind, else whether the connection closed under it.
    if (error.code === SdkErrorCode.EraNegotiationFailed) {
      const cause = error.cause === undefined ? OTHER_ERROR : errorType(error.cause);
      if (cause !== OTHER_ERROR) return cause;
      return /connection closed/i.test(error.message) ? 'transport_closed' : 'protocol';
    }
    return 'protocol';
  }
  if (error instanceof ProtocolError) return 'protocol';
  if (error instanceof TypeError && error.message === 'fetch failed') return 'unreachable';
  return OTHER_ERROR;
}
