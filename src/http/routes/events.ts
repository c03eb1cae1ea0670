import { loadExpress } from '../express.js';
import type { Response, Router } from 'express';
import { z } from 'zod';
import type { McpHost } from '../../host.js';
import type { JournalEvent } from '../../journal/index.js';
import { HttpError } from '../errors.js';
import { openEventStream } from '../event-stream.js';
import { endWhenSignedOut, eventFor, eventVisibleTo, userOf } from '../caller.js';
import type { Principal, Users } from '../../users/index.js';

/** A whole number written in digits only: `1e1`, `0x10`, ` 5` and `5.0` are refused rather than read as numbers. */
const Digits = z.string().regex(/^\d+$/).transform(Number);
/** A journal position: events with a greater `seq` are returned. */
const Seq = Digits.pipe(z.number().int().min(0).max(Number.MAX_SAFE_INTEGER));
/** The most events one `?since=N` page returns (and its size without `limit`); the next page starts after its last `seq`. */
const MAX_PAGE = 10_000;
const Limit = Digits.pipe(z.number().int().min(1).max(MAX_PAGE));
/** Events read from the store per step of an SSE replay. */
const REPLAY_PAGE = 1_000;

export interface EventRoutesOptions {
  /** Period of the SSE keep-alive comment, in milliseconds. */
  heartbeatMs: number;
  /** The users, whose stream ends once their key goes (rotated, removed). */
  users?: Users;
}

/** The journal, as a page (`?since=N`) and live as server-sent events. */
export function eventRoutes(host: McpHost, options: EventRoutesOptions): Router {
  const router = loadExpress().Router();

  router.get('/', async function listEvents(req, res) {
    const since = parseSince(req.query.since, 'since');
    const user = userOf(res);
    // A user reads only the events of servers they may see, and of those calls and approvals only their own.
    const shown = (events: JournalEvent[]) =>
      user === undefined ? events : events.filter((event) => eventVisibleTo(host, event, user)).map((event) => eventFor(host, event, user));
    const limit =
      req.query.limit === undefined ? MAX_PAGE : parse(Limit, req.query.limit, 'limit', `an integer from 1 to ${MAX_PAGE}`);
    // Without `since`: the newest events, those still in memory (a bounded window), the last `limit` of them.
    if (since === undefined) {
      res.json({ events: shown(host.events()).slice(-limit) });
      return;
    }
    // A seq this journal never wrote (one from a journal that started over): the reader must read the state again.
    const newest = lastSeq(host);
    if (newest > 0 && since > newest) {
      throw new HttpError(410, 'gone', `no event after seq ${since} was written here: the newest is ${newest}`, 'since', { newest_seq: newest });
    }
    // From the store: back to its oldest event, across worker restarts.
    const events = await host.readEvents(since, limit);
    if (!Array.isArray(events)) {
      throw new HttpError(
        410,
        'gone',
        `events after seq ${since} were compacted away: the oldest available seq is ${events.gone}`,
        'since',
        { oldest_seq: events.gone },
      );
    }
    if (user === undefined) {
      res.json({ events });
      return;
    }
    // A user's page is filled from the pages after it, so a short page still means the end.
    const page = shown(events);
    for (let last = events.at(-1)?.seq, full = events.length === limit; full && last !== undefined && page.length < limit; ) {
      const more = await host.readEvents(last, limit);
      if (!Array.isArray(more)) break;
      page.push(...shown(more));
      last = more.at(-1)?.seq;
      full = more.length === limit;
    }
    res.json({ events: page.slice(0, limit) });
  });

  router.get('/stream', async function streamEvents(req, res) {
    // EventSource sends Last-Event-ID on reconnect; it wins over `?since`.
    const lastId = req.headers['last-event-id'];
    const since =
      lastId !== undefined ? parseSince(lastId, 'Last-Event-ID') : parseSince(req.query.since, 'since');
    await openStream(host, res, since, options, userOf(res));
  });

  return router;
}

function parseSince(value: unknown, field: string): number | undefined {
  if (value === undefined) return undefined;
  return parse(Seq, value, field, 'a non-negative integer');
}

function parse(schema: z.ZodType<number, string>, value: unknown, field: string, expected: string): number {
  const parsed = schema.safeParse(Array.isArray(value) ? value[0] : value);
  if (!parsed.success) throw new HttpError(400, 'invalid_request', `${field}: must be ${expected}`, field);
  return parsed.data;
}

/**
 * Streams journal events as `id: seq / event: journal / data: JSON`. With a
 * `since`, the events after it are replayed first, read from the store (so a
 * client resumes across a worker restart: `seq` goes on); without one, only
 * new events are sent. Subscribing before replaying, then dropping anything
 * at or below the last sent `seq`, means no event is lost or sent twice in
 * between.
 *
 * When the events after `since` were compacted away, the client gets one
 * `event: gone` frame (`data: {"since": N, "oldest_seq": K}`) and then the
 * events from the moment it connected on: what it missed can no longer be
 * replayed, so it must read the current state again (`GET /api/mcp/servers`).
 * The frame's `id` is the last `seq` at that moment, so a reconnect resumes
 * live instead of being told `gone` again.
 */
async function openStream(
  host: McpHost,
  res: Response,
  since: number | undefined,
  { heartbeatMs, users }: EventRoutesOptions,
  user: Principal | undefined,
): Promise<void> {
  openEventStream(res);
  // A user's stream ends with their key: at once when it went here, else at the next heartbeat.
  const signedIn = endWhenSignedOut(res, users, () => res.end());

  const pending: JournalEvent[] = [];
  let replaying = true;
  let closed = false;
  const unsubscribe = host.subscribe(function forward(event) {
    if (replaying) pending.push(event);
    else send(event);
  });
  const subscribedAt = lastSeq(host);
  let lastSent = since ?? subscribedAt;
  function send(event: JournalEvent): void {
    if (event.seq <= lastSent) return;
    // Passed over, not sent, when the user may not see it: the replay still moves on past it.
    lastSent = event.seq;
    if (!eventVisibleTo(host, event, user)) return;
    res.write(`id: ${event.seq}\nevent: journal\ndata: ${JSON.stringify(eventFor(host, event, user))}\n\n`);
  }

  // A comment line keeps proxies and idle timeouts from closing a quiet stream.
  const heartbeat = setInterval(() => {
    res.write(': heartbeat\n\n');
    signedIn.recheck();
  }, heartbeatMs);
  heartbeat.unref();
  res.on('close', function closeStream() {
    closed = true;
    clearInterval(heartbeat);
    signedIn.stop();
    unsubscribe();
  });

  if (since !== undefined && subscribedAt > 0 && since > subscribedAt) {
    // A seq this journal never wrote (one from a journal that started over): what came before it here would be
    // dropped as already seen. Told `gone` as for a compacted one, the stream goes on live.
    lastSent = subscribedAt;
    res.write(`id: ${lastSent}\nevent: gone\ndata: ${JSON.stringify({ since, newest_seq: subscribedAt })}\n\n`);
  } else if (since !== undefined) {
    // Page by page until the store has nothing after the last sent: what arrives meanwhile waits in `pending`.
    for (;;) {
      if (closed) return;
      const page = await host.readEvents(lastSent, REPLAY_PAGE);
      if (!Array.isArray(page)) {
        lastSent = Math.max(lastSent, subscribedAt);
        res.write(`id: ${lastSent}\nevent: gone\ndata: ${JSON.stringify({ since, oldest_seq: page.gone })}\n\n`);
        break;
      }
      for (const event of page) send(event);
      if (page.length < REPLAY_PAGE) break;
    }
  }
  replaying = false;
  for (const event of pending.splice(0)) send(event);
}

/**
 * The newest `seq` in the journal (0 when none is in memory), so a live-only stream skips the backlog it
 * buffered. A worker journals as it starts, so its newest is in memory once it answers.
 */
function lastSeq(host: McpHost): number {
  return host.events().at(-1)?.seq ?? 0;
}
