/**
 * The host's MCP Apps: a tool's app (`toolUi`) and the bridge an embedder
 * connects its app frame to (`appBridge`), both through the server's live
 * connection, the bridge's tool calls through the tool mount's gate. With a
 * principal, both follow the access policy as an agent's calls do: the app
 * of a tool they may not see is none, and what the app calls is theirs
 * (their quota, their `tool.called`). The app of a per_user server's tool is
 * its user's: read, and served, through their own session of it.
 */
import type { McpHost } from './api.js';
import type { ToolMount } from './tool-mount.js';
import type { AppCallMeter } from './agent-tools.js';
import { principalOf, serverVisible, toolVisible } from './access.js';
import type { ServerActorRef } from '../machines/registry.machine.js';
import type { JournalEvent, ProjectionContext, Selectors } from '../journal/index.js';
import { namespaceToolName } from '../catalog/index.js';
import { createToolUis, openAppBridge, readAppResource, readyConnection, type ToolUi } from '../apps/index.js';
import type { CallToolResult } from '@modelcontextprotocol/client';
import type { Sessions } from './sessions.js';
import type { AgentTool } from '../catalog/index.js';
import type { PrincipalInput } from '../users/index.js';
import { own } from '../records.js';

export interface HostAppsOptions {
  mount: ToolMount;
  selectors: Pick<Selectors, 'toolOwner'>;
  projected(): ProjectionContext;
  current(name: string): ServerActorRef | undefined;
  /** Counts and journals an app's call as its principal's. */
  meter: AppCallMeter;
  subscribe(listener: (event: JournalEvent) => void): () => void;
  sessions: Pick<Sessions, 'owner' | 'learnt' | 'secrets'>;
  /** A server as a principal reaches it whole: a per_user server's app is served through it. */
  serverLink: McpHost['serverLink'];
}

export type HostApps = Pick<McpHost, 'toolUi' | 'appBridge'> & { close(): void };

export function createHostApps(options: HostAppsOptions): HostApps {
  // Taken apart, not kept: the options object itself dies once the host is made.
  const { mount, current, projected, sessions, serverLink, meter } = options;
  const uis = createToolUis(options);
  /** The tool `name` when `principal` may see it; a hidden one is as unknown as a missing one. */
  const visible = (name: string, principal: ReturnType<typeof principalOf>) => {
    const found = uis.locate(name);
    if (found === undefined || !toolVisible(projected(), found.server, found.entry.original, principal)) return undefined;
    return found;
  };
  /** The tool `name` of a per_user server, with an app, as `principal` learnt it, when they may see it. */
  const ownApp = (name: string, principal: ReturnType<typeof principalOf>): { server: string; tool: AgentTool; uri: string } | undefined => {
    const owner = sessions.owner(name, principal?.id);
    if (owner === undefined || !toolVisible(projected(), owner.server, owner.original, principal)) return undefined;
    const tool = sessions.learnt(owner.server, principal?.id)?.find((learnt) => learnt.name === name);
    const uri = tool?.ui?.resourceUri;
    return tool === undefined || uri == null ? undefined : { server: owner.server, tool, uri };
  };
  /** A per_user server's bound on one request of its app (its `call_timeout_seconds`). */
  const timeoutOf = (server: string) => (own(projected().servers, server)?.config.call_timeout_seconds ?? 60) * 1000;
  /** The principal's link to the per_user server `server`: their own session of it. */
  const linkOf = (server: string, name: string, input: PrincipalInput | undefined) => {
    const link = serverLink(server, input === undefined ? {} : { principal: input });
    if (link === undefined) throw new Error(`appBridge: no tool named "${name}"`);
    return link;
  };

  /** The app of a per_user server's tool, read through the principal's own session (opened for it when none is). */
  async function ownToolUi(found: NonNullable<ReturnType<typeof ownApp>>, input: PrincipalInput | undefined): Promise<ToolUi> {
    const { server, tool, uri } = found;
    const client = await linkOf(server, tool.name, input).client();
    const resource = await readAppResource(server, client, uri, timeoutOf(server), sessions.secrets());
    return { tool: tool.name, server, original: tool.originalName, resourceUri: uri, ...resource, visibility: tool.ui?.visibility ?? [] };
  }

  /** The name a call is journaled under: the mounted tool's, or the plain namespaced one. */
  const agentName = (server: string, original: string) =>
    mount.list().find((tool) => tool.server === server && tool.originalName === original)?.name ?? namespaceToolName(server, original);

  return {
    async toolUi(name, uiOptions) {
      const principal = principalOf(uiOptions?.principal);
      const perUser = ownApp(name, principal);
      if (perUser !== undefined) return ownToolUi(perUser, uiOptions?.principal);
      if (visible(name, principal) === undefined) return null;
      return uis.toolUi(name);
    },

    async appBridge(name, transport, bridgeOptions = {}) {
      const { principal: input, ...appOptions } = bridgeOptions;
      const principal = principalOf(input);
      const perUser = ownApp(name, principal);
      if (perUser !== undefined) {
        const link = linkOf(perUser.server, name, input);
        // The user's session opens now: rejects before the app is connected to nothing.
        await link.client();
        return openAppBridge({
          tool: perUser.tool.name,
          server: perUser.server,
          client: () => link.client(),
          async callFor(original) {
            if (!link.mayCall(original) || !(await link.tools()).some((tool) => tool.name === original)) return undefined;
            return (_tool, args, callOptions) => link.callTool(original, args, callOptions.signal === undefined ? {} : { signal: callOptions.signal });
          },
          mayReadResources: () => link.visible(),
          timeoutMs: timeoutOf(perUser.server),
          transport,
          options: appOptions,
        });
      }
      const found = visible(name, principal);
      if (found === undefined) throw new Error(`appBridge: no tool named "${name}"`);
      const { server } = found;
      // Not ready: rejects now, before the app is connected to nothing.
      readyConnection(current, server);
      const config = current(server)?.getSnapshot().context.config;
      return openAppBridge({
        tool: found.entry.name,
        server,
        client: () => readyConnection(current, server).connection.client,
        // Looked up per call: a re-registration (list_changed) or a changed policy changes what the app may call.
        callFor(original) {
          if (!toolVisible(projected(), server, original, principal)) return undefined;
          const call = mount.appCall(server, original);
          if (call === undefined) return undefined;
          return (tool, args, callOptions) =>
            meter(server, agentName(server, original), principal, async () => (await call(tool, args, callOptions)) as CallToolResult);
        },
        mayReadResources: () => serverVisible(projected(), server, principal),
        timeoutMs: (config?.call_timeout_seconds ?? 60) * 1000,
        transport,
        options: appOptions,
      });
    },

    close: () => uis.close(),
  };
}
