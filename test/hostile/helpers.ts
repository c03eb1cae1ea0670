// A real host serving the management API, with one hostile fixture server
// next to a healthy one, and the checks every hostile test makes: the worker
// still serves (`/healthz`, the healthy server's `echo`) and no child outlives
// it.
import { join } from 'node:path';
import { expect } from 'vitest';
import { fixtureCommand } from '../fixtures/index.js';
import { healthy, startFleet, type Fleet } from '../http/fleet.js';
import { allGone, isAlive, readPid } from '../support/processes.js';

export type { Fleet };
export { allGone, isAlive, readPid };
export { untilState } from '../host/helpers.js';

/** A local server running fixture `name` with `args`, writing its pid to `<dir>/<server>.pid`. */
export function hostile(dir: string, server: string, fixture: string, extra: Record<string, unknown> = {}, ...args: string[]) {
  return {
    type: 'local',
    command: fixtureCommand(fixture, ...args),
    env: { FIXTURE_PID_FILE: pidFile(dir, server), ...((extra.env as object) ?? {}) },
    timeout_seconds: 10,
    reconnect: { max_attempts: 0 },
    ping_interval_seconds: 0,
    ...Object.fromEntries(Object.entries(extra).filter(([key]) => key !== 'env')),
  };
}

export const pidFile = (dir: string, server: string): string => join(dir, `${server}.pid`);

/** Starts a fleet of `servers(dir)` plus a healthy server named `healthy`, and waits for startup to finish. */
export async function startWithHealthy(servers: (dir: string) => Record<string, unknown>): Promise<Fleet> {
  const fleet = await startFleet((dir) => ({ ...servers(dir), healthy: healthy(dir, 'healthy') }));
  await fleet.host.settled();
  return fleet;
}

/** The worker still answers: `/healthz` is 200 and the healthy server echoes. */
export async function expectStillServing(fleet: Fleet, text = 'still here'): Promise<void> {
  const [health, echo] = await Promise.all([
    fleet.request('/healthz', { noAuth: true }),
    fleet.host.callTool('healthy__echo', { text }),
  ]);
  expect(health.status).toBe(200);
  expect(echo).toMatchObject({ details: { is_error: false }, content: [{ type: 'text', text }] });
}

/** Closes the fleet and checks that none of `pids` (and not the healthy server) is left running. */
export async function closeAndExpectNoChild(fleet: Fleet, pids: number[]): Promise<void> {
  // A pid never read (its server did not start) is reported by the failing setup already.
  const all = [...pids, readPid(pidFile(fleet.dir, 'healthy'))].filter(Number.isInteger);
  await fleet.close();
  expect(await allGone(all), `still running: ${all.filter(isAlive).join(', ')}`).toBe(true);
}

