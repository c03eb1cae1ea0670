import type { Command } from 'commander';
import { killChildrenNow } from './kill-children.js';
import { logConsoleTo } from './console-to-log.js';
import type { CliIO } from '../cli.js';
import type { McpHost } from '../host.js';
import type { ApiToken } from '../http/api-token.js';
import type { Logger } from '../telemetry/logger.js';
import type { JournalEvent } from '../journal/index.js';
import { CliError, UsageError } from './errors.js';
import { checkDatabaseUrl, checkRegistryUrlEnv, choice, directory, httpUrl, integer, limitValue, quotaLimit, seconds, stateDirOf, stateDirSource } from './flags.js';
import { commandFor, shellWord } from './invocation.js';
import type { TelemetryExport } from './telemetry.js';
import { OIDC_CLIENT_SECRET_ENV, type OidcOptions } from '../users/index.js';
import { parseAppsUrl, parsePublicUrl, parseWorkerId, startWorker, type Worker } from './worker.js';

/** Port `serve` listens on when `--port` is not given. */
export const DEFAULT_PORT = 8787;

/** Options of `mcp-fleet serve`. */
export interface ServeOptions {
  /** The state dir flag; see `resolveStateDir`. */
  stateDir?: string;
  /** Address to bind; default `127.0.0.1` (loopback only). */
  host?: string;
  /** Port to listen on; `0` picks a free one. Default 8787. */
  port?: number | string;
  /** Port of the sandbox origin app frames are served from; `0` (the default) picks a free one. */
  appsPort?: number | string;
  /** The public origin of the sandbox port as browsers reach it (e.g. `https://apps.example.com` behind a TLS proxy). */
  appsUrl?: string;
  /** Extra accepted `Host` values (`name:port`), e.g. a LAN name when bound to 0.0.0.0. */
  allowedHost?: string[];
  /** Print the API token itself, not only where it is. */
  showToken?: boolean;
  /** pino level of the stderr log; default `info`. */
  logLevel?: string;
  /** How many servers the startup queue connects at once; default 1 (one at a time, in file order). */
  startupConcurrency?: number | string;
  /** PostgreSQL shared by several workers (config, credentials, journal); default `$MCP_FLEET_DATABASE_URL`, else the state dir. */
  databaseUrl?: string;
  /** This worker's name in the fleet; default `<host>-<pid>`. */
  workerId?: string;
  /** Where browsers reach the worker (or the fleet's load balancer): OAuth consents come back to `<URL>/oauth/callback`; `<URL>/oauth/client-metadata.json` is its client ID metadata document. */
  publicUrl?: string;
  /** Base URL of the MCP Registry the page's "Add from registry" searches; default `$MCP_FLEET_REGISTRY_URL`, else the official one. */
  registryUrl?: string;
  /** Every user's calls per minute (parsed by the option); default none. */
  userCallsPerMinute?: number | 'none';
  /** Every user's calls running at once (parsed by the option); default none. */
  userMaxConcurrentCalls?: number | 'none';
  /** The OpenID Connect provider the page signs users in with (with `oidcClientId`; the secret from `$MCP_FLEET_OIDC_CLIENT_SECRET`). */
  oidcIssuer?: string;
  oidcClientId?: string;
  /** The claim holding a signed-in user's groups; default `groups`. */
  oidcGroupsClaim?: string;
  /** The claim naming a signed-in user (their principal); default `sub`. */
  oidcUserClaim?: string;
  /** `/mcp`: a 2025 session without a request for this long ends; default 1800. */
  mcpSessionIdleSeconds?: number;
  /** `/mcp`: 2025 sessions open on this worker at once; default 1000. */
  mcpMaxSessions?: number;
  /** `/mcp`: 2025 sessions one principal may hold open on this worker; default 20. */
  mcpMaxSessionsPerUser?: number;
}

/** Registers `mcp-fleet serve`: the worker, until SIGINT/SIGTERM. */
export function registerServeCommand(program: Command, io: CliIO): void {
  program
    .command('serve')
    .description('run the worker: start the configured servers and serve the management API')
    .option('--state-dir <dir>', 'state directory (default: $MCP_FLEET_STATE_DIR or ~/.mcp-fleet)', directory('--state-dir'))
    .option('--host <host>', 'address to bind', parseBindHost, '127.0.0.1')
    .option('--port <port>', `port to listen on (0 = any free port)`, parsePort, DEFAULT_PORT)
    .option('--apps-port <port>', 'port of the sandbox origin MCP Apps frames are served from (default 0 = any free port, printed)', parseAppsPort, 0)
    .option('--apps-url <url>', 'public origin of the apps sandbox port behind a proxy, e.g. https://apps.example.com (frames are served from it; the page from --public-url frames them)', (value) => {
      parseAppsUrl(value);
      return value;
    })
    .option('--allowed-host <host:port>', 'also accept this Host header (repeatable)', collectAllowedHost, [])
    .option('--show-token', 'also print the API token itself (it is always in <state_dir>/api_token)')
    .option('--log-level <level>', `stderr log level: ${LOG_LEVELS.join(', ')}`, choice('--log-level', LOG_LEVELS), 'info')
    .option('--startup-concurrency <n>', 'servers connecting at once during startup (1 = one at a time)', parseConcurrency, 1)
    .option(
      '--database-url <url>',
      'share config, credentials and journal with other workers in PostgreSQL (default: $MCP_FLEET_DATABASE_URL)',
      parseDatabaseUrl,
    )
    .option('--worker-id <id>', "this worker's name in the fleet (default: <host>-<pid>)", parseWorkerId)
    .option('--public-url <url>', 'where browsers reach this worker or the fleet: OAuth consents return to <url>/oauth/callback; with https, <url>/oauth/client-metadata.json is the OAuth client id where supported', (value) => {
      parsePublicUrl(value);
      return value;
    })
    .option(
      '--registry-url <url>',
      'MCP Registry behind /api/mcp/registry (default: $MCP_FLEET_REGISTRY_URL or https://registry.modelcontextprotocol.io)',
      httpUrl('--registry-url'),
    )
    .option(
      '--user-calls-per-minute <n>',
      "calls each user may start per minute on this worker, unless the user has their own (default: none; the admin is never limited)",
      quotaLimit('--user-calls-per-minute'),
    )
    .option(
      '--user-max-concurrent-calls <n>',
      "calls of each user running at once on this worker, unless the user has their own (default: none)",
      quotaLimit('--user-max-concurrent-calls'),
    )
    .option('--oidc-issuer <url>', 'sign users in on the page through this OpenID Connect provider (with --oidc-client-id; secret in $MCP_FLEET_OIDC_CLIENT_SECRET)', httpUrl('--oidc-issuer'))
    .option('--oidc-client-id <id>', "this worker's client id at the OIDC provider", nonEmpty('--oidc-client-id'))
    .option('--oidc-groups-claim <claim>', "the claim holding a signed-in user's groups (default: groups)", nonEmpty('--oidc-groups-claim'))
    .option('--oidc-user-claim <claim>', 'the claim naming a signed-in user, their principal (default: sub)', nonEmpty('--oidc-user-claim'))
    .option('--mcp-session-idle-seconds <s>', '/mcp and /mcp/servers/:name: a 2025-era session with no request for this long ends (default: 1800)', seconds('--mcp-session-idle-seconds'))
    .option('--mcp-max-sessions <n>', '/mcp and /mcp/servers/:name together: 2025-era sessions open on this worker at once (default: 1000)', integer('--mcp-max-sessions', 1, 1_000_000))
    .option('--mcp-max-sessions-per-user <n>', '/mcp and /mcp/servers/:name together: 2025-era sessions one user may hold open on this worker (default: 20)', integer('--mcp-max-sessions-per-user', 1, 1_000_000))
    .action(async (options: ServeOptions) => {
      // OpenTelemetry export, when OTEL_* asks for it: registered before the host starts, flushed after it stops.
      const { startTelemetryExport } = await import('./telemetry.js');
      const telemetry = await startTelemetryExport(process.env, (text) => io.stderr(`warning: ${text}\n`));
      if (telemetry !== null) io.stdout(`telemetry  exporting ${telemetry.summary}\n`);
      // A signal while it starts (waiting for its database, say) ends the start, and the worker stops as from a running one.
      const starting = new AbortController();
      let first: { signal: NodeJS.Signals; at: number } | undefined;
      const onStartingSignal = (signal: NodeJS.Signals) => {
        if (first !== undefined) {
          if (isAnotherSignal(first, signal)) exitAtOnce(signal, io);
          return;
        }
        first = { signal, at: Date.now() };
        io.stdout(`\n${signal}: stopping…\n`);
        starting.abort(new Error(`${signal} while starting`));
      };
      process.on('SIGINT', onStartingSignal);
      process.on('SIGTERM', onStartingSignal);
      // Nobody reads what it prints any more (`serve | head -2`): it stops as on SIGTERM, as a pipe's writer does.
      io.onStdoutGone?.(() => {
        io.stderr('stdout closed: stopping\n');
        process.kill(process.pid, 'SIGTERM');
      });
      let worker: Worker;
      try {
        // Failed exports are logged through the worker's logger from its first line on.
        worker = await serve(options, io, starting.signal, (logger) => {
          telemetry?.logFailuresTo((fields, message) => logger.warn(fields, message));
          logConsoleTo(logger);
        });
      } catch (err) {
        await telemetry?.shutdown();
        if (starting.signal.aborted) {
          // Stopped as asked: what it had started (the port, worker.json) is gone.
          io.stdout('stopped\n');
          process.exit(0);
        }
        process.off('SIGINT', onStartingSignal);
        process.off('SIGTERM', onStartingSignal);
        if (!(err instanceof CliError)) throw err;
        io.stderr(`error: ${err.message}\n`);
        io.setExitCode(err.exitCode);
        return;
      }
      process.off('SIGINT', onStartingSignal);
      process.off('SIGTERM', onStartingSignal);
      const running = telemetry === null ? worker : flushingTelemetry(worker, telemetry);
      if (starting.signal.aborted) stopNow(running, io, first);
      else stopOnSignals(running, io);
    });
}

/** `worker`, whose stop also flushes and stops the telemetry export. */
function flushingTelemetry(worker: Worker, telemetry: TelemetryExport): Worker {
  return {
    ...worker,
    async stop() {
      await worker.stop();
      await telemetry.shutdown();
    },
  };
}

/** A second signal while stopping: exit 130 now, the servers' processes killed rather than waited for. */
function exitAtOnce(signal: NodeJS.Signals, io: CliIO): never {
  io.stderr(`${signal} again: exiting without waiting\n`);
  killChildrenNow();
  process.exit(130);
}

/**
 * One Ctrl-C can arrive twice: the terminal signals the whole foreground group, and
 * `npm start` forwards its own SIGINT to the worker too, once its handler has run. The
 * same signal again within this long is that one keypress, not a person's second one.
 */
const SAME_SIGNAL_MS = 500;

/** Whether `signal` now is a second signal, not the first one delivered twice. */
function isAnotherSignal(first: { signal: NodeJS.Signals; at: number }, signal: NodeJS.Signals): boolean {
  return signal !== first.signal || Date.now() - first.at >= SAME_SIGNAL_MS;
}

/** First signal: graceful stop, exit 0. A second one while stopping: exit 130 at once. */
function stopOnSignals(worker: Worker, io: CliIO): void {
  let first: { signal: NodeJS.Signals; at: number } | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (first !== undefined) {
      if (isAnotherSignal(first, signal)) exitAtOnce(signal, io);
      return;
    }
    first = { signal, at: Date.now() };
    io.stdout(`\n${signal}: stopping servers…\n`);
    stopNow(worker, io, first);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}

/** Stops the worker and exits: 0 once stopped, 1 if that failed. Another signal meanwhile exits 130 at once. */
function stopNow(worker: Worker, io: CliIO, first?: { signal: NodeJS.Signals; at: number }): void {
  const again = (signal: NodeJS.Signals) => {
    if (first === undefined || isAnotherSignal(first, signal)) exitAtOnce(signal, io);
  };
  if (process.listenerCount('SIGINT') === 0) process.on('SIGINT', again);
  if (process.listenerCount('SIGTERM') === 0) process.on('SIGTERM', again);
  worker.stop().then(
    () => {
      io.stdout('stopped\n');
      process.exit(0);
    },
    (err: unknown) => {
      worker.logger.error({ err }, 'shutdown failed');
      process.exit(1);
    },
  );
}

/**
 * Starts the worker `options` ask for, printing as it goes: the banner once
 * it listens, then a status line for each change of its servers.
 */
async function serve(options: ServeOptions, io: CliIO, cancelled: AbortSignal, onLogger?: (logger: Logger) => void): Promise<Worker> {
  const stateDir = stateDirOf(options.stateDir);
  checkRegistryUrlEnv(options.registryUrl);
  const bindHost = parseBindHost(options.host ?? '127.0.0.1');
  const port = parsePort(options.port ?? DEFAULT_PORT);
  const startupConcurrency = parseConcurrency(options.startupConcurrency ?? 1);
  const logLevel = choice('--log-level', LOG_LEVELS)(options.logLevel ?? 'info');
  let printer: ReturnType<typeof statusPrinter> | undefined;
  const worker = await startWorker(
    {
      stateDir,
      stateDirSource: stateDirSource(options.stateDir),
      bindHost,
      port,
      appsPort: parseAppsPort(options.appsPort ?? 0),
      startupConcurrency,
      logLevel,
      allowedHosts: options.allowedHost ?? [],
      ...(options.workerId !== undefined && { workerId: options.workerId }),
      ...(options.publicUrl !== undefined && { publicUrl: options.publicUrl }),
      ...(options.appsUrl !== undefined && { appsUrl: options.appsUrl }),
      ...(options.databaseUrl !== undefined && { databaseUrl: options.databaseUrl }),
      ...(options.registryUrl !== undefined && { registryUrl: options.registryUrl }),
      ...oidcOf(options),
      gatewaySessions: {
        ...(options.mcpSessionIdleSeconds !== undefined && { idleMs: options.mcpSessionIdleSeconds * 1000 }),
        ...(options.mcpMaxSessions !== undefined && { maxSessions: options.mcpMaxSessions }),
        ...(options.mcpMaxSessionsPerUser !== undefined && { maxPerPrincipal: options.mcpMaxSessionsPerUser }),
      },
      userQuota: {
        ...(options.userCallsPerMinute !== undefined && { calls_per_minute: limitValue(options.userCallsPerMinute) }),
        ...(options.userMaxConcurrentCalls !== undefined && { max_concurrent_calls: limitValue(options.userMaxConcurrentCalls) }),
      },
    },
    {
      cancelled,
      ...(onLogger && { onLogger }),
      // Transitions are printed from here on, under the banner once it is out; the summary once the config is read.
      watch(host, workerId) {
        printer = statusPrinter(host, io, stateDir, workerId);
        return host.subscribe(printer);
      },
      onListening: (url, token, appsUrl) => io.stdout(banner(stateDir, url, token, options.showToken === true, appsUrl)),
    },
  );
  printer?.begin(worker.sharedConfig ? [] : await fileWarnings(stateDir));
  return worker;
}

/**
 * The config file's warnings as loaded (missing, not parsing, entries
 * skipped), for the summary a person reads: the log has them too, but beside
 * "0 of 0 enabled servers ready" the reason belongs on the same screen.
 */
async function fileWarnings(stateDir: string): Promise<string[]> {
  const [{ configFileWarnings }, { configPath }] = await Promise.all([import('../config/store.js'), import('../config/paths.js')]);
  return configFileWarnings(configPath(stateDir));
}

/** A flag's value that must not be empty. */
function nonEmpty(flag: string): (value: string) => string {
  return function parseNonEmpty(value) {
    if (value.trim() === '') throw new UsageError(flag, 'must not be empty');
    return value.trim();
  };
}

/** The OIDC sign-in the flags ask for: issuer and client id together, or neither. */
function oidcOf(options: ServeOptions): { oidc?: OidcOptions } {
  if (options.oidcIssuer === undefined && options.oidcClientId === undefined) {
    if (options.oidcGroupsClaim !== undefined || options.oidcUserClaim !== undefined) {
      throw new UsageError('--oidc-issuer', 'the --oidc-*-claim flags need --oidc-issuer and --oidc-client-id');
    }
    return {};
  }
  if (options.oidcIssuer === undefined) throw new UsageError('--oidc-issuer', '--oidc-client-id needs --oidc-issuer');
  if (options.oidcClientId === undefined) throw new UsageError('--oidc-client-id', '--oidc-issuer needs --oidc-client-id');
  const secret = process.env[OIDC_CLIENT_SECRET_ENV];
  return {
    oidc: {
      issuer: options.oidcIssuer,
      clientId: options.oidcClientId,
      ...(secret !== undefined && secret !== '' && { clientSecret: secret }),
      ...(options.oidcGroupsClaim !== undefined && { groupsClaim: options.oidcGroupsClaim }),
      ...(options.oidcUserClaim !== undefined && { userClaim: options.oidcUserClaim }),
    },
  };
}

/** The levels of the stderr log (pino's). */
const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

const portNumber = integer('--port', 0, 65_535);
const appsPortNumber = integer('--apps-port', 0, 65_535);
function parseAppsPort(value: number | string): number {
  return appsPortNumber(String(value));
}
function parsePort(value: number | string): number {
  return typeof value === 'number' ? portNumber(String(value)) : portNumber(value);
}

const concurrency = integer('--startup-concurrency', 1);
function parseConcurrency(value: number | string): number {
  return concurrency(String(value));
}

/** A name or address, no port, path or space; whether it can be bound is learnt at listen. */
function parseBindHost(value: string): string {
  if (!/^(\[[0-9A-Fa-f:.]+\]|[0-9A-Fa-f:.]+|[A-Za-z0-9.-]+)$/.test(value)) {
    throw new UsageError('--host', `not a host name or IP address: ${JSON.stringify(value)}`);
  }
  return value.startsWith('[') ? value.slice(1, -1) : value;
}

/** `name[:port]`, as a Host header spells it. */
function collectAllowedHost(value: string, previous: string[]): string[] {
  const port = /:(\d{1,5})$/.exec(value)?.[1];
  if (!/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/.test(value) || (port !== undefined && Number(port) > 65_535)) {
    throw new UsageError('--allowed-host', `expected host:port as a Host header names it (e.g. mybox.lan:8787): ${JSON.stringify(value)}`);
  }
  return [...previous, value];
}

function parseDatabaseUrl(value: string): string {
  // Empty is refused, unlike an empty $MCP_FLEET_DATABASE_URL (unset): a flag is given on purpose.
  checkDatabaseUrl('--database-url', value);
  return value;
}

/** What `serve` prints once it listens: where it is and where the token is, never the token unless asked. */
function banner(stateDir: string, url: string, token: ApiToken, showToken: boolean, appsUrl: string): string {
  // Absolute, as the lines below are: the banner is read (and pasted from) in other directories too.
  const tokenWhere = token.source === 'env' ? 'from $MCP_FLEET_API_TOKEN' : `in ${token.path}`;
  // Pasted in another terminal, in another directory: the absolute path.
  const tokenExpr = token.source === 'env' ? '$MCP_FLEET_API_TOKEN' : `$(cat ${shellWord(token.path)})`;
  const lines = [
    'mcp-fleet worker',
    `  state dir  ${stateDir}`,
    `  API        ${url}`,
    `  apps       ${appsUrl} (sandbox origin of app frames)`,
    `  token      ${tokenWhere}`,
    ...(showToken ? [`             ${token.token}`] : []),
    `  try        curl -H "Authorization: Bearer ${tokenExpr}" ${url}api/mcp/servers`,
    '',
    'servers',
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * Prints one line per state change of this worker's servers (`  name  from →
 * to  detail`; another worker's, told by a shared journal, are not its own)
 * and, once its config is read and no server is still connecting, a one-line
 * summary with the next command to try. Lines wait until `begin()`: the
 * banner, printed once the worker listens, comes first.
 */
function statusPrinter(host: McpHost, io: CliIO, stateDir: string, workerId: string) {
  let begun = false;
  let summarized = false;
  let configWarnings: string[] = [];
  const held: string[] = [];
  const out = (text: string) => (begun ? io.stdout(text) : held.push(text));
  const check = () => {
    if (!begun || summarized) return;
    const servers = host.status();
    // A per_user server stays pending for good: it has no shared connection, each user's first call opens theirs.
    const perUser = (s: (typeof servers)[number]) => s.state === 'pending' && s.config.scope === 'per_user';
    // So does an on_demand one between its calls: no process until a tool of it is called.
    const onDemand = (s: (typeof servers)[number]) => s.state === 'pending' && s.config.start === 'on_demand' && !perUser(s);
    const waiting = (s: (typeof servers)[number]) => perUser(s) || onDemand(s);
    if (servers.some((s) => s.state === 'pending' && !waiting(s))) return;
    summarized = true;
    const count = (state: string) => servers.filter((s) => s.state === state && !waiting(s)).length;
    const users = servers.filter(perUser).length;
    const demanded = servers.filter(onDemand).length;
    const enabled = servers.length - count('disabled');
    io.stdout(
      `\n${count('ready') + users + demanded} of ${enabled} enabled servers ready` +
        (users > 0 ? `, ${users} of them per_user (ready for users: a session opens on each user's first call)` : '') +
        (demanded > 0 ? `, ${demanded} of them on_demand (each starts on its first call)` : '') +
        (count('error') > 0 ? `, ${count('error')} in error` : '') +
        (count('disabled') > 0 ? ` (${count('disabled')} disabled)` : '') +
        `. Tools: ${commandFor('list --tools', stateDir)}\n` +
        configWarnings.map((warning) => `  ! ${warning}\n`).join(''),
    );
  };
  const print = (event: JournalEvent) => {
    if (event.type !== 'server.transitioned') return;
    if (event.worker !== undefined && event.worker !== workerId) return;
    // The view is updated before listeners run, so the tool count is current.
    const view = host.server(event.server);
    const detail =
      event.to === 'ready' ? `${view?.tool_count ?? 0} tools` : event.error ? `${event.error_kind}: ${event.error}` : '';
    const move = event.from ? `${event.from} → ${event.to}` : event.to;
    out(`  ${event.server.padEnd(18)} ${move.padEnd(20)} ${detail}`.trimEnd() + '\n');
    check();
  };
  /** The host has published its servers and the banner is out: the held lines, then live ones and the summary. */
  const begin = (warnings: string[]) => {
    begun = true;
    configWarnings = warnings;
    for (const line of held.splice(0)) io.stdout(line);
    check();
  };
  return Object.assign(print, { begin });
}
