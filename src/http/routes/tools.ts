import type { Response, Router } from 'express';
import { loadExpress } from '../express.js';
import { z } from 'zod';
import type { McpHost } from '../../host.js';
import type { PendingApproval } from '../../approvals/index.js';
import type { AgentToolResult, ToolProgress } from '../../catalog/index.js';
import { namespaceOwner } from '../../journal/index.js';
import { HttpError } from '../errors.js';
import { openEventStream } from '../event-stream.js';
import { userOf } from '../caller.js';
import { catalogUi } from '../../apps/tool-meta.js';
import { errorResult } from '../../catalog/tools/agent-tool.js';
import { SHUTTING_DOWN } from '../../gateway/web-exchange.js';
import { stoppedBy, type RequestsUnderWay } from '../under-way.js';

/** `POST /api/mcp/tools/:name/call`: `{"arguments": {...}}` (omitted = no arguments). */
const CallBody = z.strictObject({ arguments: z.record(z.string(), z.unknown()).default({}) });

/** The most results one search returns. */
export const MAX_SEARCH_LIMIT = 100;
/** `?limit=`: digits only, so `1e1`, `0x10` and `5.0` are refused rather than read as numbers. */
const SearchLimit = z.string().regex(/^\d+$/).transform(Number).pipe(z.number().int().min(1).max(MAX_SEARCH_LIMIT));

/** The agent tools, a search over them, and a call to one of them. */
export function toolRoutes(host: McpHost, underWay: RequestsUnderWay): Router {
  const router = loadExpress().Router();

  // Listings that expired (catalog_max_age_seconds, a server's ttlMs) are listed again before the answer.
  router.get('/', async function listTools(_req, res) {
    await host.freshen();
    const principal = userOf(res);
    // App-only tools too (`model_visible: false`): a page shows them with their app; a model never gets them.
    const tools = host.allTools(principal === undefined ? {} : { principal }).map((tool) => ({
      name: tool.name,
      description: tool.description,
      parameters: tool.parameters,
      ...(tool.annotations ? { annotations: tool.annotations } : {}),
      server: tool.server,
      original: tool.originalName,
      ...catalogUi(tool),
    }));
    res.json({ tools });
  });

  // Before any `/:name` route, so that a tool can never shadow it.
  router.get('/search', async function searchTools(req, res) {
    const query = searchQuery(req.query.q);
    const limit = searchLimit(req.query.limit);
    await host.freshen();
    const principal = userOf(res);
    res.json({ tools: host.searchTools(query, { ...(limit !== undefined && { limit }), ...(principal && { principal }) }) });
  });

  // The tool's app (MCP Apps): its HTML and what it declares. 404 when the tool names no UI, 409 while its server is not ready.
  router.get('/:name/ui', async function toolUi(req, res) {
    const name = req.params.name;
    const principal = userOf(res);
    // A tool the user may not see has no app, as far as they can tell; a per_user server's is read in their own session.
    const ui = await host.toolUi(name, principal === undefined ? {} : { principal });
    if (ui === null) throw new HttpError(404, 'not_found', `no tool named "${name}" with an app`);
    res.json(ui);
  });

  router.post('/:name/call', async function callTool(req, res) {
    const name = req.params.name;
    const body = callBody(req.body);
    const principal = userOf(res);
    const who = principal === undefined ? {} : { principal };
    if (!host.hasTool(name, who)) {
      throw new HttpError(404, 'not_found', `no tool named "${name}"${principal === undefined ? whyNoTool(host, name) : ''}`);
    }
    // A client that hangs up no longer wants the answer: cancel the MCP call
    // (the server gets notifications/cancelled) instead of letting it run on. So does the worker's stop.
    const signal = underWay.begin(res);
    // A call the worker's stop cancelled is answered, saying why, as the gateway answers its own.
    const answer = (result: AgentToolResult): AgentToolResult => (stoppedBy(signal) && result.details.is_error ? stoppedResult(name, result) : result);
    if (req.accepts(['application/json', 'text/event-stream']) === 'text/event-stream') {
      await streamCall(res, async (onProgress, onApproval) =>
        answer(await host.callTool(name, body.arguments, { signal, onProgress, onApproval, ...who })),
      );
      return;
    }
    // A tool error is an answer (`details.is_error`), not an HTTP error.
    const result = await host.callTool(name, body.arguments, { signal, ...who });
    if (!signal.aborted || stoppedBy(signal)) res.json(answer(result));
  });

  return router;
}

/** The answer to a call the worker's stop cancelled: the tool it named, and that the worker is shutting down. */
function stoppedResult(name: string, cancelled: AgentToolResult): AgentToolResult {
  const { server, tool } = cancelled.details;
  return errorResult(server, tool, `the call to ${server && tool ? `${server}/${tool}` : name} was cancelled: ${SHUTTING_DOWN}`);
}

/**
 * A call's body; the tool's own arguments sent bare (`{"message": "hi"}`, not
 * `{"arguments": {"message": "hi"}}`) are refused with where they belong.
 */
function callBody(raw: unknown): z.infer<typeof CallBody> {
  const parsed = CallBody.safeParse(raw ?? {});
  if (parsed.success) return parsed.data;
  const bare = typeof raw === 'object' && raw !== null && !Array.isArray(raw) && !Object.hasOwn(raw, 'arguments') ? Object.keys(raw)[0] : undefined;
  if (bare === undefined) throw parsed.error;
  throw new HttpError(400, 'invalid_request', `${bare}: unknown field; a tool's arguments go inside "arguments": {"arguments": {...}}`, bare);
}

/**
 * Why a tool named for a configured server is not there, when that server is
 * not ready (disabled, still starting, failed): told to the admin only, as a
 * user may not know of every server.
 */
function whyNoTool(host: McpHost, tool: string): string {
  const owner = namespaceOwner(host.status().map((view) => view.name), tool);
  const server = owner === undefined ? undefined : host.server(owner);
  if (server === undefined || server.state === 'ready') return '';
  // Said as a library call of the tool says it.
  return `: server "${server.name}" is not ready (state: ${server.state}${server.error ? ` — ${server.error}` : ''})`;
}

/** `?q=`: required, not blank; a repeated parameter counts by its first value. */
function searchQuery(value: unknown): string {
  const query = firstOf(value);
  if (typeof query !== 'string' || query.trim() === '') {
    throw new HttpError(400, 'invalid_request', 'q: a search query is required', 'q');
  }
  return query.trim();
}

/** `?limit=`: optional (the host's default), else an integer from 1 to 100. */
function searchLimit(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const parsed = SearchLimit.safeParse(firstOf(value));
  if (!parsed.success) {
    throw new HttpError(400, 'invalid_request', `limit: must be an integer from 1 to ${MAX_SEARCH_LIMIT}`, 'limit');
  }
  return parsed.data;
}

function firstOf(value: unknown): unknown {
  return Array.isArray(value) ? value[0] : value;
}

/** How often a streamed call that has nothing to say sends a comment line: clients and proxies time out idle streams. */
const KEEPALIVE_MS = 15_000;

/**
 * Answers a call as server-sent events: an `approval` event when it waits for
 * a person (the pending approval, with its `id`), a `progress` event per
 * progress notification, then one `result` event with the AgentToolResult.
 * The status is sent first, so a tool error is a `result` with
 * `details.is_error`.
 */
async function streamCall(
  res: Response,
  call: (onProgress: (progress: ToolProgress) => void, onApproval: (pending: PendingApproval) => void) => Promise<AgentToolResult>,
): Promise<void> {
  openEventStream(res);
  const send = (event: string, data: unknown) => {
    if (!res.writableEnded) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  };
  const keepalive = setInterval(function keepStreamAlive() {
    if (!res.writableEnded) res.write(': waiting\n\n');
  }, KEEPALIVE_MS);
  let result: AgentToolResult;
  try {
    result = await call(
      function sendProgress(progress) {
        send('progress', progress);
      },
      function sendApproval(pending) {
        send('approval', pending);
      },
    );
  } finally {
    clearInterval(keepalive);
  }
  if (res.writableEnded || res.destroyed) return;
  send('result', result);
  res.end();
}
