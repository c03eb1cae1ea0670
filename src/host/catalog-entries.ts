import type { CatalogEntry } from './api.js';
import type { ToolMount } from './tool-mount.js';
import { waitsOnDemand } from './tool-search.js';
import type { ProjectionContext } from '../journal/projection.js';
import type { ServerView } from '../journal/server-view.js';
import { catalogUi, modelVisible } from '../apps/tool-meta.js';
import type { Sessions } from './sessions.js';
import { own } from '../records.js';

/**
 * The catalog: each server's view with what it offers. Its tools are the
 * registered ones; an on-demand server waiting for a call publishes its last
 * run's; a per_user server, what its sessions listed as `principal` is shown it. Listings not yet made
 * are `null` (not `[]`).
 */
export function catalogEntries(
  views: ServerView[],
  context: ProjectionContext,
  mount: ToolMount,
  sessions: Pick<Sessions, 'learnt'>,
  principal?: string,
): CatalogEntry[] {
  return views.map((view) => {
    const server = own(context.servers, view.name);
    const mounted = server?.config.scope === 'per_user' ? (sessions.learnt(view.name, principal) ?? []) : mount.forServer(view.name);
    const tools =
      mounted.length === 0 && server !== undefined && waitsOnDemand(server)
        ? (server.known_tools ?? []).map(({ name, original, description, parameters, ui }) => ({
            name,
            original,
            description,
            parameters: parameters ?? {},
            ui: ui ?? null,
            model_visible: modelVisible(ui),
          }))
        : mounted.map((tool) => ({
            name: tool.name,
            original: tool.originalName,
            description: tool.description,
            parameters: tool.parameters,
            ...catalogUi(tool),
          }));
    return {
      ...view,
      tools,
      resources: server?.resources ?? null,
      resource_templates: server?.templates ?? null,
      prompts: server?.prompts ?? null,
    };
  });
}
