/**
 * The access policy applied to the agent's side of the host: which tools a
 * principal is given, finds and may call. Read from the journal's projection
 * (each server's config as its view shows it), so it follows a changed policy
 * at once. No principal: everything, as before users.
 */
import type { AgentTool } from '../catalog/index.js';
import type { ProjectionContext } from '../journal/projection.js';
import { maySeeServer, maySeeTool, parsePrincipal, type Principal, type PrincipalInput } from '../users/index.js';
import { own } from '../records.js';

/** The principal of an option, checked; undefined for the admin (no principal). */
export function principalOf(input: PrincipalInput | undefined): Principal | undefined {
  return input === undefined ? undefined : parsePrincipal(input);
}

/** Whether `principal` may see server `server` (an unknown server: no one but the admin). */
export function serverVisible(context: ProjectionContext, server: string, principal: Principal | undefined): boolean {
  if (principal === undefined) return true;
  const projected = own(context.servers, server);
  return projected !== undefined && maySeeServer(projected.config, principal);
}

/** Whether `principal` may see and call the tool `original` of `server`. */
export function toolVisible(context: ProjectionContext, server: string, original: string, principal: Principal | undefined): boolean {
  if (principal === undefined) return true;
  const projected = own(context.servers, server);
  return projected !== undefined && maySeeTool(projected.config, original, principal);
}

/** The tools of `tools` that `principal` may see (all of them without one). */
export function visibleTo(context: ProjectionContext, tools: AgentTool[], principal: Principal | undefined): AgentTool[] {
  if (principal === undefined) return tools;
  return tools.filter((tool) => toolVisible(context, tool.server, tool.originalName, principal));
}
