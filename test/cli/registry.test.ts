// `mcp-fleet registry search` and `mcp-fleet add --from-registry` as real
// processes, against a local registry (test/fixtures/registry-server.mjs) and
// a real worker. Secrets given by flags or the shell never reach stdout or
// stderr; an entry that cannot be added leaves the config file as it was.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpFixture, type HttpFixture } from '../fixtures/index.js';
import { headerSecretEntry, startRegistry, type LocalRegistry } from '../registry/fixture.js';
import { BIN, cli, type Run } from '../support/cli.js';
import { cleanEnv } from '../support/env.js';

const SECRET = 'canary-registry-SECRET-0001';
const HEADER_SECRET = 'canary-registry-header-SECRET-0002';

let registry: LocalRegistry;
let remote: HttpFixture;
let worker: ChildProcess;
let dir: string;

/** `add NAME --from-registry SPEC` against this test's worker and registry. */
const add = (name: string, spec: string, ...flags: string[]) =>
  cli(['add', name, '--from-registry', spec, '--state-dir', dir, '--registry-url', registry.url, ...flags]);

/** A loopback port nothing listens on (just freed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

const configText = () => readFileSync(join(dir, 'mcp_servers.json'), 'utf8');
const config = () => JSON.parse(configText()).servers as Record<string, any>;

function expectNoSecret(run: Run): void {
  for (const secret of [SECRET, HEADER_SECRET]) {
    expect(run.stdout).not.toContain(secret);
    expect(run.stderr).not.toContain(secret);
  }
}

beforeAll(async () => {
  remote = await startHttpFixture('http-server', [], { FIXTURE_REQUIRED_HEADER: `X-Api-Key: ${HEADER_SECRET}` });
  registry = await startRegistry([headerSecretEntry(remote.url)]);
  dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-cli-registry-'));
  writeFileSync(join(dir, 'mcp_servers.json'), `${JSON.stringify({ servers: {} }, null, 2)}\n`);
  worker = spawn(process.execPath, [BIN, 'serve', '--state-dir', dir, '--port', '0'], { env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  worker.stdout!.on('data', (chunk) => (out += chunk));
  const deadline = Date.now() + 20_000;
  while (!out.includes('enabled servers ready')) {
    if (Date.now() > deadline) throw new Error(`the worker did not start: ${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}, 40_000);

afterAll(async () => {
  if (worker && worker.exitCode === null) {
    const exited = new Promise((r) => worker.once('exit', r));
    worker.kill('SIGTERM');
    await exited;
  }
  await registry?.close();
  await remote?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('mcp-fleet registry search', () => {
  it('prints name, version, first line of the description and package types', async () => {
    const run = await cli(['registry', 'search', 'weather', '--registry-url', registry.url]);
    expect(run.code).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^NAME\s+VERSION\s+DESCRIPTION\s+PACKAGES$/);
    expect(lines[1]).toMatch(/^io\.github\.example\/weather-mcp\s+0\.5\.0\s+Python MCP server for weather data access\s+pypi$/);
    expect(lines[2]).toMatch(/^io\.github\.user\/remote-weather\s+2\.1\.0\s+Remote MCP server reachable over streamable HTTP\.\s+remote$/);
  });

  it('--limit follows the pages up to N; --json prints the entries; MCP_FLEET_REGISTRY_URL is the default', async () => {
    // An empty query, given as such, is every server.
    const limited = await cli(['registry', 'search', '', '--limit', '4', '--registry-url', registry.url]);
    expect(limited.stdout.trimEnd().split('\n')).toHaveLength(6); // header, 4 rows, the "more" line
    expect(limited.stdout).toContain('(more: raise --limit)');
    const json = await cli(['registry', 'search', 'filesystem', '--json'], { MCP_FLEET_REGISTRY_URL: registry.url });
    expect(json.code).toBe(0);
    const body = JSON.parse(json.stdout);
    expect(body.servers.map((s: { name: string }) => s.name)).toEqual(['io.github.modelcontextprotocol/filesystem']);
    expect(body.next_cursor).toBeNull();
  });

  it('an unreachable registry is one error line naming the URL', async () => {
    const port = await closedPort();
    const run = await cli(['registry', 'search', 'x', '--registry-url', `http://127.0.0.1:${port}`]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(`error: cannot reach the MCP registry at http://127.0.0.1:${port}/v0.1/servers?version=latest&limit=20&search=x (ECONNREFUSED)\n`);
  });
});

describe('mcp-fleet add --from-registry', () => {
  it('an npm entry with a required secret given by --env: saved as npx -y pkg@version, the secret never printed', async () => {
    const run = await add('brave', 'io.modelcontextprotocol.anonymous/brave-search', '--env', `BRAVE_API_KEY=${SECRET}`, '--disabled');
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('io.modelcontextprotocol.anonymous/brave-search@1.0.2: using npm @modelcontextprotocol/server-brave-search@1.0.2');
    expect(run.stdout).toMatch(/brave\s+disabled/);
    expectNoSecret(run);
    expect(config().brave).toMatchObject({
      type: 'local',
      command: ['npx', '-y', '@modelcontextprotocol/server-brave-search@1.0.2'],
      env: { BRAVE_API_KEY: SECRET },
      enabled: false,
    });
  });

  it('--env NAME alone takes the secret from the shell; @version picks the version', async () => {
    const run = await cli(
      ['add', 'weather', '--from-registry', 'io.github.example/weather-mcp@0.5.0', '--env', 'WEATHER_API_KEY', '--disabled', '--json', '--state-dir', dir, '--registry-url', registry.url],
      { WEATHER_API_KEY: SECRET },
    );
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ name: 'weather', state: 'disabled' });
    expect(run.stderr).toContain('using pypi weather-mcp-server@0.5.0');
    expectNoSecret(run);
    expect(config().weather).toMatchObject({ command: ['uvx', 'weather-mcp-server==0.5.0'], env: { WEATHER_API_KEY: SECRET, WEATHER_UNITS: 'celsius' } });
  });

  it('several packages: the first of remote/npm/pypi/oci is said and used, --package picks another', async () => {
    const npm = await add('fs', 'io.github.modelcontextprotocol/filesystem', '--arg', '/srv/data', '--disabled');
    expect(npm.code).toBe(0);
    expect(npm.stdout).toContain('using npm @modelcontextprotocol/server-filesystem@1.0.2 (also offered: oci; pick with --package)');
    expect(config().fs.command).toEqual(['npx', '-y', '@modelcontextprotocol/server-filesystem@1.0.2', '/srv/data']);
    const oci = await add('fs-docker', 'io.github.modelcontextprotocol/filesystem', '--package', 'oci', '--var', 'source_path=/srv/data', '--var', 'target_path=/project', '--disabled');
    expect(oci.code).toBe(0);
    expect(config()['fs-docker'].command).toEqual([
      'docker', 'run', '-i', '--rm', '--mount', 'type=bind,src=/srv/data,dst=/project', '-e', 'LOG_LEVEL', 'docker.io/mcp/filesystem:1.0.2', '/project',
    ]);
    // One the entry does not offer: the flag's bad value, named, and nothing written.
    const bogus = await add('fs-bogus', 'io.github.modelcontextprotocol/filesystem', '--package', 'bogus');
    expect(bogus.code).toBe(2);
    expect(bogus.stderr).toMatch(/^error: --package: .*offers no bogus package; it offers: npm/);
    expect(config()['fs-bogus']).toBeUndefined();
  });

  it('a remote entry with a secret header: added, started with the header, the secret never printed', async () => {
    const run = await add('remote', 'io.github.mcp-fleet-test/local-http', '--header', `X-Api-Key=${HEADER_SECRET}`);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`using remote streamable-http ${remote.url}`);
    expectNoSecret(run);
    expect(config().remote).toMatchObject({ type: 'remote', url: remote.url, transport: 'streamable_http', headers: { 'X-Api-Key': HEADER_SECRET } });
    const list = await cli(['list', '--state-dir', dir, '--json']);
    expectNoSecret(list);
  });

  it("a flag of the other kind of server than the entry's is refused, not dropped; nothing is written", async () => {
    const before = configText();
    const onRemote = await add('remote3', 'io.github.mcp-fleet-test/local-http', '--header', `X-Api-Key=${HEADER_SECRET}`, '--env', 'FOO=bar');
    expect([onRemote.code, onRemote.stderr]).toEqual([2, 'error: --env: is for a server that runs locally; this entry is remote (it takes --header)\n']);
    const onLocal = await add('brave3', 'io.modelcontextprotocol.anonymous/brave-search', '--env', 'BRAVE_API_KEY=k-123456', '--header', 'X=y');
    expect([onLocal.code, onLocal.stderr, onLocal.stdout]).toEqual([2, 'error: --header: is for a remote server; this entry runs locally (it takes --env)\n', '']);
    const transport = await add('remote4', 'io.github.mcp-fleet-test/local-http', '--header', `X-Api-Key=${HEADER_SECRET}`, '--transport', 'sse');
    expect([transport.code, transport.stderr]).toEqual([2, 'error: --transport: the registry entry names its transport: leave it out\n']);
    expect(configText()).toBe(before);
  });

  it('a --var the entry does not have, or one that breaks its URL, is a usage error naming it; nothing is written', async () => {
    const before = configText();
    const nosuch = await add('rw', 'io.github.user/remote-weather', '--header', `Authorization=${HEADER_SECRET}`, '--var', 'nosuch=v');
    expect([nosuch.code, nosuch.stderr, nosuch.stdout]).toEqual([2, 'error: --var: variable nosuch: this entry has no such variable (it has: host)\n', '']);
    const badHost = await add('rw', 'io.github.user/remote-weather', '--header', `Authorization=${HEADER_SECRET}`, '--var', 'host=bad host/x');
    expect([badHost.code, badHost.stderr]).toEqual([2, 'error: --var: variable host: its value does not make https://{host}/mcp a valid http(s) URL\n']);
    expect(configText()).toBe(before);
  });

  it('without a terminal, a missing required input is an error naming it; nothing is written, nothing printed on stdout', async () => {
    const before = configText();
    const run = await add('brave2', 'io.modelcontextprotocol.anonymous/brave-search');
    expect(run.code).toBe(1);
    expect(run.stderr).toBe('error: missing required input: env BRAVE_API_KEY; give --env BRAVE_API_KEY=… (nothing was added)\n');
    // A failure is its one line on stderr and nothing on stdout: which option was chosen is said only once added.
    expect(run.stdout).toBe('');
    // A required input's default is an example here (/Users/username/Desktop): not taken unasked.
    const byDefault = await add('fsreg', 'io.github.modelcontextprotocol/filesystem', '--disabled');
    expect(byDefault.code).toBe(1);
    expect(byDefault.stderr).toBe('error: missing required input: arg target_dir; give --arg target_dir=… (nothing was added)\n');
    const header = await add('remote2', 'io.github.user/remote-weather');
    expect(header.stderr).toContain('missing required input: header Authorization; give --header Authorization=…');
    expect(configText()).toBe(before);
  });

  it('an entry whose only package type is unsupported is an error naming the type; nothing is written', async () => {
    const before = configText();
    const run = await add('nuget', 'io.github.joelverhagen/knapcode-samplemcpserver', '--env', 'WEATHER_CHOICES=sun');
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      'error: io.github.joelverhagen/knapcode-samplemcpserver cannot be installed: package type nuget is not supported (supported: npm, pypi, oci, or a remote)\n',
    );
    const wrong = await add('fs3', 'io.github.modelcontextprotocol/filesystem', '--package', 'pypi');
    expect([wrong.code, wrong.stderr]).toEqual([2, 'error: --package: io.github.modelcontextprotocol/filesystem offers no pypi package; it offers: npm, oci\n']);
    const unknown = await add('nope', 'io.github.nobody/nothing');
    expect(unknown.stderr).toMatch(/^error: io\.github\.nobody\/nothing is not in the MCP registry at http:\/\/127\.0\.0\.1:\d+ \(GET .*: 404\)\n$/);
    const mixed = await add('mixed', 'io.github.example/weather-mcp', '--url', 'https://x.example/mcp');
    expect([mixed.code, mixed.stderr]).toEqual([2, 'error: --from-registry: makes the whole config: give no command, --url or --config with it\n']);
    expect(configText()).toBe(before);
  });
});
