// `serve --apps-url` behind a TLS proxy, without the proxy: a real worker
// told its public origins (--public-url for the page, --apps-url for the
// sandbox port), asked over plain node:http with the Host headers a proxy
// would pass on. The page may frame the public apps origin, the frame URL
// names it, and the frame may be framed by the public page only.
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCommand } from '../fixtures/index.js';
import { startServe, type ServeWorker } from '../support/cli.js';
import { freePort } from '../support/ports.js';

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

function request(port: number, path: string, options: { host: string; method?: string; token?: string; body?: unknown }): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    const headers: Record<string, string> = { host: options.host };
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    const req = http.request({ host: '127.0.0.1', port, path, method: options.method ?? 'GET', headers, agent: false }, (res) => {
      let text = '';
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('serve --apps-url', { timeout: 90_000 }, () => {
  let worker: ServeWorker;
  let port: number;
  let appsPort: number;
  let token: string;

  beforeAll(async () => {
    appsPort = await freePort();
    worker = await startServe('mcp-fleet-apps-url-', { fx: { type: 'local', command: fixtureCommand('apps-server') } }, [
      '--apps-port', String(appsPort),
      '--apps-url', 'https://Apps.Example.com/',
      '--public-url', 'https://mcp.example.com',
    ]);
    port = Number(new URL(JSON.parse(readFileSync(join(worker.dir, 'worker.json'), 'utf8')).url).port);
    token = readFileSync(join(worker.dir, 'api_token'), 'utf8').trim();
  }, 90_000);
  afterAll(async () => {
    await worker?.stop();
  });

  it('the page may frame the public apps origin only', async () => {
    for (const host of [`127.0.0.1:${port}`, 'mcp.example.com']) {
      const page = await request(port, '/', { host });
      expect(page.status).toBe(200);
      expect(page.headers['content-security-policy']).toContain('frame-src https://apps.example.com;');
    }
  });

  it('an app frame is served from the public apps origin and framed by the public page only', async () => {
    const opened = await request(port, '/api/mcp/apps', { host: 'mcp.example.com', method: 'POST', token, body: { tool: 'fx__show' } });
    expect(opened.status).toBe(201);
    const { id, frame_url: frameUrl } = JSON.parse(opened.text) as { id: string; frame_url: string };
    expect(frameUrl).toBe(`https://apps.example.com/frames/${id}`);

    // What the proxy forwards (Host: the public name), and the sandbox port reached directly.
    for (const host of ['apps.example.com', `127.0.0.1:${appsPort}`]) {
      const frame = await request(appsPort, `/frames/${id}`, { host });
      expect(frame.status).toBe(200);
      const policy = String(frame.headers['content-security-policy']);
      expect(policy).toContain('frame-ancestors https://mcp.example.com;');
    }
    // Another name is still refused on the sandbox port.
    expect((await request(appsPort, `/frames/${id}`, { host: 'evil.example' })).status).toBe(403);
    expect((await request(port, `/api/mcp/apps/${id}`, { host: 'mcp.example.com', method: 'DELETE', token })).status).toBe(204);
  });
});
