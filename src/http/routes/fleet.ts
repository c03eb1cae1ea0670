import type { RequestHandler } from 'express';
import type { McpHost } from '../../host.js';
import { defaultWorkerId, localPresence, type Presence } from '../../services/fleet/presence.js';

/** `GET /api/mcp/fleet`: every worker sharing the database and, per server, each one's state. */
export function fleetRoute(host: McpHost, fleet?: Presence): RequestHandler {
  const presence = fleet ?? localPresence({ workerId: defaultWorkerId(), states: () => statesOf(host) });
  return async function getFleet(_req, res) {
    res.json(await presence.view());
  };
}

/** Each server's state, by name: what a worker announces in its heartbeat. */
export function statesOf(host: McpHost): Record<string, string> {
  return Object.fromEntries(host.status().map((view) => [view.name, view.state]));
}
