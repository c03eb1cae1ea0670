// Sessions that end together close a bounded number at a time
// (CONCURRENT_CLOSES): each HTTP close is a DELETE, and fetch's pool keeps a
// connection for every request that was in flight at once. A real host, a
// per_user remote server (the whoami fixture holding each DELETE a while),
// more sessions than the bound, all ended by a config change.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMcpHost, type McpHost } from '../../src/index.js';
import { CONCURRENT_CLOSES } from '../../src/host/sessions.js';
import { startHttpFixture, type HttpFixture } from '../fixtures/index.js';
import { until } from '../support/wait.js';

const SESSIONS = CONCURRENT_CLOSES + 8;
let fixture: HttpFixture;
let host: McpHost;
let dir: string;

beforeAll(async () => {
  fixture = await startHttpFixture('whoami', ['--http', '--delete-delay', '150']);
  dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-session-closes-'));
  writeFileSync(
    join(dir, 'mcp_servers.json'),
    JSON.stringify({
      servers: {
        mine: {
          type: 'remote',
          url: fixture.url,
          transport: 'streamable_http',
          headers: { 'x-user-token': '${user.TOKEN}' },
          scope: 'per_user',
          user_inputs: { TOKEN: { description: 'your token' } },
        },
      },
    }),
    { mode: 0o600 },
  );
  host = createMcpHost({ stateDir: dir, persistJournal: false, logger: { info: () => {}, warn: () => {} } });
  await host.start();
  await host.settled();
});
afterAll(async () => {
  await host?.shutdown();
  await fixture?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe('ending many sessions at once', () => {
  it(`every session is deleted, at most ${CONCURRENT_CLOSES} at a time, and each left closing at once`, async () => {
    for (let i = 0; i < SESSIONS; i += 1) {
      const principal = { id: `user${i}` };
      await host.setInputs('mine', { TOKEN: `token-${i}` }, { principal });
      const result = await host.callTool('mine__whoami', {}, { principal });
      expect(JSON.parse((result.content[0] as { text: string }).text).token).toBe(`token-${i}`);
    }
    expect(host.sessions().filter((s) => s.state === 'ready')).toHaveLength(SESSIONS);
    const ending = host.updateServer('mine', { idle_timeout_seconds: 60 });
    // No session of the old config takes a call while it waits for its turn to close.
    await until(() => host.sessions().every((s) => s.state === 'closing'), 'every session to be closing');
    await ending;
    await until(() => host.sessions().length === 0, 'every session to end');
    const deleted = (await (await fetch(new URL('/deleted', fixture.url))).json()) as Array<{ token: string }>;
    expect(deleted.map((d) => d.token).sort()).toEqual(Array.from({ length: SESSIONS }, (_, i) => `token-${i}`).sort());
    const peak = (await (await fetch(new URL('/deletes-peak', fixture.url))).json()) as number;
    expect(peak).toBeGreaterThan(1);
    expect(peak).toBeLessThanOrEqual(CONCURRENT_CLOSES);
  });
});
