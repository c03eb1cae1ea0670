import type { Router } from 'express';
import { loadExpress } from '../express.js';
import { z } from 'zod';
import type { McpHost } from '../../host.js';
import { PromptNotFoundError } from '../../connection/capabilities/prompts.js';
import { FleetError } from '../../errors.js';
import { HttpError } from '../errors.js';

/** `POST /api/mcp/prompts/:name/render`: `{"arguments": {...}}` (omitted = none). */
const RenderBody = z.strictObject({ arguments: z.record(z.string(), z.unknown()).default({}) });

/** The prompts of every ready server as slash commands, and rendering one. */
export function promptRoutes(host: McpHost): Router {
  const router = loadExpress().Router();

  router.get('/', async function listPrompts(_req, res) {
    await host.freshen();
    res.json({ prompts: host.prompts() });
  });

  // `:name` is the command without its slash: `server:prompt` (percent-encode a `/` in a prompt name).
  router.post('/:name/render', async function renderPrompt(req, res) {
    const body = RenderBody.parse(req.body ?? {});
    const controller = new AbortController();
    res.on('close', function abortIfUnanswered() {
      if (!res.writableFinished) controller.abort(new Error('HTTP client disconnected'));
    });
    try {
      res.json(await host.renderPrompt(req.params.name, body.arguments, { signal: controller.signal }));
    } catch (error) {
      if (error instanceof PromptNotFoundError) throw new HttpError(404, 'not_found', error.message);
      // The server refused or failed: its one-line, redacted reason, as a bad gateway.
      if (error instanceof FleetError) throw new HttpError(502, 'prompt_failed', error.message);
      throw error;
    }
  });

  return router;
}
