// `mcp_fleet.oauth.refreshes`: a real authorization server (oidc-provider)
// issuing 2-second access tokens in front of an SDK-built MCP server; the
// host's background refresh is counted as `refreshed`, a revoked grant's
// refusal as `refused`, and no token appears in any span or metric.
import { afterAll, afterEach, expect, it } from 'vitest';
import type { McpHost } from '../../src/host.js';
import type { ServerState } from '../../src/journal/events.js';
import { startFleet, type Fleet } from '../http/fleet.js';
import { consentAsUser, startAuthorizationServer, startMcpResourceServer } from '../oauth/servers.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { everyRecordedString, registerTestSdk } from './sdk.js';

const sdk = registerTestSdk();
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(() => sdk.shutdown());

async function untilState(host: McpHost, name: string, state: ServerState, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (host.server(name)?.state !== state) {
    if (Date.now() > deadline) throw new Error(`server ${name} did not reach ${state} (now ${host.server(name)?.state})`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

async function refreshes(): Promise<Array<{ outcome: unknown; value: number }>> {
  const metric = (await sdk.metrics()).find((data) => data.descriptor.name === 'mcp_fleet.oauth.refreshes');
  return (metric?.dataPoints ?? []).map((point) => ({ outcome: point.attributes['mcp_fleet.outcome'], value: point.value as number }));
}

it('background refreshes are counted by outcome, and no token reaches telemetry', { timeout: 60_000 }, async () => {
  const as = await startAuthorizationServer({ accessTokenTtl: 2 });
  cleanups.push(() => as.close());
  const mcp = await startMcpResourceServer(as.issuer, 'a');
  cleanups.push(() => mcp.close());
  const fleet: Fleet = await startFleet(
    () => ({ remote: { type: 'remote', url: mcp.url, transport: 'streamable_http', timeout_seconds: 15, auth: { kind: 'oauth' } } }),
    {},
    {},
  );
  cleanups.push(() => fleet.close());
  await untilState(fleet.host, 'remote', 'needs_reauth');
  const begun = await fleet.request('/api/mcp/servers/remote/auth', { method: 'POST' });
  expect(begun.status).toBe(200);
  expect((await consentAsUser(begun.json.authorization_url)).status).toBe(200);
  await untilState(fleet.host, 'remote', 'ready');

  // Half way through the 2 s lifetime the host refreshes in the background.
  await expect.poll(async () => (await refreshes()).find((point) => point.outcome === 'refreshed')?.value ?? 0, { timeout: 20_000 }).toBeGreaterThan(0);
  const tokens = JSON.parse(readFileSync(join(fleet.dir, 'oauth', 'remote.json'), 'utf8')).tokens as { access_token: string; refresh_token: string };
  expect((await fleet.host.callTool('remote__echo', { text: 'x' })).details.is_error).toBe(false);

  // A revoked grant: the next refresh is refused, and counted so.
  await as.revokeGrantOf(tokens.refresh_token);
  await untilState(fleet.host, 'remote', 'needs_reauth');
  expect((await refreshes()).find((point) => point.outcome === 'refused')?.value).toBeGreaterThan(0);

  const recorded = everyRecordedString(sdk.spans(), await sdk.metrics());
  for (const secret of [tokens.access_token, tokens.refresh_token]) {
    expect(recorded.filter((value) => value.includes(secret))).toEqual([]);
  }
});
