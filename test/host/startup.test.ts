// The registry's startup rules (SPEC §4) on the real host with real fixture
// processes: one server connecting at a time, in file order, each published
// before it connects; the persisted config re-read at each dequeue (deleted,
// disabled); management actions win over the queue; shutdown drains and
// stops everything; a hanging server holds the queue only for its bound.
// (The machine alone is walked model-based in test/machines/.)
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import type { McpHost } from '../../src/host.js';
import type { ServerConfigInput } from '../../src/config/schema.js';
import { createFleet, enteredAt, isAlive, states, transitions, type Fleet } from '../machines/helpers/fleet.js';
import { until } from '../support/wait.js';

/** The servers that have tools in the registry right now. */
function toolServers(host: McpHost): string[] {
  return [...new Set(host.tools().map((tool) => tool.server))].sort();
}

// Real processes started one after another: bounds with room for a busy machine.
describe('startup on real processes', { timeout: 90_000 }, () => {
  test('connects one server at a time in file order, each published as pending before it connects', async () => {
    const fleet = createFleet();
    const slow = (name: string) => fleet.local(name, 'slow-start', { env: { FIXTURE_DELAY_MS: '300' } });
    fleet.writeServers({
      a: slow('a'),
      off: fleet.local('off', 'healthy', { enabled: false }),
      b: slow('b'),
      c: slow('c'),
    });
    const host = fleet.host();
    await host.start();

    // Published at once, in file order; nothing ready, no tools.
    expect(states(host)).toEqual({ a: 'pending', off: 'disabled', b: 'pending', c: 'pending' });
    expect(host.status().map((view) => view.name)).toEqual(['a', 'off', 'b', 'c']);
    expect(host.status().every((view) => !view.ready && view.tool_count === 0)).toBe(true);
    expect(host.tools()).toEqual([]);

    await until(() => host.status().filter((view) => view.ready).length === 3, 'a, b and c are ready', 45_000);

    const readyOrder = transitions(host)
      .filter((event) => event.from === 'pending' && event.to === 'ready')
      .map((event) => event.server);
    expect(readyOrder).toEqual(['a', 'b', 'c']);
    expect(fleet.spawns().map((spawn) => spawn.name)).toEqual(['a', 'b', 'c']);
    expect(states(host)).toEqual({ a: 'ready', off: 'disabled', b: 'ready', c: 'ready' });
    expect(toolServers(host)).toEqual(['a', 'b', 'c']);

    // Each child starts only after the one before it left pending: never two connecting at once.
    const order = ['a', 'b', 'c'];
    for (const [index, name] of order.entries()) {
      const [spawn] = fleet.spawnsOf(name);
      const published = Date.parse(transitions(host, name)[0]!.at);
      expect(transitions(host, name)[0]).toMatchObject({ from: null, to: 'pending' });
      expect(spawn!.at, `${name} is published before its process starts`).toBeGreaterThanOrEqual(published);
      if (index > 0) {
        const previous = order[index - 1]!;
        expect(spawn!.at, `${name} starts after ${previous} is ready`).toBeGreaterThanOrEqual(
          enteredAt(host, previous, 'ready'),
        );
      }
    }
  });

  /**
   * `a` holds the queue until `release()`: the test acts once its process runs (startup is in progress,
   * b and c queued), then lets it go. Not a timer: on a busy machine the action can take longer than any.
   */
  async function startWithSlowHead(fleet: Fleet, rest: Record<string, ServerConfigInput>) {
    const releaseFile = join(fleet.dir, 'release-a');
    const servers: Record<string, ServerConfigInput> = {
      a: fleet.local('a', 'slow-start', { env: { FIXTURE_RELEASE_FILE: releaseFile } }),
      ...rest,
    };
    fleet.writeServers(servers);
    const host = fleet.host();
    await host.start();
    await until(() => fleet.spawnsOf('a').length === 1, 'a has started', 20_000);
    expect(states(host)).toMatchObject({ a: 'pending', b: 'pending', c: 'pending' });
    return { host, servers, release: () => writeFileSync(releaseFile, '') };
  }

  test('a server deleted from the file during startup is never started and leaves the status', async () => {
    const fleet = createFleet();
    const { host, servers, release } = await startWithSlowHead(fleet, {
      b: fleet.local('b', 'healthy'),
      c: fleet.local('c', 'healthy'),
    });
    const { b: _deleted, ...kept } = servers;
    fleet.writeServers(kept);
    release();

    await until(() => host.server('c')?.state === 'ready', 'c is ready', 30_000);
    expect(fleet.spawnsOf('b')).toEqual([]);
    expect(states(host)).toEqual({ a: 'ready', c: 'ready' });
    expect(toolServers(host)).toEqual(['a', 'c']);
    expect(transitions(host, 'b').map((event) => event.to)).toEqual(['pending', 'stopped']);
    expect(host.events().some((event) => event.type === 'server.removed' && event.server === 'b')).toBe(true);
  });

  test('a server disabled in the file during startup stays disabled with no process', async () => {
    const fleet = createFleet();
    const { host, servers, release } = await startWithSlowHead(fleet, {
      b: fleet.local('b', 'healthy'),
      c: fleet.local('c', 'healthy'),
    });
    fleet.writeServers({ ...servers, b: fleet.local('b', 'healthy', { enabled: false }) });
    release();

    await until(() => host.server('c')?.state === 'ready', 'c is ready', 30_000);
    expect(states(host)).toEqual({ a: 'ready', b: 'disabled', c: 'ready' });
    expect(fleet.spawnsOf('b')).toEqual([]);
    expect(host.server('b')).toMatchObject({ ready: false, tool_count: 0, error: null });
    expect(host.server('b')!.config).toMatchObject({ enabled: false });
    expect(toolServers(host)).toEqual(['a', 'c']);
  });

  test('a server edited in the file during startup connects with, and shows, the edited config', async () => {
    const fleet = createFleet();
    const { host, servers, release } = await startWithSlowHead(fleet, {
      b: fleet.local('b', 'healthy'),
      c: fleet.local('c', 'healthy'),
    });
    fleet.writeServers({ ...servers, b: fleet.local('b', 'healthy', { timeout_seconds: 7, env: { MARK: 'edited' } }) });
    release();

    await until(() => host.server('c')?.state === 'ready', 'c is ready', 30_000);
    const probe = await host.callTool('b__env', { name: 'MARK' });
    expect(JSON.parse((probe.content[0] as { text: string }).text)).toMatchObject({ set: true, length: 6 });
    expect(host.server('b')!.config).toMatchObject({ timeout_seconds: 7, env: { MARK: { has_value: true } } });
    expect(fleet.spawnsOf('b')).toHaveLength(1);
  });

  type Action = (host: McpHost, fleet: Fleet) => Promise<unknown>;
  const management: Array<{ action: string; act: Action; expectB: 'ready' | 'gone'; spawnsOfB: number; actorOfB?: string }> = [
    { action: 'restartServer', act: (host) => host.restartServer('b'), expectB: 'ready', spawnsOfB: 1, actorOfB: 'b' },
    {
      action: 'updateServer',
      act: (host) => host.updateServer('b', { timeout_seconds: 9 }),
      expectB: 'ready',
      spawnsOfB: 1,
      actorOfB: 'b',
    },
    { action: 'removeServer', act: (host) => host.removeServer('b'), expectB: 'gone', spawnsOfB: 0 },
    {
      action: 'removeServer then addServer (same name)',
      act: async (host, fleet) => {
        await host.removeServer('b');
        await host.addServer('b', fleet.local('b', 'healthy', { timeout_seconds: 8 }));
      },
      expectB: 'ready',
      spawnsOfB: 1,
      actorOfB: 'b#1',
    },
  ];

  test.each(management)('$action on a queued server takes precedence; the queue leaves it alone', async (scenario) => {
    const fleet = createFleet();
    const { host, release } = await startWithSlowHead(fleet, {
      b: fleet.local('b', 'healthy'),
      c: fleet.local('c', 'healthy'),
    });
    await scenario.act(host, fleet);
    // The action finished while `a` still connects: b was handled outside the queue.
    expect(host.server('a')?.state).toBe('pending');
    release();

    await until(() => host.server('c')?.state === 'ready', 'c is ready', 30_000);
    // Startup is over: the queue has passed b (and could only have touched it before now).
    await host.settled();

    expect(fleet.spawnsOf('b')).toHaveLength(scenario.spawnsOfB);
    expect(fleet.spawnsOf('c')).toHaveLength(1);
    expect(fleet.spawnsOf('c')[0]!.at).toBeGreaterThanOrEqual(enteredAt(host, 'a', 'ready'));
    // Management acted on the queued actor itself (only a deletion replaces it); the queue then left it alone.
    const movesOf = (actor: string) => transitions(host, 'b').filter((event) => event.actor === actor).map((event) => event.to);
    if (scenario.expectB === 'gone') {
      expect(movesOf('b')).toEqual(['pending', 'stopped']);
      expect(states(host)).toEqual({ a: 'ready', c: 'ready' });
      expect(Object.keys(fleet.readServers())).toEqual(['a', 'c']);
      expect(toolServers(host)).toEqual(['a', 'c']);
    } else {
      expect(states(host)).toEqual({ a: 'ready', b: 'ready', c: 'ready' });
      if (scenario.actorOfB === 'b') {
        expect(movesOf('b')).toEqual(['pending', 'ready']);
      } else {
        expect(movesOf('b')).toEqual(['pending', 'stopped']);
        expect(movesOf(scenario.actorOfB!)).toEqual(['pending', 'ready']);
      }
      expect(toolServers(host)).toEqual(['a', 'b', 'c']);
      expect((await host.callTool('b__echo', { text: 'still b' })).content).toEqual([{ type: 'text', text: 'still b' }]);
      const persisted = fleet.readServers()['b'] as { timeout_seconds?: number };
      const viewed = host.server('b')!.config as { timeout_seconds: number };
      if (scenario.action === 'updateServer') expect([persisted.timeout_seconds, viewed.timeout_seconds]).toEqual([9, 9]);
      if (scenario.action.startsWith('removeServer then'))
        expect([persisted.timeout_seconds, viewed.timeout_seconds]).toEqual([8, 8]);
    }
  });

  test('shutdown during startup drains the queue, stops every server and leaves no child', async () => {
    const fleet = createFleet();
    fleet.writeServers({
      r: fleet.local('r', 'healthy'),
      // Connecting when shutdown comes, and deaf to SIGTERM: only SIGKILL ends it.
      h: fleet.local('h', 'hang-on-init', {
        timeout_seconds: 30,
        env: { FIXTURE_IGNORE_SIGTERM: '1', FIXTURE_PID_FILE: join(fleet.dir, 'h.pid') },
      }),
      b: fleet.local('b', 'healthy'),
      c: fleet.local('c', 'healthy'),
    });
    const host = fleet.host();
    await host.start();
    // The pid file is written just before h starts ignoring SIGTERM, in the same tick.
    await until(() => host.server('r')?.ready === true && existsSync(join(fleet.dir, 'h.pid')), 'r is ready and h is connecting', 30_000);
    expect(toolServers(host)).toEqual(['r']);
    expect(states(host)).toEqual({ r: 'ready', h: 'pending', b: 'pending', c: 'pending' });

    await host.shutdown();

    const spawned = fleet.spawns();
    expect(spawned.map((spawn) => spawn.name)).toEqual(['r', 'h']);
    expect(spawned.filter((spawn) => isAlive(spawn.pid))).toEqual([]);
    expect(host.tools()).toEqual([]);
    expect((await host.callTool('r__echo', { text: 'x' })).details.is_error).toBe(true);
    for (const name of ['r', 'h', 'b', 'c']) {
      expect(transitions(host, name).at(-1)?.to, `${name} ends stopped`).toBe('stopped');
    }
    expect(transitions(host, 'b').map((event) => event.to)).toEqual(['pending', 'stopped']);
    expect(host.events().some((event) => event.type === 'tools.unregistered' && event.server === 'r')).toBe(true);
    // The views stay, each `stopped` with no tools (SPEC §4: process ended, tools gone).
    expect(host.status().map((view) => [view.name, view.state, view.ready, view.tool_count])).toEqual(
      ['r', 'h', 'b', 'c'].map((name) => [name, 'stopped', false, 0]),
    );
    // Nothing can start afterwards: every actor is done and the registry stopped.
    expect(fleet.spawns()).toHaveLength(2);
  });

  test('a server hanging on initialize holds the queue no longer than its timeout_seconds', async () => {
    const fleet = createFleet();
    fleet.writeServers({
      // 3 s: room for a busy machine to boot node and log h's start before the bound ends it.
      h: fleet.local('h', 'hang-on-init', { timeout_seconds: 3 }),
      b: fleet.local('b', 'healthy'),
    });
    const host = fleet.host();
    await host.start();
    await until(() => host.server('b')?.ready === true, 'b is ready', 30_000);

    expect(host.server('h')).toMatchObject({ state: 'error', error_kind: 'timeout' });
    const [h] = fleet.spawnsOf('h');
    const [b] = fleet.spawnsOf('b');
    expect(h, 'h logged its start').toBeDefined();
    expect(isAlive(h!.pid)).toBe(false);
    const hLeftPending = enteredAt(host, 'h', 'error');
    // b waits for h's bound to end it, not for anything else: it starts only after h left pending.
    expect(b!.at).toBeGreaterThanOrEqual(hLeftPending);
  });

  test('settled() resolves once the views show every server out of pending, the last one hanging to its bound', async () => {
    const fleet = createFleet();
    // The queue moves on at each bound, the same moment the server's own deadline ends its start.
    fleet.writeServers({
      h1: fleet.local('h1', 'hang-on-init', { timeout_seconds: 2 }),
      h2: fleet.local('h2', 'hang-on-init', { timeout_seconds: 1 }),
    });
    const host = fleet.host();
    await host.start();
    await host.settled();
    expect(host.status().map((view) => [view.name, view.state, view.error_kind])).toEqual([
      ['h1', 'error', 'timeout'],
      ['h2', 'error', 'timeout'],
    ]);
  });
});

describe('startup_concurrency on real processes', { timeout: 90_000 }, () => {
  test('at 2, two servers connect at once, the rest in file order as slots free up', async () => {
    const fleet = createFleet();
    const slow = (name: string) => fleet.local(name, 'slow-start', { env: { FIXTURE_DELAY_MS: '600' } });
    const gates = { a: join(fleet.dir, 'release-a'), b: join(fleet.dir, 'release-b') };
    // a and b serve only once both have started (not after a delay a busy machine could outlast).
    const gated = (name: 'a' | 'b') => fleet.local(name, 'slow-start', { env: { FIXTURE_RELEASE_FILE: gates[name] } });
    fleet.writeServers({ a: gated('a'), b: gated('b'), c: slow('c'), d: slow('d') });
    const host = fleet.host({ startupConcurrency: 2 });
    await host.start();
    await until(() => fleet.spawnsOf('a').length === 1 && fleet.spawnsOf('b').length === 1, 'a and b have started', 20_000);
    for (const gate of Object.values(gates)) writeFileSync(gate, '');
    await host.settled();

    expect(states(host)).toEqual({ a: 'ready', b: 'ready', c: 'ready', d: 'ready' });
    // Children started together log their start in either order: compare sets per wave.
    const names = fleet.spawns().map((spawn) => spawn.name);
    expect(names).toHaveLength(4);
    expect(names.slice(0, 2).sort()).toEqual(['a', 'b']);
    const spawned = (name: string) => fleet.spawnsOf(name)[0]!.at;
    // a and b run together: b starts before a is ready (a serves only once b has started).
    expect(spawned('b')).toBeLessThan(enteredAt(host, 'a', 'ready'));
    // c waits for a slot: it starts only once a or b has left pending, and so does d.
    const firstReady = Math.min(enteredAt(host, 'a', 'ready'), enteredAt(host, 'b', 'ready'));
    expect(spawned('c')).toBeGreaterThanOrEqual(firstReady);
    const secondReady = Math.max(enteredAt(host, 'a', 'ready'), enteredAt(host, 'b', 'ready'));
    expect(spawned('d')).toBeGreaterThanOrEqual(Math.min(secondReady, enteredAt(host, 'c', 'ready')));
    // Never more than two children connecting at once.
    const windows = ['a', 'b', 'c', 'd'].map((name) => [spawned(name), enteredAt(host, name, 'ready')] as const);
    for (const [start] of windows) {
      const overlapping = windows.filter(([from, to]) => from <= start && start < to);
      expect(overlapping.length).toBeLessThanOrEqual(2);
    }
  });

  test('at 2, each server is still re-read from the file when it is dequeued', async () => {
    const fleet = createFleet();
    // a and b hold both slots until the edit below is saved (not for a delay a busy machine could outlast).
    const slow = (name: string) => fleet.local(name, 'slow-start', { env: { FIXTURE_RELEASE_FILE: join(fleet.dir, 'release') } });
    const servers = {
      a: slow('a'),
      b: slow('b'),
      c: fleet.local('c', 'healthy'),
      d: fleet.local('d', 'healthy'),
      e: fleet.local('e', 'healthy'),
    };
    fleet.writeServers(servers);
    const host = fleet.host({ startupConcurrency: 2 });
    await host.start();
    await until(() => fleet.spawnsOf('a').length === 1 && fleet.spawnsOf('b').length === 1, 'a and b have started', 20_000);
    expect(states(host)).toMatchObject({ a: 'pending', b: 'pending', c: 'pending', d: 'pending', e: 'pending' });
    // Both slots are taken; edit the queued ones: c disabled, d deleted, e changed.
    const { d: _deleted, ...kept } = servers;
    fleet.writeServers({
      ...kept,
      c: fleet.local('c', 'healthy', { enabled: false }),
      e: fleet.local('e', 'healthy', { env: { MARK: 'edited' } }),
    });
    writeFileSync(join(fleet.dir, 'release'), '');

    await host.settled();
    expect(states(host)).toEqual({ a: 'ready', b: 'ready', c: 'disabled', e: 'ready' });
    expect(fleet.spawnsOf('c')).toEqual([]);
    expect(fleet.spawnsOf('d')).toEqual([]);
    const probe = await host.callTool('e__env', { name: 'MARK' });
    expect(JSON.parse((probe.content[0] as { text: string }).text)).toMatchObject({ set: true, length: 6 });
  });

  test('must be an integer of at least 1', () => {
    const fleet = createFleet();
    expect(() => fleet.host({ startupConcurrency: 0 })).toThrow(RangeError);
    expect(() => fleet.host({ startupConcurrency: 1.5 })).toThrow(RangeError);
  });
});
