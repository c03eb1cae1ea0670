// The page's registry routes against a real host and a local registry:
// GET /api/mcp/registry/servers proxies the search with the worker's registry
// URL; POST /api/mcp/registry/install converts server-side and adds. No answer
// may carry a secret (fleet.request checks every reply for the canaries).
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/telemetry/logger.js';
import { startHttpFixture, type HttpFixture } from '../fixtures/index.js';
import { CANARIES, startFleet, untilState, type Fleet } from '../http/fleet.js';
import { headerSecretEntry, startRegistry, type LocalRegistry } from './fixture.js';

const SECRET = CANARIES[2]!;
const API_KEY = CANARIES[0]!;
let registry: LocalRegistry;
let remote: HttpFixture;
let fleet: Fleet;

beforeAll(async () => {
  remote = await startHttpFixture('http-server', [], { FIXTURE_REQUIRED_HEADER: `X-Api-Key: ${SECRET}` });
  registry = await startRegistry([headerSecretEntry(remote.url)]);
  fleet = await startFleet(() => ({}), { registryUrl: registry.url });
}, 30_000);

afterAll(async () => {
  await fleet?.close();
  await registry?.close();
  await remote?.stop();
});

describe('GET /api/mcp/registry/servers', () => {
  it('searches the configured registry; each entry lists how it runs and what it asks for', async () => {
    const reply = await fleet.request('/api/mcp/registry/servers?q=brave');
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({
      servers: [
        {
          name: 'io.modelcontextprotocol.anonymous/brave-search',
          title: 'Brave Search',
          version: '1.0.2',
          description: 'MCP server for Brave Search API integration',
          website_url: 'https://anonymous.modelcontextprotocol.io/examples',
          options: [
            {
              id: 'npm',
              type: 'npm',
              label: 'npm @modelcontextprotocol/server-brave-search@1.0.2',
              problem: null,
              inputs: [{ kind: 'env', name: 'BRAVE_API_KEY', required: true, secret: true, description: 'Brave Search API Key' }],
            },
          ],
        },
      ],
      next_cursor: null,
    });
    expect(registry.requests.at(-1)).toBe('/v0.1/servers?version=latest&limit=20&search=brave');
  });

  it('pages with the cursor', async () => {
    const first = await fleet.request('/api/mcp/registry/servers?limit=4');
    expect(first.json.servers).toHaveLength(4);
    expect(first.json.next_cursor).toEqual(expect.any(String));
    const second = await fleet.request(`/api/mcp/registry/servers?limit=4&cursor=${encodeURIComponent(first.json.next_cursor)}`);
    expect(second.json.servers).toHaveLength(3);
    expect(second.json.next_cursor).toBeNull();
  });

  it('a limit that is not an integer from 1 to 100 is a 400 naming limit, as the tool search answers', async () => {
    const asked = registry.requests.length;
    for (const limit of ['abc', '0', '101', '1.5']) {
      const reply = await fleet.request(`/api/mcp/registry/servers?q=x&limit=${limit}`);
      expect([limit, reply.status, reply.json.error]).toEqual([limit, 400, expect.objectContaining({ code: 'invalid_request', field: 'limit' })]);
    }
    expect(registry.requests.length).toBe(asked);
  });

  it('needs the API token like every /api route', async () => {
    expect((await fleet.request('/api/mcp/registry/servers', { noAuth: true })).status).toBe(401);
  });
});

describe('POST /api/mcp/registry/install', () => {
  it('adds a remote entry with its secret header; the server starts with it; no answer shows it', async () => {
    const reply = await fleet.request('/api/mcp/registry/install', {
      method: 'POST',
      body: { name: 'local-http', server: 'io.github.mcp-fleet-test/local-http', values: { header: { 'X-Api-Key': SECRET } } },
    });
    expect(reply.status).toBe(201);
    expect(reply.json).toMatchObject({ name: 'local-http', config: { type: 'remote', url: remote.url, transport: 'streamable_http' } });
    await untilState(fleet, 'local-http', 'ready');
    expect(fleet.config().servers['local-http']).toMatchObject({ type: 'remote', url: remote.url, headers: { 'X-Api-Key': SECRET } });
  });

  it('adds a package entry as its command, with --package and the values given', async () => {
    const reply = await fleet.request('/api/mcp/registry/install', {
      method: 'POST',
      body: { name: 'weather', server: 'io.github.example/weather-mcp', version: '0.5.0', values: { env: { WEATHER_API_KEY: API_KEY } }, enabled: false },
    });
    expect(reply.status).toBe(201);
    expect(fleet.config().servers.weather).toMatchObject({
      type: 'local',
      command: ['uvx', 'weather-mcp-server==0.5.0'],
      env: { WEATHER_API_KEY: API_KEY, WEATHER_UNITS: 'celsius' },
      enabled: false,
    });
    const oci = await fleet.request('/api/mcp/registry/install', {
      method: 'POST',
      body: { name: 'fs-docker', server: 'io.github.modelcontextprotocol/filesystem', package: 'oci', values: { variable: { source_path: '/tmp', target_path: '/project' } }, enabled: false },
    });
    expect(oci.status).toBe(201);
    expect(fleet.config().servers['fs-docker'].command.slice(0, 4)).toEqual(['docker', 'run', '-i', '--rm']);
  });

  it('a missing required input, an unsupported entry or an unknown one writes nothing', async () => {
    const before = fleet.configText();
    const missing = await fleet.request('/api/mcp/registry/install', {
      method: 'POST',
      body: { name: 'brave', server: 'io.modelcontextprotocol.anonymous/brave-search', values: { env: { OTHER: API_KEY } } },
    });
    expect(missing.status).toBe(400);
    expect(missing.json.error).toMatchObject({ code: 'missing_input', field: 'values.env.BRAVE_API_KEY' });
    const unsupported = await fleet.request('/api/mcp/registry/install', {
      method: 'POST',
      body: { name: 'nuget', server: 'io.github.joelverhagen/knapcode-samplemcpserver', values: { env: { WEATHER_CHOICES: 'sun' } } },
    });
    expect(unsupported.status).toBe(422);
    expect(unsupported.json.error.code).toBe('unsupported');
    expect(unsupported.json.error.message).toContain('package type nuget is not supported');
    // A required input's default (filesystem's example /Users/username/Desktop) is not taken unasked.
    const byDefault = await fleet.request('/api/mcp/registry/install', {
      method: 'POST',
      body: { name: 'fs2', server: 'io.github.modelcontextprotocol/filesystem', values: {}, enabled: false },
    });
    expect(byDefault.status).toBe(400);
    expect(byDefault.json.error).toMatchObject({ code: 'missing_input', field: 'values.arg.target_dir' });
    // A value that is wrong is tied to the input it was given for, never to a field the caller did not send.
    const weather = (variable: Record<string, string>, header: Record<string, string> = {}) =>
      fleet.request('/api/mcp/registry/install', {
        method: 'POST',
        body: { name: 'rw', server: 'io.github.user/remote-weather', values: { header: { Authorization: 'Bearer abcdefabcdef12345', ...header }, variable } },
      });
    const badHost = await weather({ host: 'bad host/x' });
    expect([badHost.status, badHost.json.error]).toEqual([400, expect.objectContaining({ code: 'invalid_request', field: 'values.variable.host' })]);
    expect(badHost.json.error.message).toContain('variable host');
    const nosuch = await weather({ nosuch: 'v' });
    expect([nosuch.status, nosuch.json.error]).toEqual([400, expect.objectContaining({ code: 'invalid_request', field: 'values.variable.nosuch' })]);
    // A header or env value the config cannot hold is named as the value sent (values.header.X), never quoted.
    const brokenHeader = await weather({}, { Authorization: `Bearer ${SECRET}\r\nX-Injected: 1` });
    expect([brokenHeader.status, brokenHeader.json.error]).toEqual([400, expect.objectContaining({ code: 'invalid_request', field: 'values.header.Authorization' })]);
    expect(brokenHeader.json.error.message).toContain('header Authorization');
    const badHeaderName = await weather({}, { 'X Bad': 'v' });
    expect([badHeaderName.status, badHeaderName.json.error]).toEqual([400, expect.objectContaining({ code: 'invalid_request', field: 'values.header.X Bad' })]);
    const brokenEnv = await fleet.request('/api/mcp/registry/install', {
      method: 'POST',
      body: { name: 'weather2', server: 'io.github.example/weather-mcp', version: '0.5.0', values: { env: { WEATHER_API_KEY: `${API_KEY}\u0000` } }, enabled: false },
    });
    expect([brokenEnv.status, brokenEnv.json.error]).toEqual([400, expect.objectContaining({ code: 'invalid_request', field: 'values.env.WEATHER_API_KEY' })]);
    const unknown = await fleet.request('/api/mcp/registry/install', { method: 'POST', body: { name: 'x', server: 'io.github.nobody/nothing' } });
    expect(unknown.status).toBe(404);
    const badName = await fleet.request('/api/mcp/registry/install', { method: 'POST', body: { name: 'no spaces', server: 'io.github.example/weather-mcp' } });
    expect(badName.status).toBe(400);
    expect(fleet.configText()).toBe(before);
    expect(fleet.host.status().map((s) => s.name).sort()).toEqual(['fs-docker', 'local-http', 'weather']);
  });

  it('a registry that cannot be reached is a 502 naming its URL, and one warn line in the log, no stack', async () => {
    // The worker's own logger, its lines captured.
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding: string, done: () => void) {
        lines.push(String(chunk));
        done();
      },
    });
    const other = await startFleet(() => ({}), { registryUrl: 'http://127.0.0.1:9', logger: createLogger({ secrets: () => [], destination }) });
    try {
      const reply = await other.request('/api/mcp/registry/servers?q=x');
      expect(reply.status).toBe(502);
      expect(reply.json.error.code).toBe('registry_unavailable');
      expect(reply.json.error.message).toContain('http://127.0.0.1:9/v0.1/servers');
      // The registry being away is not the worker failing: no error line, no stack trace among the status lines.
      const logged = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(logged).toEqual([
        expect.objectContaining({ level: 40, method: 'GET', path: '/api/mcp/registry/servers', status: 502, code: 'registry_unavailable', msg: `request answered 502: ${reply.json.error.message}` }),
      ]);
      expect(logged[0]).not.toHaveProperty('err');
    } finally {
      await other.close();
    }
  });
});
