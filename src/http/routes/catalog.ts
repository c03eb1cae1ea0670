import type { Router } from 'express';
import { loadExpress } from '../express.js';
import type { McpHost } from '../../host.js';

/** What each server offers, and the persisted config against the running one. */
export function catalogRoutes(host: McpHost): Router {
  const router = loadExpress().Router();

  router.get('/', async function catalog(_req, res) {
    await host.freshen();
    res.json({ servers: host.catalog() });
  });

  router.get('/diff', async function catalogDiff(_req, res) {
    res.json(await host.catalogDiff());
  });

  return router;
}
