// Who an agent sees behind a tool name (SPEC §5: last registered wins, the
// loss visible in status and the journal), decided in one place: the
// projection's fold of `tools.registered` / `tools.unregistered`. The tool
// mount reads `visibleTools` and journals `shadowedByRegistration`.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { JournalEvent } from '../../src/journal/events.js';
import {
  emptyProjection,
  project,
  serverViews,
  shadowedByRegistration,
  visibleTools,
  type ProjectionContext,
} from '../../src/journal/projection.js';
import { maskedConfig } from './masked-config.js';

/** A fleet of servers folded event by event, as the host's journal does. */
function fleet() {
  let context: ProjectionContext = emptyProjection();
  let seq = 0;
  const fold = (event: Record<string, unknown>) => {
    context = project(context, { ...event, seq: ++seq, at: new Date(seq * 1000).toISOString() } as JournalEvent);
  };
  return {
    configure(server: string) {
      fold({ type: 'server.configured', server, actor: `${server}#1`, config: maskedConfig() });
    },
    /** Registers `tools` (agent name, or [agent name, original]); returns what it shadowed. */
    register(server: string, tools: Array<string | [string, string]>) {
      if (!context.servers[server]) this.configure(server);
      const entries = tools.map((entry) => {
        const [name, original] = typeof entry === 'string' ? [entry, entry] : entry;
        return { name, original, description: `${original} of ${server}` };
      });
      const shadowed = shadowedByRegistration(context, server, entries);
      fold({ type: 'tools.registered', server, tools: entries });
      return shadowed;
    },
    unregister(server: string) {
      fold({ type: 'tools.unregistered', server, tools: [] });
    },
    visible: () => visibleTools(context).map((tool) => `${tool.server}:${tool.name}`),
    owner: (name: string) => visibleTools(context).find((tool) => tool.name === name),
    shadowed: (server: string) => serverViews(context).find((view) => view.name === server)?.shadowed_tools,
  };
}

describe('visible tools and shadowing, folded from the journal', () => {
  it('a registration maps names back to originals; unregistering hides them all', () => {
    const f = fleet();
    expect(f.register('fs', [['fs__read_file', 'read.file'], 'fs__write'])).toEqual([]);
    expect(f.owner('fs__read_file')).toMatchObject({ server: 'fs', original: 'read.file' });
    expect(f.owner('nope')).toBeUndefined();
    f.unregister('fs');
    expect(f.visible()).toEqual([]);
  });

  it('a re-registration replaces the server’s tools in one step and keeps its place', () => {
    const f = fleet();
    f.register('one', ['x1']);
    f.register('two', ['x2']);
    f.register('one', ['y1', 'x1']);
    expect(f.visible()).toEqual(['one:y1', 'one:x1', 'two:x2']);
    f.register('one', ['x1', 'c']);
    expect(f.visible()).toEqual(['one:x1', 'one:c', 'two:x2']);
  });

  it('last registered wins a shared name; the loser is recorded and restored when the winner goes', () => {
    const f = fleet();
    f.register('a', ['same', 'only_a']);
    expect(f.register('b', ['same'])).toEqual([{ tool: 'same', shadowed_server: 'a' }]);
    expect(f.owner('same')?.server).toBe('b');
    expect(f.shadowed('a')).toEqual(['same']);
    expect(f.shadowed('b')).toEqual([]);
    expect(f.visible()).toEqual(['a:only_a', 'b:same']);

    f.unregister('b');
    expect(f.owner('same')?.server).toBe('a');
    expect(f.shadowed('a')).toEqual([]);
    expect(f.visible()).toEqual(['a:same', 'a:only_a']);
  });

  it('restores a shadowed tool when the winner stops offering the name; re-registering while winning hides nothing new', () => {
    const f = fleet();
    f.register('a', ['same']);
    f.register('b', ['same', 'other']);
    f.register('b', ['other']);
    expect(f.owner('same')?.server).toBe('a');

    f.register('b', ['same']);
    expect(f.register('a', ['same'])).toEqual([{ tool: 'same', shadowed_server: 'b' }]);
    expect(f.owner('same')?.server).toBe('a');
    expect(f.register('a', ['same'])).toEqual([]);
  });

  it('hands a name to the most recently registered remaining server', () => {
    const f = fleet();
    for (const server of ['a', 'b', 'c']) f.register(server, ['same']);
    f.unregister('c');
    expect(f.owner('same')?.server).toBe('b');
    expect(f.shadowed('a')).toEqual(['same']);
  });

  it('two tools of one server with the same name: its later one wins, reported as a shadowing within that server', () => {
    const f = fleet();
    expect(f.register('s', [['s__a_b', 'a.b'], ['s__a_b', 'a_b']])).toEqual([{ tool: 's__a_b', shadowed_server: 's' }]);
    expect(f.owner('s__a_b')).toMatchObject({ server: 's', original: 'a_b' });
  });

  it('agrees with a simple model over random register/unregister sequences', () => {
    const server = fc.constantFrom('a', 'b', 'c');
    const op = fc.oneof(
      fc.record({ kind: fc.constant('register' as const), server, tools: fc.uniqueArray(fc.constantFrom('x', 'y', 'z')) }),
      fc.record({ kind: fc.constant('unregister' as const), server }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 25 }), (ops) => {
        const f = fleet();
        // Model: servers ordered by their last registration; the latest offering a name owns it.
        let model: Array<{ server: string; tools: string[] }> = [];
        for (const o of ops) {
          model = model.filter((m) => m.server !== o.server);
          if (o.kind === 'register') {
            model.push({ server: o.server, tools: o.tools });
            f.register(o.server, o.tools);
          } else if (f.shadowed(o.server) !== undefined) f.unregister(o.server);
        }
        const owner = (name: string) => model.findLast((m) => m.tools.includes(name))?.server;
        for (const name of ['x', 'y', 'z']) expect(f.owner(name)?.server).toBe(owner(name));
        for (const m of model) expect(f.shadowed(m.server)).toEqual(m.tools.filter((n) => owner(n) !== m.server));
        expect(f.visible().map((entry) => entry.split(':')[1]).sort()).toEqual(['x', 'y', 'z'].filter((n) => owner(n) !== undefined));
      }),
      { numRuns: 1000 },
    );
  });
});
