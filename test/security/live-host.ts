// A real host on real fixture servers behind a listening management app, in
// this process (so prototype pollution would show here), and a raw request
// function that can send anything: any method, path, header and body bytes.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createMcpHost, type McpHost } from '../../src/host.js';
import { createManagementApp } from '../../src/http/app.js';
import { listen, type Listening } from '../../src/http/bind.js';
import { createLogger } from '../../src/telemetry/logger.js';
import { fixtureCommand } from '../fixtures/index.js';

export const TOKEN = 'security-test-token-0123456789';

/** The tools of `ok` that always answer at once (the slow and never-answering ones are filtered out). */
export const QUICK_TOOLS = ['echo', 'add', 'fail', 'env'];

export interface LiveHost {
  dir: string;
  host: McpHost;
  listening: Listening;
  port: number;
  /** Every line the app logged (it logs each 5xx as `request failed`). */
  log: string[];
  send(request: RawRequest): Promise<RawReply>;
  configText(): string;
  close(): Promise<void>;
}

/**
 * `ok`: the healthy fixture, ready, its quick tools only; `off`: the same
 * server disabled, so a PATCH or restart of it does real work cheaply.
 */
export async function startLiveHost(): Promise<LiveHost> {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-hostile-'));
  const servers = {
    ok: {
      type: 'local',
      command: fixtureCommand('healthy'),
      env: { OK_KEY: 'ok-secret-value-0001' },
      timeout_seconds: 10,
      call_timeout_seconds: 10,
      tools: { include: QUICK_TOOLS },
    },
    off: { type: 'local', command: fixtureCommand('healthy'), enabled: false, timeout_seconds: 10, tools: { include: QUICK_TOOLS } },
  };
  writeFileSync(join(dir, 'mcp_servers.json'), `${JSON.stringify({ servers }, null, 2)}\n`);
  const host = createMcpHost({ stateDir: dir, logger: { info: () => {}, warn: () => {} } });
  const log: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      log.push(String(chunk));
      done();
    },
  });
  const app = createManagementApp(host, { token: TOKEN, logger: createLogger({ destination, level: 'warn' }) });
  const listening = await listen(app, { port: 0 });
  await host.start();
  await host.settled();
  if (host.server('ok')?.state !== 'ready') throw new Error(`fixture server ok is ${host.server('ok')?.state}`);
  const port = listening.port;
  return {
    dir,
    host,
    listening,
    port,
    log,
    send: (request) => send(port, request),
    configText: () => readFileSync(join(dir, 'mcp_servers.json'), 'utf8'),
    async close() {
      await listening.close();
      await host.shutdown();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface RawRequest {
  method?: string;
  path: string;
  /** Sent as given; `host` and `authorization` default to the right ones, `undefined` removes a header. */
  headers?: Record<string, string | undefined>;
  /** Bytes or text sent as is, with its Content-Length. */
  body?: string | Buffer;
}

export interface RawReply {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/**
 * One request on a fresh connection. An event stream resolves on its headers
 * (and is closed); anything that takes longer than `timeoutMs` rejects, since
 * a hanging request is a failure too.
 */
export function send(port: number, request: RawRequest, timeoutMs = 15_000): Promise<RawReply> {
  const headers: Record<string, string> = { host: `127.0.0.1:${port}`, authorization: `Bearer ${TOKEN}` };
  const body = request.body === undefined ? undefined : Buffer.from(request.body);
  if (body !== undefined) headers['content-length'] = String(body.length);
  for (const [key, value] of Object.entries(request.headers ?? {})) {
    if (value === undefined) delete headers[key.toLowerCase()];
    else headers[key.toLowerCase()] = value;
  }
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path: request.path, method: request.method ?? 'GET', headers, agent: false },
      (res) => {
        if (String(res.headers['content-type']).startsWith('text/event-stream')) {
          clearTimeout(timer);
          req.destroy();
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: '' });
          return;
        }
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') });
        });
        res.on('error', reject);
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`no answer within ${timeoutMs} ms: ${request.method ?? 'GET'} ${request.path.slice(0, 200)}`));
    }, timeoutMs);
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end(body);
  });
}

/**
 * Problems with a reply, `[]` when it is acceptable: never a 5xx, and every
 * error that has a body is `{error: {code, message, field?, error_kind?}}`
 * and nothing else.
 */
export function replyProblems(reply: RawReply, method: string): string[] {
  const problems: string[] = [];
  if (reply.status >= 500) problems.push(`status ${reply.status}`);
  if (reply.status < 400 || method === 'HEAD') return problems;
  // A request line over Node's 16 KiB header limit is refused by its HTTP parser before the app runs.
  if (reply.status === 431 && reply.text === '') return problems;
  let body: unknown;
  try {
    body = JSON.parse(reply.text);
  } catch {
    return [...problems, `error body is not JSON: ${JSON.stringify(reply.text.slice(0, 200))}`];
  }
  const shapeOk =
    isRecord(body) &&
    Object.keys(body).join() === 'error' &&
    isRecord(body.error) &&
    typeof body.error.code === 'string' &&
    body.error.code !== '' &&
    typeof body.error.message === 'string' &&
    // The members an error may carry beside its code and message (docs/http-and-cli.md: a 410's seqs, a 412's version).
    Object.keys(body.error).every((key) => ['code', 'message', 'field', 'error_kind', 'oldest_seq', 'newest_seq', 'version'].includes(key)) &&
    (body.error.field === undefined || typeof body.error.field === 'string');
  if (!shapeOk) problems.push(`error body has the wrong shape: ${reply.text.slice(0, 200)}`);
  return problems;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
