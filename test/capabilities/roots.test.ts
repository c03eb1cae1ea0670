import { afterEach, describe, expect, test } from 'vitest';
import { createMcpHost, type McpHost } from '../../src/host.js';
import { resultToText } from '../../src/catalog/tools/adapter.js';
import type { Root } from '../../src/connection/capabilities/roots.js';
import { fixtureCommand } from '../fixtures/index.js';
import { stateDirWith, untilState } from '../host/helpers.js';

const EVERYTHING = [process.execPath, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'];

let host: McpHost | undefined;
afterEach(async () => {
  await host?.shutdown();
  host = undefined;
});

async function startHost(servers: Record<string, unknown>, roots?: Root[], warnings: string[] = []): Promise<McpHost> {
  host = createMcpHost({
    stateDir: stateDirWith(servers),
    persistJournal: false,
    watchConfig: false,
    logger: { info() {}, warn: (message) => warnings.push(message) },
    ...(roots ? { roots } : {}),
  });
  await host.start();
  for (const name of Object.keys(servers)) await untilState(host, name, 'ready');
  return host;
}

const rootsSeen = async (): Promise<{ changes: number; roots: Root[] | null }> =>
  JSON.parse(resultToText(await host!.callTool('asks__roots_seen', {})));

describe('roots', () => {
  test('server-everything lists the configured roots, and the new ones after setRoots', async () => {
    await startHost({ everything: { type: 'local', command: EVERYTHING } }, [{ uri: 'file:///srv/project', name: 'Project' }]);
    expect(host!.roots()).toEqual([{ uri: 'file:///srv/project', name: 'Project' }]);
    const listed = resultToText(await host!.callTool('everything__get-roots-list', {}));
    expect(listed).toContain('Current MCP Roots (1 total)');
    expect(listed).toContain('1. Project\n   URI: file:///srv/project');

    await host!.setRoots([{ uri: 'file:///srv/a', name: 'A' }, { uri: 'file:///srv/b' }]);
    expect(host!.roots()).toEqual([{ uri: 'file:///srv/a', name: 'A' }, { uri: 'file:///srv/b' }]);
    // server-everything re-lists its roots only on notifications/roots/list_changed.
    await expect
      .poll(async () => resultToText(await host!.callTool('everything__get-roots-list', {})), { timeout: 20_000 })
      .toContain('Current MCP Roots (2 total)');
  });

  test('every connected server is told once per change and lists the new roots', async () => {
    await startHost(
      { asks: { type: 'local', command: fixtureCommand('client-requests') }, again: { type: 'local', command: fixtureCommand('client-requests') } },
      [],
    );
    expect(await rootsSeen()).toEqual({ changes: 0, roots: null });
    await host!.setRoots([{ uri: 'file:///work', name: 'work' }]);
    await expect.poll(rootsSeen, { timeout: 20_000 }).toEqual({ changes: 1, roots: [{ uri: 'file:///work', name: 'work' }] });
    const again = JSON.parse(resultToText(await host!.callTool('again__roots_seen', {})));
    expect(again).toEqual({ changes: 1, roots: [{ uri: 'file:///work', name: 'work' }] });
    await host!.setRoots([]);
    await expect.poll(rootsSeen, { timeout: 20_000 }).toEqual({ changes: 2, roots: [] });
  });

  test('a 2026-07-28 server is not sent roots/list_changed (its era has none) and gets the new roots when it next asks', async () => {
    const warnings: string[] = [];
    await startHost({ modern: { type: 'local', command: fixtureCommand('modern'), protocol: '2026', timeout_seconds: 15 } }, [{ uri: 'file:///one' }], warnings);
    expect(resultToText(await host!.callTool('modern__list_roots', {}))).toBe('file:///one');
    await host!.setRoots([{ uri: 'file:///two' }, { uri: 'file:///three' }]);
    expect(resultToText(await host!.callTool('modern__list_roots', {}))).toBe('file:///two\nfile:///three');
    expect(warnings.filter((line) => line.includes('roots'))).toEqual([]);
  });

  test('without the roots option the capability is not declared and setRoots says how to get it', async () => {
    await startHost({ everything: { type: 'local', command: EVERYTHING } });
    expect(host!.tools().map((tool) => tool.name)).not.toContain('everything__get-roots-list');
    expect(host!.roots()).toEqual([]);
    await expect(host!.setRoots([{ uri: 'file:///x' }])).rejects.toThrow(
      'setRoots: this host declared no roots; create it with a `roots` option (e.g. `roots: []`)',
    );
  });

  test('a root that is not a file:// URI, or has unknown fields, is refused naming it', async () => {
    expect(() => createMcpHost({ stateDir: stateDirWith({}), roots: [{ uri: 'file:///ok' }, { uri: 'https://x' }] })).toThrow(
      'createMcpHost: roots.1.uri: a root uri must be a file:// URI',
    );
    host = createMcpHost({ stateDir: stateDirWith({}), persistJournal: false, watchConfig: false, roots: [] });
    await expect(host.setRoots([{ uri: 'file:///a', label: 'x' } as never])).rejects.toThrow('setRoots: roots.0.label: unknown field');
    expect(host.roots()).toEqual([]);
  });
});
