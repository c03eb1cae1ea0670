// Issue 7 item 6, fuzzing: arbitrary bodies, paths, query strings, methods
// and body encodings against a real listening worker with a real host (`ok`
// ready, `off` disabled, so valid mutations do real work). Every answer must
// be below 500 and, when it is an error, `{error: {code, message}}`; the
// worker must answer /healthz afterwards; nothing may pollute a prototype;
// nothing may be logged as a failed request. Runs are bounded to keep the
// file well under 30 s.
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodyValue, deepBody, defuse, garbageBody, headerValue, method, nearValid, segment, sinceValue, toJsonText } from './arbitraries.js';
import { deadPort } from './processes.js';
import { replyProblems, startLiveHost, type LiveHost, type RawRequest } from './live-host.js';

let live: LiveHost;
let deadUrl: string;
const prototypeKeys = {
  object: Object.getOwnPropertyNames(Object.prototype).sort(),
  array: Object.getOwnPropertyNames(Array.prototype).sort(),
  function: Object.getOwnPropertyNames(Function.prototype).sort(),
};

beforeAll(async () => {
  deadUrl = `http://127.0.0.1:${await deadPort()}/mcp`;
  live = await startLiveHost();
});
afterAll(() => live?.close());

/** Sends `request` and fails with the request in the message when the answer breaks a rule. */
async function expectAcceptable(request: RawRequest): Promise<number> {
  const reply = await live.send(request);
  const problems = replyProblems(reply, request.method ?? 'GET');
  const shown = typeof request.body === 'string' ? request.body.slice(0, 300) : String(request.body?.length ?? '');
  expect(problems, `${request.method ?? 'GET'} ${request.path.slice(0, 300)} ${shown}`).toEqual([]);
  return reply.status;
}

/** Where bodies go: every route that reads one, on a disabled, a ready and an unknown server. */
const bodyTargets = fc.constantFrom(
  { method: 'POST', path: '/api/mcp/servers' },
  { method: 'PATCH', path: '/api/mcp/servers/off' },
  { method: 'PATCH', path: '/api/mcp/servers/ok' },
  { method: 'PATCH', path: '/api/mcp/servers/nope' },
  { method: 'POST', path: '/api/mcp/tools/ok__echo/call' },
  { method: 'POST', path: '/api/mcp/tools/ok__add/call' },
  { method: 'POST', path: '/api/mcp/tools/nope__echo/call' },
  { method: 'POST', path: '/api/mcp/servers/off/restart' },
  { method: 'DELETE', path: '/api/mcp/servers/nope' },
);

const JSON_TYPE = { 'content-type': 'application/json' };

describe('fuzzing every route (issue 7 item 6)', () => {
  it('arbitrary JSON bodies: config-shaped, hostile keys, unicode, huge strings', async () => {
    await fc.assert(
      fc.asyncProperty(bodyTargets, bodyValue, async (target, value) => {
        await expectAcceptable({ ...target, headers: JSON_TYPE, body: toJsonText(defuse(value, deadUrl)) });
      }),
      { numRuns: 120 },
    );
  });

  it('valid bodies with a few fields made hostile: the host adds, patches and calls for real', async () => {
    const name = fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/);
    const post = fc.tuple(name, fc.boolean()).chain(([serverName, remote]) =>
      nearValid([
        remote
          ? { name: serverName, type: 'remote', url: deadUrl, enabled: false, headers: { 'X-K': 'header-value' }, auth: { kind: 'bearer', token: 'token-value' } }
          : { name: serverName, type: 'local', command: ['/nonexistent/mcp-fleet-fuzz'], enabled: false, env: { K: 'env-value' } },
      ]),
    );
    const patch = nearValid([{}, { env: { K: 'v' } }, { enabled: false }, { tools: { exclude: [] } }, { timeout_seconds: 5 }]);
    const call = nearValid([{ arguments: { text: 'hi' } }, { arguments: { a: 1, b: 2 } }, {}]);
    const request = fc.oneof(
      { weight: 3, arbitrary: post.map((body) => ({ method: 'POST', path: '/api/mcp/servers', body })) },
      { weight: 3, arbitrary: patch.map((body) => ({ method: 'PATCH', path: '/api/mcp/servers/off', body })) },
      // Each accepted PATCH of `ok` restarts a real child: a few are plenty.
      { weight: 1, arbitrary: patch.map((body) => ({ method: 'PATCH', path: '/api/mcp/servers/ok', body })) },
      { weight: 3, arbitrary: call.map((body) => ({ method: 'POST', path: '/api/mcp/tools/ok__echo/call', body })) },
      { weight: 2, arbitrary: call.map((body) => ({ method: 'POST', path: '/api/mcp/tools/ok__add/call', body })) },
    );
    await fc.assert(
      fc.asyncProperty(request, async ({ method: verb, path, body }) => {
        await expectAcceptable({ method: verb, path, headers: JSON_TYPE, body: toJsonText(defuse(body, deadUrl)) });
      }),
      { numRuns: 120 },
    );
  });

  it('deeply nested bodies (up to 200 000 levels) in every field', async () => {
    await fc.assert(
      fc.asyncProperty(bodyTargets, deepBody, async (target, body) => {
        await expectAcceptable({ ...target, headers: JSON_TYPE, body: body.text });
      }),
      { numRuns: 15 },
    );
  });

  it('bodies that are not JSON, with odd charsets and content encodings', async () => {
    const contentType = fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'application/json; charset=utf-16',
      'application/json; charset=latin1',
      'application/json; charset=nonsense',
      'application/merge-patch+json',
      'APPLICATION/JSON',
    );
    const encoding = fc.constantFrom(undefined, 'identity', 'gzip', 'deflate', 'br', 'compress', 'nonsense', 'gzip, gzip');
    await fc.assert(
      fc.asyncProperty(bodyTargets, garbageBody, contentType, encoding, fc.boolean(), async (target, text, type, enc, zip) => {
        // Half the gzip-labelled bodies really are gzip, so decoding is exercised past the header.
        const body = enc === 'gzip' && zip ? gzipSync(text) : text;
        await expectAcceptable({ ...target, headers: { 'content-type': type, 'content-encoding': enc }, body });
      }),
      { numRuns: 120 },
    );
  });

  it('arbitrary path segments and methods on every route', async () => {
    const templates = fc.constantFrom(
      (s: string) => `/api/mcp/servers/${s}`,
      (s: string) => `/api/mcp/servers/${s}/restart`,
      (s: string) => `/api/mcp/servers/${s}/auth`,
      (s: string) => `/api/mcp/tools/${s}/call`,
      (s: string) => `/api/mcp/${s}`,
      (s: string) => `/api/mcp/events/${s}`,
      (s: string) => `/api/${s}`,
      (s: string) => `/${s}`,
      (s: string) => `/api/mcp/servers/${s}/${s}`,
    );
    await fc.assert(
      fc.asyncProperty(templates, segment, method, async (template, seg, verb) => {
        // Deleting or restarting the two real servers would only slow the run down.
        if (['ok', 'off'].includes(safeDecode(seg)) && verb !== 'GET' && verb !== 'HEAD') return;
        const body = ['POST', 'PUT', 'PATCH'].includes(verb) ? '{}' : undefined;
        await expectAcceptable({ method: verb, path: template(seg), headers: body ? JSON_TYPE : {}, body });
      }),
      { numRuns: 200 },
    );
  });

  it('arbitrary query strings and Last-Event-ID on the journal routes', async () => {
    const query = fc.oneof(
      sinceValue.map((v) => `since=${v}`),
      fc.tuple(sinceValue, sinceValue).map(([a, b]) => `since=${a}&since=${b}`),
      sinceValue.map((v) => `since[]=${v}`),
      sinceValue.map((v) => `since[a][b]=${v}`),
      sinceValue.map((v) => `${v}=${v}`),
      sinceValue.map((v) => `${v}`),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('/api/mcp/events', '/api/mcp/events/stream', '/api/mcp/servers', '/api/mcp/catalog/diff', '/api/mcp/tools'),
        query,
        fc.option(headerValue),
        async (path, q, lastEventId) => {
          await expectAcceptable({ path: `${path}?${q}`, headers: { 'last-event-id': lastEventId ?? undefined } });
        },
      ),
      { numRuns: 120 },
    );
  });

  it('a wrong method on every route → an error in the usual shape', async () => {
    const routes: Array<[string, string[]]> = [
      ['/api/mcp/servers', ['GET', 'POST']],
      ['/api/mcp/servers/off', ['GET', 'PATCH', 'DELETE']],
      ['/api/mcp/servers/off/restart', ['POST']],
      ['/api/mcp/servers/off/auth', ['POST']],
      ['/api/mcp/catalog', ['GET']],
      ['/api/mcp/catalog/diff', ['GET']],
      ['/api/mcp/tools', ['GET']],
      ['/api/mcp/tools/ok__echo/call', ['POST']],
      ['/api/mcp/events', ['GET']],
      ['/api/mcp/events/stream', ['GET']],
      ['/healthz', ['GET']],
    ];
    for (const [path, allowed] of routes) {
      for (const verb of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'TRACE']) {
        if (allowed.includes(verb)) continue;
        const body = ['POST', 'PUT', 'PATCH'].includes(verb) ? '{}' : undefined;
        const status = await expectAcceptable({ method: verb, path, headers: body ? JSON_TYPE : {}, body });
        expect(status, `${verb} ${path}`).toBe(404);
      }
    }
  });

  // What fuzzing found (each was a 500, two of them express's HTML page with a stack trace), pinned.
  it.each([
    ['a body nested 100 000 deep under env', 'POST', '/api/mcp/servers', {}, `{"env":{"K":${'['.repeat(100_000)}${']'.repeat(100_000)}}}`],
    ['the same under auth.token', 'PATCH', '/api/mcp/servers/off', {}, `{"auth":{"token":${'{"k":'.repeat(100_000)}1${'}'.repeat(100_000)}}}`],
    ['an empty deflate body', 'POST', '/api/mcp/servers', { 'content-encoding': 'deflate' }, ''],
    ['a gzip body that is not gzip', 'PATCH', '/api/mcp/servers/off', { 'content-encoding': 'gzip' }, '{"enabled":false}'],
    ['a brotli body that is not brotli', 'POST', '/api/mcp/tools/ok__echo/call', { 'content-encoding': 'br' }, 'not brotli at all'],
    ['a path that is not valid percent-encoding', 'GET', '/api/mcp/servers/%E2%82', {}, undefined],
    ['the same on a mutation', 'POST', '/api/mcp/servers/%zz/restart', {}, undefined],
  ])('%s → 400 in the usual shape', async (_label, verb, path, headers, body) => {
    const reply = await live.send({ method: verb, path, headers: { ...JSON_TYPE, ...headers }, body });
    expect(reply.status, reply.text.slice(0, 300)).toBe(400);
    expect(replyProblems(reply, verb)).toEqual([]);
  });

  it('a tool call whose arguments nest 100 000 deep is answered, not a crash', async () => {
    const args = `${'{"k":'.repeat(100_000)}1${'}'.repeat(100_000)}`;
    await expectAcceptable({ method: 'POST', path: '/api/mcp/tools/ok__echo/call', headers: JSON_TYPE, body: `{"arguments":${args}}` });
  });

  it('afterwards: the worker is up, no prototype was polluted, no request failed', async () => {
    expect((await live.send({ path: '/healthz' })).status).toBe(200);
    expect((await live.send({ path: '/api/mcp/servers' })).status).toBe(200);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeKeys.object);
    expect(Object.getOwnPropertyNames(Array.prototype).sort()).toEqual(prototypeKeys.array);
    expect(Object.getOwnPropertyNames(Function.prototype).sort()).toEqual(prototypeKeys.function);
    expect(live.log.filter((line) => line.includes('request failed'))).toEqual([]);
    // The config file is still a document the worker can read.
    expect(() => JSON.parse(live.configText())).not.toThrow();
  });
});

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
