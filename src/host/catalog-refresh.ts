// A forced re-list of a server's tools, resources and prompts, answered as
// counts: through its shared connection, or, for a per_user server, through
// the caller's own session (opened by it when none is; the page's way to a
// first listing before any call).
import type { Client } from '@modelcontextprotocol/client';
import type { CatalogFreshness } from '../catalog/freshness.js';
import { FleetError, NotFoundError, NotReadyError } from '../errors.js';
import type { CatalogCounts, McpHost } from './api.js';
import { principalOf } from './access.js';
import { GrantMissingError, MissingInputsError, type Sessions } from './sessions.js';
import type { ToolMount } from './tool-mount.js';

export interface CatalogRefreshDeps {
  running(): unknown;
  server: McpHost['server'];
  catalogs: Pick<CatalogFreshness, 'get'>;
  mount: Pick<ToolMount, 'registeredCount'>;
  sessions: Pick<Sessions, 'isPerUser' | 'refresh' | 'learnt'>;
}

export function createCatalogRefresh(deps: CatalogRefreshDeps): McpHost['refreshCatalog'] {
  // Taken apart, not kept: the deps object itself dies once the host is made.
  const { running, server, sessions, catalogs, mount } = deps;
  return async function refreshCatalog(name, options) {
    running();
    const view = server(name);
    if (!view) throw new NotFoundError(name);
    if (sessions.isPerUser(name)) {
      const principal = principalOf(options?.principal);
      const connection = await sessions.refresh(name, principal === undefined ? {} : { principal }).catch((error: unknown) => {
        // Inputs or a grant still to give are said as such; a session that could not open, as a listing that failed.
        if (error instanceof MissingInputsError || error instanceof GrantMissingError || error instanceof FleetError) throw error;
        throw new FleetError('transport_closed', error instanceof Error ? error.message : String(error));
      });
      return { tools: sessions.learnt(name, principal?.id)?.length ?? 0, ...(await offerCounts(connection.client)) };
    }
    const handle = catalogs.get(name);
    if (!handle) throw new NotReadyError(name, view.state);
    const offer = await handle.refresh();
    return { tools: mount.registeredCount(name), resources: offer.resources.length, prompts: offer.prompts.length };
  };
}

/** What a session's server offers besides its tools, counted now (none of a kind it does not offer). */
async function offerCounts(client: Client): Promise<Omit<CatalogCounts, 'tools'>> {
  const offered = client.getServerCapabilities();
  const [resources, prompts] = await Promise.all([
    offered?.resources ? client.listResources().then((listed) => listed.resources.length) : 0,
    offered?.prompts ? client.listPrompts().then((listed) => listed.prompts.length) : 0,
  ]);
  return { resources, prompts };
}
