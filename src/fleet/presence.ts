/**
 * Which workers share the database, and how each sees its servers: every
 * worker writes a heartbeat row (`workers`) with its servers' states; a
 * worker whose row is older than three heartbeats is not alive (it was
 * killed, or lost the database). A worker without a database is a fleet of
 * one, described from memory.
 */
import os from 'node:os';
import { z } from 'zod';
import { DatabaseUnavailableError, isConnectionError, type Database } from './database.js';
import { processAlive } from '../files/process-alive.js';

/** One worker of `GET /api/mcp/fleet`. */
export const FleetWorker = z.object({
  id: z.string(),
  url: z.string().nullable(),
  started_at: z.string(),
  last_seen: z.string(),
  alive: z.boolean(),
  /** Each of its servers' state (as views show it), by server name. */
  servers: z.record(z.string(), z.string()),
});
export type FleetWorker = z.infer<typeof FleetWorker>;

/** `GET /api/mcp/fleet`: the workers, and per server each worker's state. */
export const FleetView = z.object({
  /** The id of the worker that answered. */
  self: z.string(),
  workers: z.array(FleetWorker),
  servers: z.array(z.object({ name: z.string(), states: z.record(z.string(), z.string()) })),
});
export type FleetView = z.infer<typeof FleetView>;

export interface Presence {
  readonly workerId: string;
  /**
   * Starts announcing this worker (at `url`, once it listens), with the states
   * `states` gives (default: the `states` it was made with).
   */
  start(url: string | null, states?: () => Record<string, string>): void;
  /** A server changed state: announce it soon rather than at the next heartbeat. */
  changed(): void;
  view(): Promise<FleetView>;
  /** Stops the heartbeat and takes this worker off the list. */
  stop(): Promise<void>;
}

/** Each server's state, by name (from `host.status()`): what a worker announces in its heartbeat. */
export function statesByServer(views: readonly { name: string; state: string }[]): Record<string, string> {
  return Object.fromEntries(views.map((view) => [view.name, view.state]));
}

/** `<host>-<pid>`: unique on a machine, readable in a list. */
export function defaultWorkerId(): string {
  return `${os.hostname()}-${process.pid}`;
}

/** Heartbeats missed before a worker counts as gone. */
const MISSED_HEARTBEATS = 3;

export interface PresenceOptions {
  workerId: string;
  /** This worker's servers and their states right now (default: those `start` is given, else none). */
  states?: () => Record<string, string>;
  /** Heartbeat period (default 2 s). */
  intervalMs?: number;
  onError?: (error: Error) => void;
}

/** The fleet of one: this worker, from memory. */
export function localPresence(options: PresenceOptions): Presence {
  const startedAt = new Date().toISOString();
  let url: string | null = null;
  let states = options.states ?? noStates;
  return {
    workerId: options.workerId,
    start(at, given) {
      url = at;
      if (given) states = given;
    },
    changed() {},
    async view() {
      const now = new Date().toISOString();
      const worker = { id: options.workerId, url, started_at: startedAt, last_seen: now, alive: true, servers: states() };
      return { self: options.workerId, workers: [worker], servers: serversOf([worker]) };
    },
    async stop() {},
  };
}

interface WorkerRow {
  id: string;
  url: string | null;
  started_at: Date;
  last_seen: Date;
  alive: boolean;
  servers: Record<string, string>;
}

/** The fleet in the database: a heartbeat row per worker. */
export function databasePresence(db: Database, options: PresenceOptions): Presence {
  const intervalMs = options.intervalMs ?? 2_000;
  const startedAt = new Date();
  let url: string | null = null;
  let timer: NodeJS.Timeout | undefined;
  let beating: Promise<void> = Promise.resolve();
  let failing = false;
  let soon: NodeJS.Timeout | undefined;
  let states = options.states ?? noStates;

  async function beat(): Promise<void> {
    try {
      await db.pool.query(
        `insert into workers (id, url, host, pid, started_at, last_seen, servers) values ($1, $2, $3, $4, $5, now(), $6)
         on conflict (id) do update set url = excluded.url, host = excluded.host, pid = excluded.pid,
           started_at = excluded.started_at, last_seen = now(), servers = excluded.servers`,
        [options.workerId, url, os.hostname(), process.pid, startedAt, JSON.stringify(states())],
      );
      failing = false;
    } catch (error) {
      // One report per outage, not one per beat.
      if (!failing) options.onError?.(error as Error);
      failing = true;
    }
  }

  return {
    workerId: options.workerId,
    start(at, given) {
      url = at;
      if (given) states = given;
      // Started again: one heartbeat, not two.
      clearInterval(timer);
      beating = beating.then(beat);
      timer = setInterval(() => {
        beating = beat();
      }, intervalMs);
      timer.unref();
    },
    changed() {
      // A burst of transitions (a restart, a startup) is one write.
      if (timer === undefined || soon !== undefined) return;
      soon = setTimeout(() => {
        soon = undefined;
        beating = beating.then(beat);
      }, 100);
      soon.unref();
    },
    async view() {
      const result = await db.pool
        .query<WorkerRow>(
          `select id, url, started_at, last_seen, servers,
             last_seen > now() - make_interval(secs => $1::double precision) as alive
           from workers order by started_at, id`,
          [(MISSED_HEARTBEATS * intervalMs) / 1000],
        )
        .catch((error: unknown) => {
          // Away: said as every other read of the shared stores says it (`503 database_unavailable`).
          throw isConnectionError(error) ? new DatabaseUnavailableError(db.url, { cause: error }) : error;
        });
      const workers = result.rows.map((row) => ({
        id: row.id,
        url: row.url,
        started_at: row.started_at.toISOString(),
        last_seen: row.last_seen.toISOString(),
        alive: row.alive,
        servers: row.servers,
      }));
      return { self: options.workerId, workers, servers: serversOf(workers) };
    },
    async stop() {
      clearInterval(timer);
      clearTimeout(soon);
      await beating;
      await db.pool.query('delete from workers where id = $1', [options.workerId]).catch(() => {});
    },
  };
}

/** Thrown at start when a live worker already announces this worker id: two workers of one id would fold each other's transitions. */
export class WorkerIdInUseError extends Error {
  override readonly name = 'WorkerIdInUseError';
  constructor(workerId: string, holder: { host: string; pid: number; seenSecondsAgo: number }) {
    super(
      `worker id "${workerId}" is in use by a live worker (host ${holder.host}, pid ${holder.pid}, last seen ${holder.seenSecondsAgo} s ago): give each worker its own --worker-id`,
    );
  }
}


/**
 * Refuses to start a worker whose id another live worker announces: a row
 * seen within three heartbeats, from another process that is not known to be
 * gone. A crashed worker's row (stale, or its pid gone on this host) and this
 * process's own are no obstacle.
 */
export async function claimWorkerId(db: Database, workerId: string, intervalMs = 2_000): Promise<void> {
  const { rows } = await db.pool.query<{ host: string; pid: number; seen_ago: number }>(
    `select host, pid, extract(epoch from now() - last_seen)::float8 as seen_ago from workers where id = $1`,
    [workerId],
  );
  const holder = rows[0];
  if (holder === undefined || holder.seen_ago > (MISSED_HEARTBEATS * intervalMs) / 1000) return;
  if (holder.host === os.hostname() && (holder.pid === process.pid || !processAlive(holder.pid))) return;
  throw new WorkerIdInUseError(workerId, { host: holder.host, pid: holder.pid, seenSecondsAgo: Math.round(holder.seen_ago) });
}

function noStates(): Record<string, string> {
  return {};
}

function serversOf(workers: readonly FleetWorker[]): FleetView['servers'] {
  const byName = new Map<string, Record<string, string>>();
  for (const worker of workers) {
    for (const [name, state] of Object.entries(worker.servers)) {
      byName.set(name, { ...byName.get(name), [worker.id]: state });
    }
  }
  return [...byName].sort(([a], [b]) => a.localeCompare(b)).map(([name, states]) => ({ name, states }));
}
