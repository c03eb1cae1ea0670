/**
 * One server as a principal reaches it whole (`/mcp/servers/:name`): its live
 * client, for what is forwarded as it is (resources, prompts, completions,
 * logging), and its tool calls through the host's path, so each call is still
 * the principal's (the access policy, approvals, quota, `tool.called`). A
 * per_user server is the principal's own session of it. And, for `/mcp`, a
 * resource read or a completion sent to a shared server's live connection.
 */
import type { CallToolResult, Client, Tool } from '@modelcontextprotocol/client';
import type { McpHost } from './api.js';
import type { ToolMount } from './tool-mount.js';
import type { AppCallMeter } from './agent-tools.js';
import type { Sessions } from './sessions.js';
import { principalOf, serverVisible, toolVisible } from './access.js';
import type { ServerActorRef } from '../machines/registry.machine.js';
import type { ProjectionContext } from '../journal/index.js';
import type { ExecuteOptions } from '../catalog/index.js';
import { namespaceToolName } from '../catalog/index.js';
import { readyConnection } from '../apps/index.js';
import type { PrincipalInput } from '../users/index.js';
import { FleetError, NotFoundError } from '../errors.js';
import { redact, secretValues } from '../config/masking.js';
import { own } from '../records.js';

/** What `/mcp/servers/:name` reaches of one server for one principal. */
export interface ServerLink {
  readonly server: string;
  /** Whether it is a per_user server (each principal has a session of their own). */
  readonly perUser: boolean;
  /**
   * The SDK client connected to the server now: the shared connection, or the
   * principal's session (connected on first use). Rejects while the server is
   * not ready (NotReadyError) or the principal's session cannot open.
   */
  client(signal?: AbortSignal): Promise<Client>;
  /** The server's tools (after its config's filter) that the principal may see, as the server listed them. */
  tools(signal?: AbortSignal): Promise<Tool[]>;
  /** Whether the principal may see (and call) the tool `original`. */
  mayCall(original: string): boolean;
  /** Calls `original` as the principal: approvals, quota and `tool.called` as any call of theirs. */
  callTool(original: string, args: Record<string, unknown>, options?: Omit<ExecuteOptions, 'principal'>): Promise<CallToolResult>;
  /** Whether the principal may still see the server (the policy may change while a session is open). */
  visible(): boolean;
}

export interface ServerLinksOptions {
  mount: ToolMount;
  sessions: Sessions;
  projected(): ProjectionContext;
  current(name: string): ServerActorRef | undefined;
  meter: AppCallMeter;
  /** Throws unless the host is running. */
  running(): unknown;
}

export function createServerLinks(options: ServerLinksOptions): Pick<McpHost, 'serverLink' | 'readResource' | 'complete'> {
  const { mount, sessions, projected, current, meter, running } = options;
  /** The name a call is journaled under: the mounted tool's, or the plain namespaced one. */
  const agentName = (server: string, original: string) =>
    mount.list().find((tool) => tool.server === server && tool.originalName === original)?.name ?? namespaceToolName(server, original);

  /**
   * One request to a ready server's live connection for a caller who may see it: bounded by
   * the server's call timeout, its error text redacted of the server's secrets.
   */
  async function onServer<T>(
    name: string,
    requestOptions: { principal?: PrincipalInput; signal?: AbortSignal } | undefined,
    send: (client: Client, request: { signal?: AbortSignal; timeout: number }) => Promise<T>,
  ): Promise<T> {
    running();
    if (own(projected().servers, name) === undefined || !serverVisible(projected(), name, principalOf(requestOptions?.principal))) throw new NotFoundError(name);
    const live = readyConnection(current, name);
    const config = current(name)?.getSnapshot().context.config;
    try {
      return await send(live.connection.client, {
        ...(requestOptions?.signal && { signal: requestOptions.signal }),
        timeout: (config?.call_timeout_seconds ?? 60) * 1000,
      });
    } catch (error) {
      // Cancelled by the caller: theirs to know as such, not the server's failure.
      if (requestOptions?.signal?.aborted === true) throw requestOptions.signal.reason;
      // The server's own error stays the cause: its code (a resource not found) is what a gateway answers with.
      throw new FleetError('protocol', redact(`${name}: ${(error as Error).message}`, config === undefined ? [] : secretValues(config)), { cause: error });
    }
  }

  return {
    readResource: (name, uri, readOptions) => onServer(name, readOptions, (client, request) => client.readResource({ uri }, request)),
    complete: (name, params, completeOptions) => onServer(name, completeOptions, (client, request) => client.complete(params, request)),
    serverLink(server: string, linkOptions?: { principal?: PrincipalInput }): ServerLink | undefined {
      const principal = principalOf(linkOptions?.principal);
      // An unknown server and one the principal may not see answer alike.
      if (own(projected().servers, server) === undefined || !serverVisible(projected(), server, principal)) return undefined;
      const perUser = sessions.isPerUser(server);
      const connection = async (signal?: AbortSignal) =>
        perUser
          ? sessions.connection(server, { ...(principal && { principal }), ...(signal && { signal }) })
          : readyConnection(current, server).connection;
      const mayCall = (original: string) => toolVisible(projected(), server, original, principal);
      return {
        server,
        perUser,
        client: async (signal) => (await connection(signal)).client,
        tools: async (signal) => (await connection(signal)).tools.filter((tool) => mayCall(tool.name)),
        mayCall,
        visible: () => serverVisible(projected(), server, principal),
        async callTool(original, args, callOptions = {}) {
          const run = async (): Promise<CallToolResult> => {
            if (perUser) {
              return (await sessions.call(server, original, args, { ...callOptions, ...(principal && { principal }) })) as CallToolResult;
            }
            // Throws NotReadyError while the server is not ready, as a call of a stopped server should.
            readyConnection(current, server);
            const call = mount.appCall(server, original);
            if (call === undefined) return { content: [{ type: 'text', text: `Unknown tool: ${original}` }], isError: true };
            return (await call(original, args, callOptions)) as CallToolResult;
          };
          return meter(server, agentName(server, original), principal, run);
        },
      };
    },
  };
}
