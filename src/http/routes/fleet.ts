import type { RequestHandler } from 'express';
import type { McpHost } from '../../host.js';
import { defaultWorkerId, localPresence, statesByServer, type Presence } from '../../fleet/presence.js';

/** `GET /api/mcp/fleet`: every worker sharing the database and, per server, each one's state. */
export function fleetRoute(host: McpHost, fleet?: Presence): RequestHandler {
  const presence = fleet ?? localPresence({ workerId: defaultWorkerId(), states: () => statesByServer(host.status()) });
  return async function getFleet(_req, res) {
    res.json(await presence.view());
  };
}

