/**
 * The worker `serve` runs: shared stores when a database is named, the host,
 * the management app on its port, the worker file, the fleet presence, and
 * the order they start and stop in. Printing is left to the caller (hooks).
 */
import { promises as fs } from 'node:fs';
import { createServer } from 'node:net';
import type { McpHost } from '../host.js';
import { ensureApiToken, type ApiToken } from '../http/api-token.js';
import { secretValuesOf } from '../config/masking.js';
import { listen, type Listening } from '../http/bind.js';
import { createLogger, SecretSet, type Logger } from '../telemetry/logger.js';
import { configPath } from '../config/paths.js';
import { DATABASE_URL_ENV, redactUrl } from '../fleet/database-errors.js';
import { checkDatabaseUrl, makeStateDir, shownUrl } from './flags.js';
import { defaultWorkerId, localPresence, statesByServer } from '../fleet/presence.js';
import type { SharedStores } from '../fleet/index.js';
import { SecretKeyError } from '../config/secrets/secret-key.js';
import { memoryPendingConsents, pgPendingConsents } from '../auth/pending-consents.js';
import { CliError, UsageError } from './errors.js';
import { oneLine } from '../errors.js';
import type { OidcOptions, Quota } from '../users/index.js';
import type { GatewaySessionLimits } from '../gateway/index.js';
import { claimStateDir, readWorkerFile, removeWorkerFile, writeWorkerFile } from './worker-file.js';

/** What a worker is started with: values already checked, except those that may come from the environment or a default. */
export interface WorkerOptions {
  stateDir: string;
  /** How a state dir that cannot be created is named in the error: the flag, or `state dir`. */
  stateDirSource: string;
  bindHost: string;
  port: number;
  /** Port of the sandbox origin the page frames apps from; 0 (the default) picks a free one. */
  appsPort?: number;
  startupConcurrency: number;
  /** pino level of the stderr log. */
  logLevel: string;
  /** Extra accepted `Host` values (`name:port`). */
  allowedHosts: readonly string[];
  /** Checked here: the default (`<host>-<pid>`) is not a flag. */
  workerId?: string;
  publicUrl?: string;
  /** The public origin of the sandbox port (`--apps-url`), e.g. behind a TLS proxy; checked here. */
  appsUrl?: string;
  /** The `--database-url` flag (refused empty); `$MCP_FLEET_DATABASE_URL` (checked here) when absent, empty meaning none. */
  databaseUrl?: string;
  registryUrl?: string;
  /** Every user's limits on this worker (`--user-calls-per-minute`, `--user-max-concurrent-calls`). */
  userQuota?: Quota;
  /** The page's sign-in through an OpenID Connect provider (its issuer's access tokens also open `/mcp`). */
  oidc?: OidcOptions;
  /** Bounds on the 2025-era sessions of `/mcp` and `/mcp/servers/:name` together (`--mcp-session-idle-seconds`, `--mcp-max-sessions`, `--mcp-max-sessions-per-user`). */
  gatewaySessions?: GatewaySessionLimits;
}

/** What the caller is told while the worker starts; the worker prints nothing itself. */
export interface WorkerHooks {
  /** The log exists: from its first line on. */
  onLogger?(logger: Logger): void;
  /** The host (of worker `workerId`) exists and nothing runs yet; the returned function is called first on the way down. */
  watch?(host: McpHost, workerId: string): () => void;
  /** The port is open, worker.json written and the line logged; `appsUrl` is the sandbox origin of app frames. */
  onListening?(url: string, token: ApiToken, appsUrl: string): void;
  /** Aborted (a signal while it starts): a wait for the database ends, and the start fails with the signal's reason. */
  cancelled?: AbortSignal;
}

/** A running worker. */
export interface Worker {
  url: string;
  host: McpHost;
  logger: Logger;
  /** Whether the config lives in PostgreSQL (`--database-url` or `$MCP_FLEET_DATABASE_URL`), not in the state dir's file. */
  sharedConfig: boolean;
  /** Drains startup, stops every server and child, closes HTTP, removes worker.json. */
  stop(): Promise<void>;
}

/**
 * Starts a worker: the host publishes the configured servers (pending or
 * disabled), then the API listens and the servers connect in the background.
 * A database that does not answer at once is waited for listening, so
 * `/healthz` answers meanwhile.
 */
export async function startWorker(options: WorkerOptions, hooks: WorkerHooks = {}): Promise<Worker> {
  const { stateDir, bindHost } = options;
  // A bad value stops it before anything is written: the database URL (its variable too) first.
  // The variable set empty counts as unset (an exported blank); the flag given empty is refused.
  const databaseUrl = options.databaseUrl ?? process.env[DATABASE_URL_ENV];
  if (databaseUrl !== undefined && (databaseUrl !== '' || options.databaseUrl !== undefined)) {
    checkDatabaseUrl(options.databaseUrl === undefined ? `$${DATABASE_URL_ENV}` : '--database-url', databaseUrl);
  }
  // The servers are published before the port opens: a --host this machine cannot bind, or a port taken, is
  // found first, before the state dir is written (a token, a journal) for a worker that would never listen.
  await checkBindable(bindHost, [
    [options.port, '--port'],
    [options.appsPort ?? 0, '--apps-port'],
  ]);
  await makeStateDir(stateDir, options.stateDirSource);
  // The state dir is this worker's from here to its stop: a second one started at the same moment is refused too.
  const claim = await claimStateDir(stateDir);
  if (claim.holder !== null) {
    const running = await readWorkerFile(stateDir);
    const where = running?.pid === claim.holder ? ` at ${running.url}` : ' (still starting)';
    throw new CliError(`a worker (pid ${claim.holder}) already serves ${stateDir}${where}`);
  }
  try {
    return await startClaimed(options, hooks, databaseUrl, claim.release);
  } catch (err) {
    await claim.release();
    throw err;
  }
}

async function startClaimed(options: WorkerOptions, hooks: WorkerHooks, databaseUrl: string | undefined, release: () => Promise<void>): Promise<Worker> {
  const { stateDir, bindHost, port } = options;

  // Loaded when a worker starts, not with the CLI: `mcp-fleet --help` and the other commands do not pay for them.
  const [{ createMcpHost }, { createManagementApp, closeMcpEndpoints, closeRequestsUnderWay, changesUnderWay, changesAnswered }, { openSharedStores }, { createAppFrames }] = await Promise.all([
    import('../host.js'),
    import('../http/app.js'),
    import('../fleet/shared-stores.js'),
    import('../http/apps/frames.js'),
  ]);
  const secrets = new SecretSet();
  let host: McpHost | undefined;
  const logger = createLogger({
    level: options.logLevel,
    // The host knows the secrets of every running server, including one just added.
    secrets: () => [...secrets.values(), ...(host?.secrets() ?? [])],
  });
  hooks.onLogger?.(logger);
  const workerId = parseWorkerId(options.workerId ?? defaultWorkerId());
  const publicUrl = options.publicUrl === undefined ? undefined : parsePublicUrl(options.publicUrl);
  const appsUrl = options.appsUrl === undefined ? undefined : parseAppsUrl(options.appsUrl);
  // Frames on the page's own origin would reach its cookie and DOM: the whole point of a sandbox origin.
  if (appsUrl && publicUrl && appsUrl.origin === publicUrl.origin) {
    throw new UsageError('--apps-url', `must be another origin than --public-url's: ${JSON.stringify(options.appsUrl)}`);
  }
  const states = () => (host === undefined ? {} : statesByServer(host.status()));
  let shared: SharedStores | undefined;
  if (databaseUrl !== undefined && databaseUrl !== '') {
    try {
      shared = openSharedStores({ url: databaseUrl, workerId, stateDir, states, logger });
    } catch (err) {
      if (err instanceof SecretKeyError) throw new CliError(err.message);
      throw new CliError(`--database-url: ${(err as Error).message}`);
    }
  }
  // Made once nothing above refused: a refused start leaves no token behind.
  const token = await ensureApiToken(stateDir).catch(async (err: unknown) => {
    await shared?.close();
    throw err;
  });
  secrets.add([token.token, ...(await fileSecrets(stateDir)), ...(options.oidc?.clientSecret ? [options.oidc.clientSecret] : [])]);
  const started = createMcpHost({
    stateDir,
    logger,
    startupConcurrency: options.startupConcurrency,
    // The worker serves the gateway, whose clients are asked their backends' sampling requests.
    samplingForCallers: true,
    ...(options.userQuota && { userQuota: options.userQuota }),
    ...(shared && { configStore: shared.config, eventStore: shared.events, credentialsStore: shared.credentials, userInputs: shared.userInputs, workerId }),
    ...(publicUrl && { publicUrl: publicUrl.href, pendingConsents: shared ? pgPendingConsents(shared.db) : memoryPendingConsents() }),
  });
  host = started;
  // `host.start()` resolving is the host's word that its servers are published.
  let published = false;
  const presence = shared?.presence ?? localPresence({ workerId, states });
  // The public URL's host reaches this worker too (through a proxy, or as its own name).
  const allowedHosts = [...options.allowedHosts, ...(publicUrl ? [publicUrl.host] : [])];
  // The sandbox origin of app frames: another port, so an app is never on the page's origin.
  // Behind a proxy (`--apps-url`), frames come from its public origin, framed by the page's public origin.
  const frames = createAppFrames({
    bindHost,
    allowedHosts,
    ...(appsUrl && { appsOrigin: appsUrl.origin, ...(publicUrl && { pageOrigin: publicUrl.origin }) }),
  });
  const app = createManagementApp(started, {
    apps: frames,
    token: token.token,
    bindHost,
    allowedHosts,
    logger,
    onSecrets: (values) => secrets.add(values),
    fleet: presence,
    ...(shared && { users: shared.users }),
    ...(options.oidc && { oidc: options.oidc }),
    ...(options.gatewaySessions && { gatewaySessions: options.gatewaySessions }),
    ...(publicUrl && { publicUrl: publicUrl.href }),
    ...(options.registryUrl !== undefined && { registryUrl: options.registryUrl }),
    notReady: () =>
      shared !== undefined && !shared.reached
        ? `waiting for the database at ${redactUrl(shared.db.url)}`
        : published
          ? null
          : 'starting: the servers are not published yet',
  });

  const unwatch = hooks.watch?.(started, workerId) ?? (() => {});
  const stopReaching = new AbortController();
  hooks.cancelled?.addEventListener('abort', () => stopReaching.abort(hooks.cancelled?.reason), { once: true });
  let opening: Promise<Listening> | undefined;
  let open: Listening | undefined;
  let appsOpen: Listening | undefined;
  /** Listens (once) and says where: the worker file, the log line, the caller. */
  const openPort = (): Promise<Listening> =>
    (opening ??= (async () => {
      const apps = (appsOpen = await listenOn(frames.app, bindHost, options.appsPort ?? 0, '--apps-port'));
      frames.listeningOn(apps.port);
      const listening = (open = await listenOn(app, bindHost, port));
      await writeWorkerFile(stateDir, { url: listening.url, pid: process.pid });
      logger.info({ url: listening.url, apps: apps.url, stateDir }, 'listening');
      hooks.onListening?.(listening.url, token, apps.url);
      return listening;
    })());

  let unsubscribePresence = (): void => {};
  /**
   * The way down, from a failed start as from `stop()`: nothing is watched or
   * awaited any more; the calls under way are answered; the servers stop while the port closes; then the
   * heartbeat and the pool (the shared stores stop their presence); worker.json last.
   * An open port starts closing first: its event streams end before any server
   * leaves its state, so a page keeps the states the worker ran with as last known.
   */
  const down = async (): Promise<void> => {
    unwatch();
    unsubscribePresence();
    stopReaching.abort();
    // The MCP endpoints' streams and sessions end first, each ending its own streams, rather than being cut with the sockets.
    await closeMcpEndpoints(app);
    // So do the API's calls and renders under way: each is answered that the worker is shutting down, not cut with its socket
    // (waited for only so long: one whose work ignores its cancel is cut with the port).
    await closeRequestsUnderWay(app);
    // A change under way (a server being added, say) ends with the host's stop, which settles it (made,
    // or rolled back): the host stops first then, and the change is answered how it ended before the port closes.
    const stoppedFirst = changesUnderWay(app) ? started.shutdown() : undefined;
    if (stoppedFirst !== undefined) await changesAnswered(app);
    const portClosed = open !== undefined ? open.close() : opening?.then((listening) => listening.close(), () => undefined);
    const appsClosed = frames.closeAll().then(() => appsOpen?.close());
    await Promise.all([stoppedFirst ?? started.shutdown(), portClosed, appsClosed]);
    await shared?.close();
    await removeWorkerFile(stateDir, process.pid);
    await release();
  };

  let listening: Listening;
  try {
    // A database that does not answer at once is waited for listening: /healthz answers meanwhile,
    // /readyz and the API say what is awaited. Otherwise the servers are published first, so no
    // answer ever shows an empty or partial fleet.
    await shared
      ?.reach(stopReaching.signal, () => {
        openPort().catch(() => stopReaching.abort());
      })
      .catch((err: unknown) => {
        // Not a database that is away (that is waited for) but one that refuses: a password, a missing database, a newer schema.
        if (stopReaching.signal.aborted) throw err;
        throw new CliError(`cannot use the database at ${redactUrl(shared.db.url)}: ${oneLine(err instanceof Error ? err.message : String(err))}`);
      });
    await started.start();
    published = true;
    listening = await openPort();
  } catch (err) {
    await down();
    // The port's own error says more than the abort it caused.
    if (opening !== undefined) await opening;
    throw err;
  }
  presence.start(listening.url);
  unsubscribePresence = started.subscribe((event) => {
    const own = event.worker === undefined || event.worker === workerId;
    if (own && (event.type === 'server.transitioned' || event.type === 'server.removed')) presence.changed();
  });

  let stopped: Promise<void> | undefined;
  return {
    url: listening.url,
    host: started,
    logger,
    sharedConfig: shared !== undefined,
    stop() {
      stopped ??= down().then(() => logger.info('stopped'));
      return stopped;
    },
  };
}

/**
 * Binds `host` on a passing port, then on each fixed port of `ports`, and lets
 * go: a name or address this machine does not have is a usage error, a port
 * taken the error `listen` would give. Taken between this and the listen, the
 * port is still refused there.
 */
async function checkBindable(host: string, ports: ReadonlyArray<readonly [port: number, flag: string]>): Promise<void> {
  for (const [port, flag] of [[0, '--port'] as const, ...ports.filter(([fixed]) => fixed !== 0)]) {
    const probe = createServer();
    try {
      await new Promise<void>((resolve, reject) => {
        probe.once('error', reject);
        probe.listen({ host, port }, resolve);
      });
    } catch (err) {
      throw listenFailure(err, host, port === 0 ? null : port, flag);
    } finally {
      if (probe.listening) await new Promise((resolve) => probe.close(resolve));
    }
  }
}

async function listenOn(app: Parameters<typeof listen>[0], bindHost: string, port: number, flag = '--port'): Promise<Listening> {
  try {
    return await listen(app, { host: bindHost, port });
  } catch (err) {
    throw listenFailure(err, bindHost, port, flag);
  }
}

/** What a failed bind says: a port in use, a `--host` this machine does not have, or the system's reason. */
function listenFailure(err: unknown, host: string, port: number | null, flag = '--port'): Error {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE' && port !== null) return new CliError(`port ${port} is in use; pick another with ${flag} (0 = any free port)`);
  // No such name, or an address this machine does not have: the value is wrong, not the moment.
  if (code === 'ENOTFOUND' || code === 'EADDRNOTAVAIL' || code === 'EAI_AGAIN') {
    return new UsageError('--host', `cannot bind ${JSON.stringify(host)} (${code})`);
  }
  return new CliError(`cannot listen on ${port === null ? host : `${host}:${port}`} (${code ?? (err as Error).message})`);
}

/** A database URL from `source` (the flag or the environment) that names a PostgreSQL database. */
export function parsePublicUrl(value: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError('--public-url', `not a URL: ${JSON.stringify(shownUrl(value))}`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.search !== '' || url.hash !== '' || url.username !== '') {
    throw new UsageError('--public-url', `expected an http(s) URL without query, fragment or credentials (e.g. https://mcp.example.com): ${JSON.stringify(redactUrl(value))}`);
  }
  return url;
}

/** `--apps-url`: an http(s) origin, nothing after it (a trailing `/` aside). */
export function parseAppsUrl(value: string): URL {
  const refuse = (problem: string) => new UsageError('--apps-url', `${problem}: ${JSON.stringify(shownUrl(value))}`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw refuse('not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw refuse('expected an http or https URL');
  if (url.username !== '' || url.password !== '') throw refuse('expected no credentials');
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '') throw refuse('expected an origin without path, query or fragment, e.g. https://apps.example.com');
  return url;
}

export function parseWorkerId(value: string): string {
  if (!/^[\w.:@-]{1,128}$/.test(value)) {
    throw new UsageError('--worker-id', `expected 1-128 letters, digits and . _ : @ -: ${JSON.stringify(value)}`);
  }
  return value;
}

/** Secret values of every entry of the config file, valid or not: redacted from the first log line on. */
async function fileSecrets(stateDir: string): Promise<string[]> {
  try {
    const doc = JSON.parse(await fs.readFile(configPath(stateDir), 'utf8')) as { servers?: Record<string, unknown> };
    return Object.values(doc.servers ?? {}).flatMap(secretValuesOf);
  } catch {
    return [];
  }
}
