/**
 * The host's MCP Apps: a tool's app (`toolUi`) and the bridge an embedder
 * connects its app frame to (`appBridge`), both through the server's live
 * connection, the bridge's tool calls through the tool mount's gate. With a
 * principal, both follow the access policy as an agent's calls do: the app
 * of a tool they may not see is none, and what the app calls is theirs
 * (their quota, their `tool.called`).
 */
import type { McpHost } from './api.js';
import type { ToolMount } from './tool-mount.js';
import type { AppCallMeter } from './agent-tools.js';
import { principalOf, serverVisible, toolVisible } from './access.js';
import type { ServerActorRef } from '../machines/registry.machine.js';
import type { JournalEvent, ProjectionContext, Selectors } from '../journal/index.js';
import { namespaceToolName } from '../catalog/index.js';
import { createToolUis, openAppBridge, readyConnection } from '../apps/index.js';
import type { CallToolResult } from '@modelcontextprotocol/client';

export interface HostAppsOptions {
  mount: ToolMount;
  selectors: Pick<Selectors, 'toolOwner'>;
  projected(): ProjectionContext;
  current(name: string): ServerActorRef | undefined;
  /** Counts and journals an app's call as its principal's. */
  meter: AppCallMeter;
  subscribe(listener: (event: JournalEvent) => void): () => void;
}

export type HostApps = Pick<McpHost, 'toolUi' | 'appBridge'> & { close(): void };

export function createHostApps(options: HostAppsOptions): HostApps {
  const { mount, current, projected } = options;
  const uis = createToolUis(options);
  /** The tool `name` when `principal` may see it; a hidden one is as unknown as a missing one. */
  const visible = (name: string, principal: ReturnType<typeof principalOf>) => {
    const found = uis.locate(name);
    if (found === undefined || !toolVisible(projected(), found.server, found.entry.original, principal)) return undefined;
    return found;
  };
  /** The name a call is journaled under: the mounted tool's, or the plain namespaced one. */
  const agentName = (server: string, original: string) =>
    mount.list().find((tool) => tool.server === server && tool.originalName === original)?.name ?? namespaceToolName(server, original);

  return {
    async toolUi(name, uiOptions) {
      if (visible(name, principalOf(uiOptions?.principal)) === undefined) return null;
      return uis.toolUi(name);
    },

    async appBridge(name, transport, bridgeOptions = {}) {
      const { principal: input, ...appOptions } = bridgeOptions;
      const principal = principalOf(input);
      const found = visible(name, principal);
      if (found === undefined) throw new Error(`appBridge: no tool named "${name}"`);
      const { server } = found;
      // Not ready: rejects now, before the app is connected to nothing.
      readyConnection(current, server);
      const config = current(server)?.getSnapshot().context.config;
      return openAppBridge({
        tool: found.entry.name,
        server,
        live: () => readyConnection(current, server),
        // Looked up per call: a re-registration (list_changed) or a changed policy changes what the app may call.
        callFor(original) {
          if (!toolVisible(projected(), server, original, principal)) return undefined;
          const call = mount.appCall(server, original);
          if (call === undefined) return undefined;
          return (tool, args, callOptions) =>
            options.meter(server, agentName(server, original), principal, async () => (await call(tool, args, callOptions)) as CallToolResult);
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
