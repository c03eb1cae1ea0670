// The registry client against a local registry serving the published response
// schema: search, paging by cursor, one entry by name and version, and the
// errors a user sees (each names the URL, and the status when there was one).
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RegistryClient } from '../../src/mcp-registry/registry-client.js';
import { OFFICIAL_REGISTRY_URL, registryUrl } from '../../src/mcp-registry/registry-url.js';
import { RegistryError } from '../../src/mcp-registry/registry-errors.js';
import { startRegistry, type LocalRegistry } from './fixture.js';

let registry: LocalRegistry;
let client: RegistryClient;

beforeAll(async () => {
  registry = await startRegistry();
  client = new RegistryClient({ baseUrl: registry.url });
});
afterAll(() => registry?.close());

async function failure(run: () => Promise<unknown>): Promise<RegistryError> {
  try {
    await run();
  } catch (err) {
    if (err instanceof RegistryError) return err;
    throw err;
  }
  throw new Error('expected a RegistryError');
}

describe('RegistryClient', () => {
  it('searches the latest versions by name, through /v0.1/servers', async () => {
    const page = await client.search('weather');
    expect(page.servers.map((s) => s.name)).toEqual(['io.github.example/weather-mcp', 'io.github.user/remote-weather']);
    expect(page.nextCursor).toBeUndefined();
    expect(registry.requests.at(-1)).toBe('/v0.1/servers?version=latest&limit=30&search=weather');
  });

  it('pages with metadata.nextCursor, and searchAll follows it', async () => {
    const first = await client.search('', { limit: 2 });
    expect(first.servers).toHaveLength(2);
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = await client.search('', { limit: 2, cursor: first.nextCursor });
    expect(second.servers.map((s) => s.name)).not.toContain(first.servers[0]!.name);
    const all = await client.searchAll('', { limit: 5 });
    expect(all.servers).toHaveLength(5);
    expect(new Set(all.servers.map((s) => s.name)).size).toBe(5);
    expect(all.nextCursor).toEqual(expect.any(String));
    const everything = await client.searchAll('', { limit: 100 });
    expect(everything.servers).toHaveLength(6);
    expect(everything.nextCursor).toBeUndefined();
  });

  it('gets one entry, latest or at a version, by its URL-encoded name', async () => {
    const latest = await client.server('io.github.modelcontextprotocol/filesystem');
    expect(latest.packages.map((p) => p.registryType)).toEqual(['npm', 'oci']);
    expect(registry.requests.at(-1)).toBe('/v0.1/servers/io.github.modelcontextprotocol%2Ffilesystem/versions/latest');
    expect((await client.server('io.github.example/weather-mcp', '0.5.0')).version).toBe('0.5.0');
    const missing = await failure(() => client.server('io.github.example/weather-mcp', '9.9.9'));
    expect(missing.kind).toBe('not_found');
    expect(missing.message).toContain('io.github.example/weather-mcp@9.9.9 is not in the MCP registry');
    expect(missing.message).toContain(`${registry.url}/v0.1/servers/io.github.example%2Fweather-mcp/versions/9.9.9: 404`);
  });

  it('an unreachable registry, an error status, a wrong schema and a slow answer each say what and where', async () => {
    const closed = await failure(() => new RegistryClient({ baseUrl: 'http://127.0.0.1:9' }).search('x'));
    expect(closed.kind).toBe('unreachable');
    expect(closed.message).toMatch(/^cannot reach the MCP registry at http:\/\/127\.0\.0\.1:9\/v0\.1\/servers\?/);

    const odd = http.createServer((req, res) => {
      if (req.url?.startsWith('/slow/')) return; // never answers
      if (req.url?.startsWith('/bad/')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ items: [] }));
      }
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'maintenance' }));
    });
    await new Promise<void>((resolve) => odd.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(odd.address() as { port: number }).port}`;
    try {
      const down = await failure(() => new RegistryClient({ baseUrl: base }).search('x'));
      expect([down.kind, down.status]).toEqual(['http', 503]);
      expect(down.message).toBe(`the MCP registry answered 503 to GET ${base}/v0.1/servers?version=latest&limit=30&search=x: maintenance`);
      const bad = await failure(() => new RegistryClient({ baseUrl: `${base}/bad` }).search('x'));
      expect(bad.kind).toBe('invalid_response');
      expect(bad.message).toContain(`${base}/bad/v0.1/servers`);
      const slow = await failure(() => new RegistryClient({ baseUrl: `${base}/slow`, timeoutMs: 200 }).search('x'));
      expect(slow.kind).toBe('unreachable');
      expect(slow.message).toContain('no answer within 0.2 s');
    } finally {
      odd.closeAllConnections();
      await new Promise((resolve) => odd.close(resolve));
    }
  });

  it('defaults to $MCP_FLEET_REGISTRY_URL, else the official registry; refuses a non-http URL', () => {
    const saved = process.env.MCP_FLEET_REGISTRY_URL;
    try {
      delete process.env.MCP_FLEET_REGISTRY_URL;
      expect(registryUrl()).toBe(OFFICIAL_REGISTRY_URL);
      expect(OFFICIAL_REGISTRY_URL).toBe('https://registry.modelcontextprotocol.io');
      process.env.MCP_FLEET_REGISTRY_URL = 'http://mirror.example/';
      expect(new RegistryClient().baseUrl).toBe('http://mirror.example');
      expect(() => new RegistryClient({ baseUrl: 'ftp://x' })).toThrow('registry URL must be http(s): ftp://x');
    } finally {
      if (saved === undefined) delete process.env.MCP_FLEET_REGISTRY_URL;
      else process.env.MCP_FLEET_REGISTRY_URL = saved;
    }
  });
});
