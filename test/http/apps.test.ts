// The worker's side of apps on the page, over real HTTP against a real host
// with the hostile fixture app: the frame policy built from what the app
// declared, the sandbox origin that serves its frame (and nothing else), and
// the relay routes, guarded like the rest of the API.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCommand } from '../fixtures/index.js';
import { TOKEN } from './helpers.js';
import { healthy, startFleet, untilState, type Fleet } from './fleet.js';
import { listen, type Listening } from '../../src/http/bind.js';
import { createAppFrames, type AppFrames } from '../../src/http/apps/frames.js';
import { declaredSources, frameCsp } from '../../src/http/apps/csp.js';
import { sessionCookieName, sessionValue } from '../../src/http/session.js';

const ALLOWED = 'http://127.0.0.1:9';

describe('the frame policy', () => {
  const options = { pageOrigin: 'http://127.0.0.1:8787', ownOrigins: ['http://127.0.0.1:8787', 'http://127.0.0.1:9999'], reportUri: '/frames/x/csp' };

  it('allows nothing the app did not declare', () => {
    const { policy, dropped } = frameCsp({ connectDomains: [], resourceDomains: [], frameDomains: [], baseUriDomains: [] }, options);
    expect(policy.split('; ')).toEqual([
      "default-src 'none'",
      "script-src 'unsafe-inline' blob: data:",
      'worker-src blob: data:',
      "style-src 'unsafe-inline'",
      'img-src data: blob:',
      'font-src data:',
      'media-src data: blob:',
      "connect-src 'none'",
      "frame-src 'none'",
      "base-uri 'none'",
      "object-src 'none'",
      "form-action 'none'",
      'frame-ancestors http://127.0.0.1:8787',
      'report-uri /frames/x/csp',
    ]);
    expect(dropped).toEqual([]);
  });

  it('adds declared origins to their directives only, and never a keyword, a wildcard, a path or the worker itself', () => {
    const { policy, dropped } = frameCsp(
      {
        connectDomains: ['https://api.example.com', 'wss://live.example.com', '*', "'unsafe-eval'", 'data:', 'http://127.0.0.1:8787', 'https://x.example; script-src *'],
        resourceDomains: ['https://*.cdn.example', 'https://cdn.example/path'],
        frameDomains: ['https://youtube.example'],
        baseUriDomains: [],
      },
      options,
    );
    expect(policy).toContain('connect-src https://api.example.com wss://live.example.com;');
    expect(policy).toContain("script-src 'unsafe-inline' blob: data: https://*.cdn.example;");
    expect(policy).toContain('worker-src blob: data: https://*.cdn.example;');
    expect(policy).toContain('img-src data: blob: https://*.cdn.example;');
    expect(policy).toContain('frame-src https://youtube.example;');
    expect(policy).not.toContain("'unsafe-eval'");
    expect(dropped).toEqual(['*', "'unsafe-eval'", 'data:', 'http://127.0.0.1:8787', 'https://x.example; script-src *', 'https://cdn.example/path']);
  });

  it('treats the sandbox origin as the worker’s own', () => {
    expect(declaredSources(['http://127.0.0.1:9999/'], options.ownOrigins)).toEqual({ kept: [], dropped: ['http://127.0.0.1:9999/'] });
  });
});

/** A request to the sandbox port, with the Host header given. */
function sandboxRequest(port: number, path: string, options: { method?: string; host?: string; body?: string; type?: string } = {}) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }>((resolve, reject) => {
    const headers: Record<string, string> = { host: options.host ?? `127.0.0.1:${port}` };
    if (options.body !== undefined) {
      headers['content-type'] = options.type ?? 'application/csp-report';
      headers['content-length'] = String(Buffer.byteLength(options.body));
    }
    const req = http.request({ host: '127.0.0.1', port, path, method: options.method ?? 'GET', headers, agent: false }, (res) => {
      let text = '';
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

describe('the sandbox origin and the relay', { timeout: 30_000 }, () => {
  let fleet: Fleet;
  let frames: AppFrames;
  let sandbox: Listening;
  let opened: any;

  beforeAll(async () => {
    frames = createAppFrames({ bindHost: '127.0.0.1' });
    sandbox = await listen(frames.app, { port: 0 });
    frames.listeningOn(sandbox.port);
    fleet = await startFleet(
      (dir) => ({
        alpha: healthy(dir, 'alpha'),
        hostile: { type: 'local', command: fixtureCommand('hostile-app'), env: { FIXTURE_ALLOWED_ORIGIN: ALLOWED }, timeout_seconds: 15 },
      }),
      { apps: frames },
    );
    await Promise.all([untilState(fleet, 'alpha', 'ready'), untilState(fleet, 'hostile', 'ready')]);
  }, 30_000);

  afterAll(async () => {
    await frames?.closeAll();
    await sandbox?.close();
    await fleet?.close();
  });

  it('lets the page frame the sandbox origin, and nothing else', async () => {
    const page = await fleet.request('/', { noAuth: true });
    expect(page.headers['content-security-policy']).toContain(`frame-src http://127.0.0.1:${sandbox.port};`);
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
  });

  it('opens an app only with the API token, and only for a tool that has one', async () => {
    expect((await fleet.request('/api/mcp/apps', { method: 'POST', body: { tool: 'hostile__probe' }, noAuth: true })).status).toBe(401);
    const none = await fleet.request('/api/mcp/apps', { method: 'POST', body: { tool: 'alpha__echo' } });
    expect(none.status).toBe(404);
    const unknown = await fleet.request('/api/mcp/apps', { method: 'POST', body: { tool: 'nobody__nothing' } });
    expect(unknown.status).toBe(404);
    const junk = await fleet.request('/api/mcp/apps', { method: 'POST', body: { tool: 'hostile__probe', extra: 1 } });
    expect(junk.status).toBe(400);
    const reply = await fleet.request('/api/mcp/apps', { method: 'POST', body: { tool: 'hostile__probe', input: {} } });
    expect(reply.status).toBe(201);
    opened = reply.json;
    expect(opened).toMatchObject({
      tool: 'hostile__probe',
      server: 'hostile',
      sandbox: 'allow-scripts allow-forms',
      allow: '',
      prefers_border: true,
      csp_dropped: ['*', "'unsafe-eval'", 'data:'],
    });
    expect(opened.frame_url).toBe(`http://127.0.0.1:${sandbox.port}/frames/${opened.id}`);
  });

  it('serves the frame under its policy, on the sandbox origin only', async () => {
    const frame = await sandboxRequest(sandbox.port, `/frames/${opened.id}`);
    expect(frame.status).toBe(200);
    expect(frame.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(frame.text).toContain('<pre id="results">');
    const policy = frame.headers['content-security-policy'] as string;
    expect(policy).toContain(`connect-src ${ALLOWED};`);
    expect(policy).toContain(`frame-ancestors http://127.0.0.1:${fleet.served.port};`);
    expect(policy).toContain(`report-uri /frames/${opened.id}/csp`);
    expect(frame.headers['set-cookie']).toBeUndefined();
    // Not on the page's port, not under another name, not by a guessed id.
    expect((await fleet.request(`/frames/${opened.id}`, { noAuth: true })).status).toBe(404);
    expect((await sandboxRequest(sandbox.port, `/frames/${opened.id}`, { host: 'evil.example' })).status).toBe(403);
    expect((await sandboxRequest(sandbox.port, `/frames/${'A'.repeat(32)}`)).status).toBe(404);
    // The sandbox origin serves no API and no page.
    expect((await sandboxRequest(sandbox.port, '/api/mcp/servers')).status).toBe(404);
    expect((await sandboxRequest(sandbox.port, '/')).status).toBe(404);
  });

  it('takes a violation report for an open app', async () => {
    const report = JSON.stringify({ 'csp-report': { 'effective-directive': 'connect-src', 'blocked-uri': 'http://evil.example' } });
    expect((await sandboxRequest(sandbox.port, `/frames/${opened.id}/csp`, { method: 'POST', body: report })).status).toBe(204);
  });

  it('refuses what a frame could send to the API: a cookie-borne message from an opaque or foreign origin', async () => {
    const cookie = `${sessionCookieName(fleet.served.port)}=${sessionValue(TOKEN)}`;
    const message = { message: { jsonrpc: '2.0', method: 'ui/notifications/initialized' } };
    for (const origin of ['null', `http://127.0.0.1:${sandbox.port}`]) {
      const reply = await fleet.request(`/api/mcp/apps/${opened.id}/messages`, {
        method: 'POST',
        body: message,
        noAuth: true,
        headers: { cookie, origin },
      });
      expect(reply.status).toBe(403);
    }
  });

  it('relays only JSON-RPC messages', async () => {
    const bad = await fleet.request(`/api/mcp/apps/${opened.id}/messages`, { method: 'POST', body: { message: { jsonrpc: '1.0', id: 1 } } });
    expect(bad.status).toBe(400);
    const junk = await fleet.request(`/api/mcp/apps/${opened.id}/messages`, { method: 'POST', body: { message: { hello: 1 } } });
    expect(junk.status).toBe(400);
    // One line that says what is wrong, not a dump of the validator's issues.
    expect(junk.json.error.message).toBe('not a JSON-RPC message: it needs "jsonrpc": "2.0" and a method, or an id with a result or an error');
    expect(junk.json.error.message).not.toContain('\n');
    const good = await fleet.request(`/api/mcp/apps/${opened.id}/messages`, { method: 'POST', body: { message: { jsonrpc: '2.0', method: 'ui/notifications/initialized' } } });
    expect(good.status).toBe(202);
  });

  it('closes an app that answers its teardown: the answer is taken, then the page is told it closed', async () => {
    const reply = await fleet.request('/api/mcp/apps', { method: 'POST', body: { tool: 'hostile__probe' } });
    expect(reply.status).toBe(201);
    const id = reply.json.id as string;
    // The page's stream, read as the page would; this test answers as the frame's app.
    const stream = await fetch(`http://127.0.0.1:${fleet.served.port}/api/mcp/apps/${id}/stream`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const events = sseEvents(stream.body!);
    const closing = fleet.request(`/api/mcp/apps/${id}`, { method: 'DELETE' });
    let answered: number | undefined;
    const seen: string[] = [];
    for await (const event of events) {
      seen.push(event.event === 'message' ? String(JSON.parse(event.data).method) : event.event);
      if (event.event === 'message' && JSON.parse(event.data).method === 'ui/resource-teardown') {
        const { id: requestId } = JSON.parse(event.data);
        const answer = await fleet.request(`/api/mcp/apps/${id}/messages`, { method: 'POST', body: { message: { jsonrpc: '2.0', id: requestId, result: {} } } });
        answered = answer.status;
      }
      if (event.event === 'closed') break;
    }
    expect(answered).toBe(202);
    expect(seen.slice(-2)).toEqual(['ui/resource-teardown', 'closed']);
    expect((await closing).status).toBe(204);
    expect(frames.get(id)).toBeUndefined();
  });

  it('closes an app: its frame and its relay are gone', async () => {
    expect((await fleet.request(`/api/mcp/apps/${opened.id}`, { method: 'DELETE' })).status).toBe(204);
    expect(frames.get(opened.id)).toBeUndefined();
    expect((await sandboxRequest(sandbox.port, `/frames/${opened.id}`)).status).toBe(404);
    expect((await fleet.request(`/api/mcp/apps/${opened.id}/stream`)).status).toBe(404);
  });
});

/** The events of a server-sent event stream, one `{event, data}` each. */
async function* sseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<{ event: string; data: string }> {
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffered.indexOf('\n\n')) !== -1) {
      const block = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      const lines = block.split('\n');
      const event = lines.find((line) => line.startsWith('event: '))?.slice(7);
      const data = lines.filter((line) => line.startsWith('data: ')).map((line) => line.slice(6)).join('\n');
      if (event !== undefined) yield { event, data };
    }
  }
}
