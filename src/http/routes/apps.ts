import { loadExpress } from '../express.js';
import type { Response, Router } from 'express';
import { z } from 'zod';
import type { CallToolResult } from '@modelcontextprotocol/client';
import type { McpHost } from '../../host.js';
import { HttpError } from '../errors.js';
import { openEventStream } from '../event-stream.js';
import type { AppFrames } from '../apps/frames.js';
import { NotJsonRpcError } from '../apps/relay.js';
import { endWhenSignedOut, userKeyOf, userOf } from '../caller.js';
import type { Users } from '../../users/index.js';

/** A tool result as its server answered it, which the app is handed after its handshake. */
const ToolResult = z.looseObject({
  content: z.array(z.looseObject({ type: z.string() })),
  structuredContent: z.record(z.string(), z.unknown()).optional(),
  isError: z.boolean().optional(),
});

/** `POST /api/mcp/apps`: the app of `tool`, and optionally the call it shows (its arguments and result). */
const OpenBody = z.strictObject({
  tool: z.string().min(1).max(512),
  input: z.record(z.string(), z.unknown()).optional(),
  result: ToolResult.optional(),
});

/** `POST /api/mcp/apps/:id/messages`: one message the app posted to the page, relayed as it came. */
const MessageBody = z.strictObject({ message: z.unknown() });

export interface AppRoutesOptions {
  heartbeatMs: number;
  /** Who signs in with user keys: a user's stream ends with their key. */
  users?: Users;
}

/**
 * The relay between an app's frame on the page and its bridge in the worker:
 * open one (`POST /`), its host → app messages and events (`GET /:id/stream`),
 * its app → host messages (`POST /:id/messages`), close it (`DELETE /:id`).
 */
export function appRoutes(host: McpHost, frames: AppFrames | undefined, options: AppRoutesOptions): Router {
  const router = loadExpress().Router();
  /**
   * An app the caller opened, with the key they opened it with: another caller's (a user's, the
   * admin's, or a former user's of the same name) is as unknown as a closed one.
   */
  const openApp = (id: string, res: Response) => {
    const app = frames?.get(id);
    if (app === undefined || app.opener !== (userOf(res)?.id ?? null) || app.openerKey !== userKeyOf(res)) {
      throw new HttpError(404, 'not_found', 'no such app open');
    }
    return app;
  };

  router.post('/', async function openAppFrame(req, res) {
    if (frames === undefined) throw new HttpError(503, 'not_ready', 'this worker serves no sandbox origin for apps');
    const body = OpenBody.parse(req.body ?? {});
    const frame = await frames.open(host, {
      tool: body.tool,
      pageHost: req.headers.host ?? '',
      principal: userOf(res),
      userKey: userKeyOf(res),
      ...(body.input === undefined ? {} : { input: body.input }),
      ...(body.result === undefined ? {} : { result: body.result as CallToolResult }),
    });
    res.status(201).json(frame);
  });

  router.get('/:id/stream', function streamApp(req, res) {
    const app = openApp(req.params.id, res);
    openEventStream(res);
    // A user's stream ends with their key: at once when it went here (their apps close then), else at the next heartbeat.
    const signedIn = endWhenSignedOut(res, options.users, () => res.end());
    const heartbeat = setInterval(() => {
      res.write(': alive\n\n');
      signedIn.recheck();
    }, options.heartbeatMs);
    res.on('close', () => {
      clearInterval(heartbeat);
      signedIn.stop();
    });
    app.watch(res);
  });

  router.post('/:id/messages', function relayMessage(req, res) {
    const app = openApp(req.params.id, res);
    const body = MessageBody.parse(req.body ?? {});
    try {
      app.transport.receive(body.message);
    } catch (error) {
      if (error instanceof NotJsonRpcError) throw new HttpError(400, 'invalid_request', error.message, 'message');
      // Closed between the lookup and the relay.
      throw new HttpError(404, 'not_found', 'no such app open');
    }
    res.status(202).end();
  });

  router.delete('/:id', async function closeApp(req, res) {
    // Closing one already gone is done; closing another caller's is refused.
    if (frames?.get(req.params.id) !== undefined) openApp(req.params.id, res);
    await frames?.close(req.params.id, 'closed by the page');
    res.status(204).end();
  });

  return router;
}
