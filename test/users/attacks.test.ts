// Two users as they would attack each other, on a real fleet: two `mcp-fleet
// serve` workers on one PostgreSQL, each user calling through both. The
// fixtures answer with what they saw (the token in their env, the
// Authorization header, a count per MCP session or per process, the tool list
// of the caller's credential), so a call that carried the other's
// credentials, landed in the other's session or was shown the other's cached
// list shows in its answer. Everything bob is answered (API, events, the SSE
// stream of both workers, search, catalog, sessions, read_result) is checked
// for anything of alice's: her name, her server's, her tokens, her tool, her
// session ids. A stdio per_user server runs one process per active user per
// worker (found by a marker argument in /proc) and none once idle.
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCommand, startHttpFixture, type HttpFixture } from '../fixtures/index.js';
import { fleetTestBed, startFleetWorker, untilStateOn, type FleetWorkerProcess } from '../fleet/workers.js';
import { until } from '../support/wait.js';

const bed = fleetTestBed();
const MARKER = `attack-marker-${process.pid}-${Date.now()}`;
const TOKENS = { alice: 'alice-token-ATTACK-4711', bob: 'bob-token-ATTACK-0815' } as const;
type User = keyof typeof TOKENS;
/** Whatever of alice's bob must never be shown: her name is in all of them (principal, server, tool, tokens). */
const ALICES = 'alice';

let workers: FleetWorkerProcess[] = [];
let remote: HttpFixture;
const keys: Record<string, string> = {};
/** Alice's HTTP session ids, as the fixture told her: bob must never be shown one. */
const aliceSessions = new Set<string>();
/** Every text each user was answered, kept to search for the other's values at the end. */
const answered: Record<User, string[]> = { alice: [], bob: [] };
/** Bob's event streams on both workers, open from the start. */
const streams: Array<{ received: string[]; request: http.ClientRequest }> = [];

const perUser = (extra: Record<string, unknown>) => ({
  scope: 'per_user',
  user_inputs: { TOKEN: { description: 'your token' } },
  timeout_seconds: 20,
  ...extra,
});

beforeAll(async () => {
  remote = await startHttpFixture('whoami', ['--http']);
  const url = await bed.database();
  workers = [await startFleetWorker({ id: 'w1', databaseUrl: url, secretKey: bed.secretKey })];
  workers.push(await startFleetWorker({ id: 'w2', databaseUrl: url, secretKey: bed.secretKey }));
  const [w1, w2] = workers as [FleetWorkerProcess, FleetWorkerProcess];
  const servers: Record<string, Record<string, unknown>> = {
    stdio_whoami: perUser({ type: 'local', command: fixtureCommand('whoami', MARKER), env: { USER_TOKEN: '${user.TOKEN}' }, idle_timeout_seconds: 3 }),
    http_whoami: perUser({
      type: 'remote',
      url: remote.url,
      transport: 'streamable_http',
      headers: { Authorization: 'Bearer ${user.TOKEN}', 'x-user-token': '${user.TOKEN}' },
    }),
    scoped: perUser({ type: 'local', command: fixtureCommand('scoped-tools', '--scope', 'private'), env: { USER_TOKEN: '${user.TOKEN}' }, protocol: '2026' }),
    alice_vault: perUser({ type: 'local', command: fixtureCommand('whoami'), env: { USER_TOKEN: '${user.TOKEN}' }, access: { users: ['alice'] } }),
    big: { type: 'local', command: fixtureCommand('spill-text'), timeout_seconds: 20 },
  };
  for (const [name, config] of Object.entries(servers)) {
    const added = await w1.request('/api/mcp/servers', { method: 'POST', json: { name, ...config } });
    expect(added.status, added.text).toBe(201);
  }
  for (const worker of workers) await untilStateOn(worker, 'big', 'ready');
  for (const name of ['alice', 'bob']) {
    const reply = await w1.request('/api/mcp/users', { method: 'POST', json: { name } });
    expect(reply.status, reply.text).toBe(201);
    keys[name] = reply.json.key;
  }
  // Bob listens to both workers' journals from the first event on.
  for (const worker of [w1, w2]) {
    const received: string[] = [];
    const { port } = new URL(worker.url);
    const request = http.get({
      host: '127.0.0.1',
      port,
      path: '/api/mcp/events/stream?since=0',
      headers: { host: `127.0.0.1:${port}`, authorization: `Bearer ${keys.bob}` },
    });
    request.on('response', (stream) => {
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => received.push(chunk));
    });
    request.on('error', () => {});
    streams.push({ received, request });
  }
  // Each sets their own inputs, alice on w1 and bob on w2: the database carries them to the other worker.
  for (const server of ['stdio_whoami', 'http_whoami', 'scoped']) {
    expect((await as('alice', w1, `/api/mcp/servers/${server}/inputs`, { method: 'PUT', body: { TOKEN: TOKENS.alice } })).status).toBe(200);
    expect((await as('bob', w2, `/api/mcp/servers/${server}/inputs`, { method: 'PUT', body: { TOKEN: TOKENS.bob } })).status).toBe(200);
  }
  expect((await as('alice', w2, '/api/mcp/servers/alice_vault/inputs', { method: 'PUT', body: { TOKEN: TOKENS.alice } })).status).toBe(200);
}, 120_000);

afterAll(async () => {
  for (const { request } of streams) request.destroy();
  await Promise.all(workers.map((worker) => worker.stop()));
  await remote?.stop();
});

const other = (user: User): User => (user === 'alice' ? 'bob' : 'alice');

/**
 * A request with `user`'s key; its answer must hold nothing of the other user's tokens, and is kept for the
 * final sweep unless the request itself `names` something of the other's (an answer may repeat what was asked).
 */
async function as(
  user: User,
  worker: FleetWorkerProcess,
  path: string,
  init: { method?: string; body?: unknown; names?: boolean } = {},
): Promise<{ status: number; json: any; text: string }> {
  const response = await fetch(`${worker.url}${path}`, {
    method: init.method ?? 'GET',
    headers: { authorization: `Bearer ${keys[user]}`, ...(init.body !== undefined && { 'content-type': 'application/json' }) },
    ...(init.body !== undefined && { body: JSON.stringify(init.body) }),
  });
  const text = await response.text();
  if (init.names !== true) answered[user].push(text);
  expect(text, `${user}'s ${path} on ${worker.id} carried the other's token`).not.toContain(TOKENS[other(user)]);
  return { status: response.status, json: text === '' ? undefined : JSON.parse(text), text };
}

/** `user` calls `tool` on `worker`; the fixture's answer, parsed. */
async function call(user: User, worker: FleetWorkerProcess, tool: string, args: Record<string, unknown> = {}): Promise<any> {
  const reply = await as(user, worker, `/api/mcp/tools/${tool}/call`, { method: 'POST', body: { arguments: args } });
  expect(reply.status, reply.text).toBe(200);
  expect(reply.json.details.is_error, reply.text).toBe(false);
  return JSON.parse(reply.json.content[0].text);
}

/** The journal events an SSE stream carried so far. */
function eventsIn(received: string[]): Array<Record<string, unknown>> {
  return received
    .join('')
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .flatMap((line) => {
      try {
        return [JSON.parse(line.slice('data: '.length)) as Record<string, unknown>];
      } catch {
        return []; // A line whose end has not arrived yet.
      }
    });
}

/** The processes of this file's stdio per_user server: pid, parent (its worker) and the token in their env. */
function markedProcesses(): Array<{ pid: number; ppid: number; token: string | undefined }> {
  const found = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').includes(MARKER)) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const env = readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0');
      const token = env.find((line) => line.startsWith('USER_TOKEN='))?.slice('USER_TOKEN='.length);
      found.push({ pid: Number(entry), ppid, token });
    } catch {
      // Gone between the listing and the read.
    }
  }
  return found;
}

describe('two users, two workers', { timeout: 120_000 }, () => {
  it('no call carries the other user\'s credentials, in env or headers, and none lands in the other\'s session', async () => {
    const [w1, w2] = workers as [FleetWorkerProcess, FleetWorkerProcess];
    // Interleaved, at once, on both workers.
    const rounds = 3;
    const calls: Array<Promise<{ user: User; worker: string; server: string; answer: any }>> = [];
    for (let round = 0; round < rounds; round += 1) {
      for (const worker of [w1, w2]) {
        for (const user of ['alice', 'bob'] as const) {
          for (const server of ['stdio_whoami', 'http_whoami']) {
            calls.push(call(user, worker, `${server}__whoami`).then((answer) => ({ user, worker: worker.id, server, answer })));
          }
        }
      }
    }
    const answers = await Promise.all(calls);
    const sessionsSeen = new Map<string, string>();
    for (const { user, worker, server, answer } of answers) {
      expect(answer.token, `${user} on ${worker} via ${server}`).toBe(TOKENS[user]);
      if (server === 'http_whoami') {
        expect(answer.authorization).toBe(`Bearer ${TOKENS[user]}`);
        // One session per user per worker: a session id is never seen by two users.
        const owner = sessionsSeen.get(answer.session);
        expect(owner === undefined || owner === `${user}@${worker}`, `session ${answer.session} served ${owner} and ${user}@${worker}`).toBe(true);
        sessionsSeen.set(answer.session, `${user}@${worker}`);
        if (user === 'alice') aliceSessions.add(answer.session);
      }
    }
    // Each session's (or process's) counter saw that user's calls alone: exactly 1..rounds, no gap.
    const counters = new Map<string, number[]>();
    for (const { user, worker, server, answer } of answers) {
      const key = `${server} ${user}@${worker} ${answer.session ?? answer.pid}`;
      counters.set(key, [...(counters.get(key) ?? []), answer.count]);
    }
    expect(counters.size).toBe(8);
    for (const [key, counts] of counters) expect(counts.sort((a, b) => a - b), key).toEqual([1, 2, 3]);
  });

  it('a stdio per_user server runs one process per active user on each worker, with that user\'s token, and none once idle', async () => {
    const [w1, w2] = workers as [FleetWorkerProcess, FleetWorkerProcess];
    // Both users call on both workers: four processes, one per user per worker.
    await Promise.all([w1, w2].flatMap((worker) => (['alice', 'bob'] as const).map((user) => call(user, worker, 'stdio_whoami__whoami'))));
    const running = markedProcesses();
    const byWorker = (worker: FleetWorkerProcess) => running.filter((proc) => proc.ppid === worker.child.pid).map((proc) => proc.token).sort();
    expect(running).toHaveLength(4);
    expect(byWorker(w1)).toEqual([TOKENS.alice, TOKENS.bob]);
    expect(byWorker(w2)).toEqual([TOKENS.alice, TOKENS.bob]);
    // idle_timeout_seconds 3 with no call: every process exits.
    await until(() => markedProcesses().length === 0, 'the idle sessions\' processes to exit', 30_000);
    // A new call starts the caller's process alone.
    expect((await call('bob', w1, 'stdio_whoami__whoami')).count).toBe(1);
    expect(markedProcesses().map((proc) => [proc.ppid, proc.token])).toEqual([[w1.child.pid, TOKENS.bob]]);
  });

  it('a private tool list is shown to the user whose session got it, on the worker it was listed on, and to no one else', async () => {
    const [w1, w2] = workers as [FleetWorkerProcess, FleetWorkerProcess];
    expect((await call('alice', w1, 'scoped__whoami')).credential).toBe(TOKENS.alice);
    const toolNames = async (user: User, worker: FleetWorkerProcess) =>
      (await as(user, worker, '/api/mcp/tools')).json.tools.map((tool: { name: string }) => tool.name).filter((name: string) => name.startsWith('scoped__'));
    expect(await toolNames('alice', w1)).toEqual(expect.arrayContaining(['scoped__notes_alice']));
    // Bob has no session of it yet: nothing of alice's list reaches him, on either worker.
    for (const worker of [w1, w2]) expect(await toolNames('bob', worker)).toEqual([]);
    expect((await call('bob', w1, 'scoped__whoami')).credential).toBe(TOKENS.bob);
    expect((await toolNames('bob', w1)).sort()).toEqual(['scoped__notes_bob', 'scoped__whoami']);
    expect((await toolNames('alice', w1)).sort()).toEqual(['scoped__notes_alice', 'scoped__whoami']);
    // Bob names alice's tool: it is not resolved through her list.
    const reply = await as('bob', w1, '/api/mcp/tools/scoped__notes_alice/call', { method: 'POST', body: { arguments: {} }, names: true });
    expect(reply.json?.details?.is_error ?? true).toBe(true);
  });

  it('bob cannot read alice\'s spilled result, even with its id', async () => {
    const [w1] = workers as [FleetWorkerProcess];
    const big = await as('alice', w1, '/api/mcp/tools/big__text/call', { method: 'POST', body: { arguments: { bytes: 2_000_000 } } });
    const id: string = big.json.details.spilled.id;
    expect((await as('alice', w1, '/api/mcp/tools/read_result/call', { method: 'POST', body: { arguments: { id, length: 10 } } })).json.details.is_error).toBe(false);
    for (const worker of workers) {
      const theirs = await as('bob', worker, '/api/mcp/tools/read_result/call', { method: 'POST', body: { arguments: { id, length: 10 } }, names: true });
      expect(theirs.json.details.is_error).toBe(true);
      expect(theirs.json.content[0].text).toContain('unknown or has expired');
    }
    // The id is alice's secret from here on: bob must never be shown it.
    aliceSessions.add(id);
  });

  it('nothing bob is answered on either worker holds anything of alice\'s: API, search, catalog, sessions, events, the SSE stream', async () => {
    for (const worker of workers) {
      // Her server is a 404 like one that does not exist, everywhere.
      const missing = await as('bob', worker, '/api/mcp/servers/no_such_server', { names: true });
      const hidden = await as('bob', worker, '/api/mcp/servers/alice_vault', { names: true });
      expect(hidden.status).toBe(404);
      expect(hidden.json.error.code).toBe(missing.json.error.code);
      expect((await as('bob', worker, '/api/mcp/servers/alice_vault/inputs', { names: true })).status).toBe(404);
      expect((await as('bob', worker, '/api/mcp/tools/alice_vault__whoami/call', { method: 'POST', body: { arguments: {} }, names: true })).status).toBe(404);
      for (const path of [
        '/api/mcp/servers',
        '/api/mcp/tools',
        '/api/mcp/tools/search?q=notes',
        '/api/mcp/tools/search?q=which+user+token',
        '/api/mcp/catalog',
        '/api/mcp/sessions',
        '/api/mcp/events?since=0',
        '/api/mcp/approvals',
        '/api/mcp/prompts',
        '/api/mcp/servers/stdio_whoami/inputs',
        '/api/mcp/me',
      ]) {
        const reply = await as('bob', worker, path);
        expect(reply.status, `${path}: ${reply.text}`).toBe(200);
      }
      const sessions = (await as('bob', worker, '/api/mcp/sessions')).json.sessions as Array<{ principal: string }>;
      expect(new Set(sessions.map((session) => session.principal))).toEqual(new Set(sessions.length === 0 ? [] : ['bob']));
    }
    // Alice worked on both workers meanwhile (her vault too); bob's streams were open all along.
    await call('alice', workers[1]!, 'alice_vault__whoami');
    // A sentinel of bob's own, his last call: once both streams carry it, they carry everything before it.
    expect((await as('bob', workers[0]!, '/api/mcp/tools/scoped__notes_bob/call', { method: 'POST', body: { arguments: {} } })).status).toBe(200);
    for (const { received } of streams) {
      await until(
        () => eventsIn(received).some((event) => event.type === 'tool.called' && event.tool === 'scoped__notes_bob' && event.principal === 'bob'),
        'bob\'s streams to carry his last call',
      );
    }
    // Bob's own call of the name he guessed is journaled as his: the one place it may appear, since he wrote it.
    const guessed = (text: string) => text.replaceAll('scoped__notes_alice', 'the name bob guessed');
    const seen = [...answered.bob, ...streams.map(({ received }) => received.join(''))].map(guessed);
    for (const text of seen) {
      expect(text).not.toContain(ALICES);
      expect(text).not.toContain(TOKENS.alice);
      for (const secret of aliceSessions) expect(text).not.toContain(secret);
    }
    // And the other way round: nothing alice was answered holds bob's token.
    for (const text of answered.alice) expect(text).not.toContain(TOKENS.bob);
    // The checks looked at something: bob's own answers hold his own calls and his own name.
    expect(seen.join('\n')).toContain('"principal":"bob"');
  });
});
