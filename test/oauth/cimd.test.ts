// OAuth client ID metadata documents (SEP-991) end to end: a real
// `mcp-fleet serve --public-url https://…` behind a TLS proxy serves its
// document, and a real authorization server (oidc-provider with its
// clientIdMetadataDocument feature) that advertises
// `client_id_metadata_document_supported` takes the document's URL as the
// client id: it fetches the document from the worker through the proxy, the
// user consents, the callback lands on the worker, the server becomes ready,
// and nothing was registered. Where the authorization server does not take
// such documents, or the public URL is plain HTTP, the worker registers.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TOKEN } from '../http/helpers.js';
import { cleanEnv } from '../support/env.js';
import { until } from '../support/wait.js';
import { consentAsUser, fetchTrusting, startAuthorizationServer, startMcpResourceServer } from './servers.js';
import { BIN } from '../support/cli.js';

const DOCUMENT_PATH = '/oauth/client-metadata.json';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A self-signed certificate for 127.0.0.1: the TLS proxy's, and the only authority the test's clients trust. */
let tls: { key: string; cert: string };
let tlsDir: string;
beforeAll(() => {
  tlsDir = mkdtempSync(join(tmpdir(), 'mcp-fleet-cimd-tls-'));
  const [key, cert] = [join(tlsDir, 'key.pem'), join(tlsDir, 'cert.pem')];
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1',
  ], { stdio: 'ignore' });
  tls = { key: readFileSync(key, 'utf8'), cert: readFileSync(cert, 'utf8') };
});
afterAll(() => rmSync(tlsDir, { recursive: true, force: true }));

const trusted = (url: string, init?: RequestInit) => fetchTrusting(tls.cert, url, init);

/** An HTTPS front for a worker (its public URL), keeping the request's Host as a load balancer would. */
async function tlsProxy(): Promise<{ url: string; forwardTo(port: number): void }> {
  let target = 0;
  const server = createHttpsServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    const upstream = httpRequest({ host: '127.0.0.1', port: target, path: req.url, method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise<void>((done) => server.close(() => done()));
  });
  const { port } = server.address() as { port: number };
  return { url: `https://127.0.0.1:${port}`, forwardTo: (port) => (target = port) };
}

interface Worker {
  dir: string;
  api: string;
  port: number;
  request(path: string, init?: RequestInit & { token?: boolean }): Promise<{ status: number; headers: Headers; text: string; json: any }>;
}

/** A real `mcp-fleet serve --port 0 ARGS` on a fresh state dir holding `servers`; stopped after the test. */
async function serveWorker(servers: Record<string, unknown>, args: string[] = []): Promise<Worker> {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-cimd-'));
  writeFileSync(join(dir, 'mcp_servers.json'), JSON.stringify({ servers }));
  const child = spawn(process.execPath, [BIN, 'serve', '--state-dir', dir, '--port', '0', ...args], {
    env: cleanEnv({ MCP_FLEET_API_TOKEN: TOKEN, MCP_FLEET_DATABASE_URL: '' }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  await until(() => /API\s+http:\/\/127\.0\.0\.1:\d+\//.test(out) || child.exitCode !== null, 'the worker to listen');
  const api = /API\s+(http:\/\/127\.0\.0\.1:\d+)\//.exec(out)?.[1];
  if (api === undefined) throw new Error(`the worker did not start: ${out}`);
  return {
    dir,
    api,
    port: Number(new URL(api).port),
    async request(path, init = {}) {
      const headers = new Headers(init.headers);
      if (init.token !== false) headers.set('authorization', `Bearer ${TOKEN}`);
      const response = await fetch(`${api}${path}`, { ...init, headers });
      const text = await response.text();
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { status: response.status, headers: response.headers, text, json };
    },
  };
}

async function untilState(worker: Worker, name: string, state: string): Promise<void> {
  let last = '';
  await until(async () => {
    const { json } = await worker.request(`/api/mcp/servers/${name}`);
    last = `${json?.state}: ${json?.error}`;
    return json?.state === state;
  }, `server ${name} to reach ${state} (last ${last})`);
}

function oauthServer(url: string) {
  return { type: 'remote', url, transport: 'streamable_http', timeout_seconds: 15, auth: { kind: 'oauth' } };
}

/** An authorization server (taking client ID metadata documents or not) and an MCP server in front of it. */
async function protectedServer(cimd: boolean) {
  const as = await startAuthorizationServer({ accessTokenTtl: 600, ...(cimd && { clientIdMetadataDocuments: { ca: tls.cert } }) });
  cleanups.push(() => as.close());
  const mcp = await startMcpResourceServer(as.issuer);
  cleanups.push(() => mcp.close());
  return { as, mcp };
}

/** Starts a consent over the API; returns the authorization URL. */
async function beginConsent(worker: Worker): Promise<URL> {
  await untilState(worker, 'remote', 'needs_reauth');
  const begun = await worker.request('/api/mcp/servers/remote/auth', { method: 'POST' });
  expect(begun.status, begun.text).toBe(200);
  return new URL(begun.json.authorization_url);
}

/** The user consents; the browser comes back to the worker through its public URL; the server becomes ready and answers. */
async function consentAndCall(worker: Worker, authorizationUrl: URL, text: string): Promise<void> {
  const callback = await consentAsUser(authorizationUrl.href, 'alice', (url) => trusted(url));
  expect(callback.status, callback.text).toBe(200);
  expect(callback.text).toContain('Authorized remote');
  await untilState(worker, 'remote', 'ready');
  const call = await worker.request('/api/mcp/tools/remote__echo/call', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ arguments: { text } }),
  });
  expect(call.status, call.text).toBe(200);
  expect(call.json).toMatchObject({ content: [{ type: 'text', text }], details: { is_error: false } });
}

function storedClients(worker: Worker): Record<string, { client_id: string; redirect_uris?: string[] }> {
  return JSON.parse(readFileSync(join(worker.dir, 'oauth', 'remote.json'), 'utf8')).clients;
}

describe('the client ID metadata document route', () => {
  it('with --public-url: served without the API token, as JSON, naming its own URL as client_id and the public callback', async () => {
    const publicUrl = 'https://fleet.example.test/mcp-fleet';
    const worker = await serveWorker({}, ['--public-url', publicUrl]);
    // The API itself still wants the token; the document does not.
    expect((await worker.request('/api/mcp/servers', { token: false })).status).toBe(401);
    const served = await worker.request(DOCUMENT_PATH, { token: false });
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(served.headers.get('cache-control')).toMatch(/max-age=\d+/);
    expect(served.json).toEqual({
      client_id: `${publicUrl}${DOCUMENT_PATH}`,
      client_name: 'mcp-fleet',
      redirect_uris: [`${publicUrl}/oauth/callback`],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    });
    // An authorization server reaches the worker under the public URL's host.
    const viaPublicHost = await worker.request(DOCUMENT_PATH, { token: false, headers: { host: 'fleet.example.test' } });
    expect(viaPublicHost.status).toBe(200);
    expect(viaPublicHost.text).toBe(served.text);
  });

  it('without --public-url: not found, with or without the token', async () => {
    const worker = await serveWorker({});
    const anonymous = await worker.request(DOCUMENT_PATH, { token: false });
    expect(anonymous.status).toBe(404);
    expect(anonymous.json).toMatchObject({ error: { code: 'not_found' } });
    expect((await worker.request(DOCUMENT_PATH)).status).toBe(404);
  });
});

describe('the document URL as client id (oidc-provider, a real serve behind HTTPS)', () => {
  it('an authorization server that takes documents fetches it from the worker: consent with the URL client id, no registration', async () => {
    const { as, mcp } = await protectedServer(true);
    const proxy = await tlsProxy();
    const worker = await serveWorker({ remote: oauthServer(mcp.url) }, ['--public-url', proxy.url]);
    proxy.forwardTo(worker.port);
    const documentUrl = `${proxy.url}${DOCUMENT_PATH}`;

    const authorizationUrl = await beginConsent(worker);
    expect(authorizationUrl.searchParams.get('client_id')).toBe(documentUrl);
    expect(authorizationUrl.searchParams.get('redirect_uri')).toBe(`${proxy.url}/oauth/callback`);
    await consentAndCall(worker, authorizationUrl, 'by document');

    // oidc-provider read the client from the worker's document, over TLS through the public URL.
    expect(as.documentFetches).toContain(documentUrl);
    expect(as.registrations()).toBe(0);
    expect(storedClients(worker)[as.issuer]).toMatchObject({ client_id: documentUrl });
  });

  it('an authorization server that does not: dynamic registration with the public callback, as before', async () => {
    const { as, mcp } = await protectedServer(false);
    const proxy = await tlsProxy();
    const worker = await serveWorker({ remote: oauthServer(mcp.url) }, ['--public-url', proxy.url]);
    proxy.forwardTo(worker.port);

    const authorizationUrl = await beginConsent(worker);
    expect(authorizationUrl.searchParams.get('client_id')).not.toBe(`${proxy.url}${DOCUMENT_PATH}`);
    await consentAndCall(worker, authorizationUrl, 'by registration');
    expect(as.registrations()).toBe(1);
    expect(storedClients(worker)[as.issuer]?.redirect_uris).toEqual([`${proxy.url}/oauth/callback`]);
  });

  it('a plain-HTTP public URL is no client id (authorization servers fetch HTTPS ones only): the worker registers', async () => {
    const { as, mcp } = await protectedServer(true);
    const worker = await serveWorker({ remote: oauthServer(mcp.url) }, ['--public-url', 'http://fleet.example.test']);
    const authorizationUrl = await beginConsent(worker);
    expect(authorizationUrl.searchParams.get('client_id')).not.toMatch(/^https?:/);
    expect(as.registrations()).toBe(1);
    expect(as.documentFetches).toEqual([]);
  });
});
