// Lifecycle coverage, end to end (issue 13): real fixture processes over
// stdio and real OAuth pairs (oidc-provider + an SDK MCP server over
// Streamable HTTP), driven through the real host and its management API,
// read back from the journal's `server.transitioned` events. The journal
// edges required are derived from diagrams/server.mmd (see diagram-edges.ts),
// so an edge added to the machine is demanded here as soon as the diagram is
// regenerated. Every transition the journal shows must be accounted for by the
// scenario that caused it; the last test prints the coverage table.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMcpHost, type McpHost } from '../../src/host.js';
import { fixtureCommand } from '../fixtures/index.js';
import { serve, type Reply, type Served } from '../http/helpers.js';
import {
  consentAsUser,
  startAuthorizationServer,
  startMcpResourceServer,
  type AuthorizationServer,
  type McpResourceServer,
} from '../oauth/servers.js';
import { allGone, isAlive, readPid } from '../support/processes.js';
import { deriveRows, edgeName, readServerDiagram, type Row, type State } from './diagram-edges.js';
import { untilValue } from '../support/wait.js';
import { JournalWatch, WAIT_MS, type Transitioned } from './journal-watch.js';

// The diagram edges the scenarios name, as server.mmd writes them.
const BOOT_QUEUED = 'boot --> pending_queued : always [isQueued]';
const BOOT_OAUTH = 'boot --> pending_checking_auth : always [usesOAuth]';
const BOOT_DISABLED = 'boot --> disabled : always [!isEnabled]';
const CONNECTED = 'pending_connecting --> ready : connect done';
const START_FAILED = 'pending_connecting --> error : connect failed';
const RECONNECT_FAILED = 'pending_connecting --> error : connect failed [isReconnecting]';
const NO_TOKEN = 'pending_connecting --> needs_reauth : connect failed [needsAPerson]';
const MUST_REFRESH = 'pending_checking_auth --> authenticating_refreshing : checkAuth done [needsRefresh]';
const AUTH_CONNECTED = 'authenticating_connecting --> ready : connect done';
const ENABLE = 'disabled --> pending : server.enable';
const ENABLING_CHANGE = 'disabled --> pending : server.configure';
const BACKOFF = 'error_backing_off --> pending : after backoff';
const AS_AWAY = 'authenticating_refreshing --> error : refreshToken failed [isAuthServerAway]';
const AS_BACK = 'error_awaiting_authorization_server --> pending : after authServerBackoff';
const RESTART_READY = 'ready --> closing_to_pending : server.restart';
const STOP_READY = 'ready --> closing_to_stopped : server.stop';
const IDLE = 'ready --> closing_to_pending : server.idle';
const DEMAND_HALTED = 'error_halted --> pending : server.demand [isOnDemand]';
const STOP_ANY = 'any_state --> stopped : server.stop';
const STOP_CLOSING = 'closing --> closing_to_stopped : server.stop';

/** Why the edges between substates of closing (and their self-loops) other than server.stop are not driven. */
const RETARGET =
  'a second event while the server closes: management requests on one server wait for the close, so only shutdown ' +
  '(server.stop, taken) or a hand edit racing the kill grace can send one';

type InternalNote =
  /** Taken when the run recorded evidence for it (`watch.observe`); the text says what counts. */
  | { observed: string }
  /** Taken when one of these edges was taken; `because` says why that implies it. */
  | { impliedBy: string[]; because: string }
  /** Not visible from the journal nor otherwise from outside, or not reachable from the host. */
  | { unobservable: string };

/**
 * Every internal edge of the diagram (a self-loop, an edge between substates
 * of one state, one out of closing): none changes the SPEC state, so
 * none shows as `server.transitioned`. The test fails on an internal edge this
 * table does not classify, and on an entry the diagram no longer has.
 */
const INTERNAL: Record<string, InternalNote> = {
  'any_state --> any_state : server.retool': {
    observed: 'a tool-filter change of a disabled server: server.configured with the filter, no transition',
  },
  'disabled --> disabled : server.configure [disablesIt]': {
    observed: 'a config change of a disabled server that keeps it disabled: server.configured, no transition, no process',
  },
  'pending --> pending : server.restart': { observed: 'a restart of a connecting server: a new process, no transition' },
  'pending --> pending : server.configure': {
    observed: 'a config change of a queued server: server.configured, it connects at once (a process), no transition',
  },
  'pending_choose --> pending_queued : always [isQueued]': {
    unobservable:
      'only a hand edit during startup sends a published server back to the queue (file servers start there from boot, ' +
      'management connects at once); pending stays pending, so nothing reaches the journal; the registry model walks drive it',
  },
  'pending_choose --> pending_checking_auth : always [usesOAuth]': {
    impliedBy: [MUST_REFRESH],
    because: 'the OAuth server was enabled (disabled → pending enters choose), and from choose an OAuth server goes to checking_auth',
  },
  'pending_choose --> pending_connecting : always': { observed: 'a stdio server not queued (a restart) connecting: pending → ready' },
  'pending_queued --> pending_connecting : server.connect': { observed: 'file servers connecting on their turn, in file order' },
  'pending_queued --> pending_choose : server.connect [isUnasked]': {
    observed: 'an on-demand server whose catalog is not known yet, given its turn: connects once to learn its tools',
  },
  'pending_queued --> pending_per_user : server.connect [isPerUser]': {
    observed: 'a per_user server given its startup turn: no process of its own, and the next server connects',
  },
  'pending_queued --> pending_checking_auth : server.connect [usesOAuth]': {
    unobservable:
      'an OAuth server in the file at startup, given its turn; this run adds its OAuth servers over the API (boot → ' +
      'checking_auth); pending stays pending, so nothing reaches the journal; the registry and server model walks drive it',
  },
  'pending_checking_auth --> pending_connecting : checkAuth done': {
    observed: 'an OAuth server with no stored token: no token request, the connect itself ends in needs_reauth',
  },
  'pending_checking_auth --> pending_connecting : checkAuth failed': {
    observed: 'an unreadable credentials file: the auth check fails and the connect reports the file',
  },
  'authenticating_refreshing --> authenticating_connecting : refreshToken done': {
    observed: 'a refresh_token grant at the authorization server, then ready with no consent',
  },
  'authenticating_refreshing --> authenticating_connecting : refreshToken failed': {
    observed: 'a token endpoint answering 400 without an OAuth error: the refresh fails, the connect goes on with the stored token',
  },
  'authenticating_consenting --> authenticating_consenting : auth.url': {
    observed: 'POST /auth answers with the authorization URL the consent reported',
  },
  'needs_reauth --> needs_reauth : auth.refused': {
    unobservable:
      "a consent's code refused at a worker's public callback (`--public-url`) while the server waits for a person; this run answers " +
      'consents on the loopback callback; test/fleet/oauth-fleet.test.ts drives it on workers sharing a database',
  },
  'authenticating_consenting --> authenticating_connecting : auth.completed': {
    observed: 'the loopback callback answers 200, then authenticating → ready',
  },
  'pending --> pending : server.demand': {
    observed: 'two calls at once to a waiting on-demand server: the second demand finds it connecting; both answered, one process',
  },
  'pending_choose --> pending_on_demand : always [isUnasked && knowsCatalog]': {
    observed: 'an on-demand server whose catalog is known back in pending with no process after idling',
  },
  'pending_choose --> pending_per_user : always [isPerUser]': {
    observed: 'a per_user server restarted: back in pending with no process of its own',
  },
  'pending_on_demand --> pending_choose : server.demand': {
    observed: 'a call to a tool of a waiting on-demand server starts it: pending → ready, then the answer',
  },
  'ready --> ready : call.started': {
    observed: 'a call longer than idle_timeout_seconds keeps an on-demand server ready until it ends',
  },
  'ready --> ready : call.finished': {
    observed: 'the on-demand server idles only after its last call ended',
  },
  'ready --> ready : after stable': {
    unobservable:
      'only resets the failure count in the context: no journal event marks it; its effect shows only as a later ' +
      'reconnect not refused, after waiting out reconnect.max_delay_seconds',
  },
  'ready_serving --> ready_serving : catalog.tools_changed': {
    observed: 'a tools/list_changed: tools.registered again while ready, same process, no transition',
  },
  'ready_serving --> ready_serving : server.retool': {
    observed: 'a tool-filter change of a ready server: tools.registered again, same process, no transition',
  },
  'closing --> closing : server.connect': {
    unobservable:
      'the startup queue reaching a server a hand edit sent back to it while it was closing: it only leaves the queue, ' +
      'where closing goes stays, so nothing reaches the journal',
  },
  'closing_to_disabled --> closing_to_disabled : server.connect': {
    unobservable:
      'the startup queue reaching a server that management disabled while it was closing: it only leaves the ' +
      'queue and keeps its config, so nothing reaches the journal',
  },
  'closing_to_pending --> closing_to_pending : server.demand': {
    unobservable:
      'a call arriving in the milliseconds an idle on-demand server takes to close its connection: it only marks the ' +
      'server asked for, so nothing reaches the journal but the reconnect that follows; the model-based walks drive it',
  },
  'closing_to_pending --> closing_to_pending : server.restart': { unobservable: RETARGET },
  'closing_to_pending --> closing_to_pending : server.enable': { unobservable: RETARGET },
  'closing_to_pending --> closing_to_pending : server.configure': { unobservable: RETARGET },
  'closing_to_disabled --> closing_to_disabled : server.disable': { unobservable: RETARGET },
  'closing_to_disabled --> closing_to_disabled : server.configure [disablesIt]': { unobservable: RETARGET },
  'closing_to_stopped --> stopped : closeConnection done': {
    impliedBy: [STOP_READY, STOP_CLOSING],
    because: 'closing for stopped was taken and the process is gone',
  },
  'closing_to_pending --> pending : closeConnection done': {
    impliedBy: [RESTART_READY, 'ready --> closing_to_pending : server.configure', IDLE],
    because: 'closing for pending was taken and the next transition left pending',
  },
  'closing_to_disabled --> disabled : closeConnection done': {
    impliedBy: ['ready --> closing_to_disabled : server.disable', 'ready --> closing_to_disabled : server.configure [disablesIt]'],
    because: 'closing for disabled was taken and the next transition left disabled',
  },
  'closing_to_needs_reauth --> needs_reauth : closeConnection done': {
    impliedBy: ['ready --> closing_to_needs_reauth : connection.closed [needsAPerson]'],
    because: 'closing for needs_reauth was taken and the server stayed there until shutdown',
  },
  'closing_to_error --> error : closeConnection done': {
    impliedBy: ['ready --> closing_to_error : connection.closed'],
    because: 'closing for error was taken and the next transition left error',
  },
  'closing_to_awaiting_authorization_server --> error_awaiting_authorization_server : closeConnection done': {
    unobservable:
      'its way in (a ready server whose token runs out while its authorization server is stopped) is driven end to end ' +
      'by test/oauth/as-away.test.ts, not here; the journal shows no transition for it (error is shown from the start)',
  },
  'error_deciding --> error_backing_off : always [mayReconnect]': {
    impliedBy: [BACKOFF],
    because: 'backing_off is entered only from deciding',
  },
  'error_deciding --> error_awaiting_authorization_server : always [awaitsAuthServer]': {
    observed: 'the authorization server stopped: error (unreachable), then error → pending after the backoff, no consent',
  },
  'error_deciding --> error_halted : always [isReconnecting]': {
    observed: 'the circuit opens: "gave up after N reconnect attempt(s)"',
  },
  'error_deciding --> error_halted : always': {
    observed: 'a failed start stays in error with no reconnect until it is restarted',
  },
  // close() of a real connection does not fail (it ends the child whatever happens); handled as done.
  ...Object.fromEntries(
    ['pending', 'disabled', 'error', 'needs_reauth', 'stopped', 'awaiting_authorization_server'].map((to) => [
      `closing_to_${to} --> ${to === 'awaiting_authorization_server' ? 'error_' : ''}${to} : closeConnection failed`,
      { unobservable: 'close() of a real connection does not fail (it ends the child whatever happens); handled as done' },
    ]),
  ),
};

const derived = deriveRows(readServerDiagram());

/** Diagram edges the journal would show that no scenario drives, and why. */
const NOT_DRIVEN: Record<string, string> = {
  'authenticating_consenting --> needs_reauth : auth.refused':
    "needs a consent's answer refused at a worker's public callback (`--public-url`); this run answers consents on the " +
    'loopback callback (the journal edge is taken via auth.failed); test/fleet/oauth-fleet.test.ts drives it on workers sharing a database',
  'authenticating_connecting --> needs_reauth : connect failed [needsAPerson]':
    'needs an MCP server refusing the token a refresh or consent just produced; the fixture accepts every token its ' +
    'authorization server issues (the journal edge is taken via refreshToken failed and auth.failed)',
  'boot --> pending_connecting : always':
    'needs a stdio server added over the API (it connects at once); the journal edge null → pending is taken via the ' +
    'file servers (queued) and the OAuth servers added over the API; the server model walks drive it',
  'boot --> pending_per_user : always [isPerUser]':
    'needs a per_user server added over the API; the journal edge null → pending is taken via the file servers, ' +
    'pu among them (its startup turn leads it to per_user)',
  'boot --> pending_on_demand : always [isUnasked && knowsCatalog]':
    'needs an on-demand server added over the API whose catalog is already known (a deleted one added again); the ' +
    'journal edge null → pending is taken via the file servers, od among them; the server model walks drive it',
  'authenticating_connecting --> error : connect failed [isReconnecting]':
    'needs an OAuth server that lost its connection (failures > 0) and must refresh before reconnecting; a remote ' +
    'connection is lost only by an unanswered ping, which the fixture never lets happen (the journal edge is taken via a plain failed connect)',
  'pending_connecting --> error : connect failed [isAuthServerAway]':
    'needs an MCP server refusing a token our clock still holds valid while the authorization server is away; ' +
    'the journal edge pending → error is taken via a failed start, the wait for the authorization server via refreshToken failed',
  'authenticating_connecting --> error : connect failed [isAuthServerAway]':
    'needs the authorization server to go away between the refresh and the connect that follows it; the journal edge ' +
    'is taken via a plain failed connect, the wait for the authorization server via refreshToken failed',
  'ready --> closing_to_awaiting_authorization_server : connection.closed [isAuthServerAway]':
    'needs a ready server whose token runs out while its authorization server is stopped, driven end to end by ' +
    'test/oauth/as-away.test.ts; the journal edge ready → error is taken via a lost connection',
  // Every edge between substates of closing but the stop's, as the diagram draws them.
  ...Object.fromEntries(
    derived.rows
      .filter((row) => row.kind === 'retarget' && row.edge.text !== STOP_CLOSING)
      .map((row) => [row.edge.text, RETARGET]),
  ),
};

const STDIO_SERVERS = ['alpha', 'beta', 'gamma', 'crashy', 'once', 'stubborn', 'od', 'pu', 'hung1', 'hung2', 'hung3', 'hung4'];

let dir: string;
let host: McpHost;
let served: Served;
let watch: JournalWatch;
const oauth: Record<'as1' | 'as2' | 'as3', AuthorizationServer> = {} as never;
const mcp: Record<'a' | 'b' | 'c', McpResourceServer> = {} as never;
const closed = new Set<{ close(): Promise<void> }>();
/** Every fixture pid seen: all must be gone at the end. */
const pids = new Set<number>();
/** Requests that end only when the server leaves pending (at shutdown). */
const outstanding: Array<Promise<Reply & { method: string }>> = [];

const pidFile = (name: string) => join(dir, `${name}.pid`);
function pidOf(name: string): number {
  const pid = readPid(pidFile(name));
  if (!(pid > 0)) throw new Error(`${name}: no pid in ${pidFile(name)}`);
  pids.add(pid);
  return pid;
}
function pidIfAny(name: string): number | undefined {
  if (!existsSync(pidFile(name))) return undefined;
  const pid = readPid(pidFile(name));
  return pid > 0 ? pid : undefined;
}

function local(name: string, fixture: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const { env, ...rest } = extra as { env?: Record<string, string> };
  return { type: 'local', command: fixtureCommand(fixture), env: { FIXTURE_PID_FILE: pidFile(name), ...env }, timeout_seconds: 15, ...rest };
}

function oauthServer(url: string): Record<string, unknown> {
  return { type: 'remote', url, transport: 'streamable_http', timeout_seconds: 15, auth: { kind: 'oauth' } };
}

function api(method: string, path: string, body?: unknown): Promise<Reply & { method: string }> {
  return served.request(path, { method, body }).then((reply) => Object.assign(reply, { method }));
}
async function patch(name: string, body: Record<string, unknown>, status = 200): Promise<Reply> {
  const reply = await api('PATCH', `/api/mcp/servers/${name}`, body);
  expect(reply.status, `PATCH ${name} ${JSON.stringify(body)}: ${reply.text}`).toBe(status);
  return reply;
}
async function post(path: string, status = 200): Promise<Reply> {
  const reply = await api('POST', path);
  expect(reply.status, `POST ${path}: ${reply.text}`).toBe(status);
  return reply;
}

const credentialsFile = (name: string) => join(dir, 'oauth', `${name}.json`);
const credentials = (name: string) => JSON.parse(readFileSync(credentialsFile(name), 'utf8'));
/** Makes the stored access token look expired, as after a night away: a connect must refresh it first. */
function expireStoredToken(name: string): void {
  const record = credentials(name);
  record.tokens.expires_at = Date.now() - 1000;
  record.tokens.obtained_at = record.tokens.expires_at - 600_000;
  writeFileSync(credentialsFile(name), JSON.stringify(record));
}
async function closeOnce(server: { close(): Promise<void> }): Promise<void> {
  if (closed.has(server)) return;
  closed.add(server);
  await server.close();
}

/** POST /auth: needs_reauth → authenticating; the authorization URL. */
async function beginConsent(name: string): Promise<string> {
  const begun = await post(`/api/mcp/servers/${name}/auth`);
  await watch.took(name, 'needs_reauth', 'authenticating', 'needs_reauth --> authenticating_consenting : auth.begin');
  expect(begun.json.authorization_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/auth\?/);
  watch.observe('authenticating_consenting --> authenticating_consenting : auth.url', `${name}: POST /auth answered with the URL`);
  return begun.json.authorization_url as string;
}

/** A consent over the API, completed headlessly: needs_reauth → authenticating → ready. */
async function consent(name: string): Promise<void> {
  const url = await beginConsent(name);
  const callback = await consentAsUser(url);
  expect(callback.status, callback.text).toBe(200);
  await watch.took(name, 'authenticating', 'ready', AUTH_CONNECTED);
  watch.observe('authenticating_consenting --> authenticating_connecting : auth.completed', `${name}: callback 200, then ready`);
}

/** An OAuth server added over the API: no token yet, so pending → needs_reauth. */
async function addOAuthServer(name: string, url: string, as: AuthorizationServer): Promise<void> {
  const requests = as.tokenRequests.length;
  const reply = await api('POST', '/api/mcp/servers', { name, ...oauthServer(url) });
  expect(reply.status, reply.text).toBe(201);
  expect(reply.json).toMatchObject({ state: 'needs_reauth', error_kind: 'needs_reauth' });
  await watch.took(name, null, 'pending', BOOT_OAUTH);
  await watch.took(name, 'pending', 'needs_reauth', NO_TOKEN);
  expect(as.tokenRequests.length).toBe(requests);
  watch.observe(
    'pending_checking_auth --> pending_connecting : checkAuth done',
    `${name}: no stored token, no token request; the connect said consent is needed`,
  );
}

function noTransitionsSince(mark: number, ...servers: string[]): void {
  for (const server of servers) {
    expect(watch.transitions(server).filter((event) => event.seq > mark), `${server} moved`).toEqual([]);
  }
}

/**
 * One scenario: a test of its own, naming what it drives; the watch attributes
 * what it sees to it under `key` (the coverage table's name for it).
 */
function scenario(key: string, title: string, run: () => Promise<void>, timeoutMs = 90_000): void {
  it(
    `${key} — ${title}`,
    async () => {
      watch.scenario = key;
      await run();
    },
    timeoutMs,
  );
}

describe('server lifecycle coverage: every edge of diagrams/server.mmd, end to end', () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-lifecycle-'));
    oauth.as1 = await startAuthorizationServer({ accessTokenTtl: 600 });
    mcp.a = await startMcpResourceServer(oauth.as1.issuer, 'a');
    // Short-lived tokens: the background refresh of a ready server runs within a second.
    oauth.as2 = await startAuthorizationServer({ accessTokenTtl: 2 });
    mcp.c = await startMcpResourceServer(oauth.as2.issuer, 'c');
    oauth.as3 = await startAuthorizationServer({ accessTokenTtl: 600 });
    mcp.b = await startMcpResourceServer(oauth.as3.issuer, 'b');
    const reconnect = { initial_delay_seconds: 0.1, max_delay_seconds: 1 };
    // File order is startup order; hung1 holds the one startup slot, so hung2–hung4 stay queued.
    const servers = {
      alpha: local('alpha', 'healthy', { reconnect }),
      beta: local('beta', 'healthy', { enabled: false }),
      gamma: local('gamma', 'changing-catalog'),
      crashy: local('crashy', 'crash-on-start'),
      once: local('once', 'first-run-only', { env: { FIXTURE_MARKER: join(dir, 'once.marker') }, reconnect: { ...reconnect, max_attempts: 2 } }),
      stubborn: local('stubborn', 'stubborn'),
      // Started on demand; a first run (no catalog in the journal yet) connects it once to learn its tools.
      // It refuses to start while od.broken exists (written by the scenario 'od failed start').
      od: local('od', 'healthy', { start: 'on_demand', idle_timeout_seconds: 1, env: { FIXTURE_BROKEN_WHILE: join(dir, 'od.broken') } }),
      // Per user: its turn in the queue connects nothing (only its principals' sessions would), and frees the slot.
      pu: local('pu', 'healthy', { scope: 'per_user' }),
      hung1: local('hung1', 'hang-on-init', { timeout_seconds: 600 }),
      hung2: local('hung2', 'hang-on-init', { timeout_seconds: 600 }),
      hung3: local('hung3', 'hang-on-init', { timeout_seconds: 600 }),
      hung4: local('hung4', 'hang-on-init', { timeout_seconds: 600 }),
    };
    writeFileSync(join(dir, 'mcp_servers.json'), `${JSON.stringify({ servers }, null, 2)}\n`);
    host = createMcpHost({ stateDir: dir, persistJournal: false, logger: { info: () => {}, warn: () => {} } });
    watch = new JournalWatch(host, derived.rows, derived.closingLeavesFor);
    served = await serve(host);
    await host.start();
  }, 60_000);

  afterAll(async () => {
    await host?.shutdown();
    await Promise.allSettled(outstanding);
    if (served) await closeOnce(served);
    for (const server of [...Object.values(mcp), ...Object.values(oauth)]) await closeOnce(server);
    watch?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('the diagram maps onto journal edges, and every internal edge is classified', () => {
    expect(derived.problems).toEqual([]);
    const internal = derived.rows.filter((row) => row.kind === 'internal').map((row) => row.edge.text);
    expect(internal.filter((edge) => !(edge in INTERNAL)), 'internal edges INTERNAL does not classify').toEqual([]);
    expect(Object.keys(INTERNAL).filter((edge) => !internal.includes(edge)), 'INTERNAL entries the diagram lacks').toEqual([]);
    const shown = derived.rows.filter((row) => row.kind !== 'internal').map((row) => row.edge.text);
    expect(Object.keys(NOT_DRIVEN).filter((edge) => !shown.includes(edge)), 'NOT_DRIVEN entries the diagram lacks').toEqual([]);
  });

  scenario('startup', 'file servers published at once, connected one at a time in file order', async () => {
    for (const name of STDIO_SERVERS.filter((name) => name !== 'beta')) await watch.took(name, null, 'pending', BOOT_QUEUED);
    await watch.took('beta', null, 'disabled', BOOT_DISABLED);
    const alpha = await watch.took('alpha', 'pending', 'ready', CONNECTED);
    const gamma = await watch.took('gamma', 'pending', 'ready', CONNECTED);
    const crashy = await watch.took('crashy', 'pending', 'error', START_FAILED);
    expect(crashy.error).toContain('exited with code 3');
    const once = await watch.took('once', 'pending', 'ready', CONNECTED);
    const stubborn = await watch.took('stubborn', 'pending', 'ready', CONNECTED);
    const od = await watch.took('od', 'pending', 'ready', CONNECTED);
    expect([alpha, gamma, crashy, once, stubborn, od].map((event) => event.seq)).toEqual(
      [alpha, gamma, crashy, once, stubborn, od].map((event) => event.seq).sort((a, b) => a - b),
    );
    for (const name of ['alpha', 'gamma', 'once', 'stubborn', 'od']) pidOf(name);
    watch.observe('pending_queued --> pending_connecting : server.connect', 'alpha, gamma, crashy, once, stubborn connected in file order');
    watch.observe('pending_queued --> pending_choose : server.connect [isUnasked]', 'od: no catalog known yet, connected in its turn');
    // hung1 takes the slot and never answers: the servers after it wait in the queue, with no process.
    await untilValue(() => pidIfAny('hung1'), 'hung1 to be spawned', WAIT_MS);
    pidOf('hung1');
    // pu's turn came before hung1's: it spawned nothing and held no slot.
    expect(pidIfAny('pu')).toBeUndefined();
    expect(host.server('pu')?.state).toBe('pending');
    watch.observe('pending_queued --> pending_per_user : server.connect [isPerUser]', 'pu: its turn passed (hung1 spawned after it), no process, pending');
    expect(['hung2', 'hung3', 'hung4'].filter((name) => existsSync(pidFile(name)))).toEqual([]);
    expect(['hung2', 'hung3', 'hung4'].map((name) => host.server(name)?.state)).toEqual(['pending', 'pending', 'pending']);
    // Restarted, it goes through choose to the same place: still no process of its own.
    const mark = watch.mark();
    await post('/api/mcp/servers/pu/restart');
    expect(pidIfAny('pu')).toBeUndefined();
    expect(host.server('pu')?.state).toBe('pending');
    noTransitionsSince(mark, 'pu');
    watch.observe('pending_choose --> pending_per_user : always [isPerUser]', 'pu: restarted, pending again with no process');
  });

  scenario('od idle', 'on demand: no call for idle_timeout_seconds, ready → pending, the process ends and nothing respawns', async () => {
    const pid = pidOf('od');
    await watch.took('od', 'ready', 'pending', IDLE);
    expect(await allGone([pid])).toBe(true);
    // Its catalog is known now: it waits with no process (the pid file keeps the old pid) and publishes its tools.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(pidOf('od')).toBe(pid);
    const catalog = (await api('GET', '/api/mcp/catalog')).json as { servers: Array<{ name: string; tools: Array<{ name: string }> }> };
    expect(catalog.servers.find((server) => server.name === 'od')?.tools.map((tool) => tool.name)).toContain('od__echo');
    watch.observe('pending_choose --> pending_on_demand : always [isUnasked && knowsCatalog]', `od: pending, process ${pid} gone, none spawned`);
  });

  scenario('od demand', 'on demand: calls start it, a long call holds it ready, idling stops it again', async () => {
    const before = pidOf('od');
    // Two calls at once: the first demand starts it, the second finds it connecting; one process serves both.
    const [first, second] = await Promise.all([
      api('POST', '/api/mcp/tools/od__echo/call', { arguments: { text: 'one' } }),
      api('POST', '/api/mcp/tools/od__add/call', { arguments: { a: 1, b: 2 } }),
    ]);
    expect([first.status, first.json.details.is_error, second.status, second.json.details.is_error]).toEqual([200, false, 200, false]);
    await watch.took('od', 'pending', 'ready', CONNECTED);
    const pid = pidOf('od');
    expect(pid).not.toBe(before);
    watch.observe('pending_on_demand --> pending_choose : server.demand', `od: a call started it (process ${pid}) and was answered`);
    watch.observe('pending --> pending : server.demand', 'od: two calls at once, both answered by one process');
    // A call of 1.5 s against an idle timeout of 1 s: still ready when it ends.
    const mark = watch.mark();
    const slow = await api('POST', '/api/mcp/tools/od__slow/call', { arguments: { ms: 1500 } });
    expect(slow.json.details.is_error).toBe(false);
    noTransitionsSince(mark, 'od');
    expect(isAlive(pid)).toBe(true);
    watch.observe('ready --> ready : call.started', 'od: ready throughout a call longer than its idle timeout');
    await watch.took('od', 'ready', 'pending', IDLE);
    expect(await allGone([pid])).toBe(true);
    watch.observe('ready --> ready : call.finished', 'od: idled once the long call had ended');
  });

  scenario('od failed start', 'on demand: a failed start halts; each call starts it again, once fixed a call is answered', async () => {
    const broken = join(dir, 'od.broken');
    writeFileSync(broken, '');
    // The fixture adds a line to od.broken per start it refuses.
    const refused = () => readFileSync(broken, 'utf8').split('\n').filter(Boolean).length;
    const call = (text: string) => api('POST', '/api/mcp/tools/od__echo/call', { arguments: { text } });
    expect((await call('one')).json.details.is_error).toBe(true);
    const failed = await watch.took('od', 'pending', 'error', START_FAILED);
    expect(failed.error).toContain('exited with code 3');
    expect(refused()).toBe(1);
    // Halted: the next call starts it again (one start), and it fails again.
    expect((await call('two')).json.details.is_error).toBe(true);
    await watch.took('od', 'error', 'pending', DEMAND_HALTED);
    await watch.took('od', 'pending', 'error', START_FAILED);
    expect(refused()).toBe(2);
    // The cause fixed: the next call starts it and is answered, with no restart by hand.
    rmSync(broken);
    const answered = await call('three');
    expect([answered.status, answered.json.details.is_error]).toEqual([200, false]);
    await watch.took('od', 'error', 'pending', DEMAND_HALTED);
    await watch.took('od', 'pending', 'ready', CONNECTED);
    const pid = pidOf('od');
    await watch.took('od', 'ready', 'pending', IDLE);
    expect(await allGone([pid])).toBe(true);
  });

  scenario('alpha restart', 'POST restart: ready → pending → ready on a new process', async () => {
    const before = pidOf('alpha');
    const reply = await post('/api/mcp/servers/alpha/restart');
    expect(reply.json.state).toBe('ready');
    await watch.took('alpha', 'ready', 'pending', 'ready --> closing_to_pending : server.restart');
    await watch.took('alpha', 'pending', 'ready', CONNECTED);
    expect(pidOf('alpha')).not.toBe(before);
    expect(await allGone([before])).toBe(true);
    watch.observe('pending_choose --> pending_connecting : always', 'alpha (no longer queued) connected after its restart');
  });

  scenario('alpha change', 'PATCH a field: ready → pending → ready', async () => {
    await patch('alpha', { timeout_seconds: 14 });
    await watch.took('alpha', 'ready', 'pending', 'ready --> closing_to_pending : server.configure');
    await watch.took('alpha', 'pending', 'ready', CONNECTED);
  });

  scenario('alpha retool', 'PATCH the tool filter: tools re-registered in place', async () => {
    const pid = pidOf('alpha');
    const mark = watch.mark();
    await patch('alpha', { tools: { exclude: ['fail'] } });
    const registered = await watch.after(
      mark,
      (event): event is Extract<typeof event, { type: 'tools.registered' }> => event.type === 'tools.registered' && event.server === 'alpha',
      'alpha: tools.registered after the filter change',
    );
    const names = registered.tools.map((tool) => tool.name);
    expect(names).toContain('alpha__echo');
    expect(names).not.toContain('alpha__fail');
    expect(pidOf('alpha')).toBe(pid);
    expect(isAlive(pid)).toBe(true);
    noTransitionsSince(mark, 'alpha');
    watch.observe('ready_serving --> ready_serving : server.retool', `alpha: tools registered again without alpha__fail, process ${pid} kept`);
  });

  scenario('alpha off/on', 'PATCH enabled false, then true', async () => {
    const pid = pidOf('alpha');
    expect((await patch('alpha', { enabled: false })).json.state).toBe('disabled');
    await watch.took('alpha', 'ready', 'disabled', 'ready --> closing_to_disabled : server.disable');
    expect(await allGone([pid])).toBe(true);
    expect((await patch('alpha', { enabled: true })).json.state).toBe('ready');
    await watch.took('alpha', 'disabled', 'pending', ENABLE);
    await watch.took('alpha', 'pending', 'ready', CONNECTED);
  });

  scenario('alpha off/on+change', 'PATCH enabled with another field: disabling, then enabling', async () => {
    const pid = pidOf('alpha');
    await patch('alpha', { enabled: false, timeout_seconds: 13 });
    await watch.took('alpha', 'ready', 'disabled', 'ready --> closing_to_disabled : server.configure [disablesIt]');
    expect(await allGone([pid])).toBe(true);
    await patch('alpha', { enabled: true, timeout_seconds: 15 });
    await watch.took('alpha', 'disabled', 'pending', ENABLING_CHANGE);
    await watch.took('alpha', 'pending', 'ready', CONNECTED);
  });

  scenario('alpha killed', 'its child killed: ready → error, back through the reconnect backoff', async () => {
    const pid = pidOf('alpha');
    process.kill(pid);
    const lost = await watch.took('alpha', 'ready', 'error', 'ready --> closing_to_error : connection.closed');
    expect(lost.error_kind).toBe('transport_closed');
    await watch.took('alpha', 'error', 'pending', BACKOFF);
    await watch.took('alpha', 'pending', 'ready', CONNECTED);
    expect(pidOf('alpha')).not.toBe(pid);
  });

  scenario('alpha DELETE', 'DELETE: ready → stopped, process gone, server removed', async () => {
    const pid = pidOf('alpha');
    const mark = watch.mark();
    const reply = await api('DELETE', '/api/mcp/servers/alpha');
    expect(reply.status, reply.text).toBe(204);
    await watch.took('alpha', 'ready', 'stopped', STOP_READY);
    await watch.after(mark, (event) => event.type === 'server.removed' && event.server === 'alpha', 'alpha: server.removed');
    expect(await allGone([pid])).toBe(true);
    expect((await api('GET', '/api/mcp/servers/alpha')).status).toBe(404);
  });

  scenario('gamma list_changed', 'a tool added by the server: tools re-registered in place', async () => {
    const pid = pidOf('gamma');
    const mark = watch.mark();
    const call = await api('POST', '/api/mcp/tools/gamma__add_tool/call', { arguments: { name: 'extra' } });
    expect(call.status, call.text).toBe(200);
    expect(call.json.details.is_error).toBe(false);
    await watch.after(
      mark,
      (event) => event.type === 'tools.registered' && event.server === 'gamma' && event.tools.some((tool) => tool.name === 'gamma__extra'),
      'gamma: tools.registered with gamma__extra',
    );
    expect(pidOf('gamma')).toBe(pid);
    noTransitionsSince(mark, 'gamma');
    watch.observe('ready_serving --> ready_serving : catalog.tools_changed', `gamma: gamma__extra registered, process ${pid} kept`);
  });

  scenario('beta changes', 'disabled: PATCH the filter, then a field; no transition, no process', async () => {
    const mark = watch.mark();
    expect((await patch('beta', { tools: { exclude: ['fail'] } })).json.state).toBe('disabled');
    await watch.after(
      mark,
      (event) => event.type === 'server.configured' && event.server === 'beta' && JSON.stringify(event.config.tools).includes('fail'),
      'beta: server.configured with the filter',
    );
    watch.observe('any_state --> any_state : server.retool', 'beta (disabled): server.configured with the filter, no transition');
    const second = watch.mark();
    expect((await patch('beta', { timeout_seconds: 14 })).json.state).toBe('disabled');
    await watch.after(
      second,
      (event) => event.type === 'server.configured' && event.server === 'beta' && event.config.timeout_seconds === 14,
      'beta: server.configured with timeout_seconds 14',
    );
    watch.observe('disabled --> disabled : server.configure [disablesIt]', 'beta: server.configured (timeout 14), no transition');
    noTransitionsSince(mark, 'beta');
    expect(existsSync(pidFile('beta'))).toBe(false);
  });

  scenario('crashy restart/change', 'failed start: POST restart, a failing PATCH and its rollback go through pending back to error', async () => {
    const [failed] = watch.transitions('crashy').filter((event) => event.to === 'error');
    const mark = watch.mark();
    expect((await post('/api/mcp/servers/crashy/restart')).json.state).toBe('error');
    const restarted = await watch.took('crashy', 'error', 'pending', 'error --> pending : server.restart');
    // Nothing moved it in between: a failed start does not reconnect by itself.
    const waited = Date.parse(restarted.at) - Date.parse(failed!.at);
    watch.observe('error_deciding --> error_halted : always', `crashy: failed start, stayed in error ${waited} ms until restarted`);
    await watch.took('crashy', 'pending', 'error', START_FAILED);
    const refused = await patch('crashy', { timeout_seconds: 14 }, 422);
    expect(refused.json.error.code).toBe('start_failed');
    await watch.took('crashy', 'error', 'pending', 'error --> pending : server.configure');
    await watch.took('crashy', 'pending', 'error', START_FAILED);
    // Rolled back: through pending again on the old config.
    await watch.took('crashy', 'error', 'pending', 'error --> pending : server.configure');
    await watch.took('crashy', 'pending', 'error', START_FAILED);
    expect(watch.transitions('crashy').filter((event) => event.seq > mark)).toHaveLength(6);
  });

  scenario('crashy off, failed on', 'disabled from error; an enabling PATCH fails and is rolled back to disabled', async () => {
    expect((await patch('crashy', { enabled: false })).json.state).toBe('disabled');
    await watch.took('crashy', 'error', 'disabled', 'error --> disabled : server.disable');
    await patch('crashy', { enabled: true, timeout_seconds: 13 }, 422);
    await watch.took('crashy', 'disabled', 'pending', ENABLING_CHANGE);
    await watch.took('crashy', 'pending', 'error', START_FAILED);
    await watch.took('crashy', 'error', 'disabled', 'error --> disabled : server.configure [disablesIt]');
    expect(host.server('crashy')?.state).toBe('disabled');
  });

  scenario('once circuit', 'works only on its first run: killed, reconnects back off and fail, the circuit opens', async () => {
    process.kill(pidOf('once'));
    await watch.took('once', 'ready', 'error', 'ready --> closing_to_error : connection.closed');
    await watch.took('once', 'error', 'pending', BACKOFF);
    const first = await watch.took('once', 'pending', 'error', RECONNECT_FAILED);
    expect(first.error).toContain('exited with code 3');
    await watch.took('once', 'error', 'pending', BACKOFF);
    const last = await watch.took('once', 'pending', 'error', RECONNECT_FAILED);
    expect(last.error).toContain('gave up after 2 reconnect attempt(s)');
    watch.observe('error_deciding --> error_halted : always [isReconnecting]', 'once: "gave up after 2 reconnect attempt(s)"');
  });

  scenario('hung2/3 off', 'queued: a disable and a disabling PATCH leave pending', async () => {
    expect((await patch('hung2', { enabled: false })).json.state).toBe('disabled');
    await watch.took('hung2', 'pending', 'disabled', 'pending --> disabled : server.disable');
    expect((await patch('hung3', { enabled: false, timeout_seconds: 500 })).json.state).toBe('disabled');
    await watch.took('hung3', 'pending', 'disabled', 'pending --> disabled : server.configure [disablesIt]');
    expect(['hung2', 'hung3'].filter((name) => existsSync(pidFile(name)))).toEqual([]);
  });

  scenario('hung1/4 re-enter', 'connecting / queued: a restart and a PATCH re-enter pending (new process, no transition)', async () => {
    const mark = watch.mark();
    const old = pidOf('hung1');
    // Both requests wait for the server to leave pending, which only the final shutdown does.
    outstanding.push(api('POST', '/api/mcp/servers/hung1/restart'));
    const fresh = await untilValue(() => {
      const pid = pidIfAny('hung1');
      return pid !== undefined && pid !== old && isAlive(pid) ? pid : undefined;
    }, 'a new hung1 process', WAIT_MS);
    pids.add(fresh);
    expect(await allGone([old])).toBe(true);
    watch.observe('pending --> pending : server.restart', `hung1: process ${old} replaced by ${fresh}`);

    expect(existsSync(pidFile('hung4'))).toBe(false);
    outstanding.push(api('PATCH', '/api/mcp/servers/hung4', { timeout_seconds: 590 }));
    await watch.after(
      mark,
      (event) => event.type === 'server.configured' && event.server === 'hung4' && event.config.timeout_seconds === 590,
      'hung4: server.configured with timeout_seconds 590',
    );
    const spawned = await untilValue(() => pidIfAny('hung4'), 'hung4 to be spawned', WAIT_MS);
    pids.add(spawned);
    watch.observe('pending --> pending : server.configure', `hung4: left the queue and spawned ${spawned}`);
    noTransitionsSince(mark, 'hung1', 'hung4');
  });

  scenario('oa added', 'OAuth server POSTed with no token: pending → needs_reauth', async () => {
    await addOAuthServer('oa', mcp.a.url, oauth.as1);
  });

  scenario('oa consent', 'POST auth, consent completed headlessly: needs_reauth → authenticating → ready', async () => {
    await consent('oa');
    expect(oauth.as1.grants).toEqual(['authorization_code']);
  });

  scenario('oa refresh', 'a stored token due for refresh: pending → authenticating → ready', async () => {
    await patch('oa', { enabled: false });
    await watch.took('oa', 'ready', 'disabled', 'ready --> closing_to_disabled : server.disable');
    expireStoredToken('oa');
    const grants = oauth.as1.grants.length;
    expect((await patch('oa', { enabled: true })).json.state).toBe('ready');
    await watch.took('oa', 'disabled', 'pending', ENABLE);
    await watch.took('oa', 'pending', 'authenticating', MUST_REFRESH);
    await watch.took('oa', 'authenticating', 'ready', AUTH_CONNECTED);
    expect(oauth.as1.grants.slice(grants)).toEqual(['refresh_token']);
    watch.observe('authenticating_refreshing --> authenticating_connecting : refreshToken done', 'oa: refresh_token granted, ready with no consent');
  });

  scenario('oa refresh rejected', 'the refresh rejected (grant revoked): authenticating → needs_reauth', async () => {
    await patch('oa', { enabled: false, timeout_seconds: 14 });
    await watch.took('oa', 'ready', 'disabled', 'ready --> closing_to_disabled : server.configure [disablesIt]');
    await oauth.as1.revokeGrantOf(credentials('oa').tokens.refresh_token);
    expireStoredToken('oa');
    expect((await patch('oa', { enabled: true })).json.state).toBe('needs_reauth');
    await watch.took('oa', 'disabled', 'pending', ENABLE);
    await watch.took('oa', 'pending', 'authenticating', MUST_REFRESH);
    const rejected = await watch.took('oa', 'authenticating', 'needs_reauth', 'authenticating_refreshing --> needs_reauth : refreshToken failed [needsAPerson]');
    expect(rejected).toMatchObject({ error_kind: 'needs_reauth' });
    expect(rejected.error).toContain('invalid_grant');
  });

  scenario('oa consent×restart', 'a consent cancelled by POST restart: authenticating → pending → needs_reauth', async () => {
    const url = await beginConsent('oa');
    expect((await post('/api/mcp/servers/oa/restart')).json.state).toBe('needs_reauth');
    await watch.took('oa', 'authenticating', 'pending', 'authenticating --> pending : server.restart');
    await watch.took('oa', 'pending', 'needs_reauth', NO_TOKEN);
    // The cancelled consent's callback is gone: the user finishing it late reaches nobody.
    await expect(consentAsUser(url)).rejects.toThrow();
  });

  scenario('oa consent×off', 'a consent cancelled by PATCH enabled false', async () => {
    await beginConsent('oa');
    expect((await patch('oa', { enabled: false })).json.state).toBe('disabled');
    await watch.took('oa', 'authenticating', 'disabled', 'authenticating --> disabled : server.disable');
    await patch('oa', { enabled: true });
    await watch.took('oa', 'disabled', 'pending', ENABLE);
    await watch.took('oa', 'pending', 'needs_reauth', NO_TOKEN);
  });

  scenario('oa consent×off+change', 'a consent cancelled by a disabling PATCH', async () => {
    await beginConsent('oa');
    await patch('oa', { enabled: false, timeout_seconds: 13 });
    await watch.took('oa', 'authenticating', 'disabled', 'authenticating --> disabled : server.configure [disablesIt]');
    await patch('oa', { enabled: true, timeout_seconds: 15 });
    await watch.took('oa', 'disabled', 'pending', ENABLING_CHANGE);
    await watch.took('oa', 'pending', 'needs_reauth', NO_TOKEN);
  });

  scenario('oa consent×change', 'a consent cancelled by a PATCH of a field', async () => {
    await beginConsent('oa');
    expect((await patch('oa', { timeout_seconds: 12 })).json.state).toBe('needs_reauth');
    await watch.took('oa', 'authenticating', 'pending', 'authenticating --> pending : server.configure');
    await watch.took('oa', 'pending', 'needs_reauth', NO_TOKEN);
  });

  scenario('oa consent refused', 'a consent refused at the authorization server: authenticating → needs_reauth', async () => {
    const url = await beginConsent('oa');
    const state = new URL(url).searchParams.get('state');
    const port = credentials('oa').redirect_port as number;
    const refused = await fetch(`http://127.0.0.1:${port}/oauth/callback?error=access_denied&state=${state}`);
    expect(refused.status).toBe(400);
    const failed = await watch.took('oa', 'authenticating', 'needs_reauth', 'authenticating_consenting --> needs_reauth : auth.failed');
    expect(failed.error).toContain('access_denied');
  });

  scenario('oa restart/change', 'needs_reauth: POST restart and a PATCH go through pending', async () => {
    expect((await post('/api/mcp/servers/oa/restart')).json.state).toBe('needs_reauth');
    await watch.took('oa', 'needs_reauth', 'pending', 'needs_reauth --> pending : server.restart');
    await watch.took('oa', 'pending', 'needs_reauth', NO_TOKEN);
    await patch('oa', { timeout_seconds: 15 });
    await watch.took('oa', 'needs_reauth', 'pending', 'needs_reauth --> pending : server.configure');
    await watch.took('oa', 'pending', 'needs_reauth', NO_TOKEN);
  });

  scenario('oa off', 'needs_reauth: a disable and a disabling PATCH', async () => {
    await patch('oa', { enabled: false });
    await watch.took('oa', 'needs_reauth', 'disabled', 'needs_reauth --> disabled : server.disable');
    await patch('oa', { enabled: true });
    await watch.took('oa', 'disabled', 'pending', ENABLE);
    await watch.took('oa', 'pending', 'needs_reauth', NO_TOKEN);
    await patch('oa', { enabled: false, timeout_seconds: 14 });
    await watch.took('oa', 'needs_reauth', 'disabled', 'needs_reauth --> disabled : server.configure [disablesIt]');
    await patch('oa', { enabled: true });
    await watch.took('oa', 'disabled', 'pending', ENABLE);
    await watch.took('oa', 'pending', 'needs_reauth', NO_TOKEN);
  });

  scenario('lost token', '2 s tokens, the grant revoked while ready: ready → needs_reauth', async () => {
    await addOAuthServer('lost', mcp.c.url, oauth.as2);
    await consent('lost');
    await oauth.as2.revokeGrantOf(credentials('lost').tokens.refresh_token);
    // The background refresh (at half the token's life) is refused: the token is lost.
    const lost = await watch.took('lost', 'ready', 'needs_reauth', 'ready --> closing_to_needs_reauth : connection.closed [needsAPerson]');
    expect(lost).toMatchObject({ error_kind: 'needs_reauth' });
    expect(lost.error).toContain('invalid_grant');
    expect(host.tools().filter((tool) => tool.name.startsWith('lost__'))).toEqual([]);
  });

  scenario('ob bad refresh', 'its token endpoint answers 400 without an OAuth error: the refresh fails, the connect uses the stored token', async () => {
    await addOAuthServer('ob', mcp.b.url, oauth.as3);
    await consent('ob');
    expireStoredToken('ob');
    oauth.as3.failWith({ status: 400, pathSuffix: '/token' });
    const stored = credentials('ob').tokens.access_token as string;
    const presented = mcp.b.presentedTokens.length;
    expect((await post('/api/mcp/servers/ob/restart')).json.state).toBe('ready');
    oauth.as3.failWith(null);
    await watch.took('ob', 'ready', 'pending', RESTART_READY);
    await watch.took('ob', 'pending', 'authenticating', MUST_REFRESH);
    await watch.took('ob', 'authenticating', 'ready', AUTH_CONNECTED);
    expect(mcp.b.presentedTokens.slice(presented)).toContain(stored);
    watch.observe(
      'authenticating_refreshing --> authenticating_connecting : refreshToken failed',
      'ob: the token endpoint answered 400 without an OAuth error, connected with the stored token',
    );
    // The token endpoint answers again: the ready server's own refresh (retried within 10 s) stores a fresh token.
    await untilValue(() => credentials('ob').tokens.expires_at > Date.now(), 'ob refreshed in the background', 20_000);
  });

  scenario('ob AS down', 'its authorization server stopped: authenticating → error (unreachable), ready by itself once it is back', async () => {
    await oauth.as3.pause();
    expireStoredToken('ob');
    const grants = oauth.as3.grants.length;
    const restarted = await post('/api/mcp/servers/ob/restart');
    expect(restarted.json).toMatchObject({ state: 'error', error_kind: 'unreachable' });
    await watch.took('ob', 'ready', 'pending', RESTART_READY);
    await watch.took('ob', 'pending', 'authenticating', MUST_REFRESH);
    const away = await watch.took('ob', 'authenticating', 'error', AS_AWAY);
    expect(away).toMatchObject({ error_kind: 'unreachable', error: expect.stringContaining(`could not reach the authorization server ${oauth.as3.issuer} (of `) });
    // Back before the first retry (about reconnect.initial_delay_seconds): that retry refreshes, no consent.
    await oauth.as3.resume();
    await watch.took('ob', 'error', 'pending', AS_BACK);
    await watch.took('ob', 'pending', 'authenticating', MUST_REFRESH);
    await watch.took('ob', 'authenticating', 'ready', AUTH_CONNECTED);
    expect(oauth.as3.grants.slice(grants)).toEqual(['refresh_token']);
    watch.observe(
      'error_deciding --> error_awaiting_authorization_server : always [awaitsAuthServer]',
      'ob: unreachable while its authorization server was stopped, then ready by itself',
    );
  });

  scenario('ob MCP down', 'its MCP server gone: authenticating → error, rolled back to disabled', async () => {
    expireStoredToken('ob');
    await patch('ob', { enabled: false });
    await watch.took('ob', 'ready', 'disabled', 'ready --> closing_to_disabled : server.disable');
    await closeOnce(mcp.b);
    const refused = await patch('ob', { enabled: true }, 422);
    expect(refused.json.error.code).toBe('start_failed');
    await watch.took('ob', 'disabled', 'pending', ENABLE);
    await watch.took('ob', 'pending', 'authenticating', MUST_REFRESH);
    const failed = await watch.took('ob', 'authenticating', 'error', 'authenticating_connecting --> error : connect failed');
    // Nothing answers at its URL any more: unreachable, not a consent to ask for.
    expect(failed).toMatchObject({ error_kind: 'unreachable' });
    expect(failed.error).toContain('ECONNREFUSED');
    await watch.took('ob', 'error', 'disabled', 'error --> disabled : server.disable');
  });

  scenario('ob bad creds', 'an unreadable credentials file: the auth check fails, the connect asks for consent', async () => {
    writeFileSync(credentialsFile('ob'), '{ not json');
    expect((await patch('ob', { enabled: true })).json.state).toBe('needs_reauth');
    await watch.took('ob', 'disabled', 'pending', ENABLE);
    const failed = await watch.took('ob', 'pending', 'needs_reauth', NO_TOKEN);
    expect(failed.error).toContain('is not a valid credentials file');
    watch.observe('pending_checking_auth --> pending_connecting : checkAuth failed', 'ob: connect failed on the unreadable credentials file');
  });

  scenario('shutdown', 'every server stops from the state it is in, a closing one too; every process is gone', async () => {
    // A consent under way when the shutdown comes.
    await beginConsent('oa');
    // A server still closing for a restart (stubborn ignores SIGTERM: its close lasts the kill grace).
    const stubborn = pidOf('stubborn');
    outstanding.push(api('POST', '/api/mcp/servers/stubborn/restart'));
    await watch.took('stubborn', 'ready', 'pending', 'ready --> closing_to_pending : server.restart');
    const states = new Map<string, State>();
    for (const event of watch.transitions()) states.set(event.server, event.to);
    const stopping = host.shutdown();
    await watch.took('stubborn', 'pending', 'stopped', STOP_CLOSING);
    // Its process outlived the stop: the server was still closing (for pending) when the stop re-aimed it.
    expect(isAlive(stubborn), 'stubborn had already closed').toBe(true);
    for (const [name, state] of states) {
      if (name === 'stubborn' || state === 'stopped') continue;
      await watch.took(name, state, 'stopped', state === 'ready' ? STOP_READY : STOP_ANY);
    }
    await stopping;
    // The requests that waited for their server to leave pending (or closing) end with it: a restart answers
    // the stopped view; a PATCH whose change never ran is refused, and its config is not persisted.
    const replies = await Promise.all(outstanding);
    for (const reply of replies) {
      const expected = reply.method === 'PATCH' ? [503, 'shutting_down'] : [200, 'stopped'];
      expect([reply.status, reply.method === 'PATCH' ? reply.json?.error?.code : reply.json?.state], reply.text).toEqual(expected);
    }
    const persisted = JSON.parse(readFileSync(join(dir, 'mcp_servers.json'), 'utf8'));
    expect(persisted.servers['hung4']?.timeout_seconds).not.toBe(590);
    expect(await allGone([...pids], 10_000), `still alive: ${[...pids].filter(isAlive).join(', ')}`).toBe(true);
    expect(host.status().every((view) => view.state === 'stopped')).toBe(true);
  });

  it('every journal edge of diagrams/server.mmd was taken', () => {
    const table = coverageTable(derived.rows, watch);
    console.log(table.text);
    expect(table.untaken, 'journal edges of the diagram no scenario took').toEqual([]);
    expect(table.unaccounted, 'diagram edges neither taken nor explained in NOT_DRIVEN / INTERNAL').toEqual([]);
    expect(table.stale, 'NOT_DRIVEN entries that were taken after all').toEqual([]);
    expect(watch.unclaimed().map(describeEvent), 'transitions no scenario expected').toEqual([]);
  });
});

function describeEvent(event: Transitioned): string {
  return `#${event.seq} ${event.server}: ${edgeName(event.from, event.to)}${event.error ? ` (${event.error})` : ''}`;
}

interface Coverage {
  text: string;
  /** Required journal edges with no claim. */
  untaken: string[];
  /** Diagram edges neither taken nor explained. */
  unaccounted: string[];
  /** NOT_DRIVEN edges that were taken. */
  stale: string[];
}

/** The one coverage table: journal edges with the diagram edges that took them, then the internal edges. */
function coverageTable(rows: Row[], journal: JournalWatch): Coverage {
  const claimsOf = (row: Row) => journal.claims.filter((claim) => claim.row === row);
  const takenEdges = new Set(journal.claims.map((claim) => claim.row.edge.text));
  const scenarios = (row: Row) => [...new Set(claimsOf(row).map((claim) => claim.scenario))].join(', ');
  const lines: string[][] = [['journal edge', 'taken', 'diagram edge', 'n', 'scenarios / evidence']];
  const untaken: string[] = [];
  const unaccounted: string[] = [];
  const stale: string[] = [];

  const visible = rows.filter((row): row is Extract<Row, { kind: 'visible' }> => row.kind === 'visible');
  const groups = new Map<string, Array<Extract<Row, { kind: 'visible' }>>>();
  for (const row of visible) groups.set(edgeName(row.from, row.to), [...(groups.get(edgeName(row.from, row.to)) ?? []), row]);
  for (const [edge, group] of groups) {
    const total = group.reduce((sum, row) => sum + claimsOf(row).length, 0);
    if (total === 0) untaken.push(`${edge} (via ${group.map((row) => row.edge.text).join(' | ')})`);
    group.forEach((row, index) => {
      const n = claimsOf(row).length;
      lines.push([index === 0 ? edge : '', index === 0 ? String(total) : '', row.edge.text, String(n), explain(row, n)]);
    });
  }
  for (const row of rows.filter((candidate) => candidate.kind === 'retarget')) {
    const n = claimsOf(row).length;
    lines.push([`closing re-aimed → ${(row as Extract<Row, { kind: 'retarget' }>).to}`, '', row.edge.text, String(n), explain(row, n)]);
  }
  for (const row of rows.filter((candidate) => candidate.kind === 'internal')) {
    const note = INTERNAL[row.edge.text];
    const evidence = journal.observed.get(row.edge.text) ?? [];
    let n = '';
    let text: string;
    if (note === undefined) {
      text = 'UNCLASSIFIED';
      unaccounted.push(row.edge.text);
    } else if ('observed' in note) {
      n = String(evidence.length);
      const shown = evidence.slice(0, 2).join('; ') + (evidence.length > 2 ? `; +${evidence.length - 2} more` : '');
      text = evidence.length > 0 ? `observed — ${shown}` : `NOT OBSERVED (wanted: ${note.observed})`;
      if (evidence.length === 0) unaccounted.push(row.edge.text);
    } else if ('impliedBy' in note) {
      const by = note.impliedBy.filter((edge) => takenEdges.has(edge));
      n = by.length > 0 ? 'implied' : '';
      text = by.length > 0 ? `implied by ${by.join(', ')}: ${note.because}` : `NOT IMPLIED: none of ${note.impliedBy.join(', ')} taken`;
      if (by.length === 0) unaccounted.push(row.edge.text);
    } else {
      n = 'n/o';
      text = `not observable: ${note.unobservable}`;
    }
    lines.push(['(internal)', '', row.edge.text, n, text]);
  }

  function explain(row: Row, n: number): string {
    const excuse = NOT_DRIVEN[row.edge.text];
    if (n > 0 && excuse !== undefined) stale.push(row.edge.text);
    if (n > 0) return scenarios(row);
    if (excuse !== undefined) return `not driven: ${excuse}`;
    unaccounted.push(`${row.edge.text}${row.kind === 'visible' ? ` (${edgeName(row.from, row.to)})` : ''}`);
    return 'NOT TAKEN';
  }

  const widths = [0, 1, 2, 3].map((column) => Math.max(...lines.map((line) => line[column]!.length)));
  const format = (line: string[]) =>
    line
      .slice(0, 4)
      .map((cell, column) => (column === 1 || column === 3 ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!)))
      .concat(line[4]!)
      .join(' │ ');
  const rule = widths.map((width) => '─'.repeat(width)).concat('─'.repeat(20)).join('─┼─');
  const taken = groups.size - untaken.length;
  const text = [
    `server lifecycle coverage — diagrams/server.mmd → journal server.transitioned: ${taken}/${groups.size} journal edges taken, ` +
      `${journal.claims.length} of ${journal.transitions().length} transitions accounted for by the scenario that caused them`,
    format(lines[0]!),
    rule,
    ...lines.slice(1).map(format),
  ].join('\n');
  return { text, untaken, unaccounted, stale };
}
