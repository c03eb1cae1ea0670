// Journal routes against a real host: the page and the live SSE stream.
import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import type { McpHost } from '../../src/host.js';
import { JournalEvent } from '../../src/services/journal/events.js';
import { healthy, startFleet, untilState, type Fleet } from './fleet.js';
import { TOKEN } from './helpers.js';

interface Frame {
  id?: string;
  event?: string;
  data?: string;
  comment?: string;
}

/** An open SSE connection collecting parsed frames. */
function openStream(port: number, path: string, headers: Record<string, string> = {}) {
  const frames: Frame[] = [];
  let buffer = '';
  let status = 0;
  let contentType = '';
  const req = http.request({
    host: '127.0.0.1',
    port,
    path,
    headers: { host: `127.0.0.1:${port}`, authorization: `Bearer ${TOKEN}`, ...headers },
    agent: false,
  });
  req.on('error', () => {});
  req.on('response', (res) => {
    status = res.statusCode ?? 0;
    contentType = String(res.headers['content-type']);
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      buffer += chunk;
      let end: number;
      while ((end = buffer.indexOf('\n\n')) !== -1) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const frame: Frame = {};
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) frame.comment = line.slice(1).trim();
          else {
            const colon = line.indexOf(': ');
            (frame as Record<string, string>)[line.slice(0, colon)] = line.slice(colon + 2);
          }
        }
        frames.push(frame);
      }
    });
  });
  req.end();
  return {
    frames,
    status: () => status,
    contentType: () => contentType,
    events: () => frames.filter((f) => f.event === 'journal').map((f) => JournalEvent.parse(JSON.parse(f.data!))),
    async until(predicate: () => boolean, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate()) {
        if (Date.now() > deadline) throw new Error(`stream condition not met; frames: ${JSON.stringify(frames)}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    close: () => req.destroy(),
  };
}

/** Counts live subscriptions by wrapping the real host's subscribe. */
function countSubscribers(host: McpHost): () => number {
  let active = 0;
  const original = host.subscribe.bind(host);
  host.subscribe = (listener) => {
    active += 1;
    const unsubscribe = original(listener);
    return () => {
      active -= 1;
      unsubscribe();
    };
  };
  return () => active;
}

let fleet: Fleet | undefined;
afterEach(async () => {
  await fleet?.close();
  fleet = undefined;
});

describe('GET /api/mcp/events', () => {
  it('returns the journal wrapped, and only events after ?since', async () => {
    fleet = await startFleet((dir) => ({ alpha: healthy(dir, 'alpha') }));
    await untilState(fleet, 'alpha', 'ready');
    const all = await fleet.request('/api/mcp/events');
    expect(all.status).toBe(200);
    expect(Object.keys(all.json)).toEqual(['events']);
    const events = (all.json.events as unknown[]).map((event) => JournalEvent.parse(event));
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events).toContainEqual(expect.objectContaining({ type: 'server.transitioned', server: 'alpha', from: 'pending', to: 'ready' }));
    expect(events).toContainEqual(expect.objectContaining({ type: 'tools.registered', server: 'alpha' }));

    const later = await fleet.request('/api/mcp/events?since=2');
    expect(later.json.events.map((e: { seq: number }) => e.seq)).toEqual(events.slice(2).map((e) => e.seq));
  });

  it.each(['-1', 'abc', '1.5'])('since=%s → 400', async (since) => {
    fleet = await startFleet(() => ({}));
    const reply = await fleet.request(`/api/mcp/events?since=${since}`);
    expect(reply.status).toBe(400);
    expect(reply.json.error.field).toBe('since');
  });
});

describe('GET /api/mcp/events/stream', () => {
  it('streams live events as id/event/data frames', async () => {
    fleet = await startFleet((dir) => ({ alpha: healthy(dir, 'alpha') }));
    await untilState(fleet, 'alpha', 'ready');
    const backlog = (await fleet.request('/api/mcp/events')).json.events.length;
    const stream = openStream(fleet.served.port, '/api/mcp/events/stream');
    await stream.until(() => stream.status() === 200);
    expect(stream.contentType()).toMatch(/^text\/event-stream/);

    await fleet.request('/api/mcp/servers/alpha/restart', { method: 'POST' });
    await stream.until(() => stream.events().some((e) => e.type === 'server.transitioned' && e.to === 'ready'));
    stream.close();

    const events = stream.events();
    // Only new events: nothing from before the connection.
    expect(events[0]!.seq).toBe(backlog + 1);
    expect(stream.frames.filter((f) => f.event).map((f) => Number(f.id))).toEqual(events.map((e) => e.seq));
    expect(events.map((e) => e.type)).toContain('tools.registered');
  });

  it('replays after Last-Event-ID (or ?since), then continues live, with no gap or repeat', async () => {
    fleet = await startFleet((dir) => ({ alpha: healthy(dir, 'alpha') }));
    await untilState(fleet, 'alpha', 'ready');
    const total = (await fleet.request('/api/mcp/events')).json.events.length;

    const byHeader = openStream(fleet.served.port, '/api/mcp/events/stream?since=0', { 'last-event-id': '2' });
    const byQuery = openStream(fleet.served.port, '/api/mcp/events/stream?since=1');
    await byHeader.until(() => byHeader.events().length === total - 2);
    await byQuery.until(() => byQuery.events().length === total - 1);
    await fleet.request('/api/mcp/servers/alpha/restart', { method: 'POST' });
    await byHeader.until(() => byHeader.events().some((e) => e.seq > total && e.type === 'tools.registered'));
    byHeader.close();
    byQuery.close();

    const seqs = byHeader.events().map((e) => e.seq);
    expect(seqs[0]).toBe(3);
    expect(seqs).toEqual(seqs.map((_, i) => i + 3));
    expect(byQuery.events()[0]!.seq).toBe(2);
  });

  it('sends heartbeat comments and unsubscribes when the client leaves', async () => {
    fleet = await startFleet(() => ({}), { heartbeatMs: 50 });
    const subscribers = countSubscribers(fleet.host);
    const stream = openStream(fleet.served.port, '/api/mcp/events/stream');
    await stream.until(() => stream.frames.filter((f) => f.comment === 'heartbeat').length >= 2);
    expect(subscribers()).toBe(1);
    stream.close();
    await stream.until(() => subscribers() === 0);
  });

  it('a bad Last-Event-ID → 400', async () => {
    fleet = await startFleet(() => ({}));
    const reply = await fleet.request('/api/mcp/events/stream', { headers: { 'last-event-id': 'x' } });
    expect(reply.status).toBe(400);
    expect(reply.json.error.field).toBe('Last-Event-ID');
  });
});
