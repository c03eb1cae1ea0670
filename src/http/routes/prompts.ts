import type { Router } from 'express';
import { loadExpress } from '../express.js';
import { z } from 'zod';
import type { McpHost } from '../../host.js';
import { PromptNotFoundError } from '../../connection/capabilities/prompts.js';
import { FleetError } from '../../errors.js';
import { HttpError } from '../errors.js';
import { userOf, viewFor } from '../caller.js';
import { shuttingDown, stoppedBy, type RequestsUnderWay } from '../under-way.js';

/** `POST /api/mcp/prompts/:name/render`: `{"arguments": {...}}` (omitted = none). */
const RenderBody = z.strictObject({ arguments: z.record(z.string(), z.unknown()).default({}) });

/** The prompts of every ready server as slash commands, and rendering one. */
export function promptRoutes(host: McpHost, underWay: RequestsUnderWay): Router {
  const router = loadExpress().Router();

  router.get('/', async function listPrompts(_req, res) {
    await host.freshen();
    const user = userOf(res);
    const prompts = host.prompts();
    res.json({ prompts: user === undefined ? prompts : prompts.filter((prompt) => viewFor(host.server(prompt.server), user) !== undefined) });
  });

  // `:name` is the command without its slash: `server:prompt` (percent-encode a `/` in a prompt name).
  router.post('/:name/render', async function renderPrompt(req, res) {
    const body = RenderBody.parse(req.body ?? {});
    const user = userOf(res);
    // `server:prompt`: a server the user may not see has no prompts, as far as they can tell.
    const server = req.params.name.replace(/^\//, '').split(':')[0] ?? '';
    if (user !== undefined && viewFor(host.server(server), user) === undefined) {
      throw new HttpError(404, 'not_found', `no prompt "${req.params.name}" (expected "server:prompt" of a ready server)`);
    }
    // A client that hangs up, or the worker's stop, cancels the render.
    const signal = underWay.begin(res);
    try {
      res.json(await host.renderPrompt(req.params.name, body.arguments, { signal }));
    } catch (error) {
      // Cut short by the worker's stop: answered so, before the port closes.
      if (stoppedBy(signal)) throw shuttingDown();
      if (error instanceof PromptNotFoundError) throw new HttpError(404, 'not_found', error.message);
      // The server refused or failed: its one-line, redacted reason, as a bad gateway.
      if (error instanceof FleetError) throw new HttpError(502, 'prompt_failed', error.message);
      throw error;
    }
  });

  return router;
}
