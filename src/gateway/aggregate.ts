/**
 * The fleet as one MCP server, for one principal: the tools they may use as
 * `host.tools({principal})` names them (`{server}__{tool}`), called through
 * `host.callTool` (access policy, approvals, quotas, audit), the resources of
 * the servers they may see (a URI offered by two of them is listed once per
 * server under a `mcp-fleet://{server}/…` URI), prompts as `{server}:{prompt}`
 * and completions. A `per_user` server has no shared connection: its
 * resources and prompts are listed, read and rendered through the principal's
 * own session of it. A 2025 session may subscribe to resources: each URI is
 * subscribed at its server once for every session that holds it, and updates
 * reach the sessions that subscribed, under the URI they subscribed to. One
 * instance per 2025 session, or per 2026 request.
 */
import { sentContentOf } from '../catalog/tools/sent-content.js';
import {
  isInputRequiredResult,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  type CallToolResult,
  type ContentBlock,
  type JSONRPCRequest,
  type Prompt,
  type Resource,
  type ResourceUpdatedNotification,
  type Result,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { Client } from '@modelcontextprotocol/client';
import { z } from 'zod';
import { describeZodError } from '../config/zod-errors.js';
import type { CatalogEntry, McpHost } from '../host.js';
import type { AgentTool, AgentToolResult } from '../catalog/index.js';
import type { JournalEvent } from '../journal/index.js';
import { CLIENT_INFO, noneIfUnhandled, notificationsOf } from '../connection/index.js';
import { PromptNotFoundError } from '../connection/capabilities/prompts.js';
import { ADMIN_PRINCIPAL, maySeeServer, type Principal } from '../users/index.js';
import { asCaller, forwardCall, requestingClient } from './forward.js';
import type { ProgressRoute } from './progress.js';
import type { Rounds } from './rounds.js';
import { holdSubscription, releaseSubscription } from '../connection/index.js';

/** The scheme of a resource URI two servers both offer: `mcp-fleet://{server}/{the URI, percent-encoded}`. */
export const CLASH_SCHEME = 'mcp-fleet:';

export const GATEWAY_INSTRUCTIONS =
  'mcp-fleet: the tools of every server you may use, named {server}__{tool}; prompts named {server}:{prompt}; ' +
  'resources keep their URIs (one two servers share is listed as mcp-fleet://{server}/{uri}).';

/**
 * The low-level server's capabilities: everything the fleet can pass on, with list changes and
 * resource subscriptions (`resources/subscribe` of a 2025 session, the `resourceSubscriptions`
 * of a 2026 `subscriptions/listen` stream: listen.ts).
 */
export const GATEWAY_CAPABILITIES = {
  tools: { listChanged: true },
  resources: { listChanged: true, subscribe: true },
  prompts: { listChanged: true },
  completions: {},
  logging: {},
} as const;

/** The catalog entries `principal` may see, ready ones with their listings. */
function visibleEntries(host: McpHost, principal: Principal | undefined): CatalogEntry[] {
  return host.catalog(principal === undefined ? {} : { principal }).filter((entry) => entry.state === 'ready' && (principal === undefined || maySeeServer(entry.config, principal)));
}

/** A clashing URI as the gateway lists it. */
export function clashUri(server: string, uri: string): string {
  return `${CLASH_SCHEME}//${server}/${encodeURIComponent(uri)}`;
}

/**
 * A clashing URI template as the gateway lists it: its literal parts encoded as
 * {@link clashUri} encodes a URI, its `{expressions}` kept, so a client's
 * expansion of it is the clash URI of the expanded URI.
 */
function clashTemplate(server: string, template: string): string {
  const parts = template.split(/(\{[^}]*\})/).map((part) => (part.startsWith('{') ? part : encodeURIComponent(part)));
  return `${CLASH_SCHEME}//${server}/${parts.join('')}`;
}

/** What one server offers to list: a ready shared server's catalog entry, or a principal's own session of a per_user server. */
interface Offer {
  name: string;
  resources?: ReadonlyArray<{ uri: string; name: string }> | null;
  resource_templates?: readonly ListedTemplate[] | null;
}

/** A principal's own session of a per_user server they may see, and what it offers. */
interface OwnSession {
  name: string;
  client: Client;
  resources: Resource[];
  resource_templates: ListedTemplate[];
  prompts: Prompt[];
}

/** Every page of a listing. */
async function allPages<T>(list: (cursor: string | undefined) => Promise<{ nextCursor?: string | undefined } & T>, items: (page: T) => unknown[]): Promise<unknown[]> {
  const out: unknown[] = [];
  let cursor: string | undefined;
  do {
    const page = await list(cursor);
    out.push(...items(page));
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return out;
}

/**
 * The principal's own sessions of the per_user servers they may see (`only`: of that one), each
 * with what it offers now (opened by this request if need be). One they cannot open (their inputs
 * are not set, the connect failed) offers nothing: the rest still list.
 */
async function ownSessions(host: McpHost, principal: Principal | undefined, requestSignal: AbortSignal, only?: string): Promise<OwnSession[]> {
  const as = principal === undefined ? {} : { principal };
  const servers = perUserServers(host, principal, only);
  const reached = await Promise.all(
    servers.map(async ({ name }): Promise<OwnSession | undefined> => {
      // Each server's requests listen on a signal of their own, tied to the request's without a
      // listener: on the request's one, a few sessions' listings passed Node's leak warning at 11.
      const signal = AbortSignal.any([requestSignal]);
      try {
        const client = await host.serverLink(name, as)?.client(signal);
        if (client === undefined) return undefined;
        const offered = client.getServerCapabilities() ?? {};
        const request = { signal };
        const [resources, templates, prompts] = await Promise.all([
          offered.resources ? allPages((cursor) => client.listResources(cursor === undefined ? {} : { cursor }, request), (page) => page.resources) : [],
          offered.resources
            ? noneIfUnhandled(allPages((cursor) => client.listResourceTemplates(cursor === undefined ? {} : { cursor }, request), (page) => page.resourceTemplates), [])
            : [],
          offered.prompts ? allPages((cursor) => client.listPrompts(cursor === undefined ? {} : { cursor }, request), (page) => page.prompts) : [],
        ]);
        return { name, client, resources: resources as Resource[], resource_templates: templates as ListedTemplate[], prompts: prompts as Prompt[] };
      } catch {
        return undefined;
      }
    }),
  );
  return reached.filter((session) => session !== undefined);
}

/** The per_user servers the principal may see (`only`: that one), not disabled. */
function perUserServers(host: McpHost, principal: Principal | undefined, only?: string) {
  return host
    .catalog(principal === undefined ? {} : { principal })
    .filter((entry) => entry.config.scope === 'per_user' && entry.state !== 'disabled' && (only === undefined || entry.name === only) && (principal === undefined || maySeeServer(entry.config, principal)));
}

/**
 * Opens the principal's own sessions of the per_user servers they may see: a session lists
 * its tools as it opens, and `host.tools` names them from then on. One they cannot open
 * offers nothing; the rest still open.
 */
async function openOwnSessions(host: McpHost, principal: Principal | undefined, requestSignal: AbortSignal): Promise<void> {
  const as = principal === undefined ? {} : { principal };
  await Promise.all(
    perUserServers(host, principal).map(({ name }) =>
      host
        .serverLink(name, as)
        ?.client(AbortSignal.any([requestSignal]))
        .catch(() => undefined),
    ),
  );
}

/** The resources of every visible server (and of `own` sessions); a URI two servers offer is listed once per server under its clash URI. */
export function gatewayResources(host: McpHost, principal: Principal | undefined, own: readonly Offer[] = []): Resource[] {
  const entries: Offer[] = [...visibleEntries(host, principal), ...own];
  const offers = new Map<string, number>();
  for (const entry of entries) for (const resource of entry.resources ?? []) offers.set(resource.uri, (offers.get(resource.uri) ?? 0) + 1);
  return entries.flatMap((entry) =>
    (entry.resources ?? []).map((resource) =>
      (offers.get(resource.uri) ?? 0) > 1
        ? { ...resource, uri: clashUri(entry.name, resource.uri), name: `${entry.name}:${resource.name}`, _meta: { 'mcp-fleet/server': entry.name, 'mcp-fleet/uri': resource.uri } }
        : { ...resource, _meta: { 'mcp-fleet/server': entry.name } },
    ),
  );
}

type ListedTemplate = NonNullable<CatalogEntry['resource_templates']>[number];

/**
 * The templates `principal` may use, each with its server and its template
 * there (`original`). One that several servers offer is listed under each
 * server's {@link clashTemplate}, as a URI several offer is, never bare.
 */
function gatewayTemplates(host: McpHost, principal: Principal | undefined, own: readonly Offer[] = []): Array<ListedTemplate & { server: string; original: string }> {
  const entries = [...visibleEntries(host, principal), ...own];
  const offers = new Map<string, number>();
  for (const entry of entries) for (const template of entry.resource_templates ?? []) offers.set(template.uriTemplate, (offers.get(template.uriTemplate) ?? 0) + 1);
  return entries.flatMap((entry) =>
    (entry.resource_templates ?? []).map((template) =>
      (offers.get(template.uriTemplate) ?? 0) > 1
        ? { ...template, uriTemplate: clashTemplate(entry.name, template.uriTemplate), name: `${entry.name}:${template.name}`, server: entry.name, original: template.uriTemplate }
        : { ...template, server: entry.name, original: template.uriTemplate },
    ),
  );
}

/** Which server a URI the client reads is for, and its URI there. */
export function routeResource(host: McpHost, principal: Principal | undefined, uri: string, own: readonly Offer[] = []): { server: string; uri: string } {
  if (uri.startsWith(`${CLASH_SCHEME}//`)) {
    const rest = uri.slice(CLASH_SCHEME.length + 2);
    const slash = rest.indexOf('/');
    if (slash > 0) {
      const server = rest.slice(0, slash);
      // A server the caller may not see is as missing as one that does not exist: the same answer, not an internal error.
      const view = host.server(server);
      if (view === undefined || (principal !== undefined && !maySeeServer(view.config, principal))) throw resourceNotFound(uri);
      try {
        return { server, uri: decodeURIComponent(rest.slice(slash + 1)) };
      } catch {
        throw resourceNotFound(uri);
      }
    }
  }
  const entries: Offer[] = [...visibleEntries(host, principal), ...own];
  const owners = entries.filter((entry) => (entry.resources ?? []).some((resource) => resource.uri === uri));
  if (owners.length === 1) return { server: owners[0]!.name, uri };
  if (owners.length > 1) {
    const names = owners.map((owner) => owner.name);
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, `"${uri}" is offered by ${names.join(' and ')}; ask for ${names.map((name) => clashUri(name, uri)).join(' or ')}`);
  }
  // A URI of a template: the server whose template's fixed start it begins with; of several servers', said so.
  const servers = [
    ...new Set(
      gatewayTemplates(host, principal, own)
        .filter((candidate) => {
          const fixed = candidate.original.split('{')[0] ?? '';
          return fixed !== '' && uri.startsWith(fixed);
        })
        .map((candidate) => candidate.server),
    ),
  ];
  if (servers.length === 1) return { server: servers[0]!, uri };
  if (servers.length > 1) {
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, `"${uri}" fits templates of ${servers.join(' and ')}; ask for ${servers.map((name) => clashUri(name, uri)).join(' or ')}`);
  }
  throw resourceNotFound(uri);
}

/**
 * Whether a read failed because the backend has no such resource: its `-32002`,
 * or its `-32602` naming the URI (`data.uri`), whether thrown by the session's
 * client or kept as the cause of the host's error.
 */
function backendSaidNotFound(error: unknown): boolean {
  const said = error instanceof ProtocolError ? error : error instanceof Error && error.cause instanceof ProtocolError ? error.cause : undefined;
  if (said === undefined) return false;
  const data = said.data as { uri?: unknown } | undefined;
  return said.code === ProtocolErrorCode.ResourceNotFound || (said.code === ProtocolErrorCode.InvalidParams && typeof data?.uri === 'string');
}

/** Resource not found: the SDK sends it as `-32602` with `data.uri` (the current revision's code) in both eras. */
function resourceNotFound(uri: string): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.ResourceNotFound, `no server offers the resource ${uri}`, { uri });
}

/**
 * The gateway lists everything in one page and hands out no cursor: a cursor is one it did
 * not issue, refused as MCP says an invalid one is, rather than listed from the start as if absent.
 * Every list of `/mcp`, and `/mcp/servers/:name`'s `tools/list` (its other lists page as the server does).
 */
export function refuseCursor(params: { cursor?: string | undefined } | undefined): void {
  const cursor = params?.cursor;
  if (cursor !== undefined) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `invalid cursor "${cursor}": this server lists everything in one page and issues no cursors`, { cursor });
}

/**
 * The gateway's server, `/mcp`'s and each `/mcp/servers/:name` proxy's: a `prompts/get` whose
 * arguments are not all strings is refused as invalid params naming the argument, before the
 * SDK's own check of the request, which answers it as an internal error (-32603) with its validator's issues.
 */
export class GatewayServer extends Server {
  protected override _wrapHandler(method: string, handler: (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>): (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result> {
    const wrapped = super._wrapHandler(method, handler);
    if (method !== 'prompts/get') return wrapped;
    return (request, ctx) => {
      const args: unknown = request.params?.arguments;
      if (args !== undefined && (args === null || typeof args !== 'object' || Array.isArray(args))) {
        return Promise.reject(new ProtocolError(ProtocolErrorCode.InvalidParams, 'prompts/get: arguments must be an object of strings'));
      }
      for (const [name, value] of Object.entries(args ?? {})) {
        if (typeof value !== 'string') {
          return Promise.reject(new ProtocolError(ProtocolErrorCode.InvalidParams, `prompts/get: argument "${name}" must be a string, not ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}`, { argument: name }));
        }
      }
      return wrapped(request, ctx);
    };
  }
}

/** A host result as MCP's `tools/call` result. */
export function toCallToolResult(result: AgentToolResult): CallToolResult {
  // The blocks as the server sent them (resource links, embedded resources, annotations), when the result holds them all.
  const content: ContentBlock[] = sentContentOf(result) ?? result.content.map((block) => ({ ...block }));
  const structured = result.details.structured;
  return {
    content,
    ...(structured !== null && typeof structured === 'object' && !Array.isArray(structured) && { structuredContent: structured as Record<string, unknown> }),
    ...(result.details.is_error && { isError: true }),
  };
}

/**
 * The gateway's server for the principal `who()` names (undefined: the admin), asked on each
 * request: a session follows its user's current groups.
 */
export function createGatewayServer(
  host: McpHost,
  who: () => Principal | undefined,
  era: 'legacy' | 'modern',
  outputSchemaOf: (tool: AgentTool) => Record<string, unknown> | undefined,
  rounds?: Rounds,
): Server {
  const server = new GatewayServer({ name: 'mcp-fleet', version: CLIENT_INFO.version }, { capabilities: GATEWAY_CAPABILITIES, instructions: GATEWAY_INSTRUCTIONS });
  /** Runs a request to `target`'s server so its requests to its client come to this request's client (a 2025 session's only). */
  const forwarding = <T>(target: string | undefined, ctx: ServerContext, run: () => Promise<T>) => asCaller(host, target, requestingClient(server, ctx, era), run);
  /** Runs a call to `target`'s server so its requests to its client come to this request's client (2026: as input_required rounds). */
  const calling = <T>(target: string | undefined, ctx: ServerContext, run: (signal: AbortSignal, progress: ProgressRoute) => Promise<T>) =>
    forwardCall({ host, server, era, rounds, principal: who() }, target, ctx, run);
  const callerOf = () => {
    const principal = who();
    return { principal, as: principal === undefined ? {} : { principal } };
  };

  server.setRequestHandler('tools/list', async (request, ctx) => {
    refuseCursor(request.params);
    const { principal, as } = callerOf();
    // Listing opens the caller's sessions of per_user servers, as for resources and prompts.
    await Promise.all([openOwnSessions(host, principal, ctx.mcpReq.signal), host.freshen()]);
    return {
      tools: host.tools(as).map((tool) => {
        const outputSchema = outputSchemaOf(tool);
        return {
          name: tool.name,
          ...(tool.title !== undefined && { title: tool.title }),
          description: tool.description,
          inputSchema: { type: 'object' as const, ...tool.parameters },
          ...(outputSchema && { outputSchema: outputSchema as { type: 'object' } }),
          ...(tool.annotations && { annotations: tool.annotations }),
        };
      }),
    };
  });

  server.setRequestHandler('tools/call', async (request, ctx) => {
    const { as } = callerOf();
    const asked = ctx.mcpReq._meta?.progressToken !== undefined;
    const target = host.toolServer(request.params.name, as);
    const result = await calling(target, ctx, (signal, progress) =>
      host.callTool(request.params.name, request.params.arguments ?? {}, { ...as, signal, ...(asked && { onProgress: progress.send }) }),
    );
    if (isInputRequiredResult(result)) return result;
    const answer = toCallToolResult(result);
    // A tool listed with an output schema must answer structured content (clients check): one whose result was
    // too large to keep it is an error, its note saying why.
    if (answer.structuredContent === undefined && !answer.isError) {
      const tool = host.tool(request.params.name, as);
      if (tool !== undefined && outputSchemaOf(tool) !== undefined) answer.isError = true;
    }
    return answer;
  });

  server.setRequestHandler('resources/list', async (request, ctx) => {
    refuseCursor(request.params);
    const { principal } = callerOf();
    const [own] = await Promise.all([ownSessions(host, principal, ctx.mcpReq.signal), host.freshen()]);
    return { resources: gatewayResources(host, principal, own) };
  });

  server.setRequestHandler('resources/templates/list', async (request, ctx) => {
    refuseCursor(request.params);
    const { principal } = callerOf();
    const [own] = await Promise.all([ownSessions(host, principal, ctx.mcpReq.signal), host.freshen()]);
    return {
      resourceTemplates: gatewayTemplates(host, principal, own).map(({ server: name, original, ...template }) => ({
        ...template,
        _meta: { 'mcp-fleet/server': name, ...(template.uriTemplate !== original && { 'mcp-fleet/uri-template': original }) },
      })),
    };
  });

  server.setRequestHandler('resources/read', async (request, ctx) => {
    const { principal, as } = callerOf();
    const own = await ownSessions(host, principal, ctx.mcpReq.signal);
    const route = routeResource(host, principal, request.params.uri, own);
    const session = own.find((candidate) => candidate.name === route.server);
    const read = await calling(route.server, ctx, (signal) =>
      session !== undefined ? session.client.readResource({ uri: route.uri }, { signal }) : host.readResource(route.server, route.uri, { ...as, signal }),
    ).catch((error: unknown) => {
      throw backendSaidNotFound(error) ? resourceNotFound(request.params.uri) : error;
    });
    if (isInputRequiredResult(read)) return read;
    // The contents and the server's own `_meta`, not what its connection's revision adds (`ttlMs`, `cacheScope`, its
    // serverInfo): this answer is the gateway's, in the caller's revision. A clash URI reads back under the URI asked for.
    const contents = route.uri === request.params.uri ? read.contents : read.contents.map((content) => (content.uri === route.uri ? { ...content, uri: request.params.uri } : content));
    const meta = ownMeta(read._meta);
    return { contents, ...(meta && { _meta: meta }) };
  });

  server.setRequestHandler('prompts/list', async (request, ctx) => {
    refuseCursor(request.params);
    const { principal } = callerOf();
    const [own] = await Promise.all([ownSessions(host, principal, ctx.mcpReq.signal), host.freshen()]);
    return {
      prompts: [
        ...visiblePrompts(host, principal).map((prompt) => ({
          name: `${prompt.server}:${prompt.name}`,
          ...(prompt.title !== undefined && { title: prompt.title }),
          ...(prompt.description !== undefined && { description: prompt.description }),
          arguments: prompt.arguments,
        })),
        ...own.flatMap((session) => session.prompts.map((prompt) => ({ ...prompt, name: `${session.name}:${prompt.name}` }))),
      ],
    };
  });

  server.setRequestHandler('prompts/get', async (request, ctx) => {
    const { principal } = callerOf();
    const name = request.params.name;
    // A per_user server's prompt renders through the principal's own session.
    const colon = name.indexOf(':');
    const [session] = colon > 0 ? await ownSessions(host, principal, ctx.mcpReq.signal, name.slice(0, colon)) : [];
    if (session !== undefined) {
      const prompt = name.slice(colon + 1);
      if (!session.prompts.some((candidate) => candidate.name === prompt)) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `no prompt "${name}" (expected "server:prompt")`);
      return calling(session.name, ctx, (signal) => session.client.getPrompt({ name: prompt, ...(request.params.arguments && { arguments: request.params.arguments }) }, { signal }));
    }
    if (!visiblePrompts(host, principal).some((prompt) => `${prompt.server}:${prompt.name}` === name)) {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `no prompt "${name}" (expected "server:prompt")`);
    }
    try {
      const target = name.slice(0, name.indexOf(':'));
      const rendered = await calling(target, ctx, (signal) => host.renderPrompt(name, request.params.arguments ?? {}, { signal }));
      if (isInputRequiredResult(rendered)) return rendered;
      return { ...(rendered.description !== undefined && { description: rendered.description }), messages: rendered.messages };
    } catch (error) {
      if (error instanceof PromptNotFoundError) throw new ProtocolError(ProtocolErrorCode.InvalidParams, error.message);
      // Arguments the prompt does not take (a required one missing): the caller's to fix, said in one line.
      if (error instanceof z.ZodError) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `prompt "${name}": ${describeZodError(error).message}`);
      throw error;
    }
  });

  server.setRequestHandler('completion/complete', async (request, ctx) => {
    const { principal, as } = callerOf();
    const { ref } = request.params;
    const signal = ctx.mcpReq.signal;
    let target: { server: string; params: typeof request.params } | undefined;
    let session: OwnSession | undefined;
    if (ref.type === 'ref/prompt') {
      const prompt = visiblePrompts(host, principal).find((candidate) => `${candidate.server}:${candidate.name}` === ref.name);
      if (prompt !== undefined) target = { server: prompt.server, params: { ...request.params, ref: { type: 'ref/prompt', name: prompt.name } } };
      else {
        // A per_user server's prompt completes through the principal's own session.
        const colon = ref.name.indexOf(':');
        [session] = colon > 0 ? await ownSessions(host, principal, signal, ref.name.slice(0, colon)) : [];
        const name = ref.name.slice(colon + 1);
        if (session?.prompts.some((candidate) => candidate.name === name)) target = { server: session.name, params: { ...request.params, ref: { type: 'ref/prompt', name } } };
      }
    } else {
      // As listed (a clash template), completed by its server as that server wrote it.
      const template = gatewayTemplates(host, principal).find((candidate) => candidate.uriTemplate === ref.uri);
      if (template !== undefined) target = { server: template.server, params: { ...request.params, ref: { type: 'ref/resource', uri: template.original } } };
      else {
        const own = await ownSessions(host, principal, signal);
        session = own.find((candidate) => candidate.resource_templates.some((listed) => listed.uriTemplate === ref.uri));
        if (session !== undefined) target = { server: session.name, params: request.params };
      }
    }
    if (target === undefined) return { completion: { values: [] } };
    const { server: on, params } = target;
    if (session !== undefined) {
      // A server that offers no completions has none to give: not an error to the client.
      if (session.client.getServerCapabilities()?.completions === undefined) return { completion: { values: [] } };
      return session.client.complete(params, { signal });
    }
    // As for a session: a shared server that offers no completions has none to give.
    const client = await host.serverLink(on, as)?.client(signal).catch(() => undefined);
    if (client !== undefined && client.getServerCapabilities()?.completions === undefined) return { completion: { values: [] } };
    return forwarding(on, ctx, () => host.complete(on, params, { ...as, signal }));
  });

  if (era === 'legacy') subscriptions(host, server, callerOf);

  return server;
}

/** A result's `_meta` without the protocol's own keys (`io.modelcontextprotocol/…`); undefined when nothing is left. */
function ownMeta(meta: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (meta === undefined) return undefined;
  const kept = Object.fromEntries(Object.entries(meta).filter(([key]) => !key.startsWith('io.modelcontextprotocol/')));
  return Object.keys(kept).length > 0 ? kept : undefined;
}

/** Whether `principal` may see server `name` (the admin, no principal, sees every one). */
export function seesServer(host: McpHost, principal: Principal | undefined, name: string): boolean {
  if (principal === undefined) return true;
  const view = host.server(name);
  return view !== undefined && maySeeServer(view.config, principal);
}

function visiblePrompts(host: McpHost, principal: Principal | undefined) {
  return host.prompts().filter((prompt) => seesServer(host, principal, prompt.server));
}

/** One resource a client subscribed to: at which server, under which URI there, through which connection. */
export interface Watch {
  server: string;
  uri: string;
  live: Client;
  perUser: boolean;
  /** Stops passing the server's updates on, and lets the server go if nobody else holds the URI. */
  release(): Promise<void>;
}

/**
 * Subscribes `principal` to the resource `asked` (a URI as the gateway lists it) at its server:
 * a shared server through the host's connection, a per_user one through their own session. Each
 * update goes to `updated` under `asked`. Rejects, holding nothing, when no server the principal
 * may see offers the URI or its server offers no subscriptions.
 */
export async function watchResource(host: McpHost, principal: Principal | undefined, asked: string, signal: AbortSignal, updated: (params: ResourceUpdatedNotification['params']) => void): Promise<Watch> {
  // A clash URI names its server: the per_user sessions need not be listed to find it.
  const own = asked.startsWith(`${CLASH_SCHEME}//`) ? [] : await ownSessions(host, principal, signal);
  const route = routeResource(host, principal, asked, own);
  const link = host.serverLink(route.server, principal === undefined ? {} : { principal });
  if (link === undefined) throw resourceNotFound(asked);
  const live = await link.client(signal);
  if (live.getServerCapabilities()?.resources?.subscribe !== true || live.getProtocolEra() === 'modern') {
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, `${route.server} does not offer resource subscriptions (resources/subscribe): ${asked} cannot be subscribed to`);
  }
  let stop = () => {};
  const watch: Watch = {
    server: route.server,
    uri: route.uri,
    live,
    perUser: link.perUser,
    release: () => {
      stop();
      return releaseSubscription(live, route.uri, watch);
    },
  };
  await holdSubscription(live, route.uri, watch, { signal });
  stop = notificationsOf(live).subscribe('notifications/resources/updated', (notification) => {
    // Under the URI the client knows: the clash URI when it subscribed to one.
    if (notification.params.uri === route.uri && link.visible()) updated({ ...notification.params, uri: asked });
  });
  return watch;
}

/** Whether a journal event ends `watch`es: their server left `ready`, or the principal's session of a per_user server closed. */
export function endsWatches(event: JournalEvent, principal: Principal | undefined): ((watch: Watch) => boolean) | undefined {
  if (!('server' in event)) return undefined;
  if (event.type === 'server.removed' || (event.type === 'server.transitioned' && event.to !== 'ready')) return (watch) => watch.server === event.server;
  if (event.type === 'session.changed' && (event.state === 'closing' || event.state === 'closed' || event.state === 'failed') && event.principal === (principal?.id ?? ADMIN_PRINCIPAL)) {
    return (watch) => watch.perUser && watch.server === event.server;
  }
  return undefined;
}

/**
 * `resources/subscribe` and `resources/unsubscribe` of one 2025 session. A URI (a clash URI too)
 * goes to its server: a shared one through the host's connection, a per_user one through the
 * principal's own session. The subscription is dropped at the server when nobody holds it
 * any more: on unsubscribe, when the session ends, when the server leaves `ready` or the
 * principal's session of it closes.
 */
function subscriptions(host: McpHost, server: Server, callerOf: () => { principal: Principal | undefined; as: { principal?: Principal } }): void {
  /** By the URI as the client subscribed to it. */
  const watching = new Map<string, Watch>();
  let following: (() => void) | undefined;

  const unwatch = async (uri: string) => {
    const watch = watching.get(uri);
    if (watch === undefined) return;
    watching.delete(uri);
    if (watching.size === 0) {
      following?.();
      following = undefined;
    }
    await watch.release();
  };
  const unwatchAll = (which: (watch: Watch) => boolean) => {
    // A connection that closed meanwhile has forgotten the subscription anyway.
    for (const [uri, watch] of watching) if (which(watch)) void unwatch(uri).catch(() => {});
  };
  /** Followed while the session holds a subscription: a server that leaves `ready` (or a session of it that closes) takes its subscriptions along. */
  const follow = () =>
    (following ??= host.subscribe((event) => {
      const ends = endsWatches(event, callerOf().principal);
      if (ends !== undefined) unwatchAll(ends);
    }));

  server.setRequestHandler('resources/subscribe', async (request, ctx) => {
    const asked = request.params.uri;
    const known = watching.get(asked);
    const link = known === undefined ? undefined : host.serverLink(known.server, callerOf().as);
    // Held through the connection of the moment: nothing to do. Through one that is gone (the server reconnected, the session was reopened): subscribe again.
    if (known !== undefined && link !== undefined && (await link.client(ctx.mcpReq.signal).catch(() => undefined)) === known.live) return {};
    if (known !== undefined) await unwatch(asked).catch(() => {});
    const watch = await watchResource(host, callerOf().principal, asked, ctx.mcpReq.signal, (params) => void server.sendResourceUpdated(params).catch(() => {}));
    if (watching.has(asked)) {
      // Another request of this session subscribed meanwhile: one holding is enough.
      await watch.release().catch(() => {});
      return {};
    }
    watching.set(asked, watch);
    follow();
    return {};
  });

  server.setRequestHandler('resources/unsubscribe', async (request) => {
    await unwatch(request.params.uri);
    return {};
  });

  const closed = server.onclose;
  server.onclose = () => {
    closed?.();
    unwatchAll(() => true);
    following?.();
    following = undefined;
  };
}
