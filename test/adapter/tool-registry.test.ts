import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import type { AgentTool } from '../../src/services/tools/agent-tool.js';
import {
  createToolRegistry,
  toAnthropicTools,
  toOpenAITools,
  type ToolRegistryEvents,
} from '../../src/services/tools/registry.js';

/** A tool as the adapter would build it; `name` is given so collisions are easy to stage. */
function tool(server: string, name: string, original = name): AgentTool {
  return {
    name,
    description: `${original} of ${server}`,
    parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
    server,
    originalName: original,
    execute: async () => ({ content: [], details: { is_error: false, server, tool: original } }),
  };
}
const names = (tools: AgentTool[]) => tools.map((t) => `${t.server}:${t.name}`);

function recordEvents(registry: ReturnType<typeof createToolRegistry>) {
  const seen: Array<[keyof ToolRegistryEvents, unknown]> = [];
  registry.events.on('*', (type, payload) => seen.push([type, payload]));
  return seen;
}

describe('ToolRegistry', () => {
  it('registers, resolves back to originals and unregisters', () => {
    const registry = createToolRegistry();
    const seen = recordEvents(registry);
    const outcome = registry.register('fs', [tool('fs', 'fs__read_file', 'read.file'), tool('fs', 'fs__write')]);
    expect(outcome).toEqual({ registered: ['fs__read_file', 'fs__write'], shadowed: [] });
    expect(registry.get('fs__read_file')?.originalName).toBe('read.file');
    expect(registry.resolve('fs__read_file')).toEqual({ server: 'fs', tool: 'read.file' });
    expect(registry.resolve('nope')).toBeUndefined();
    expect(names(registry.forServer('fs'))).toEqual(['fs:fs__read_file', 'fs:fs__write']);

    expect(registry.unregister('fs')).toEqual(['fs__read_file', 'fs__write']);
    expect(registry.list()).toEqual([]);
    expect(registry.get('fs__write')).toBeUndefined();
    expect(registry.forServer('fs')).toEqual([]);
    expect(seen).toEqual([
      ['registered', { server: 'fs', tools: ['fs__read_file', 'fs__write'] }],
      ['unregistered', { server: 'fs', tools: ['fs__read_file', 'fs__write'] }],
    ]);
    // Unknown server: nothing removed, nothing announced.
    expect(registry.unregister('fs')).toEqual([]);
    expect(seen).toHaveLength(2);
  });

  it('replaces a server’s tools in one step: listeners never see a kept name missing or a dropped one present', () => {
    const registry = createToolRegistry();
    registry.register('fs', [tool('fs', 'a'), tool('fs', 'b')]);
    const onUnregistered = vi.fn();
    registry.events.on('unregistered', onUnregistered);
    const observed: Array<string | undefined> = [];
    registry.events.on('registered', () => observed.push(...['a', 'b', 'c'].map((n) => registry.get(n)?.description)));

    const replacement = tool('fs', 'a', 'a-v2');
    const outcome = registry.register('fs', [replacement, tool('fs', 'c')]);
    expect(outcome).toEqual({ registered: ['a', 'c'], shadowed: [] });
    expect(observed).toEqual(['a-v2 of fs', undefined, 'c of fs']);
    expect(onUnregistered).not.toHaveBeenCalled();
    expect(registry.get('a')).toBe(replacement);
    expect(names(registry.list())).toEqual(['fs:a', 'fs:c']);
  });

  it('keeps a server’s place in list() when it re-registers', () => {
    const registry = createToolRegistry();
    registry.register('one', [tool('one', 'x1')]);
    registry.register('two', [tool('two', 'x2')]);
    registry.register('one', [tool('one', 'y1'), tool('one', 'x1')]);
    expect(names(registry.list())).toEqual(['one:y1', 'one:x1', 'two:x2']);
  });

  it('last registered wins a shared name; the loser is recorded, announced and restored', () => {
    const registry = createToolRegistry();
    const seen = recordEvents(registry);
    registry.register('a', [tool('a', 'same'), tool('a', 'only_a')]);
    const outcome = registry.register('b', [tool('b', 'same')]);

    expect(outcome).toEqual({ registered: ['same'], shadowed: [{ tool: 'same', server: 'a' }] });
    expect(registry.resolve('same')).toEqual({ server: 'b', tool: 'same' });
    expect(registry.shadowed('a')).toEqual(['same']);
    expect(registry.shadowed('b')).toEqual([]);
    expect(names(registry.list())).toEqual(['a:only_a', 'b:same']);
    expect(names(registry.forServer('a'))).toEqual(['a:same', 'a:only_a']);
    expect(seen.slice(-2)).toEqual([
      ['registered', { server: 'b', tools: ['same'] }],
      ['shadowed', { tool: 'same', server: 'b', shadowed_server: 'a' }],
    ]);

    expect(registry.unregister('b')).toEqual(['same']);
    expect(registry.resolve('same')).toEqual({ server: 'a', tool: 'same' });
    expect(registry.shadowed('a')).toEqual([]);
    expect(names(registry.list())).toEqual(['a:same', 'a:only_a']);
  });

  it('restores a shadowed tool when the winner stops offering the name, and re-registering wins it back', () => {
    const registry = createToolRegistry();
    registry.register('a', [tool('a', 'same')]);
    registry.register('b', [tool('b', 'same'), tool('b', 'other')]);
    registry.register('b', [tool('b', 'other')]);
    expect(registry.resolve('same')?.server).toBe('a');

    registry.register('b', [tool('b', 'same')]);
    const outcome = registry.register('a', [tool('a', 'same')]);
    expect(outcome.shadowed).toEqual([{ tool: 'same', server: 'b' }]);
    expect(registry.resolve('same')?.server).toBe('a');
    // Re-registering while already winning hides nothing new: no repeated shadow report.
    const shadowEvents = vi.fn();
    registry.events.on('shadowed', shadowEvents);
    expect(registry.register('a', [tool('a', 'same')]).shadowed).toEqual([]);
    expect(shadowEvents).not.toHaveBeenCalled();
  });

  it('hands a name to the most recently registered remaining server', () => {
    const registry = createToolRegistry();
    for (const server of ['a', 'b', 'c']) registry.register(server, [tool(server, 'same')]);
    registry.unregister('c');
    expect(registry.resolve('same')?.server).toBe('b');
    expect(registry.shadowed('a')).toEqual(['same']);
  });

  it('reports two tools of one server with the same name as a shadowing within that server', () => {
    const registry = createToolRegistry();
    const outcome = registry.register('s', [tool('s', 's__a_b', 'a.b'), tool('s', 's__a_b', 'a_b')]);
    expect(outcome).toEqual({ registered: ['s__a_b'], shadowed: [{ tool: 's__a_b', server: 's' }] });
    expect(registry.resolve('s__a_b')).toEqual({ server: 's', tool: 'a_b' });
  });

  it('agrees with a simple model over random register/unregister sequences', () => {
    const server = fc.constantFrom('a', 'b', 'c');
    const op = fc.oneof(
      fc.record({ kind: fc.constant('register' as const), server, tools: fc.uniqueArray(fc.constantFrom('x', 'y', 'z')) }),
      fc.record({ kind: fc.constant('unregister' as const), server }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 25 }), (ops) => {
        const registry = createToolRegistry();
        // Model: servers ordered by their last registration; the latest offering a name owns it.
        let model: Array<{ server: string; tools: string[] }> = [];
        for (const o of ops) {
          model = model.filter((m) => m.server !== o.server);
          if (o.kind === 'register') {
            model.push({ server: o.server, tools: o.tools });
            registry.register(o.server, o.tools.map((n) => tool(o.server, n)));
          } else registry.unregister(o.server);
        }
        const owner = (name: string) => model.findLast((m) => m.tools.includes(name))?.server;
        for (const name of ['x', 'y', 'z']) expect(registry.resolve(name)?.server).toBe(owner(name));
        for (const m of model) expect(registry.shadowed(m.server)).toEqual(m.tools.filter((n) => owner(n) !== m.server));
        const listed = registry.list().map((t) => t.name);
        expect([...listed].sort()).toEqual(['x', 'y', 'z'].filter((n) => owner(n) !== undefined));
      }),
      { numRuns: 1000 },
    );
  });
});

describe('provider formats', () => {
  const tools = [tool('fs', 'fs__read'), { ...tool('fs', 'fs__list'), parameters: { type: 'object', $defs: { x: {} } } }];

  it('toOpenAITools passes schemas verbatim and forwards `strict` only when given', () => {
    const out = toOpenAITools(tools);
    expect(out).toEqual([
      { type: 'function', function: { name: 'fs__read', description: 'fs__read of fs', parameters: tools[0]?.parameters } },
      { type: 'function', function: { name: 'fs__list', description: 'fs__list of fs', parameters: tools[1]?.parameters } },
    ]);
    expect(out[1]?.function.parameters).toStrictEqual({ type: 'object', $defs: { x: {} } });
    expect(out.every((t) => !('strict' in t.function))).toBe(true);
    expect(toOpenAITools(tools, { strict: true }).map((t) => t.function.strict)).toEqual([true, true]);
    expect(toOpenAITools(tools, { strict: false }).map((t) => t.function.strict)).toEqual([false, false]);
  });

  it('toAnthropicTools passes schemas verbatim as input_schema', () => {
    expect(toAnthropicTools(tools)).toStrictEqual([
      { name: 'fs__read', description: 'fs__read of fs', input_schema: tools[0]?.parameters },
      { name: 'fs__list', description: 'fs__list of fs', input_schema: { type: 'object', $defs: { x: {} } } },
    ]);
  });
});
