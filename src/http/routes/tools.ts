import { Router } from 'express';
import { z } from 'zod';
import type { McpHost } from '../../host.js';
import { HttpError } from '../errors.js';

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
    // A tool error is an answer (`details.is_error`), not an HTTP error.
    const result = await host.callTool(name, body.arguments, { signal: controller.signal });
    if (!controller.signal.aborted) res.json(result);
  });

  return router;
}
