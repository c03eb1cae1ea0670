/**
 * Deferred tool loading: instead of every tool, the model gets `search_tools`
 * and the tools its servers mark `tools.always_load`; what a search finds is
 * loaded (and an `on_demand` server behind it started). Eager lists carry
 * `alwaysLoad` too, for the provider exports' own deferred formats.
 */
import type { ServerActorRef } from '../machines/registry.machine.js';
import type { AgentTool } from '../catalog/index.js';
import { searchToolsTool } from '../catalog/tools/search-tools-tool.js';
import type { OnDemand } from './on-demand.js';
import type { FleetSearch } from './tool-search.js';
import type { Principal } from '../users/index.js';

export interface DeferredTools {
  /** The `search_tools` meta tool, finding what `principal` may see (everything without one). */
  searchTool(principal?: Principal): AgentTool;
  /** `tools` with the always-loaded ones marked `alwaysLoad` (copies: the mounted tools are shared). */
  marked(tools: AgentTool[]): AgentTool[];
  /** What a deferred request starts with: `search_tools` and the always-loaded tools of `marked`. */
  deferred(marked: AgentTool[], principal?: Principal): AgentTool[];
}

export function createDeferredTools(options: {
  servers(): Record<string, ServerActorRef>;
  search: FleetSearch;
  onDemand: OnDemand;
}): DeferredTools {
  const makeSearchTool = (principal: Principal | undefined): AgentTool =>
    searchToolsTool({
      search: (query, limit) =>
        options.search
          .search(query, { limit, ...(principal && { principal }) })
          .filter((found) => found.available)
          .map(({ name, server, description, parameters }) => ({ name, server, description, parameters })),
      // Loading a tool of an on-demand server starts it, so that it is ready by the time the model calls.
      loaded: (found) => options.onDemand.load(found.map((tool) => tool.server)),
    });
  // The admin's is made once, when first asked for (a host whose agents never defer tools needs none); a user's
  // per request (it is small: a closure over the principal).
  let adminSearchTool: AgentTool | undefined;
  const searchTool = (principal?: Principal): AgentTool =>
    principal === undefined ? (adminSearchTool ??= makeSearchTool(undefined)) : makeSearchTool(principal);

  return {
    searchTool,
    marked(tools) {
      const always = new Map<string, true | ReadonlySet<string>>();
      for (const [name, ref] of Object.entries(options.servers())) {
        const setting = ref.getSnapshot().context.config.tools.always_load;
        if (setting === true) always.set(name, true);
        else if (setting.length > 0) always.set(name, new Set(setting));
      }
      if (always.size === 0) return tools;
      return tools.map((tool) => {
        const setting = always.get(tool.server);
        const marked = setting === true || (setting !== undefined && setting.has(tool.originalName));
        return marked ? { ...tool, alwaysLoad: true } : tool;
      });
    },
    deferred: (marked, principal) => [searchTool(principal), ...marked.filter((tool) => tool.alwaysLoad === true)],
  };
}
