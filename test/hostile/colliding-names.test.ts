// 300 tools whose names collide once namespaced (`tool.N`/`tool_N`, and long
// names sharing their first 62 characters), on two servers whose names also
// collide once cut: every tool is reachable, or its loss is visible in the
// status and the journal; every name stays a valid provider tool name.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { closeAndExpectNoChild, expectStillServing, hostile, pidFile, readPid, startWithHealthy, type Fleet } from './helpers.js';

const NAME = /^[A-Za-z0-9_-]{1,64}$/;
// Two server names of 40 characters sharing the first 39: the long tool names cut them to one letter.
const FIRST = `collide_${'x'.repeat(31)}1`;
const SECOND = `collide_${'x'.repeat(31)}2`;

let fleet: Fleet;
beforeAll(async () => {
  fleet = await startWithHealthy((dir) => ({
    [FIRST]: hostile(dir, FIRST, 'colliding-tools'),
    [SECOND]: hostile(dir, SECOND, 'colliding-tools'),
  }));
});
afterAll(async () => {
  if (fleet) await closeAndExpectNoChild(fleet, [readPid(pidFile(fleet.dir, FIRST)), readPid(pidFile(fleet.dir, SECOND))]);
});

describe('hundreds of tools with colliding names', () => {
  test('every name is a valid tool name of at most 64 characters', () => {
    const names = fleet.host.tools().map((tool) => tool.name);
    expect(names.length).toBeGreaterThan(100);
    for (const name of names) expect(name).toMatch(NAME);
    for (const entry of fleet.host.catalog()) for (const tool of entry.tools) expect(tool.name).toMatch(NAME);
  });

  test('each original is reachable under its name, or shown as shadowed in the status and the journal', () => {
    const visible = new Map(fleet.host.tools().map((tool) => [tool.name, tool]));
    const events = fleet.host.events();
    const shadowEvents = events.filter((event) => event.type === 'tool.shadowed');
    let hidden = 0;
    for (const server of [FIRST, SECOND]) {
      const view = fleet.host.server(server)!;
      expect(view.state).toBe('ready');
      // Counted as registered: the tools shown under the server's name, not those another name shadows.
      expect(view.tool_count).toBe([...visible.values()].filter((tool) => tool.server === server).length);
      expect(view.tool_count).toBeLessThan(300);
      // Every tool the server offered, as registered: the namespaced name and the original.
      const registered = events.findLast((event) => event.type === 'tools.registered' && event.server === server);
      if (registered?.type !== 'tools.registered') throw new Error(`no registration of ${server}`);
      expect(registered.tools).toHaveLength(300);
      for (const tool of registered.tools) {
        const winner = visible.get(tool.name);
        if (winner?.server === server && winner.originalName === tool.original) continue;
        hidden += 1;
        expect(view.shadowed_tools, `${server}/${tool.original}`).toContain(tool.name);
        expect(shadowEvents.some((event) => event.type === 'tool.shadowed' && event.tool === tool.name && event.shadowed_server === server)).toBe(true);
      }
    }
    // 100 `tool.N` per server lose to their `tool_N`; 99 long names per server lose to the last, and it to the other server.
    expect(hidden).toBe(2 * 100 + 2 * 99 + 1);
  });

  test('a call reaches the original its name stands for', async () => {
    for (const tool of fleet.host.tools().filter((candidate) => candidate.server !== 'healthy')) {
      const result = await fleet.host.callTool(tool.name, {});
      expect(result.content).toEqual([{ type: 'text', text: `called ${tool.originalName}` }]);
    }
    await expectStillServing(fleet);
  });
});
