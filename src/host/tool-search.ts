/**
 * Tool search over the whole fleet, kept in step with the journal's
 * projection: the index holds each ready server's registered tools, and the
 * last catalog of each `on_demand` server that waits for a call (calling or
 * loading one of those starts it). Before each search the index takes the
 * servers whose tool list changed since the last one — the projection's
 * lists are immutable and shared, so a changed server is one identity check
 * away and nothing else is re-indexed.
 */
import { principalOf, toolVisible } from './access.js';
import { ADMIN_PRINCIPAL, type PrincipalInput } from '../users/index.js';
import type { ToolEntry } from '../journal/index.js';
import type { ProjectedServer, ProjectionContext } from '../journal/index.js';
import type { Selectors } from '../journal/index.js';
import { createToolIndex, type SearchableTool, type ToolIndex } from '../catalog/search/tool-index.js';
import { isDenied } from '../approvals/policy.js';
import { modelVisible } from '../apps/tool-meta.js';
import type { AgentTool } from '../catalog/index.js';
import { own } from '../records.js';

/** One search hit as the library, the API and the CLI give it. */
export interface ToolSearchResult {
  name: string;
  server: string;
  original: string;
  description: string;
  parameters: Record<string, unknown>;
  score: number;
  /** Callable now: registered, or its `on_demand` server waits and starts when it is called. */
  available: boolean;
  /** Its server's `tools.approval` denies it: never offered to a model nor called, whatever the server's state. */
  denied: boolean;
  /** The fields the query matched (`name`, `title`, `description`, `parameters`), then `meaning` for a hit through a word close in meaning: why it ranks. */
  matched: string[];
}

export interface SearchOptions {
  /** At most this many results (default 8). */
  limit?: number;
  /** Only tools this principal may see (`{id, groups}`); absent: every tool (the admin). */
  principal?: PrincipalInput;
}

export const DEFAULT_SEARCH_LIMIT = 8;

export interface FleetSearch {
  search(query: string, options?: SearchOptions): ToolSearchResult[];
}

/** Whether a projected server is an `on_demand` one waiting for a call (its view: pending, nothing registered). */
export function waitsOnDemand(server: ProjectedServer): boolean {
  return server.config.start === 'on_demand' && server.state === 'pending' && server.registered_since === 0;
}

/** Per listing, the same listing without its app-only tools (the same array when it has none). */
const forModels = new WeakMap<readonly ToolEntry[], readonly ToolEntry[]>();

/** A listing without the tools a model may not see: the same array while the listing stays the same, so the index is not rebuilt. */
function modelEntries(entries: readonly ToolEntry[]): readonly ToolEntry[] {
  let kept = forModels.get(entries);
  if (kept === undefined) {
    kept = entries.every((entry) => modelVisible(entry.ui)) ? entries : entries.filter((entry) => modelVisible(entry.ui));
    forModels.set(entries, kept);
  }
  return kept;
}

/**
 * What the index should hold for a server: its registered tools, its last
 * catalog while it waits on demand, or nothing; never an app-only tool.
 */
function searchableEntries(server: ProjectedServer): readonly ToolEntry[] | null {
  if (server.registered_since > 0) return modelEntries(server.tools);
  if (waitsOnDemand(server)) return server.known_tools == null ? null : modelEntries(server.known_tools);
  return null;
}

/**
 * What the sessions of a `per_user` server listed (they have no journal
 * entries): its public listing (undefined before any), and each principal's
 * private one, which only that principal's searches may find.
 */
export type LearntTools = (server: string) => { shared: readonly AgentTool[] | undefined; own: ReadonlyMap<string, readonly AgentTool[]> };

const NOTHING_LEARNT: ReturnType<LearntTools> = { shared: undefined, own: new Map() };

export function createFleetSearch(
  projected: () => ProjectionContext,
  selectors: Pick<Selectors, 'toolOwner'>,
  learnt: LearntTools = () => NOTHING_LEARNT,
): FleetSearch {
  /** Made by the first search: a host whose agents never search keeps none (an empty one is ~8 KiB). */
  let shared: ToolIndex | null = null;
  /** Per server, the list the index holds (journal entries, or a per_user server's learnt tools). */
  const indexed = new Map<string, readonly ToolEntry[] | readonly AgentTool[]>();
  /** One searchable object per learnt tool, as per journal entry. */
  const searchableLearnt = new WeakMap<AgentTool, SearchableTool>();
  /**
   * A private listing's own index: the shared one holds one tool per name, and
   * two principals' private listings may hold the same names with other definitions.
   */
  const privateIndexes = new WeakMap<readonly AgentTool[], ReturnType<typeof createToolIndex>>();

  function privateIndex(server: string, tools: readonly AgentTool[]): ReturnType<typeof createToolIndex> {
    let found = privateIndexes.get(tools);
    if (found === undefined) {
      found = createToolIndex();
      found.setServerTools(server, tools.filter((tool) => modelVisible(tool.ui)).map(fromLearnt));
      privateIndexes.set(tools, found);
    }
    return found;
  }

  function fromLearnt(tool: AgentTool): SearchableTool {
    let found = searchableLearnt.get(tool);
    if (found === undefined) {
      found = { name: tool.name, server: tool.server, original: tool.originalName, description: tool.description, parameters: tool.parameters };
      searchableLearnt.set(tool, found);
    }
    return found;
  }
  /** One searchable object per journal entry: an unchanged tool is the same object to the index. */
  const searchable = new WeakMap<ToolEntry, SearchableTool>();

  function toSearchable(server: string, entry: ToolEntry): SearchableTool {
    let tool = searchable.get(entry);
    if (tool === undefined || tool.server !== server) {
      tool = {
        name: entry.name,
        server,
        original: entry.original,
        ...(entry.title === undefined ? {} : { title: entry.title }),
        description: entry.description,
        parameters: entry.parameters ?? {},
      };
      searchable.set(entry, tool);
    }
    return tool;
  }

  /** The shared index, holding what `context` says each server offers now. */
  function catchUp(context: ProjectionContext): ToolIndex {
    const index = (shared ??= createToolIndex());
    for (const [name, server] of Object.entries(context.servers)) {
      if (server.config.scope === 'per_user') {
        // Never registered: what its sessions listed publicly, once one has (a copy per change, so the identity check holds).
        const tools = learnt(name).shared;
        if (tools === indexed.get(name)) continue;
        if (tools === undefined) {
          index.removeServer(name);
          indexed.delete(name);
        } else {
          index.setServerTools(name, tools.filter((tool) => modelVisible(tool.ui)).map(fromLearnt));
          indexed.set(name, tools);
        }
        continue;
      }
      const entries = searchableEntries(server);
      if (entries === indexed.get(name)) continue;
      if (entries === null) {
        index.removeServer(name);
        indexed.delete(name);
      } else {
        index.setServerTools(name, entries.map((entry) => toSearchable(name, entry)));
        indexed.set(name, entries);
      }
    }
    for (const name of indexed.keys()) {
      if (own(context.servers, name) === undefined) {
        index.removeServer(name);
        indexed.delete(name);
      }
    }
    return index;
  }

  return {
    search(query, options = {}) {
      const context = projected();
      const index = catchUp(context);
      const limit = options.limit ?? DEFAULT_SEARCH_LIMIT;
      const principal = principalOf(options.principal);
      // A registered tool another server's later registration shadows is not what its name calls.
      const reachable = (tool: SearchableTool): boolean => {
        const server = own(context.servers, tool.server);
        if (server === undefined || !toolVisible(context, tool.server, tool.original, principal)) return false;
        return server.registered_since === 0 || selectors.toolOwner(context, tool.name) === tool.server;
      };
      // A principal's private listings of per_user servers: searched apart, and in place of those servers' public ones.
      const caller = principal?.id ?? ADMIN_PRINCIPAL;
      const privateListings = Object.entries(context.servers).flatMap(([name, server]) => {
        if (server.config.scope !== 'per_user') return [];
        const tools = learnt(name).own.get(caller);
        return tools === undefined ? [] : [{ name, tools }];
      });
      let hits = index.search(query, { limit, filter: reachable });
      if (privateListings.length > 0) {
        const replaced = new Set(privateListings.map(({ name }) => name));
        hits = [
          ...hits.filter((hit) => !replaced.has(hit.tool.server)),
          ...privateListings.flatMap(({ name, tools }) => privateIndex(name, tools).search(query, { limit, filter: reachable })),
        ]
          .sort((a, b) => b.score - a.score)
          .slice(0, limit);
      }
      return hits.map(({ tool, score, matched }) => {
        const server = own(context.servers, tool.server)!;
        const denied = isDenied(server.config.tools.approval, tool.original);
        return {
          name: tool.name,
          server: tool.server,
          original: tool.original,
          description: tool.description,
          parameters: tool.parameters,
          score,
          // A tool its server's `tools.approval` denies is never callable; a per_user server's call connects the caller's session.
          available: (server.state === 'ready' || waitsOnDemand(server) || server.config.scope === 'per_user') && !denied,
          denied,
          matched,
        };
      });
    },
  };
}
