/**
 * A throwaway PostgreSQL cluster for tests: its own data dir under the temp
 * dir, its own port on 127.0.0.1, trust auth for `postgres`. A system cluster
 * (the one Debian's package may start) is never used or touched.
 */
import { execFile, execFileSync, spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

export interface PgCluster {
  /** `postgres://postgres@127.0.0.1:PORT/DATABASE`; trust auth, no password. */
  url: string;
  port: number;
  /** The temp dir holding everything: `data/` (the cluster), the socket and `postgres.log`. */
  dir: string;
  /** The cluster's data directory (`dir/data`), where `postmaster.pid` lives while it runs. */
  dataDir: string;
  /** `pg_ctl stop -m fast` (or `immediate`: no clean shutdown, as a crash): the data stays, `start()` brings it back. */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Starts the stopped cluster again on the same port and dir. */
  start(): Promise<void>;
  /** Stops the cluster and removes its dir; a second call does nothing. */
  destroy(): Promise<void>;
}

const run = promisify(execFile);

const binDir = findBinDir();

/**
 * Whether initdb and pg_ctl were found. Tests must not skip when it is false
 * (CI installs them): it only makes the failure say what is missing.
 */
export const postgresAvailable: boolean = binDir !== undefined;

const DEFAULT_DATABASE = 'mcp_fleet_test';

/** Clusters not destroyed yet, stopped at a normal process exit if a test forgot them. */
const live = new Set<{ dir: string; dataDir: string }>();
let exitHookInstalled = false;

export async function startPostgres(options: { database?: string } = {}): Promise<PgCluster> {
  if (binDir === undefined) {
    throw new Error(
      'PostgreSQL binaries (initdb, pg_ctl) not found via pg_config, /usr/lib/postgresql/*/bin or PATH: ' +
        "install Debian's postgresql package (apt-get install postgresql)",
    );
  }
  // PostgreSQL refuses to run as root: then the postgres user runs it and owns its dir.
  const owner = process.getuid?.() === 0 ? postgresUser() : undefined;
  const database = options.database ?? DEFAULT_DATABASE;
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-pg-'));
  const dataDir = join(dir, 'data');
  const logFile = join(dir, 'postgres.log');
  const entry = { dir, dataDir };
  live.add(entry);
  installExitHook();

  // mkdtemp makes it 0700, and /tmp above it is world-traversable.
  if (owner) chownSync(dir, owner.uid, owner.gid);

  const pgCtl = (args: string[]) => asPostgres(join(binDir, 'pg_ctl'), args, dir, owner !== undefined);
  let port = 0;
  // Fast yet durable against a stop: fsync=off leaves the WAL in the kernel, which an immediate stop keeps, while
  // synchronous_commit stays on, so a commit the workers were told of survives it as on any PostgreSQL.
  const startOnce = () =>
    pgCtl([
      'start', '-D', dataDir, '-l', logFile, '-w', '-t', '60',
      '-o', `-p ${port} -k '${dir}' -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off`,
    ]);
  let running = false;
  let destroyed = false;

  const cluster: PgCluster = {
    url: '',
    port: 0,
    dir,
    dataDir,
    async stop(mode = 'fast') {
      if (!running) return;
      await pgCtl(['stop', '-D', dataDir, '-m', mode, '-w', '-t', '60']);
      running = false;
    },
    async start() {
      if (destroyed) throw new Error(`the cluster in ${dir} was destroyed`);
      if (running) return;
      await startOnce().catch((error: unknown) => failWithLog(error, logFile));
      running = true;
    },
    async destroy() {
      if (destroyed) return;
      destroyed = true;
      try {
        if (running || existsSync(join(dataDir, 'postmaster.pid'))) {
          await pgCtl(['stop', '-D', dataDir, '-m', 'fast', '-w', '-t', '60']);
        }
      } finally {
        running = false;
        rmSync(dir, { recursive: true, force: true });
        live.delete(entry);
      }
    },
  };

  try {
    await asPostgres(
      join(binDir, 'initdb'),
      ['-D', dataDir, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--no-locale'],
      dir,
      owner !== undefined,
    );
    // The free port is only free until someone else takes it: try a few.
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      rmSync(logFile, { force: true }); // so the log read below is this attempt's
      try {
        await startOnce();
        break;
      } catch (error) {
        if (attempt >= 3 || !readLog(logFile).includes('could not bind')) failWithLog(error, logFile);
      }
    }
    running = true;
    startWatchdog(dir, pgCtlStopCommand(dataDir, owner !== undefined));
    cluster.port = port;
    cluster.url = `postgres://postgres@127.0.0.1:${port}/${database}`;
    if (database !== 'postgres') await createDatabase(`postgres://postgres@127.0.0.1:${port}/postgres`, database);
    return cluster;
  } catch (error) {
    await cluster.destroy().catch(() => {});
    throw error;
  }
}

async function createDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`create database ${pg.escapeIdentifier(database)}`);
  } finally {
    await client.end();
  }
}

/** Runs a PostgreSQL binary, as the postgres user when we are root. */
async function asPostgres(file: string, args: string[], cwd: string, switchUser: boolean): Promise<void> {
  const [command, commandArgs] = switchUser ? switchToPostgres(file, args) : [file, args];
  // cwd: the postgres user may not be allowed into ours.
  await run(command, commandArgs, { cwd, timeout: 90_000 });
}

function switchToPostgres(file: string, args: string[]): [string, string[]] {
  if (onPath('runuser')) return ['runuser', ['-u', 'postgres', '--', file, ...args]];
  const quoted = [file, ...args].map((arg) => `'${arg.replaceAll("'", `'\\''`)}'`).join(' ');
  return ['su', ['postgres', '-s', '/bin/sh', '-c', quoted]];
}

function postgresUser(): { uid: number; gid: number } {
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    return { uid, gid };
  } catch (error) {
    throw new Error(
      "running as root needs the postgres system user to run the test cluster: install Debian's postgresql package",
      { cause: error },
    );
  }
}

/** initdb and pg_ctl: where pg_config says, else Debian's highest version, else PATH. */
function findBinDir(): string | undefined {
  const candidates: string[] = [];
  const pgConfig = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8' });
  if (pgConfig.status === 0) candidates.push(pgConfig.stdout.trim());
  const debian = '/usr/lib/postgresql';
  if (existsSync(debian)) {
    const versions = readdirSync(debian)
      .filter((name) => /^\d+(\.\d+)?$/.test(name))
      .sort((a, b) => Number(b) - Number(a));
    candidates.push(...versions.map((version) => join(debian, version, 'bin')));
  }
  candidates.push(...(process.env.PATH ?? '').split(delimiter).filter(Boolean));
  // libpq's pg_config can name a bindir without the server binaries: check.
  return candidates.find((dir) => existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'pg_ctl')));
}

const onPath = (name: string) =>
  (process.env.PATH ?? '').split(delimiter).some((dir) => dir !== '' && existsSync(join(dir, name)));

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

const readLog = (logFile: string) => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');

function failWithLog(error: unknown, logFile: string): never {
  const tail = readLog(logFile).trim().split('\n').slice(-15).join('\n');
  const message = error instanceof Error ? error.message : String(error);
  throw new Error(`PostgreSQL failed to start: ${message}${tail ? `\nserver log:\n${tail}` : ''}`, { cause: error });
}

/** `pg_ctl stop -m immediate` for a cluster that nobody needs any more, as [command, args]. */
function pgCtlStopCommand(dataDir: string, switchUser: boolean): [string, string[]] {
  const pgCtl = join(binDir ?? '', 'pg_ctl');
  const args = ['stop', '-D', dataDir, '-m', 'immediate', '-w'];
  return switchUser ? switchToPostgres(pgCtl, args) : [pgCtl, args];
}

/**
 * A forgotten cluster would outlive the test process (the postmaster is
 * detached), and vitest ends its workers with SIGTERM, which runs no 'exit'
 * handler. So a detached shell watches this process: once it is gone, it
 * stops the cluster and removes its dir. It ends by itself once destroy()
 * has removed the dir.
 */
function startWatchdog(dir: string, [stopCommand, stopArgs]: [string, string[]]): void {
  const script = `
    parent=$1 dir=$2 data=$3; shift 3
    while kill -0 "$parent" 2>/dev/null && [ -d "$dir" ]; do sleep 1; done
    [ -d "$dir" ] || exit 0
    [ -f "$data/postmaster.pid" ] && "$@" >/dev/null 2>&1
    rm -rf "$dir"`;
  const args = ['-c', script, 'mcp-fleet-pg-watchdog', String(process.pid), dir, join(dir, 'data'), stopCommand, ...stopArgs];
  spawn('sh', args, { detached: true, stdio: 'ignore', cwd: dir }).unref();
}

/** Synchronous cleanup when the process exits normally: 'exit' handlers may run nothing else. */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', function stopForgottenClusters() {
    const switchUser = process.getuid?.() === 0;
    for (const { dir, dataDir } of live) {
      if (existsSync(join(dataDir, 'postmaster.pid'))) {
        const [command, args] = pgCtlStopCommand(dataDir, switchUser);
        spawnSync(command, args, { cwd: dir, stdio: 'ignore', timeout: 30_000 });
      }
      rmSync(dir, { recursive: true, force: true });
    }
    live.clear();
  });
}

let createdDatabases = 0;

/** A new, empty database in `cluster` (one per test keeps tests apart); returns its URL. */
export async function newDatabase(cluster: PgCluster): Promise<string> {
  const name = `db_${process.pid}_${++createdDatabases}`;
  const admin = new pg.Client({ connectionString: cluster.url });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  return cluster.url.replace(/\/[^/]*$/, `/${name}`);
}

/** The path of a PostgreSQL client program (`pg_dump`, `psql`) of the version the clusters run. */
export function pgBinary(name: string): string {
  if (binDir === undefined) throw new Error(`${name} not found: install Debian's postgresql package`);
  return join(binDir, name);
}
