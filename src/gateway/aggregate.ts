/**
 * The fleet as one MCP server, for one principal: the tools they may use as
 * `host.tools({principal})` names them (`{server}__{tool}`), called through
 * `host.callTool` (access policy, approvals, quotas, audit), the resources of
 * the servers they may see (a URI offered by two of them is listed once per
 * server under a `mcp-fleet://{server}/…` URI), prompts as `{server}:{prompt}`
 * and completions. One instance per 2025 session, or per 2026 request.
 */
import { ProtocolError, ProtocolErrorCode, Server, type CallToolResult, type ContentBlock, type Resource, type ServerContext } from '@modelcontextprotocol/server';
import type { CatalogEntry, McpHost } from '../host.js';
import type { AgentToolResult } from '../catalog/index.js';
import { CLIENT_INFO } from '../connection/index.js';
import { PromptNotFoundError } from '../connection/capabilities/prompts.js';
import { maySeeServer, type Principal } from '../users/index.js';
import { asCaller, requestingClient } from './forward.js';

/** The scheme of a resource URI two servers both offer: `mcp-fleet://{server}/{the URI, percent-encoded}`. */
export const CLASH_SCHEME = 'mcp-fleet:';

export const GATEWAY_INSTRUCTIONS =
  'mcp-fleet: the tools of every server you may use, named {server}__{tool}; prompts named {server}:{prompt}; ' +
  'resources keep their URIs (one two servers share is listed as mcp-fleet://{server}/{uri}).';

/** The low-level server's capabilities: everything the fleet can pass on, with list changes. */
export const GATEWAY_CAPABILITIES = {
  tools: { listChanged: true },
  resources: { listChanged: true },
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

/** The resources of every visible server; a URI two servers offer is listed once per server under its clash URI. */
export function gatewayResources(host: McpHost, principal: Principal | undefined): Resource[] {
  const entries = visibleEntries(host, principal);
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

function gatewayTemplates(host: McpHost, principal: Principal | undefined): Array<ListedTemplate & { server: string }> {
  return visibleEntries(host, principal).flatMap((entry) => (entry.resource_templates ?? []).map((template) => ({ ...template, server: entry.name })));
}

/** Which server a URI the client reads is for, and its URI there. */
export function routeResource(host: McpHost, principal: Principal | undefined, uri: string): { server: string; uri: string } {
  if (uri.startsWith(`${CLASH_SCHEME}//`)) {
    const rest = uri.slice(CLASH_SCHEME.length + 2);
    const slash = rest.indexOf('/');
    if (slash > 0) return { server: rest.slice(0, slash), uri: decodeURIComponent(rest.slice(slash + 1)) };
  }
  const entries = visibleEntries(host, principal);
  const owners = entries.filter((entry) => (entry.resources ?? []).some((resource) => resource.uri === uri));
  if (owners.length === 1) return { server: owners[0]!.name, uri };
  if (owners.length > 1) {
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, `"${uri}" is offered by ${owners.map((owner) => owner.name).join(' and ')}; read ${clashUri(owners[0]!.name, uri)}`);
  }
  // A URI of a template: the server whose template's fixed start it begins with.
  const template = gatewayTemplates(host, principal).find((candidate) => {
    const fixed = candidate.uriTemplate.split('{')[0] ?? '';
    return fixed !== '' && uri.startsWith(fixed);
  });
  if (template !== undefined) return { server: template.server, uri };
  throw new ProtocolError(ProtocolErrorCode.ResourceNotFound, `no server offers the resource ${uri}`, { uri });
}

/** A host result as MCP's `tools/call` result. */
export function toCallToolResult(result: AgentToolResult): CallToolResult {
  const content: ContentBlock[] = result.content.map((block) => ({ ...block }));
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
export function createGatewayServer(host: McpHost, who: () => Principal | undefined, era: 'legacy' | 'modern'): Server {
  const server = new Server({ name: 'mcp-fleet', version: CLIENT_INFO.version }, { capabilities: GATEWAY_CAPABILITIES, instructions: GATEWAY_INSTRUCTIONS });
  /** Runs a request to `target`'s server so its requests to its client come to this request's client. */
  const forwarding = <T>(target: string | undefined, ctx: ServerContext, run: () => Promise<T>) => asCaller(host, target, requestingClient(server, ctx, era), run);
  const callerOf = () => {
    const principal = who();
    return { principal, as: principal === undefined ? {} : { principal } };
  };

  server.setRequestHandler('tools/list', async () => {
    const { as } = callerOf();
    await host.freshen();
    return {
      tools: host.tools(as).map((tool) => ({
        name: tool.name,
        description: tool.description,
        inputSchema: { type: 'object' as const, ...tool.parameters },
        ...(tool.annotations && { annotations: tool.annotations }),
      })),
    };
  });

  server.setRequestHandler('tools/call', async (request, ctx) => {
    const { as } = callerOf();
    const token = ctx.mcpReq._meta?.progressToken;
    const sent: Array<Promise<void>> = [];
    const target = host.tools(as).find((tool) => tool.name === request.params.name)?.server;
    const result = await forwarding(target, ctx, () =>
      host.callTool(request.params.name, request.params.arguments ?? {}, {
        ...as,
        signal: ctx.mcpReq.signal,
        ...(token !== undefined && {
          onProgress(progress) {
            // A lost notification must not fail the call.
            sent.push(ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, ...progress } }).catch(() => {}));
          },
        }),
      }),
    );
    // The last progress goes out before the result, as the backend sent them.
    await Promise.all(sent);
    return toCallToolResult(result);
  });

  server.setRequestHandler('resources/list', async () => {
    const { principal } = callerOf();
    await host.freshen();
    return { resources: gatewayResources(host, principal) };
  });

  server.setRequestHandler('resources/templates/list', async () => {
    const { principal } = callerOf();
    await host.freshen();
    return { resourceTemplates: gatewayTemplates(host, principal).map(({ server: name, ...template }) => ({ ...template, _meta: { 'mcp-fleet/server': name } })) };
  });

  server.setRequestHandler('resources/read', async (request, ctx) => {
    const { principal, as } = callerOf();
    const route = routeResource(host, principal, request.params.uri);
    const read = await forwarding(route.server, ctx, () => host.readResource(route.server, route.uri, { ...as, signal: ctx.mcpReq.signal }));
    // A clash URI reads back under the URI the client asked for.
    return route.uri === request.params.uri ? read : { ...read, contents: read.contents.map((content) => (content.uri === route.uri ? { ...content, uri: request.params.uri } : content)) };
  });

  server.setRequestHandler('prompts/list', async () => {
    const { principal } = callerOf();
    await host.freshen();
    return {
      prompts: visiblePrompts(host, principal).map((prompt) => ({
        name: `${prompt.server}:${prompt.name}`,
        ...(prompt.title !== undefined && { title: prompt.title }),
        ...(prompt.description !== undefined && { description: prompt.description }),
        arguments: prompt.arguments,
      })),
    };
  });

  server.setRequestHandler('prompts/get', async (request, ctx) => {
    const { principal } = callerOf();
    const name = request.params.name;
    if (!visiblePrompts(host, principal).some((prompt) => `${prompt.server}:${prompt.name}` === name)) {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `no prompt "${name}" (expected "server:prompt")`);
    }
    try {
      const target = name.slice(0, name.indexOf(':'));
      const rendered = await forwarding(target, ctx, () => host.renderPrompt(name, request.params.arguments ?? {}, { signal: ctx.mcpReq.signal }));
      return { ...(rendered.description !== undefined && { description: rendered.description }), messages: rendered.messages };
    } catch (error) {
      if (error instanceof PromptNotFoundError) throw new ProtocolError(ProtocolErrorCode.InvalidParams, error.message);
      throw error;
    }
  });

  server.setRequestHandler('completion/complete', async (request, ctx) => {
    const { principal, as } = callerOf();
    const { ref } = request.params;
    let target: { server: string; params: typeof request.params } | undefined;
    if (ref.type === 'ref/prompt') {
      const prompt = visiblePrompts(host, principal).find((candidate) => `${candidate.server}:${candidate.name}` === ref.name);
      if (prompt !== undefined) target = { server: prompt.server, params: { ...request.params, ref: { type: 'ref/prompt', name: prompt.name } } };
    } else {
      const template = gatewayTemplates(host, principal).find((candidate) => candidate.uriTemplate === ref.uri);
      if (template !== undefined) target = { server: template.server, params: request.params };
    }
    if (target === undefined) return { completion: { values: [] } };
    const { server: on, params } = target;
    return forwarding(on, ctx, () => host.complete(on, params, { ...as, signal: ctx.mcpReq.signal }));
  });

  return server;
}

function visiblePrompts(host: McpHost, principal: Principal | undefined) {
  return host.prompts().filter((prompt) => {
    if (principal === undefined) return true;
    const view = host.server(prompt.server);
    return view !== undefined && maySeeServer(view.config, principal);
  });
}
