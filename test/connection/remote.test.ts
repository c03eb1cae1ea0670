// connect() to remote servers: Streamable HTTP and SSE against a real SDK
// HTTP server in a child process, headers and bearer auth, `auto` fallback,
// and the errors of an unreachable, silent or unauthorized server
// (every kind, each from a real failure: error-kinds.test.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer as createHttpServer, request as httpRequest, type Server as HttpServer } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { ServerConfig, type RemoteServerConfig } from '../../src/config/schema.js';
import { connect } from '../../src/connection/connection.js';
import { FleetError } from '../../src/errors.js';
import { fixture } from '../fixtures/index.js';
import { connectTracked, firstText } from './helpers.js';

const servers: ChildProcess[] = [];
const silent: Array<{ server: Server; open: Set<Socket> }> = [];
const redirectors: HttpServer[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((child) => new Promise((resolve) => {
    child.once('exit', resolve);
    child.kill('SIGTERM');
  })));
  await Promise.all(silent.splice(0).map(closeSilent));
  await Promise.all(redirectors.splice(0).map((server) => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  }));
});

/** Starts the HTTP fixture with `env` and resolves with its MCP URL. */
async function startHttpFixture(env: Record<string, string>): Promise<string> {
  const child = spawn(process.execPath, [fixture('http-server')], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  servers.push(child);
  const lines = createInterface({ input: child.stdout! });
  for await (const line of lines) {
    const match = /^listening (\S+)$/.exec(line);
    if (match) return match[1]!;
  }
  throw new Error('http fixture exited before listening');
}

/** A TCP port on 127.0.0.1 that accepts connections and never answers. */
async function silentPort(): Promise<number> {
  const open = new Set<Socket>();
  const server = createServer((socket) => open.add(socket));
  silent.push({ server, open });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

/** Stops a silent server; close() alone would wait for its open connections. */
function closeSilent({ server, open }: { server: Server; open: Set<Socket> }): Promise<void> {
  for (const socket of open) socket.destroy();
  return new Promise((resolve) => server.close(() => resolve()));
}

function remoteConfig(fields: Record<string, unknown>): RemoteServerConfig {
  const parsed = ServerConfig.parse({ type: 'remote', ...fields });
  if (parsed.type !== 'remote') throw new Error('expected a remote config');
  return parsed;
}

async function connectError(name: string, config: ServerConfig): Promise<FleetError> {
  const error = await connect(name, config).then(() => new Error('connect resolved'), (err: unknown) => err);
  expect(error).toBeInstanceOf(FleetError);
  return error as FleetError;
}

describe('connect: remote', () => {
  it('Streamable HTTP: lists tools and calls them', async () => {
    const url = await startHttpFixture({ FIXTURE_HTTP_MODE: 'streamable' });
    const connection = await connectTracked('web', remoteConfig({ url, transport: 'streamable_http' }));
    expect(connection.tools.map((tool) => tool.name)).toEqual(['echo', 'whoami']);
    expect(connection.pid).toBeNull();
    expect(connection.stderrTail()).toBe('');
    expect(firstText(await connection.callTool('whoami', {}))).toBe('streamable');
    expect(firstText(await connection.callTool('echo', { text: 'over http' }))).toBe('over http');
  });

  it('a redirect of the endpoint is followed within its origin and refused beyond it, as the SDK has it', async () => {
    const target = new URL(await startHttpFixture({ FIXTURE_HTTP_MODE: 'streamable' }));
    const redirected: string[] = [];
    const forwarded: string[] = [];
    // `/moved` redirects to `/mcp` of this origin, which passes requests on to the fixture; `/away` to the fixture's origin.
    const front = createHttpServer((req, res) => {
      if (req.url === '/moved' || req.url === '/away') {
        redirected.push(`${req.method} ${req.url}`);
        req.resume();
        return void res.writeHead(307, { location: req.url === '/away' ? target.href : '/mcp' }).end();
      }
      if (req.method === 'POST') forwarded.push(req.url ?? '');
      const onward = httpRequest(target, { method: req.method, headers: { ...req.headers, host: target.host } }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      req.pipe(onward);
    });
    redirectors.push(front);
    await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(front.address() as { port: number }).port}`;

    const connection = await connectTracked('moved', remoteConfig({ url: `${origin}/moved`, transport: 'streamable_http' }));
    expect(connection.tools.map((tool) => tool.name)).toEqual(['echo', 'whoami']);
    expect(firstText(await connection.callTool('echo', { text: 'moved on' }))).toBe('moved on');
    // Each POST reached the redirect once: after the first, the connection sends to it ready to follow.
    expect(forwarded.length).toBeGreaterThanOrEqual(4);
    expect(forwarded.every((url) => url === '/mcp')).toBe(true);
    expect(redirected.filter((request) => request === 'POST /moved').length).toBe(forwarded.length + 1);

    const error = await connectError('away', remoteConfig({ url: `${origin}/away`, transport: 'streamable_http' }));
    expect(error.kind).toBe('protocol');
    expect(error.message).toBe(`${origin} answered HTTP 307`);
  });

  it('sends config headers and the bearer token on every request', async () => {
    const token = 'bearer-canary-8c2e41f0';
    const url = await startHttpFixture({ FIXTURE_BEARER_TOKEN: token, FIXTURE_REQUIRED_HEADER: 'X-Team: fleet-team' });
    const connection = await connectTracked('web', remoteConfig({
      url, headers: { 'X-Team': 'fleet-team' }, auth: { kind: 'bearer', token },
    }));
    expect(firstText(await connection.callTool('echo', { text: 'authorized' }))).toBe('authorized');
  });

  it('a refused token is an auth error without the token in it', async () => {
    const url = await startHttpFixture({ FIXTURE_BEARER_TOKEN: 'the-right-token-123' });
    const error = await connectError('web', remoteConfig({ url, auth: { kind: 'bearer', token: 'wrong-canary-4d5e6f' } }));
    expect(error.kind).toBe('auth');
    expect(error.message).toContain('HTTP 401');
    expect(error.message).not.toContain('wrong-canary-4d5e6f');
  });

  it('auto falls back to SSE when Streamable HTTP is refused with a 4xx', async () => {
    const url = await startHttpFixture({ FIXTURE_HTTP_MODE: 'sse' });
    const connection = await connectTracked('legacy', remoteConfig({ url, transport: 'auto' }));
    expect(connection.tools.map((tool) => tool.name)).toEqual(['echo', 'whoami']);
    expect(firstText(await connection.callTool('whoami', {}))).toBe('sse');
  });

  it('transport sse talks SSE; streamable_http against an SSE-only server is a protocol error', async () => {
    const url = await startHttpFixture({ FIXTURE_HTTP_MODE: 'sse' });
    const connection = await connectTracked('legacy', remoteConfig({ url, transport: 'sse' }));
    expect(firstText(await connection.callTool('whoami', {}))).toBe('sse');

    const error = await connectError('legacy', remoteConfig({ url, transport: 'streamable_http' }));
    expect(error.kind).toBe('protocol');
    expect(error.message).toContain('HTTP 405');
  });

  it('an unreachable server is unreachable naming the origin and the reason', async () => {
    const port = await silentPort();
    await closeSilent(silent.pop()!);
    const error = await connectError('gone', remoteConfig({ url: `http://127.0.0.1:${port}/mcp`, transport: 'streamable_http' }));
    expect(error.kind).toBe('unreachable');
    expect(error.message).toBe(`could not reach http://127.0.0.1:${port}: connection refused (ECONNREFUSED)`);
  });

  it('a server that never answers is a timeout', async () => {
    const port = await silentPort();
    const error = await connectError('silent', remoteConfig({
      url: `http://127.0.0.1:${port}/mcp`, transport: 'streamable_http', timeout_seconds: 1,
    }));
    expect(error.kind).toBe('timeout');
    expect(error.message).toBe('no answer to initialize within 1s');
  });

  it('an SSE server that never opens its stream is a timeout within timeout_seconds', { timeout: 10_000 }, async () => {
    const port = await silentPort();
    // The SDK bounds each request of a connect, not the wait for the stream's first event: the connect's deadline ends it.
    const error = await connectError('silent-sse', remoteConfig({ url: `http://127.0.0.1:${port}/sse`, transport: 'sse', timeout_seconds: 1 }));
    expect(error.kind).toBe('timeout');
    expect(error.message).toBe('no answer to initialize within 1s');
  });

  it('OAuth is not supported yet', async () => {
    const error = await connectError('oauth', remoteConfig({ url: 'https://example.com/mcp', auth: { kind: 'oauth' } }));
    expect(error.kind).toBe('config');
  });
});

describe('a ready remote server whose endpoint goes away', () => {
  it('is found by the next ping (refused, not silent) and reported lost as transport_closed', async () => {
    const { openLiveConnection, watchLiveConnection } = await import('../../src/connection/live-connection.js');
    const url = await startHttpFixture({});
    const config = remoteConfig({ url, transport: 'streamable_http', timeout_seconds: 5 });
    const live = await openLiveConnection('remote', config, new AbortController().signal);
    try {
      const lost = new Promise<FleetError>((resolve) => {
        const stop = watchLiveConnection(live, { pingIntervalMs: 100, pingTimeoutMs: 5000 }, (error) => {
          stop();
          resolve(error);
        });
      });
      // The whole server process goes: its port refuses every request from now on.
      const child = servers.pop()!;
      const gone = child.exitCode !== null || child.signalCode !== null;
      await new Promise((resolve) => {
        if (gone) return resolve(undefined);
        child.once('exit', resolve);
        child.kill('SIGKILL');
      });
      expect(gone, 'the HTTP fixture had exited before it was killed').toBe(false);
      // Bounded, so a failure says what it waited for rather than the test's timeout.
      let timer: NodeJS.Timeout | undefined;
      const error = await Promise.race([
        lost,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('no ping reported the server lost within 20 s')), 20_000);
        }),
      ]).finally(() => clearTimeout(timer));
      expect(error.kind).toBe('transport_closed');
      expect(error.message).toMatch(/^connection lost: a ping could not reach the server/);
    } finally {
      await live.connection.close();
    }
  });

  it('a legacy SSE server: the end of its event stream ends the connection, without a ping or a call', async () => {
    const { openLiveConnection, watchLiveConnection } = await import('../../src/connection/live-connection.js');
    const url = await startHttpFixture({ FIXTURE_HTTP_MODE: 'sse' });
    const live = await openLiveConnection('legacy', remoteConfig({ url, transport: 'sse', timeout_seconds: 5 }), new AbortController().signal);
    try {
      const lost = new Promise<FleetError>((resolve) => {
        const stop = watchLiveConnection(live, { pingIntervalMs: 0, pingTimeoutMs: 5000 }, (error) => {
          stop();
          resolve(error);
        });
      });
      const child = servers.pop()!;
      child.kill('SIGKILL');
      const error = await lost;
      expect(error.kind).toBe('transport_closed');
      expect(error.message).toBe(`connection lost: the event stream of ${new URL(url).origin} ended`);
    } finally {
      await live.connection.close();
    }
  });

  it('without pings, a call that cannot reach it ends the connection, and answers only once the loss was taken in', async () => {
    const { openLiveConnection, watchLiveConnection } = await import('../../src/connection/live-connection.js');
    const url = await startHttpFixture({});
    const config = remoteConfig({ url, transport: 'streamable_http', timeout_seconds: 5 });
    const live = await openLiveConnection('remote', config, new AbortController().signal);
    const order: string[] = [];
    try {
      const lost = new Promise<FleetError>((resolve) => {
        // As the 2026-07-28 era has it: nothing pings.
        const stop = watchLiveConnection(live, { pingIntervalMs: 0, pingTimeoutMs: 5000 }, (error) => {
          order.push('lost');
          stop();
          resolve(error);
        });
      });
      const child = servers.pop()!;
      await new Promise((resolve) => {
        child.once('exit', resolve);
        child.kill('SIGKILL');
      });
      const failed = await live.connection.callTool('echo', { text: 'x' }).then(
        () => new Error('the call succeeded'),
        (err: unknown) => err,
      );
      order.push('call answered');
      expect(failed).toMatchObject({ kind: 'transport_closed' });
      expect((failed as FleetError).message).toMatch(/^call to tool "echo" failed: could not reach http:\/\/127\.0\.0\.1:\d+: connection refused/);
      const error = await lost;
      expect(error.kind).toBe('transport_closed');
      expect(error.message).toMatch(/^connection lost: could not reach http:\/\/127\.0\.0\.1:\d+: connection refused/);
      expect(order).toEqual(['lost', 'call answered']);
    } finally {
      await live.connection.close();
    }
  });
});
