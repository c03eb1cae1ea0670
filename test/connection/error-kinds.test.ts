// Every error kind a connect can end in, each produced by a real failure: a
// program that does not exist, a closed port, a host name that does not
// resolve, TLS against plain HTTP and against a self-signed certificate, a
// 503 to everything, silence, garbage, a refused token, a server that exits
// after the handshake, and an OAuth server nobody answers at. `unreachable`
// (the server never answered) and `protocol` (it answered and broke the
// protocol) must not be mixed up. The host's view of the same kinds (and an
// OAuth server at an unreachable URL) is in test/host/error-kinds.test.ts.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServerConfig } from '../../src/config/schema.js';
import { parseServerConfig } from '../../src/config/validate.js';
import { connect } from '../../src/connection/connection.js';
import { networkFailure } from '../../src/connection/reachability.js';
import { ConfigError, ErrorKind, FleetError } from '../../src/errors.js';
import { fixtureCommand, startHttpFixture, type HttpFixture } from '../fixtures/index.js';
import { connectTracked, tempDir } from './helpers.js';
import { freePort } from '../support/ports.js';

const servers: HttpServer[] = [];
let plainOrigin: string; // answers 503 to everything
let garbageOrigin: string; // answers 200 with half a JSON object
let notRpcOrigin: string; // answers 200 with JSON that is not JSON-RPC
let selfSignedOrigin: string; // TLS with a certificate nobody trusts
let closedPort: number;
let bearer: HttpFixture;

async function listen(server: HttpServer): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

beforeAll(async () => {
  plainOrigin = `http://127.0.0.1:${await listen(createHttpServer((_, res) => res.writeHead(503).end('down for maintenance')))}`;
  const garbage = createHttpServer((_, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"jsonrpc": "2.0", '));
  garbageOrigin = `http://127.0.0.1:${await listen(garbage)}`;
  const notRpc = createHttpServer((_, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"hello":"world"}'));
  notRpcOrigin = `http://127.0.0.1:${await listen(notRpc)}`;
  const dir = tempDir();
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
    '-subj', '/CN=127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
  ], { stdio: 'ignore' });
  const tls = createHttpsServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }, (_, res) => res.end('{}'));
  selfSignedOrigin = `https://127.0.0.1:${await listen(tls as unknown as HttpServer)}`;
  closedPort = await freePort();
  bearer = await startHttpFixture('http-server', [], { FIXTURE_BEARER_TOKEN: 'the-right-token-0123' });
});

afterAll(async () => {
  await bearer?.stop();
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => {
    server.closeAllConnections();
    server.close(resolve);
  })));
});

function remote(fields: Record<string, unknown>): ServerConfig {
  return ServerConfig.parse({ type: 'remote', reconnect: { max_attempts: 0 }, ...fields });
}

function local(command: string[], fields: Record<string, unknown> = {}): ServerConfig {
  return ServerConfig.parse({ type: 'local', command, ...fields });
}

async function connectError(config: ServerConfig): Promise<FleetError> {
  const error = await connect('kinds', config).then(() => new Error('connect resolved'), (err: unknown) => err);
  expect(error).toBeInstanceOf(FleetError);
  const failure = error as FleetError;
  expect(failure.message).not.toContain('\n');
  return failure;
}

describe('the kinds', () => {
  it('come from one list, unreachable among them', () => {
    expect(ErrorKind.options).toEqual(['spawn_failed', 'unreachable', 'timeout', 'protocol', 'auth', 'transport_closed', 'config', 'needs_reauth']);
  });
});

describe('spawn_failed', () => {
  it('a command that does not exist', async () => {
    const error = await connectError(local(['/nonexistent/dir/mcp-server-nobody-wrote']));
    expect(error.kind).toBe('spawn_failed');
    expect(error.message).toBe('command "/nonexistent/dir/mcp-server-nobody-wrote" not found: no such file');
  });
});

describe('unreachable: no answer at all', () => {
  // Every transport and era: the era probe, the SSE transport and `auto` each wrap the failure differently.
  const variants = [
    { transport: 'auto', protocol: 'auto' },
    { transport: 'streamable_http', protocol: '2025' },
    { transport: 'sse', protocol: '2025' },
    { transport: 'streamable_http', protocol: '2026' },
  ];

  it.each(variants)('a closed port (connection refused) over $transport, protocol $protocol', async (variant) => {
    const error = await connectError(remote({ url: `http://127.0.0.1:${closedPort}/mcp`, ...variant }));
    expect(error.kind).toBe('unreachable');
    expect(error.message).toBe(`could not reach http://127.0.0.1:${closedPort}: connection refused (ECONNREFUSED)`);
  });

  it.each(variants)('a host name that does not resolve over $transport, protocol $protocol', async (variant) => {
    const error = await connectError(remote({ url: 'http://no-such-host.invalid/mcp', ...variant }));
    expect(error.kind).toBe('unreachable');
    expect(error.message).toMatch(/^could not reach http:\/\/no-such-host\.invalid: (no such host \(ENOTFOUND\)|host name lookup failed \(EAI_AGAIN\))$/);
  });

  it('a port fetch will not connect to (the `add --url http://127.0.0.1:1/mcp` case)', async () => {
    const error = await connectError(remote({ url: 'http://127.0.0.1:1/mcp' }));
    expect(error.kind).toBe('unreachable');
    expect(error.message).toBe('could not reach http://127.0.0.1:1: fetch does not connect to this port (bad port)');
  });

  it.each(variants)('https to a plain HTTP server (TLS failure) over $transport, protocol $protocol', async (variant) => {
    const error = await connectError(remote({ url: `${plainOrigin.replace('http:', 'https:')}/mcp`, ...variant }));
    expect(error.kind).toBe('unreachable');
    expect(error.message).toMatch(/^could not reach https:\/\/127\.0\.0\.1:\d+: TLS failed \(ERR_SSL_[A-Z_]+\)$/);
  });

  it('a TLS server whose certificate is self-signed', async () => {
    const error = await connectError(remote({ url: `${selfSignedOrigin}/mcp` }));
    expect(error.kind).toBe('unreachable');
    expect(error.message).toBe(`could not reach ${selfSignedOrigin}: TLS failed (DEPTH_ZERO_SELF_SIGNED_CERT)`);
  });

  it.each(variants)('HTTP 503 to everything, before any MCP message, over $transport, protocol $protocol', async (variant) => {
    const error = await connectError(remote({ url: `${plainOrigin}/mcp`, ...variant }));
    expect(error.kind).toBe('unreachable');
    expect(error.message).toBe(`${plainOrigin} answered HTTP 503 before any MCP message`);
  });

  it('a network failure is read from its code, through wrappers, never from text alone', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:443'), { code: 'ECONNREFUSED' });
    const wrapped = new Error('Version negotiation probe failed: fetch failed', { cause: new TypeError('fetch failed', { cause: refused }) });
    expect(networkFailure(wrapped)).toEqual({ code: 'ECONNREFUSED', reason: 'connection refused (ECONNREFUSED)' });
    // The same words without fetch's TypeError and code are not a network failure.
    expect(networkFailure(new Error('fetch failed: ECONNREFUSED'))).toBeUndefined();
  });
});

describe('timeout', () => {
  it('a stdio server that never answers initialize', async () => {
    const error = await connectError(local(fixtureCommand('hang-on-init'), { timeout_seconds: 1 }));
    expect(error.kind).toBe('timeout');
    expect(error.message).toBe('no answer to initialize within 1s');
  });
});

describe('protocol: the server answered and broke the protocol', () => {
  it('an HTTP server answering 200 with garbage JSON', async () => {
    const error = await connectError(remote({ url: `${garbageOrigin}/mcp`, transport: 'streamable_http', protocol: '2025' }));
    expect(error.kind).toBe('protocol');
    expect(error.message).toMatch(/^initialize failed: /);
  });

  it('the same server in era auto: the probe gets an unusable reply', async () => {
    const error = await connectError(remote({ url: `${garbageOrigin}/mcp` }));
    expect(error.kind).toBe('protocol');
    expect(error.message).toMatch(/^initialize failed: .*unusable reply/);
  });

  it('JSON that is not JSON-RPC, in era auto: one short line, not the dump of the validator', async () => {
    const error = await connectError(remote({ url: `${notRpcOrigin}/mcp` }));
    expect(error.kind).toBe('protocol');
    expect(error.message).toBe('initialize failed: the server answered the version probe with something that is not a JSON-RPC message');
  });

  it('an SSE endpoint that answers 200 without an event stream', async () => {
    const error = await connectError(remote({ url: `${garbageOrigin}/mcp`, transport: 'sse' }));
    expect(error.kind).toBe('protocol');
    expect(error.message).toBe(`${garbageOrigin} answered HTTP 200 without an event stream`);
  });

  it('a stdio process printing only lines that are not JSON-RPC', async () => {
    const error = await connectError(local(fixtureCommand('garbage-stdout', '--broken-handshake'), { timeout_seconds: 5 }));
    expect(error.kind).toBe('protocol');
    expect(error.message).toMatch(/^no valid answer to initialize within 5s: the server wrote \d+ line\(s\) on stdout that are not JSON-RPC/);
  });
});

describe('auth', () => {
  it('a bearer server answering 401 to a wrong token, which never appears in the error', async () => {
    const error = await connectError(remote({ url: bearer.url, auth: { kind: 'bearer', token: 'wrong-token-canary-4455' } }));
    expect(error.kind).toBe('auth');
    expect(error.message).toBe(`${new URL(bearer.url).origin} refused the credentials (HTTP 401)`);
  });

  it('the right token connects (the 401 above was about the token, not the server)', async () => {
    const connection = await connectTracked('kinds', remote({ url: bearer.url, auth: { kind: 'bearer', token: 'the-right-token-0123' } }));
    expect(connection.tools.length).toBeGreaterThan(0);
  });
});

describe('transport_closed: the server answered, then went away', () => {
  it('a stdio server that exits right after initialize', async () => {
    const error = await connectError(local(fixtureCommand('exit-after-initialize')));
    expect(error.kind).toBe('transport_closed');
    expect(error.message).toBe('process exited with code 5 during tools/list: exit-after-initialize: initialized, exiting with code 5');
  });

  it('a stdio server that exits in the middle of a call', async () => {
    const connection = await connectTracked('kinds', local(fixtureCommand('crash-mid-call')));
    const error = await connection.callTool('crash', {}).then(() => new Error('the call resolved'), (err: unknown) => err);
    expect(error).toBeInstanceOf(FleetError);
    expect((error as FleetError).kind).toBe('transport_closed');
    expect((error as FleetError).message).toMatch(/^call to tool "crash" failed: process exited with code 7/);
  });
});

describe('config', () => {
  it('an entry that does not validate is refused naming the field, before anything runs', () => {
    expect(() => parseServerConfig('bad', { type: 'remote', url: 'ftp://example.com/mcp' })).toThrow(ConfigError);
    expect(() => parseServerConfig('bad', { type: 'local', command: [] })).toThrow('command: needs at least the program to run');
  });

  it('a URL carrying user:password@ is refused, and the password is not in the error', () => {
    const error = (() => {
      try {
        parseServerConfig('creds', { type: 'remote', url: 'https://alice:pa55word-canary@example.com/mcp' });
      } catch (err) {
        return err as ConfigError;
      }
      throw new Error('the config was accepted');
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.field).toBe('url');
    expect(error.message).toBe('url: must not contain credentials (user:password@): give them as auth or headers');
    expect(error.message).not.toContain('pa55word-canary');
  });

  it('a valid OAuth entry connected without OAuth set up', async () => {
    const error = await connectError(remote({ url: `http://127.0.0.1:${closedPort}/mcp`, auth: { kind: 'oauth' } }));
    expect(error.kind).toBe('config');
  });
});

describe('no secret in an unreachable error', () => {
  it('a token in the URL query stays out of the message', async () => {
    const error = await connectError(remote({ url: `http://127.0.0.1:${closedPort}/mcp?api_key=query-canary-778899`, headers: { 'X-Key': 'header-canary-112233' } }));
    expect(error.kind).toBe('unreachable');
    expect(error.message).not.toContain('query-canary-778899');
    expect(error.message).not.toContain('header-canary-112233');
  });
});
