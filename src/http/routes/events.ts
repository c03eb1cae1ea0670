import { Router } from 'express';
import type { Request, Response } from 'express';
import { z } from 'zod';
import type { McpHost } from '../../host.js';
import type { JournalEvent } from '../../services/journal/events.js';
import { HttpError } from '../errors.js';
import { openEventStream } from '../event-stream.js';

/** A journal position: events with a greater `seq` are returned. */
const Seq = z.coerce.number().int().min(0);

export interface EventRoutesOptions {
  /** Period of the SSE keep-alive comment, in milliseconds. */
  heartbeatMs: number;
}

/** The journal, as a page (`?since=N`) and live as server-sent events. */
export function eventRoutes(host: McpHost, options: EventRoutesOptions): Router {
  const router = Router();

  router.get('/', function listEvents(req, res) {
    const since = parseSince(req.query.since, 'since');
    res.json({ events: host.events(since) });
  });

  router.get('/stream', function streamEvents(req, res) {
    // EventSource sends Last-Event-ID on reconnect; it wins over `?since`.
    const lastId = req.headers['last-event-id'];
    const since =
      lastId !== undefined ? parseSince(lastId, 'Last-Event-ID') : parseSince(req.query.since, 'since');
    openStream(host, req, res, since, options.heartbeatMs);
  });

  return router;
}

function parseSince(value: unknown, field: string): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Seq.safeParse(Array.isArray(value) ? value[0] : value);
  if (!parsed.success) throw new HttpError(400, 'invalid_request', `${field}: must be a non-negative integer`, field);
  return parsed.data;
}

/**
 * Streams journal events as `id: seq / event: journal / data: JSON`. With a
 * `since`, the events after it are replayed first; without one, only new
 * events are sent. Subscribing before replaying, then dropping anything at or
 * below the last sent `seq`, means no event is lost or sent twice in between.
 */
function openStream(host: McpHost, req: Request, res: Response, since: number | undefined, heartbeatMs: number): void {
  openEventStream(res);

  const pending: JournalEvent[] = [];
  let replaying = true;
  const unsubscribe = host.subscribe(function forward(event) {
    if (replaying) pending.push(event);
    else send(event);
  });
  let lastSent = since ?? lastSeq(host);
  function send(event: JournalEvent): void {
    if (event.seq <= lastSent) return;
    lastSent = event.seq;
    res.write(`id: ${event.seq}\nevent: journal\ndata: ${JSON.stringify(event)}\n\n`);
  }
  if (since !== undefined) for (const event of host.events(since)) send(event);
  replaying = false;
  for (const event of pending) send(event);

  // A comment line keeps proxies and idle timeouts from closing a quiet stream.
  const heartbeat = setInterval(() => res.write(': heartbeat\n\n'), heartbeatMs);
  heartbeat.unref();
  res.on('close', function closeStream() {
    clearInterval(heartbeat);
    unsubscribe();
  });
}

/** The newest `seq` in the journal (0 when empty), so a live-only stream skips the backlog it buffered. */
function lastSeq(host: McpHost): number {
  return host.events().at(-1)?.seq ?? 0;
}
