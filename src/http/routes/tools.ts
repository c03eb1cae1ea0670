import { Router, type Response } from 'express';
import { z } from 'zod';
import type { McpHost } from '../../host.js';
import type { AgentToolResult, ToolProgress } from '../../services/tools/agent-tool.js';
import { HttpError } from '../errors.js';
import { openEventStream } from '../event-stream.js';

/** `POST /api/mcp/tools/:name/call`: `{"arguments": {...}}` (omitted = no arguments). */
const CallBody = z.strictObject({ arguments: z.record(z.string(), z.unknown()).default({}) });

/** The agent tools, and a call to one of them. */
export function toolRoutes(host: McpHost): Router {
  const router = Router();

  router.get('/', function listTools(_req, res) {
    const tools = host.tools().map((tool) => ({
      name: tool.name,
      description: tool.description,
      parameters: tool.parameters,
      ...(tool.annotations ? { annotations: tool.annotations } : {}),
      server: tool.server,
      original: tool.originalName,
    }));
    res.json({ tools });
  });

  router.post('/:name/call', async function callTool(req, res) {
    const name = req.params.name;
    const body = CallBody.parse(req.body ?? {});
    if (!host.tools().some((tool) => tool.name === name)) {
      throw new HttpError(404, 'not_found', `no tool named "${name}"`);
    }
    // A client that hangs up no longer wants the answer: cancel the MCP call
    // (the server gets notifications/cancelled) instead of letting it run on.
    const controller = new AbortController();
    res.on('close', function abortIfUnanswered() {
      if (!res.writableFinished) controller.abort(new Error('HTTP client disconnected'));
    });
    if (req.accepts(['application/json', 'text/event-stream']) === 'text/event-stream') {
      await streamCall(res, (onProgress) =>
        host.callTool(name, body.arguments, { signal: controller.signal, onProgress }),
      );
      return;
    }
    // A tool error is an answer (`details.is_error`), not an HTTP error.
    const result = await host.callTool(name, body.arguments, { signal: controller.signal });
    if (!controller.signal.aborted) res.json(result);
  });

  return router;
}

/**
 * Answers a call as server-sent events: a `progress` event per progress
 * notification, then one `result` event with the AgentToolResult. The status
 * is sent first, so a tool error is a `result` with `details.is_error`.
 */
async function streamCall(
  res: Response,
  call: (onProgress: (progress: ToolProgress) => void) => Promise<AgentToolResult>,
): Promise<void> {
  openEventStream(res);
  const result = await call(function sendProgress(progress) {
    if (!res.writableEnded) res.write(`event: progress\ndata: ${JSON.stringify(progress)}\n\n`);
  });
  if (res.writableEnded || res.destroyed) return;
  res.write(`event: result\ndata: ${JSON.stringify(result)}\n\n`);
  res.end();
}
