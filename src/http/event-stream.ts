import type { Response } from 'express';

/** Starts a server-sent-event response: headers out at once, no proxy buffering, no Nagle delay. */
export function openEventStream(res: Response): void {
  res.status(200).set({
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-cache, no-transform',
    Connection: 'keep-alive',
    'X-Accel-Buffering': 'no',
  });
  res.flushHeaders();
  res.req.socket.setNoDelay(true);
}
