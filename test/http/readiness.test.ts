// The readiness behaviour of issue 4: the API answers while every server is
// still connecting, because it never waits for MCP.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { fixtureCommand } from '../fixtures/index.js';
import { allGone, readPid, startFleet, type Fleet } from './fleet.js';

let fleet: Fleet | undefined;
afterEach(async () => {
  await fleet?.close();
  fleet = undefined;
});

it('/healthz and GET /api/mcp/servers answer while ten servers that never answer initialize are all pending', async () => {
  const names = Array.from({ length: 10 }, (_, i) => `hung${i}`);
  fleet = await startFleet((dir) =>
    Object.fromEntries(
      names.map((name) => [
        name,
        {
          type: 'local',
          command: fixtureCommand('hang-on-init'),
          env: { FIXTURE_PID_FILE: join(dir, `${name}.pid`) },
          timeout_seconds: 120,
        },
      ]),
    ),
  );
  // Servers connect one at a time: wait until the first one's process really runs.
  const firstPid = join(fleet.dir, 'hung0.pid');
  const deadline = Date.now() + 10_000;
  while (!existsSync(firstPid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
  expect(existsSync(firstPid)).toBe(true);

  const health = await fleet.request('/healthz', { noAuth: true });
  expect(health.status).toBe(200);
  expect(health.json).toEqual({ ok: true });

  const reply = await fleet.request('/api/mcp/servers');
  expect(reply.status).toBe(200);
  expect(reply.json.servers.map((s: { name: string }) => s.name).sort()).toEqual([...names].sort());
  for (const server of reply.json.servers) expect(server).toMatchObject({ state: 'pending', ready: false, tool_count: 0 });

  // Shutdown does not wait for the hung initialize: it ends the child.
  const pid = readPid(firstPid);
  await fleet.close();
  fleet = undefined;
  expect(await allGone([pid])).toBe(true);
});
