// No secret in telemetry: a stdio server with secret env values and a remote
// server with a bearer token and a secret header, called with an argument
// holding a secret, a resource read and a prompt render; then every span
// name, attribute, event attribute and status, and every metric data point's
// attributes, is searched for each secret.
import { SpanKind } from '@opentelemetry/api';
import { afterAll, afterEach, expect, test } from 'vitest';
import { createMcpHost, type McpHost } from '../../src/host.js';
import { fixtureCommand, startHttpFixture, type HttpFixture } from '../fixtures/index.js';
import { stateDirWith, untilState } from '../host/helpers.js';
import { everyRecordedString, registerTestSdk } from './sdk.js';

const ENV_SECRET = 'canary-otel-env-SECRET-7001';
const BEARER_SECRET = 'canary-otel-bearer-SECRET-7002';
const HEADER_SECRET = 'canary-otel-header-SECRET-7003';
const ARGUMENT_SECRET = 'canary-otel-argument-SECRET-7004';
const INHERITED_SECRET = 'canary-otel-inherited-SECRET-7005';
const SECRETS = [ENV_SECRET, BEARER_SECRET, HEADER_SECRET, ARGUMENT_SECRET, INHERITED_SECRET];

const sdk = registerTestSdk();
let host: McpHost | undefined;
let remote: HttpFixture | undefined;
afterEach(async () => {
  await host?.shutdown();
  await remote?.stop();
});
afterAll(() => sdk.shutdown());

test('no configured secret, token or argument appears in any span or metric', async () => {
  remote = await startHttpFixture('http-server', [], {
    FIXTURE_BEARER_TOKEN: BEARER_SECRET,
    FIXTURE_REQUIRED_HEADER: `X-Api-Key: ${HEADER_SECRET}`,
  });
  process.env['MCP_FLEET_CANARY_INHERITED'] = INHERITED_SECRET;
  const dir = stateDirWith({
    local: {
      type: 'local',
      command: fixtureCommand('changing-catalog'),
      env: { API_KEY: ENV_SECRET, OTHER: `prefix-${ENV_SECRET}` },
      inherit_env: ['MCP_FLEET_CANARY_INHERITED'],
    },
    remote: {
      type: 'remote',
      url: remote.url,
      transport: 'streamable_http',
      headers: { 'X-Api-Key': HEADER_SECRET },
      auth: { kind: 'bearer', token: BEARER_SECRET },
    },
  });
  host = createMcpHost({ stateDir: dir });
  await host.start();
  await untilState(host, 'local', 'ready');
  await untilState(host, 'remote', 'ready');

  expect((await host.callTool('local__echo', { text: ARGUMENT_SECRET })).details.is_error).toBe(false);
  expect((await host.callTool('remote__echo', { text: ARGUMENT_SECRET })).details.is_error).toBe(false);
  await host.callTool('local__read_resource', { uri: `fixture://item/${ENV_SECRET}` });
  await host.renderPrompt('/local:greet', { name: ARGUMENT_SECRET });
  await host.callTool('local__add_tool', { name: 'added' });
  await host.shutdown();
  host = undefined;

  const spans = sdk.spans();
  // The calls were traced (the search below is not vacuous), the remote one with its peer.
  const remoteCall = spans.find((span) => span.name === 'tools/call echo' && span.attributes['mcp_fleet.server.name'] === 'remote');
  expect(remoteCall?.kind).toBe(SpanKind.CLIENT);
  expect(remoteCall?.attributes).toMatchObject({ 'network.transport': 'tcp', 'server.address': '127.0.0.1', 'server.port': expect.any(Number) });
  expect(spans.find((span) => span.name === 'resources/read')?.attributes['mcp.resource.uri']).toBe('fixture://item/••••');
  // A Streamable HTTP session id is recorded only as a digest.
  const session = remoteCall?.attributes['mcp.session.id'];
  expect(session).toMatch(/^[0-9a-f]{32}$/);

  const recorded = everyRecordedString(spans, await sdk.metrics());
  expect(recorded.length).toBeGreaterThan(100);
  for (const secret of SECRETS) {
    expect(recorded.filter((value) => value.includes(secret))).toEqual([]);
  }
});
