// Journal routes against a real host: the page and the live SSE stream. And
// against a journal on a real file store that compacts (tiny segments,
// frequent snapshots), reopened as a restarted worker would: `?since` and
// `Last-Event-ID` reach back to the oldest stored event across the restart,
// and past it the answer is `gone` with the oldest available seq.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createMcpHost, type McpHost } from '../../src/host.js';
import { JournalEvent, type JournalEventInput } from '../../src/journal/events.js';
import { createFileEventStore, type FileEventStoreOptions } from '../../src/journal/file-event-store.js';
import { createJournal, type Journal } from '../../src/journal/journal.js';
import { healthy, startFleet, untilState, type Fleet } from './fleet.js';
import { serve, TOKEN, type Served } from './helpers.js';

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
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  await fleet?.close();
  fleet = undefined;
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Small segments that snapshots soon drop; memory keeps only a few events, so reads go to the store. */
const COMPACTING: Omit<FileEventStoreOptions, 'stateDir'> = { maxSegmentBytes: 300, keepSegments: 1, snapshotEveryBytes: 600 };

/**
 * One worker's journal on `stateDir`, served by the management app: the
 * routes need only the journal's part of the host.
 */
async function journalWorker(
  stateDir: string,
  storeOptions: Omit<FileEventStoreOptions, 'stateDir'> = COMPACTING,
  maxInMemory = 3,
): Promise<{ journal: Journal; served: Served; stop(): Promise<void> }> {
  const journal = createJournal({ store: createFileEventStore({ stateDir, ...storeOptions }), maxInMemory });
  await journal.open();
  const host = {
    events: (since?: number) => journal.since(since),
    readEvents: (since: number, limit?: number) => journal.read(since, limit),
    subscribe: (listener: (event: JournalEvent) => void) => journal.subscribe(listener),
  } as Partial<McpHost> as McpHost;
  const served = await serve(host);
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await served.close();
    await journal.close();
  };
  cleanups.push(stop);
  return { journal, served, stop };
}

/** A host keeping its journal on `stateDir`, served; stopped after the test at the latest. */
async function hostWorker(stateDir: string): Promise<{ host: McpHost; served: Served; stop(): Promise<void> }> {
  const host = createMcpHost({ stateDir, watchConfig: false, logger: { info: () => {}, warn: () => {} } });
  const served = await serve(host);
  await host.start();
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await served.close();
    await host.shutdown();
  };
  cleanups.push(stop);
  return { host, served, stop };
}

/** Waits for `server` to be ready, on the host's own journal (no polling). */
function untilReady(host: McpHost, server: string, timeoutMs = 15_000): Promise<void> {
  if (host.server(server)?.state === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      unsubscribe();
      reject(new Error(`${server} did not become ready (state: ${host.server(server)?.state})`));
    }, timeoutMs);
    const unsubscribe = host.subscribe(() => {
      if (host.server(server)?.state !== 'ready') return;
      clearTimeout(timer);
      unsubscribe();
      resolve();
    });
  });
}

function stateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-events-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const log = (index: number): JournalEventInput => ({ type: 'server.log', server: 'alpha', level: 'info', logger: null, message: `line ${index}` });

/** Appends one by one, letting each be stored: the store asks for snapshots as it fills, and drops segments. */
async function appendStored(journal: Journal, count: number): Promise<void> {
  for (let index = 0; index < count; index += 1) {
    journal.append(log(index));
    await journal.flushed();
  }
}

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

  it('?since=N reaches back to the oldest stored event; compacted away → 410 with the oldest available seq; limit pages', async () => {
    const dir = stateDir();
    const { journal, served } = await journalWorker(dir);
    await appendStored(journal, 40);
    const probe = await journal.read(0);
    if (Array.isArray(probe)) throw new Error('the store did not compact');
    const oldest = probe.gone;

    const gone = await served.request('/api/mcp/events?since=0');
    expect(gone.status).toBe(410);
    expect(gone.json).toEqual({
      error: {
        code: 'gone',
        message: `events after seq 0 were compacted away: the oldest available seq is ${oldest}`,
        field: 'since',
        oldest_seq: oldest,
      },
    });

    const page = await served.request(`/api/mcp/events?since=${oldest - 1}`);
    expect(page.status).toBe(200);
    const seqs = page.json.events.map((event: { seq: number }) => event.seq);
    expect(seqs).toEqual(Array.from({ length: journal.lastSeq - oldest + 1 }, (_, i) => oldest + i));
    // Further back than memory keeps: the store answered.
    expect(journal.since().length).toBe(3);
    expect(seqs.length).toBeGreaterThan(3);

    const limited = await served.request(`/api/mcp/events?since=${oldest - 1}&limit=2`);
    expect(limited.json.events.map((event: { seq: number }) => event.seq)).toEqual([oldest, oldest + 1]);
    for (const limit of ['0', 'x', '10001', '1e1', '0x10', '5.0']) {
      for (const query of [`since=1&limit=${limit}`, `limit=${limit}`]) {
        const refused = await served.request(`/api/mcp/events?${query}`);
        expect(refused.status).toBe(400);
        expect(refused.json.error.field).toBe('limit');
      }
    }
    // Without `since`: the newest events in memory, the last `limit` of them.
    const newest = await served.request('/api/mcp/events?limit=2');
    expect(newest.json.events.map((event: { seq: number }) => event.seq)).toEqual([journal.lastSeq - 1, journal.lastSeq]);
  });

  it('a worker whose memory still holds compacted events answers 410 for them too, as it will after a restart', async () => {
    const { journal, served } = await journalWorker(stateDir(), COMPACTING, 10_000);
    await appendStored(journal, 40);
    expect(journal.since().length).toBe(journal.lastSeq);
    const gone = await served.request('/api/mcp/events?since=0');
    expect(gone.status).toBe(410);
    const oldest = gone.json.error.oldest_seq as number;
    expect(oldest).toBeGreaterThan(1);
    // From the oldest stored on, memory answers: every event, none twice.
    const page = await served.request(`/api/mcp/events?since=${oldest - 1}`);
    expect(page.json.events.map((event: { seq: number }) => event.seq)).toEqual(Array.from({ length: journal.lastSeq - oldest + 1 }, (_, i) => oldest + i));
  });

  it.each(['-1', 'abc', '1.5', '1e1', '0x10'])('since=%s → 400', async (since) => {
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

  it('resumes across a worker restart from Last-Event-ID: the store replays, seq goes on, no gap or repeat', async () => {
    const dir = stateDir();
    // Nothing compacted here: the resumed events are all stored.
    const first = await journalWorker(dir, {});
    await appendStored(first.journal, 6);
    const lastOfFirstRun = first.journal.lastSeq;
    await first.stop();

    const second = await journalWorker(dir, {});
    await appendStored(second.journal, 2);
    const resumeAfter = lastOfFirstRun - 3;
    const stream = openStream(second.served.port, '/api/mcp/events/stream', { 'last-event-id': String(resumeAfter) });
    await stream.until(() => stream.events().length === second.journal.lastSeq - resumeAfter);
    second.journal.append(log(99));
    await stream.until(() => stream.events().some((event) => event.type === 'server.log' && event.message === 'line 99'));
    stream.close();

    const events = stream.events();
    expect(events.map((event) => event.seq)).toEqual(events.map((_, i) => resumeAfter + 1 + i));
    expect(events.at(-1)!.seq).toBe(second.journal.lastSeq);
    // The new run's boundary sits right after the first run's last event.
    expect(events.find((event) => event.type === 'worker.started')!.seq).toBe(lastOfFirstRun + 1);
    expect(stream.frames.filter((frame) => frame.event === 'gone')).toEqual([]);
  });

  it('a compacted Last-Event-ID gets one gone frame with the oldest seq, then the stream goes on live', async () => {
    const dir = stateDir();
    const { journal, served } = await journalWorker(dir);
    await appendStored(journal, 40);
    const probe = await journal.read(1);
    if (Array.isArray(probe)) throw new Error('the store did not compact');
    const atConnect = journal.lastSeq;

    const stream = openStream(served.port, '/api/mcp/events/stream', { 'last-event-id': '1' });
    await stream.until(() => stream.frames.some((frame) => frame.event === 'gone'));
    journal.append(log(99));
    await stream.until(() => stream.events().length === 1);
    stream.close();

    expect(stream.frames.filter((frame) => frame.event)).toEqual([
      { id: String(atConnect), event: 'gone', data: JSON.stringify({ since: 1, oldest_seq: probe.gone }) },
      expect.objectContaining({ id: String(atConnect + 1), event: 'journal' }),
    ]);
  });

  it('a seq past the newest (from a journal that started over) is gone too: the stream goes on live, losing nothing after it; a page answers 410', async () => {
    const { journal, served } = await journalWorker(stateDir());
    await appendStored(journal, 5);
    const atConnect = journal.lastSeq;
    const ahead = atConnect + 5;

    const page = await served.request(`/api/mcp/events?since=${ahead}`);
    expect(page.status).toBe(410);
    expect(page.json.error).toMatchObject({ code: 'gone', field: 'since', newest_seq: atConnect });
    expect(page.json.error.message).toBe(`no event after seq ${ahead} was written here: the newest is ${atConnect}`);

    const stream = openStream(served.port, '/api/mcp/events/stream', { 'last-event-id': String(ahead) });
    await stream.until(() => stream.frames.some((frame) => frame.event === 'gone'));
    // Every event after the connect arrives, those numbered at or below the client's old id too.
    for (let i = 0; i < 6; i += 1) journal.append(log(i));
    await stream.until(() => stream.events().length === 6);
    stream.close();
    expect(stream.frames.filter((frame) => frame.event)[0]).toEqual({ id: String(atConnect), event: 'gone', data: JSON.stringify({ since: ahead, newest_seq: atConnect }) });
    expect(stream.events().map((event) => event.seq)).toEqual(Array.from({ length: 6 }, (_, i) => atConnect + 1 + i));
  });

  it('a restarted host: seq goes on, Last-Event-ID resumes across the restart, the server shows its last run', async () => {
    const dir = stateDir();
    writeFileSync(join(dir, 'mcp_servers.json'), JSON.stringify({ servers: { alpha: healthy(dir, 'alpha') } }));
    const first = await hostWorker(dir);
    await untilReady(first.host, 'alpha');
    const before = first.host.server('alpha')!;
    await first.stop();
    expect(first.host.server('alpha')!.state).toBe('stopped');
    const lastOfFirstRun = first.host.events().at(-1)!.seq;

    const second = await hostWorker(dir);
    // Folded from the store before any actor of this run reports: how the server stood
    // before the shutdown stopped it (ready, with its tools), not the shutdown itself.
    expect(second.host.server('alpha')!.last_run).toEqual({
      state: 'ready',
      error: null,
      error_kind: null,
      tool_count: before.tool_count,
      at: before.since,
    });
    expect(before.tool_count).toBeGreaterThan(0);
    const resumeAfter = lastOfFirstRun - 2;
    const stream = openStream(second.served.port, '/api/mcp/events/stream', { 'last-event-id': String(resumeAfter) });
    await untilReady(second.host, 'alpha');
    await stream.until(() =>
      stream.events().some((event) => event.seq > lastOfFirstRun && event.type === 'server.transitioned' && event.to === 'ready'),
    );
    stream.close();

    const events = stream.events();
    expect(events.map((event) => event.seq)).toEqual(events.map((_, i) => resumeAfter + 1 + i));
    expect(events.find((event) => event.type === 'worker.started')!.seq).toBe(lastOfFirstRun + 1);
    expect(second.host.server('alpha')).toMatchObject({ state: 'ready', last_run: { state: 'ready', tool_count: before.tool_count } });
  });

  it('a bad Last-Event-ID → 400', async () => {
    fleet = await startFleet(() => ({}));
    const reply = await fleet.request('/api/mcp/events/stream', { headers: { 'last-event-id': 'x' } });
    expect(reply.status).toBe(400);
    expect(reply.json.error.field).toBe('Last-Event-ID');
  });
});
