/**
 * Meta tools that let an agent reach a server's resources through its live
 * connection: `{server}__list_resources`, `{server}__read_resource` and
 * `{server}__list_resource_templates`, for servers with the `resources`
 * capability. They are registered and unregistered with the server's tools,
 * so they exist only while it is `ready`.
 */
import type { Client, CallToolResult, Tool } from '@modelcontextprotocol/client';
import { toAgentTool } from '../../catalog/tools/adapter.js';
import type { AgentTool, ExecuteOptions } from '../../catalog/index.js';
import { redact } from '../../config/masking.js';
import type { ToolFilter } from '../../config/index.js';
import { filterTools } from '../connection.js';
import { ATTR } from '../../telemetry/attributes.js';
import { observeRequest } from '../../telemetry/requests.js';
import { noneIfUnhandled } from '../tool-listing.js';

/** The original (un-namespaced) names of the meta tools. */
export const RESOURCE_TOOL_NAMES = ['list_resources', 'read_resource', 'list_resource_templates'] as const;

export interface ResourceToolOptions {
  /** The server's tool filter: meta tools are filtered by their original names like any tool. */
  filter: ToolFilter;
  /** Original names of the server's own tools: a real tool of the same name wins over a meta tool. */
  ownTools: readonly Tool[];
  /** Bound on one request, in ms (the server's `call_timeout_seconds`). */
  timeoutMs: number;
  maxResultBytes: number;
  /** Secret values of the server's config, scrubbed from error messages. */
  secrets: readonly string[];
  /** Throws when the server is no longer ready (a call must not reach a connection being replaced). */
  ensureReady(): void;
}

interface MetaTool {
  tool: Tool;
  run(client: Client, args: Record<string, unknown>, request: RequestOptions): Promise<CallToolResult>;
}

type RequestOptions = { signal?: AbortSignal; timeout: number; secrets: readonly string[] };

const cursorSchema = {
  type: 'object',
  properties: { cursor: { type: 'string', description: 'nextCursor of the previous page; omit for the first page' } },
  additionalProperties: false,
} as const;

const META_TOOLS: readonly MetaTool[] = [
  {
    tool: {
      name: 'list_resources',
      description: 'Lists the resources this server offers (uri, name, description, mimeType), one page at a time.',
      inputSchema: cursorSchema,
    },
    async run(client, args, request) {
      const page = await observeRequest(client, 'resources/list', { signal: request.signal }, () => client.listResources(cursorParams(args), request));
      return json({ resources: page.resources, ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) });
    },
  },
  {
    tool: {
      name: 'read_resource',
      description: 'Reads one resource of this server by its URI; text comes back as text, binary data as a summary.',
      inputSchema: {
        type: 'object',
        properties: { uri: { type: 'string', description: 'The resource URI, from list_resources or a template' } },
        required: ['uri'],
        additionalProperties: false,
      },
    },
    async run(client, args, request) {
      if (typeof args['uri'] !== 'string' || args['uri'] === '') throw new Error('argument "uri" must be a non-empty string');
      const uri = args['uri'];
      // The URI is the conventions' `mcp.resource.uri`, with the server's secrets redacted (a token in a query).
      const detail = { [ATTR.resourceUri]: redact(uri, request.secrets) };
      const read = await observeRequest(client, 'resources/read', { detail, signal: request.signal }, () => client.readResource({ uri }, request));
      // Embedded resources: the adapter keeps text and summarizes blobs, as for a tool result.
      return { content: read.contents.map((resource) => ({ type: 'resource' as const, resource })) };
    },
  },
  {
    tool: {
      name: 'list_resource_templates',
      description: 'Lists the URI templates of resources this server can produce (uriTemplate, name, description).',
      inputSchema: cursorSchema,
    },
    async run(client, args, request) {
      const page = await noneIfUnhandled(
        observeRequest(client, 'resources/templates/list', { signal: request.signal }, () => client.listResourceTemplates(cursorParams(args), request)),
        { resourceTemplates: [] },
      );
      return json({
        resourceTemplates: page.resourceTemplates,
        ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}),
      });
    },
  },
];

/** The resource meta tools of `server` as agent tools; none when it lacks the `resources` capability. */
export function resourceAgentTools(server: string, client: Client, options: ResourceToolOptions): AgentTool[] {
  if (!client.getServerCapabilities()?.resources) return [];
  const own = new Set(options.ownTools.map((tool) => tool.name));
  const offered = META_TOOLS.filter((meta) => !own.has(meta.tool.name));
  return filterTools(
    offered.map((meta) => ({ name: meta.tool.name, meta })),
    options.filter,
  ).map(({ meta }) =>
    toAgentTool(
      server,
      meta.tool,
      async (_original, args, callOptions: ExecuteOptions) => {
        options.ensureReady();
        try {
          return await meta.run(client, args, { signal: callOptions.signal, timeout: options.timeoutMs, secrets: options.secrets });
        } catch (error) {
          // A server's error text can quote what it was given, a secret included.
          throw new Error(redact(`${meta.tool.name} failed: ${(error as Error).message}`, options.secrets));
        }
      },
      { maxResultBytes: options.maxResultBytes },
    ),
  );
}

function cursorParams(args: Record<string, unknown>): { cursor?: string } {
  return typeof args['cursor'] === 'string' ? { cursor: args['cursor'] } : {};
}

function json(value: unknown): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value, null, 2) }] };
}
