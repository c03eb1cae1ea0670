// Two hosts in one process share nothing: each with a server of the same name
// on a real stdio fixture, both traced by one in-memory OpenTelemetry SDK. A's
// restarts and shutdown end only A's lifecycle spans, B's connect and re-sync
// spans stay under B's own lifecycle span, and each host's tools and views
// stay its own while the other's change.
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, afterEach, expect, test } from 'vitest';
import { createMcpHost, type McpHost } from '../../src/host.js';
import { fixtureCommand } from '../fixtures/index.js';
import { stateDirWith, untilState } from '../host/helpers.js';
import { parentOf, registerTestSdk } from './sdk.js';

const sdk = registerTestSdk();
const hosts: McpHost[] = [];

afterEach(async () => {
  await Promise.all(hosts.splice(0).map((host) => host.shutdown()));
  sdk.reset();
});
afterAll(() => sdk.shutdown());

async function startHost(include: string[]): Promise<McpHost> {
  const host = createMcpHost({
    stateDir: stateDirWith({ twin: { type: 'local', command: fixtureCommand('healthy'), tools: { include, exclude: [] } } }),
  });
  hosts.push(host);
  await host.start();
  await untilState(host, 'twin', 'ready');
  return host;
}

async function until(predicate: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const named = (name: string) => sdk.spans().filter((span) => span.name === name);
const idOf = (span: ReadableSpan) => span.spanContext().spanId;
const endedLifecycles = () => named('server twin').map(idOf).sort();
const toolNames = (host: McpHost) => host.tools().map((tool) => tool.name).sort();
const viewOf = (host: McpHost) => {
  const view = host.server('twin')!;
  return { tool_count: view.tool_count, shadowed_tools: view.shadowed_tools, state: view.state };
};

/** The newest `connect twin` span: its parent is the lifecycle span of the host that just connected. */
function lastConnectParent(): string {
  const connects = named('connect twin');
  return parentOf(connects.at(-1)!)!;
}

/** Forces a re-sync of `host`'s twin and returns the parent of its `catalog.sync tools` span. */
async function resyncParent(host: McpHost): Promise<string | undefined> {
  const before = named('catalog.sync tools').length;
  await host.refreshCatalog('twin');
  const syncs = named('catalog.sync tools');
  expect(syncs.length).toBe(before + 1);
  return parentOf(syncs.at(-1)!);
}

test('two hosts with a server of the same name: lifecycle spans, tools and views never cross', async () => {
  const a = await startHost(['echo', 'add']);
  const lifeA1 = lastConnectParent();
  const b = await startHost(['env']);
  const lifeB = lastConnectParent();
  expect(lifeB).not.toBe(lifeA1);

  expect(toolNames(a)).toEqual(['twin__add', 'twin__echo']);
  expect(toolNames(b)).toEqual(['twin__env']);
  expect(viewOf(a)).toEqual({ tool_count: 2, shadowed_tools: [], state: 'ready' });
  expect(viewOf(b)).toEqual({ tool_count: 1, shadowed_tools: [], state: 'ready' });

  // Restarting A's twin reconnects it under A's lifecycle span; nothing of B's ends.
  await a.restartServer('twin');
  await untilState(a, 'twin', 'ready');
  expect(lastConnectParent()).toBe(lifeA1);
  expect(endedLifecycles()).toEqual([]);
  expect(await resyncParent(b)).toBe(lifeB);

  // Removing A's twin ends A's lifecycle span, and only it; added again, it opens a new one.
  await a.removeServer('twin');
  await until(() => endedLifecycles().length > 0, "the end of A's lifecycle span");
  expect(endedLifecycles()).toEqual([lifeA1]);
  expect(await resyncParent(b)).toBe(lifeB);
  await a.addServer('twin', { type: 'local', command: fixtureCommand('healthy'), tools: { include: ['echo', 'add'], exclude: [] } });
  await untilState(a, 'twin', 'ready');
  const lifeA2 = lastConnectParent();
  expect([lifeA1, lifeB]).not.toContain(lifeA2);
  expect(endedLifecycles()).toEqual([lifeA1]);

  // B's re-sync stays under B's lifecycle span, whatever A did to its own twin.
  expect(await resyncParent(b)).toBe(lifeB);
  expect(await resyncParent(a)).toBe(lifeA2);
  expect(toolNames(b)).toEqual(['twin__env']);
  expect(viewOf(b)).toEqual({ tool_count: 1, shadowed_tools: [], state: 'ready' });

  // B's tools change; A's stay its own.
  await b.updateServer('twin', { tools: { include: ['echo', 'env', 'fail'], exclude: [] } });
  await untilState(b, 'twin', 'ready');
  await b.settled();
  expect(toolNames(b)).toEqual(['twin__echo', 'twin__env', 'twin__fail']);
  expect(viewOf(b)).toEqual({ tool_count: 3, shadowed_tools: [], state: 'ready' });
  expect(toolNames(a)).toEqual(['twin__add', 'twin__echo']);
  expect(viewOf(a)).toEqual({ tool_count: 2, shadowed_tools: [], state: 'ready' });
  expect(b.hasTool('twin__add')).toBe(false);
  expect(a.hasTool('twin__env')).toBe(false);

  // A stopping for good ends A's lifecycle span and leaves B's open and B's re-syncs under it.
  await a.shutdown();
  hosts.splice(hosts.indexOf(a), 1);
  expect(endedLifecycles()).toEqual([lifeA1, lifeA2].sort());
  expect(await resyncParent(b)).toBe(lifeB);
  expect(toolNames(b)).toEqual(['twin__echo', 'twin__env', 'twin__fail']);

  await b.shutdown();
  hosts.splice(hosts.indexOf(b), 1);
  expect(endedLifecycles()).toEqual([lifeA1, lifeA2, lifeB].sort());
});
