/**
 * The host's MCP Apps: a tool's app (`toolUi`) and the bridge an embedder
 * connects its app frame to (`appBridge`), both through the server's live
 * connection, the bridge's tool calls through the tool mount's gate.
 */
import type { McpHost } from './api.js';
import type { ToolMount } from './tool-mount.js';
import type { ServerActorRef } from '../machines/registry.machine.js';
import type { JournalEvent, ProjectionContext, Selectors } from '../journal/index.js';
import { createToolUis, openAppBridge, readyConnection } from '../apps/index.js';

export interface HostAppsOptions {
  mount: ToolMount;
  selectors: Pick<Selectors, 'toolOwner'>;
  projected(): ProjectionContext;
  current(name: string): ServerActorRef | undefined;
  subscribe(listener: (event: JournalEvent) => void): () => void;
}

export type HostApps = Pick<McpHost, 'toolUi' | 'appBridge'> & { close(): void };

export function createHostApps(options: HostAppsOptions): HostApps {
  const { mount, current } = options;
  const uis = createToolUis(options);
  return {
    toolUi: (name) => uis.toolUi(name),

    async appBridge(name, transport, bridgeOptions = {}) {
      const found = uis.locate(name);
      if (found === undefined) throw new Error(`appBridge: no tool named "${name}"`);
      const { server } = found;
      // Not ready: rejects now, before the app is connected to nothing.
      readyConnection(current, server);
      const config = current(server)?.getSnapshot().context.config;
      return openAppBridge({
        tool: found.entry.name,
        server,
        live: () => readyConnection(current, server),
        // Looked up per call: a re-registration (list_changed) changes what the server offers.
        callFor: (original) => mount.appCall(server, original),
        timeoutMs: (config?.call_timeout_seconds ?? 60) * 1000,
        transport,
        options: bridgeOptions,
      });
    },

    close: () => uis.close(),
  };
}
