// Issue 7 item 5 — no secret leaks, end to end. Distinct canaries are planted
// in every secret field of several servers (env, headers, bearer token, OAuth
// client secret), including a server that dumps its environment to stderr and
// one that crashes at start. The real worker runs as a child process; every
// route, every CLI command and every error path is driven; then every answer,
// every CLI output, the worker's stdout and pino log, the SSE stream, the
// journal file and every other file of the state dir are scanned. Only
// `mcp_servers.json` may hold a canary; elsewhere only its toResponse() mask.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCommand } from '../fixtures/index.js';
import type { Reply, RequestOptions } from '../http/helpers.js';
import { Canaries, Outputs } from './canaries.js';
import {
  cli,
  deadPort,
  readStream,
  startChildWorker,
  startHttpFixture,
  type Captured,
  type ChildWorker,
  type CliRun,
} from './processes.js';
import { storedJournalLines } from '../support/journal-files.js';
import { until } from '../support/wait.js';

const canaries = new Canaries();
const outputs = new Outputs();
const c = {
  okEnv: canaries.make('ok-env'),
  okQuoted: canaries.make('ok-quoted', { special: true }),
  dumpEnv: canaries.make('dump-env'),
  dumpQuoted: canaries.make('dump-quoted', { special: true }),
  crashEnv: canaries.make('crash-env'),
  remoteHeader: canaries.make('remote-header'),
  remoteToken: canaries.make('remote-token'),
  downHeader: canaries.make('down-header'),
  downToken: canaries.make('down-token'),
  downQuery: canaries.make('down-query'),
  wrongHeader: canaries.make('wrong-header'),
  wrongToken: canaries.make('wrong-token'),
  clientSecret: canaries.make('client-secret'),
  oauthHeader: canaries.make('oauth-header'),
  offEnv: canaries.make('off-env'),
  // Sent through the API.
  addedEnv: canaries.make('added-env'),
  addedPatched: canaries.make('added-patched'),
  addedNew: canaries.make('added-new'),
  postDump: canaries.make('post-dump'),
  postCrash: canaries.make('post-crash'),
  postDown: canaries.make('post-down'),
  patchFail: canaries.make('patch-fail'),
  patchToken: canaries.make('patch-token'),
  patchSecret: canaries.make('patch-secret'),
  invalid: Array.from({ length: 10 }, (_, i) => canaries.make(`invalid-${i}`)),
  // A one-letter label: V8's JSON.parse message quotes ~10 characters from an unexpected token,
  // so an unquoted secret's first random characters would show if that message were passed on.
  unquoted: canaries.make('j'),
  badBearer: canaries.make('bad-bearer'),
  handEdit: canaries.make('hand-edit'),
  // Through the CLI.
  cliShell: canaries.make('cli-shell'),
  cliArg: canaries.make('cli-arg'),
  cliDump: canaries.make('cli-dump'),
  cliHeader: canaries.make('cli-header'),
  cliToken: canaries.make('cli-token'),
  importEnv: canaries.make('import-env'),
  importHeader: canaries.make('import-header'),
  importSkipped: canaries.make('import-skipped'),
  importInvalid: canaries.make('import-invalid'),
};

let dir: string;
let worker: ChildWorker;
let httpFixture: Captured & { url: string };
let down: string;
const cliRuns: CliRun[] = [];

/** A request whose answer is recorded for the scan; the status is asserted. */
async function call(status: number, path: string, options: RequestOptions = {}): Promise<Reply> {
  const reply = await worker.request(path, options);
  const label = `${options.method ?? 'GET'} ${path.slice(0, 80)}`;
  outputs.add(`${label} (answer)`, `${JSON.stringify(reply.headers)}\n${reply.text}`);
  expect(reply.status, `${label}: ${reply.text.slice(0, 300)}`).toBe(status);
  if (status >= 400) expect(reply.json?.error, label).toMatchObject({ code: expect.any(String), message: expect.any(String) });
  return reply;
}

/** A CLI command in process; its output is recorded for the scan. */
async function run(args: string[], code: number | undefined = undefined): Promise<CliRun> {
  // Before the arguments: anything after `--` is the server's command. `diagrams` has no state dir.
  const [command, ...rest] = args as [string, ...string[]];
  const result = await cli(command === 'diagrams' ? args : [command, '--state-dir', dir, ...rest]);
  cliRuns.push(result);
  outputs.add(`mcp-fleet ${args.join(' ').slice(0, 80)} (stdout)`, result.out);
  outputs.add(`mcp-fleet ${args.join(' ').slice(0, 80)} (stderr)`, result.err);
  expect(result.code, `${args.join(' ')}: ${result.out}${result.err}`).toBe(code);
  return result;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-leaks-'));
  down = `http://127.0.0.1:${await deadPort()}/mcp`;
  httpFixture = await startHttpFixture({
    FIXTURE_BEARER_TOKEN: c.remoteToken,
    FIXTURE_REQUIRED_HEADER: `X-Team: ${c.remoteHeader}`,
  });
  const local = (name: string, env: Record<string, string>, extra: Record<string, unknown> = {}) => ({
    type: 'local',
    command: fixtureCommand(name),
    env,
    timeout_seconds: 10,
    ...extra,
  });
  const servers = {
    ok: local('healthy', { API_KEY: c.okEnv, QUOTED: c.okQuoted }, { tools: { include: ['echo', 'env', 'fail'] } }),
    envdump: local('stderr-env', { DUMP_KEY: c.dumpEnv, DUMP_QUOTED: c.dumpQuoted }),
    crash: local('crash-on-start', { CRASH_KEY: c.crashEnv }),
    remote: {
      type: 'remote',
      url: httpFixture.url,
      transport: 'streamable_http',
      headers: { 'X-Team': c.remoteHeader },
      auth: { kind: 'bearer', token: c.remoteToken },
      timeout_seconds: 10,
    },
    // A key in the URL's query, as some hosted servers take it.
    down: { type: 'remote', url: `${down}?api_key=${c.downQuery}`, headers: { 'X-Key': c.downHeader }, auth: { kind: 'bearer', token: c.downToken } },
    wrongauth: {
      type: 'remote',
      url: httpFixture.url,
      headers: { 'X-Team': c.wrongHeader },
      auth: { kind: 'bearer', token: c.wrongToken },
      timeout_seconds: 10,
    },
    oauth: {
      type: 'remote',
      url: httpFixture.url,
      headers: { 'X-Oauth': c.oauthHeader },
      auth: { kind: 'oauth', client_id: 'public-client-id', client_secret: c.clientSecret },
    },
    off: local('healthy', { OFF_KEY: c.offEnv }, { enabled: false }),
  };
  writeFileSync(join(dir, 'mcp_servers.json'), `${JSON.stringify({ servers }, null, 2)}\n`);
  worker = await startChildWorker(dir, ['--log-level', 'trace']);
  // Startup connects one server at a time; wait until every configured server has an outcome.
  // The worker listens (worker.json) before its host has published the servers: an empty or
  // partial list is not a settled one.
  const configured = Object.keys(servers).sort();
  await until(async () => {
    const reply = await worker.request('/api/mcp/servers');
    if (reply.status !== 200) return false;
    const listed = reply.json.servers as Array<{ name: string; state: string }>;
    return (
      JSON.stringify(listed.map((s) => s.name).sort()) === JSON.stringify(configured) &&
      listed.every((s) => s.state !== 'pending' && s.state !== 'authenticating')
    );
  }, 'startup to settle', 60_000);
  // Eight servers one after another, on a machine that may be busy.
}, 90_000);

afterAll(async () => {
  await worker?.stop();
  httpFixture?.child.kill('SIGTERM');
  await httpFixture?.exit;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('no canary leaves the worker (issue 7 item 5)', () => {
  it('the planted secrets are live: delivered, sent, dumped and masked', async () => {
    const { servers } = (await call(200, '/api/mcp/servers')).json as { servers: any[] };
    const state = Object.fromEntries(servers.map((s) => [s.name, s]));
    expect(state.ok).toMatchObject({ state: 'ready', config: { env: { API_KEY: { masked: `••••${c.okEnv.slice(-4)}` } } } });
    // The remote fixture answers only with the right header and token: they were sent.
    expect(state.remote).toMatchObject({ state: 'ready', config: { auth: { token_masked: `••••${c.remoteToken.slice(-4)}` } } });
    expect(state.envdump).toMatchObject({ state: 'error', error_kind: 'spawn_failed' });
    // The dump is in the error, with the values masked: the redaction did the work.
    expect(state.envdump.error).toContain('DUMP_KEY=••••');
    expect(state.envdump.error).toContain('DUMP_QUOTED=••••');
    expect(state.crash).toMatchObject({ state: 'error', error_kind: 'spawn_failed' });
    expect(state.down).toMatchObject({ state: 'error', error_kind: 'unreachable' });
    expect(state.wrongauth).toMatchObject({ state: 'needs_reauth', error_kind: 'needs_reauth' });
    // The fixture offers no OAuth metadata and refuses the request: a human must sign in.
    expect(state.oauth).toMatchObject({ state: 'needs_reauth', error_kind: 'needs_reauth' });
    expect(state.off).toMatchObject({ state: 'disabled' });
    // The child received its env: the tool reports the length, never the value.
    const env = await call(200, '/api/mcp/tools/ok__env/call', { method: 'POST', body: { arguments: { name: 'API_KEY' } } });
    expect(JSON.parse(env.json.content[0].text)).toEqual({ set: true, length: c.okEnv.length });
  });

  it('every read route', async () => {
    await call(200, '/healthz');
    for (const name of ['ok', 'envdump', 'crash', 'remote', 'down', 'wrongauth', 'oauth', 'off']) {
      await call(200, `/api/mcp/servers/${name}`);
    }
    await call(200, '/api/mcp/catalog');
    await call(200, '/api/mcp/catalog/diff');
    await call(200, '/api/mcp/tools');
    await call(200, '/api/mcp/events?since=0');
    await call(200, '/api/mcp/events');
    await call(404, '/api/mcp/servers/nope');
    await call(404, '/api/mcp/nothing');
  });

  it('tool calls, good and bad', async () => {
    await call(200, '/api/mcp/tools/ok__echo/call', { method: 'POST', body: { arguments: { text: 'hello' } } });
    const failed = await call(200, '/api/mcp/tools/ok__fail/call', { method: 'POST', body: {} });
    expect(failed.json.details.is_error).toBe(true);
    await call(200, '/api/mcp/tools/ok__echo/call', { method: 'POST', body: { arguments: { wrong: 1 } } });
    const remote = await call(200, '/api/mcp/tools/remote__echo/call', { method: 'POST', body: { arguments: { text: 'hi' } } });
    expect(remote.json.content[0].text).toBe('hi');
    await call(404, '/api/mcp/tools/nope__echo/call', { method: 'POST', body: {} });
    await call(400, '/api/mcp/tools/ok__echo/call', { method: 'POST', body: { arguments: c.invalid[0] } });
  });

  it('POST: a server that starts, and three that fail with their reason', async () => {
    const added = await call(201, '/api/mcp/servers', {
      method: 'POST',
      body: { name: 'added', ...localConfig('healthy', { ADDED_KEY: c.addedEnv }) },
    });
    expect(added.json.state).toBe('ready');
    // The stderr dump comes back in the 422, masked.
    const dumped = await call(422, '/api/mcp/servers', {
      method: 'POST',
      body: { name: 'postdump', ...localConfig('stderr-env', { POST_DUMP: c.postDump }) },
    });
    expect(dumped.json.error.message).toContain('POST_DUMP=••••');
    await call(422, '/api/mcp/servers', {
      method: 'POST',
      body: { name: 'postcrash', ...localConfig('crash-on-start', { POST_CRASH: c.postCrash }) },
    });
    await call(422, '/api/mcp/servers', {
      method: 'POST',
      body: { name: 'postdown', type: 'remote', url: down, headers: { 'X-Key': c.postDown }, auth: { kind: 'bearer', token: c.postDown } },
    });
    await call(409, '/api/mcp/servers', { method: 'POST', body: { name: 'ok', ...localConfig('healthy', { K: c.addedEnv }) } });
  });

  it('POST and PATCH bodies that do not validate, with canaries in wrong-typed and right-typed fields', async () => {
    const [, i1, i2, i3, i4, i5, i6, i7, i8, i9] = c.invalid as [string, ...string[]];
    const invalidPosts: unknown[] = [
      { name: 'bad', type: 'local', command: ['node'], env: { K: 42, L: i1 } },
      { name: 'bad', type: 'local', command: ['node'], env: i2 },
      { name: 'bad', type: 'local', command: ['node'], env: { K: [i3] } },
      { name: 'bad', type: 'remote', url: 'http://127.0.0.1:1/mcp', auth: { kind: 'bearer', token: [i4] } },
      { name: 'bad', type: 'remote', url: 'http://127.0.0.1:1/mcp', headers: { H: { nested: i5 } } },
      { name: 'bad', type: 'remote', url: 'http://127.0.0.1:1/mcp', auth: { kind: 'oauth', client_secret: 12 }, headers: { H: i6 } },
      { name: 'bad', type: 'local', command: ['node'], env: { K: i7 }, timeout_seconds: 'soon' },
      { name: 'bad name', type: 'local', command: ['node'], env: { K: i8 } },
      { name: 'bad', type: 'remote', url: 'not a url', auth: { kind: 'bearer', token: i9 } },
    ];
    for (const body of invalidPosts) await call(400, '/api/mcp/servers', { method: 'POST', body });
    const invalidPatches: Array<[string, unknown]> = [
      ['ok', { env: { K: [i1] } }],
      ['ok', { env: i2 }],
      ['remote', { auth: { token: 5 }, headers: { H: i3 } }],
      ['remote', { headers: { H: { deep: i4 } } }],
      ['oauth', { auth: { client_secret: [i5] } }],
      ['ok', { env: { K: i6 }, unknown_field: true }],
      ['ok', { name: 'renamed', env: { K: i7 } }],
    ];
    for (const [name, body] of invalidPatches) await call(400, `/api/mcp/servers/${name}`, { method: 'PATCH', body });
    await call(404, '/api/mcp/servers/nope', { method: 'PATCH', body: { env: { K: i8 } } });
    // Not JSON, wrong type, too big: fixed messages, the body is never quoted.
    const json = { 'content-type': 'application/json' };
    await call(400, '/api/mcp/servers', { method: 'POST', body: `{"name":"x","env":{"K":"${i9}"`, headers: json });
    await call(400, '/api/mcp/servers/ok', { method: 'PATCH', body: `{"env":{"K":"${i9}"}}}`, headers: json });
    await call(400, '/api/mcp/servers/ok', { method: 'PATCH', body: `{"auth":{"token":${c.unquoted}}}`, headers: json });
    await call(415, '/api/mcp/servers', { method: 'POST', body: `{"env":{"K":"${i9}"}}`, headers: { 'content-type': 'text/plain' } });
    const big = JSON.stringify({ name: 'big', env: { K: i9, PAD: 'x'.repeat(1024 * 1024) } });
    await call(413, '/api/mcp/servers', { method: 'POST', body: big, headers: json });
  });

  it('refused requests: bad token, foreign Host, cross-origin', async () => {
    await call(401, '/api/mcp/servers', { headers: { authorization: `Bearer ${c.badBearer}` } });
    await call(401, '/api/mcp/servers', { method: 'POST', body: { name: 'x', env: { K: c.badBearer } }, headers: { authorization: undefined } });
    await call(403, '/api/mcp/servers', { headers: { host: `evil.example:${worker.port}` } });
    await call(403, '/api/mcp/servers', {
      method: 'POST',
      body: { name: 'x', type: 'local', command: ['node'], env: { K: c.badBearer } },
      headers: { origin: 'http://evil.example' },
    });
  });

  it('PATCH: one that lands, and failing restarts that bring the old config back', async () => {
    const patched = await call(200, '/api/mcp/servers/added', {
      method: 'PATCH',
      body: { env: { ADDED_KEY: c.addedPatched, ADDED_NEW: c.addedNew } },
    });
    expect(patched.json.state).toBe('ready');
    const failed = await call(422, '/api/mcp/servers/ok', {
      method: 'PATCH',
      body: { command: fixtureCommand('stderr-env'), env: { PATCH_FAIL: c.patchFail } },
    });
    expect(failed.json.error.message).toContain('PATCH_FAIL=••••');
    // The dump lists the old env keys too (the PATCH merges): still masked.
    expect(failed.json.error.message).toContain('API_KEY=••••');
    await call(422, '/api/mcp/servers/down', { method: 'PATCH', body: { auth: { token: c.patchToken } } });
    // needs_reauth is not an error: the new client secret is kept (SPEC §3).
    await call(200, '/api/mcp/servers/oauth', { method: 'PATCH', body: { auth: { client_secret: c.patchSecret } } });
    await until(async () => (await worker.request('/api/mcp/servers/ok')).json.state === 'ready', 'ok to come back');
  });

  it('restart, auth and the diff of a hand edit', async () => {
    for (const name of ['ok', 'envdump', 'crash', 'remote', 'down', 'wrongauth', 'oauth', 'off']) {
      await call(200, `/api/mcp/servers/${name}/restart`, { method: 'POST' });
    }
    const consent = await call(200, '/api/mcp/servers/oauth/auth', { method: 'POST' });
    expect(consent.json.authorization_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/authorize\?/);
    await call(409, '/api/mcp/servers/remote/auth', { method: 'POST' });
    await call(404, '/api/mcp/servers/nope/auth', { method: 'POST' });
    await call(404, '/api/mcp/servers/nope/restart', { method: 'POST' });
    // A hand edit of a disabled server's secret: the diff names the path, never the value.
    const file = join(dir, 'mcp_servers.json');
    const doc = JSON.parse(readFileSync(file, 'utf8'));
    doc.servers.off.env.OFF_KEY = c.handEdit;
    writeFileSync(file, `${JSON.stringify(doc, null, 2)}\n`);
    const diff = await call(200, '/api/mcp/catalog/diff');
    // (A config watcher may already have applied the edit; either way no value shows.)
    expect(JSON.stringify(diff.json)).not.toContain(c.handEdit);
    await call(200, '/api/mcp/catalog');
  });

  it('every CLI command', async () => {
    await run(['list']);
    await run(['list', '--json']);
    await run(['list', '--tools']);
    await run(['list', '--tools', '--json']);
    process.env.SECURITY_TEST_CLI_SECRET = c.cliShell;
    process.env.SECURITY_TEST_CLI_TOKEN = c.cliToken;
    try {
      const added = await run(['add', 'cliadded', '--json', '--env', 'SECURITY_TEST_CLI_SECRET', '--env', `ARG_KEY=${c.cliArg}`, '--', ...fixtureCommand('healthy')]);
      expect(JSON.parse(added.out).state).toBe('ready');
      const dumped = await run(['add', 'clidump', '--env', `CLI_DUMP=${c.cliDump}`, '--', ...fixtureCommand('stderr-env')], 1);
      expect(dumped.err).toContain('CLI_DUMP=••••');
      await run(['add', 'cliremote', '--url', down, '--header', `X-Cli=${c.cliHeader}`, '--token-env', 'SECURITY_TEST_CLI_TOKEN'], 1);
    } finally {
      delete process.env.SECURITY_TEST_CLI_SECRET;
      delete process.env.SECURITY_TEST_CLI_TOKEN;
    }
    await run(['list']);
    await run(['call', 'ok__echo', '{"text":"hi"}']);
    await run(['call', 'ok__env', '{"name":"API_KEY"}', '--json']);
    await run(['call', 'ok__fail'], 1);
    await run(['call', 'nope__tool'], 1);
    await run(['call', 'remote__echo', '{"text":"hi"}']);
    await run(['remove', 'cliadded']);
    await run(['remove', 'nope'], 1);
    // import: a Claude Desktop file with canaries in env and headers, one entry skipped, one invalid.
    const claude = join(dir, 'claude_desktop_config.json');
    writeFileSync(
      claude,
      JSON.stringify({
        mcpServers: {
          imported: { command: process.execPath, args: fixtureCommand('healthy').slice(1), env: { IMPORT_KEY: c.importEnv }, disabled: true },
          importedremote: { url: down, headers: { Authorization: `Bearer ${c.importHeader}` }, disabled: true },
          'not valid!': { command: 'node', env: { K: c.importSkipped } },
          importinvalid: { command: 'node', env: { K: 5, L: c.importInvalid } },
          ok: { command: 'node', env: { K: c.importSkipped } },
        },
      }),
    );
    const imported = await run(['import', claude], 0);
    expect(imported.out).toContain('imported 2 servers');
    rmSync(claude);
    await run(['diagrams', '--check']);
    await call(200, '/api/mcp/catalog/diff');
    await run(['list', '--json']);
  });

  it('the event stream replays the whole journal without a secret', async () => {
    // Read until the replay has reached the newest event: the whole journal is scanned, however slow the worker.
    const newest = ((await call(200, '/api/mcp/events')).json.events as Array<{ seq: number }>).at(-1)!.seq;
    const replayed = (text: string) => {
      const at = text.indexOf(`id: ${newest}\n`);
      return at >= 0 && text.includes('\n\n', at); // that event's frame in whole
    };
    const stream = await readStream(worker, '/api/mcp/events/stream?since=0', replayed);
    expect(stream.status).toBe(200);
    expect(stream.text).toContain('event: journal');
    expect(stream.text).toContain(`id: ${newest}\n`);
    outputs.add('GET /api/mcp/events/stream?since=0 (stream)', stream.text);
    await call(200, '/api/mcp/events?since=0');
    await call(400, `/api/mcp/events?since=${c.invalid[1]}`);
  });

  it('DELETE, then the worker stops cleanly', async () => {
    await call(204, '/api/mcp/servers/added', { method: 'DELETE' });
    await call(404, '/api/mcp/servers/added', { method: 'DELETE' });
    const exit = await worker.stop();
    expect(exit).toEqual({ code: 0, signal: null });
  });

  it('no output, answer, log line or file holds a canary; only masks show their last 4', () => {
    outputs.add('worker stdout', worker.stdout());
    outputs.add('worker stderr (pino log)', worker.stderr());
    // The pino log really carries the failures, masked: the scan is not of an empty log.
    expect(worker.stderr()).toContain('DUMP_KEY=••••');
    for (const file of readdirSync(dir, { recursive: true }) as string[]) {
      if (file === 'mcp_servers.json' || !statSync(join(dir, file)).isFile()) continue;
      outputs.add(`state dir: ${file}`, readFileSync(join(dir, file), 'utf8'));
    }
    expect(storedJournalLines(dir).length).toBeGreaterThan(50);
    expect(outputs.leaks(canaries)).toEqual([]);
    // The file itself is the one place the stored secrets live.
    const config = readFileSync(join(dir, 'mcp_servers.json'), 'utf8');
    for (const stored of [c.okEnv, c.okQuoted, c.remoteToken, c.patchSecret, c.handEdit, c.importEnv, c.importHeader]) {
      expect(config).toContain(JSON.stringify(stored).slice(1, -1));
    }
  });
});

function localConfig(fixtureName: string, env: Record<string, string>): Record<string, unknown> {
  return { type: 'local', command: fixtureCommand(fixtureName), env, timeout_seconds: 10 };
}
