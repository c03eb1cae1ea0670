// The security rules of SPEC §6, each on its own. The host behind the app is a
// stub: these are middleware checks, no MCP behaviour is involved (the route
// tests in servers.test.ts etc. run the real host).
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { McpHost } from '../../src/host.js';
import { allowedHostValues } from '../../src/http/security.js';
import { serve, TOKEN, type Served } from './helpers.js';

/** A host that records which methods were called; status() is an empty list. */
function stubHost(calls: string[] = []): McpHost {
  return new Proxy({} as McpHost, {
    get(_target, prop) {
      return (..._args: unknown[]) => {
        calls.push(String(prop));
        if (prop === 'status' || prop === 'tools' || prop === 'events') return [];
        return undefined;
      };
    },
  });
}

let served: Served | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
});

describe('binding', () => {
  it('listens on 127.0.0.1 unless told otherwise', async () => {
    served = await serve(stubHost());
    expect(served.server.address()).toMatchObject({ address: '127.0.0.1', family: 'IPv4' });
    expect(served.url).toBe(`http://127.0.0.1:${served.port}/`);
  });
});

describe('/healthz', () => {
  it('answers without a token and without touching the host', async () => {
    const calls: string[] = [];
    served = await serve(stubHost(calls));
    const reply = await served.request('/healthz', { noAuth: true });
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ ok: true });
    expect(calls).toEqual([]);
  });

  it('is still Host-checked (DNS rebinding)', async () => {
    served = await serve(stubHost());
    const reply = await served.request('/healthz', { noAuth: true, headers: { host: `evil.example:${served.port}` } });
    expect(reply.status).toBe(403);
    expect(reply.json.error.code).toBe('forbidden_host');
  });
});

describe('bearer token', () => {
  it.each([
    ['missing', undefined],
    ['wrong, same length', `Bearer ${'x'.repeat(TOKEN.length)}`],
    ['wrong, other length', 'Bearer nope'],
    ['a prefix of the token', `Bearer ${TOKEN.slice(0, -1)}`],
    ['another scheme', `Basic ${TOKEN}`],
    ['empty bearer', 'Bearer '],
  ])('%s → 401', async (_label, authorization) => {
    served = await serve(stubHost());
    const reply = await served.request('/api/mcp/servers', { headers: { authorization } });
    expect(reply.status).toBe(401);
    expect(reply.headers['www-authenticate']).toBe('Bearer');
    expect(reply.json).toEqual({ error: { code: 'unauthorized', message: 'missing or wrong bearer token' } });
  });

  it('the right token passes', async () => {
    served = await serve(stubHost());
    const reply = await served.request('/api/mcp/servers');
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ servers: [] });
  });

  it('guards every /api path, including unknown ones', async () => {
    served = await serve(stubHost());
    for (const path of ['/api/mcp/tools', '/api/mcp/events', '/api/mcp/catalog', '/api/nothing']) {
      expect((await served.request(path, { noAuth: true })).status).toBe(401);
    }
    expect((await served.request('/api/nothing')).status).toBe(404);
  });
});

describe('Host header', () => {
  it('accepts every loopback spelling of the bound port', async () => {
    served = await serve(stubHost());
    for (const host of [`127.0.0.1:${served.port}`, `localhost:${served.port}`, `[::1]:${served.port}`, `LOCALHOST:${served.port}`]) {
      expect((await served.request('/api/mcp/servers', { headers: { host } })).status, host).toBe(200);
    }
  });

  it.each(['evil.example', '127.0.0.1:1', 'localhost', '127.0.0.1.evil.example'])('refuses %s → 403', async (host) => {
    served = await serve(stubHost());
    const value = host === 'evil.example' ? `evil.example:${served.port}` : host;
    const reply = await served.request('/api/mcp/servers', { headers: { host: value } });
    expect(reply.status).toBe(403);
    expect(reply.json.error.code).toBe('forbidden_host');
  });

  it('a non-loopback bind accepts exactly that host', () => {
    expect([...allowedHostValues('192.168.1.5', 8787)]).toEqual(['192.168.1.5:8787']);
    expect(allowedHostValues('127.0.0.1', 8787)).toEqual(new Set(['127.0.0.1:8787', 'localhost:8787', '[::1]:8787']));
    expect(allowedHostValues('::1', 80).has('[::1]')).toBe(true);
    expect(allowedHostValues('10.0.0.1', 8787, ['fleet.lan:443']).has('fleet.lan:443')).toBe(true);
  });
});

describe('Origin of mutations', () => {
  it.each(['http://evil.example', 'null', `https://127.0.0.1`, 'http://127.0.0.1:1'])('refuses %s → 403', async (origin) => {
    served = await serve(stubHost());
    const reply = await served.request('/api/mcp/servers', { method: 'POST', body: { name: 'x' }, headers: { origin } });
    expect(reply.status).toBe(403);
    expect(reply.json.error.code).toBe('forbidden_origin');
  });

  it('lets the server’s own origin and origin-less clients through', async () => {
    served = await serve(stubHost());
    for (const origin of [`http://127.0.0.1:${served.port}`, `http://localhost:${served.port}`, undefined]) {
      // Reaching validation (400) proves the origin check passed.
      const reply = await served.request('/api/mcp/servers', { method: 'POST', body: {}, headers: { origin } });
      expect(reply.status, String(origin)).toBe(400);
    }
  });

  it('does not refuse reads: they need the token and get no CORS headers', async () => {
    served = await serve(stubHost());
    const reply = await served.request('/api/mcp/servers', { headers: { origin: 'http://evil.example' } });
    expect(reply.status).toBe(200);
    expect(reply.headers['access-control-allow-origin']).toBeUndefined();
  });
});

describe('bodies', () => {
  it('a mutation body that is not JSON → 415', async () => {
    served = await serve(stubHost());
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const reply = await served.request('/api/mcp/servers', {
        method: 'POST',
        body: '{"name":"x"}',
        headers: { 'content-type': type },
      });
      expect(reply.status, type).toBe(415);
      expect(reply.json.error.code).toBe('unsupported_media_type');
    }
    const untyped = await served.request('/api/mcp/servers', { method: 'POST', body: '{"name":"x"}' });
    expect(untyped.status).toBe(415);
  });

  it('a request Node refuses before the app (headers too large, not HTTP) is answered in the error shape', async () => {
    served = await serve(stubHost());
    const long = await served.request(`/api/mcp/tools/search?q=${'a'.repeat(40_000)}`);
    expect(long.status).toBe(431);
    expect(long.json.error).toMatchObject({ code: 'headers_too_large', message: expect.stringMatching(/larger than \d+ bytes/) });
    // HEAD: the status alone, no body (a body would break the client's parser).
    const head = await served.request(`/api/mcp/tools/search?q=${'a'.repeat(40_000)}`, { method: 'HEAD' });
    expect([head.status, head.text]).toEqual([431, '']);
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(served!.port, '127.0.0.1', () => socket.end('NOT HTTP AT ALL\r\n\r\n'));
      let text = '';
      socket.setEncoding('utf8').on('data', (chunk: string) => (text += chunk)).on('end', () => resolve(text)).on('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4))).toEqual({ error: { code: 'bad_request', message: 'the request is not valid HTTP' } });
  });

  it('a bodiless mutation needs no content type', async () => {
    served = await serve(stubHost());
    const reply = await served.request('/api/mcp/servers/nope/restart', { method: 'POST' });
    expect(reply.status).toBe(404);
  });

  it('a body over the configured limit → 413', async () => {
    served = await serve(stubHost(), { bodyLimit: 1024 });
    const big = { name: 'x', pad: 'a'.repeat(2000) };
    const reply = await served.request('/api/mcp/servers', { method: 'POST', body: big });
    expect(reply.status).toBe(413);
    expect(reply.json.error.code).toBe('payload_too_large');
  });

  it('the default limit is 1 MiB', async () => {
    served = await serve(stubHost());
    const justOver = { name: 'x', pad: 'a'.repeat(1024 * 1024) };
    expect((await served.request('/api/mcp/servers', { method: 'POST', body: justOver })).status).toBe(413);
    const under = { name: 'x', type: 'local', command: ['node'], pad: 'a'.repeat(1000 * 1000) };
    // Under the limit the body is parsed and reaches validation (the unknown `pad` field).
    const reply = await served.request('/api/mcp/servers', { method: 'POST', body: under });
    expect(reply.status).toBe(400);
    expect(reply.json.error.field).toBe('pad');
  });

  it('malformed JSON → 400 without quoting the body', async () => {
    served = await serve(stubHost());
    const reply = await served.request('/api/mcp/servers', {
      method: 'POST',
      body: '{"name":"x","env":{"K":"canary-secret-value"',
      headers: { 'content-type': 'application/json' },
    });
    expect(reply.status).toBe(400);
    expect(reply.json).toEqual({ error: { code: 'invalid_json', message: 'request body is not valid JSON' } });
    // JSON, but not an object: said as such.
    for (const [path, method, json] of [
      ['/api/mcp/servers', 'POST', 'null'],
      ['/api/mcp/servers', 'POST', '42'],
      ['/api/mcp/servers', 'POST', '"x"'],
      ['/api/mcp/servers', 'POST', '[]'],
      ['/api/mcp/servers/x', 'PATCH', '[{"enabled":false}]'],
      // On every route with a body alike.
      ['/api/mcp/tools/x__echo/call', 'POST', '[]'],
      ['/api/mcp/approvals/some-id', 'POST', '["allow"]'],
      ['/api/mcp/prompts/x:y/render', 'POST', '[]'],
      ['/api/mcp/users', 'POST', '[{"name":"x"}]'],
    ] as const) {
      const scalar = await served.request(path, { method, body: json, headers: { 'content-type': 'application/json' } });
      expect(scalar.status).toBe(400);
      expect(scalar.json).toEqual({ error: { code: 'invalid_json', message: 'request body must be a JSON object' } });
    }
  });
});
