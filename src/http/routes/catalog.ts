import type { Router } from 'express';
import { loadExpress } from '../express.js';
import type { McpHost } from '../../host.js';
import { maySeeTool } from '../../users/index.js';
import { requireAdmin, userOf, viewFor } from '../caller.js';

/** What each server offers, and the persisted config against the running one. */
export function catalogRoutes(host: McpHost): Router {
  const router = loadExpress().Router();

  router.get('/', async function catalog(_req, res) {
    await host.freshen();
    const user = userOf(res);
    if (user === undefined) {
      res.json({ servers: host.catalog() });
      return;
    }
    // A user's catalog: the servers they may see, each with the tools they may see, no policy.
    const servers = host.catalog({ principal: user }).flatMap((entry) => {
      const view = viewFor(entry, user);
      if (view === undefined) return [];
      const tools = entry.tools.filter((tool) => maySeeTool(entry.config, tool.original, user));
      return [{ ...entry, config: view.config, tools, tool_count: tools.length }];
    });
    res.json({ servers });
  });

  router.get('/diff', async function catalogDiff(_req, res) {
    requireAdmin(res);
    res.json(await host.catalogDiff());
  });

  return router;
}
