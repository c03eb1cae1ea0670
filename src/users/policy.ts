/**
 * The access policy (docs/_incoming/h-users-core.md): a server's `access` and
 * its `tools.access`, decided for a principal. No principal means the admin
 * (or a library embedder), who may see everything.
 */
import type { AccessRule } from '../config/schema.js';
import type { Principal } from './principal.js';

/** What a policy is read from: a stored config and its masked form both fit. */
export interface Guarded {
  access?: AccessRule | null | undefined;
  tools: { access?: Record<string, AccessRule> | undefined };
}

/** Whether `rule` lets `principal` in: absent lets every user in, else a named user or a member of a named group. */
export function allows(rule: AccessRule | null | undefined, principal: Principal | undefined): boolean {
  if (principal === undefined || rule === null || rule === undefined) return true;
  return rule.users.includes(principal.id) || principal.groups.some((group) => rule.groups.includes(group));
}

/** Whether `principal` may see the server (its name, view, events, resources and prompts). */
export function maySeeServer(config: Guarded, principal: Principal | undefined): boolean {
  return allows(config.access, principal);
}

/** Whether `principal` may see and call the server's tool `original` (its own name of it). */
export function maySeeTool(config: Guarded, original: string, principal: Principal | undefined): boolean {
  return maySeeServer(config, principal) && allows(config.tools.access?.[original], principal);
}

/**
 * A config as a user is shown it: without `access` and `tools.access`, which
 * name other users and groups.
 */
export function withoutPolicy<T extends Guarded>(config: T): T {
  if (config.access === undefined && config.tools.access === undefined) return config;
  const { access: _access, ...rest } = config;
  const { access: _toolAccess, ...tools } = config.tools;
  return { ...rest, tools } as T;
}
