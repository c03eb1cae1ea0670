// Views never lie, checked at every journal event of a real host: a ready
// server's resources and prompts are `null` until their listing lands (`[]`
// only for a kind it does not offer), and a call a crash broke answers only
// once the view has left `ready`.
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { createMcpHost, type McpHost } from '../../src/host.js';
import type { JournalEvent } from '../../src/journal/events.js';
import { fixtureCommand } from '../fixtures/index.js';
import { catalogServer } from '../protocol/helpers.js';
import { stateDirWith, untilListed, untilState } from './helpers.js';

let host: McpHost | undefined;
afterEach(async () => {
  await host?.shutdown();
  host = undefined;
});

type Kind = 'resources' | 'prompts';
const KINDS: readonly Kind[] = ['resources', 'prompts'];
/** What each fixture offers beside its tools (what its code registers). */
const OFFERS: Record<string, readonly Kind[]> = { cat: KINDS, alpha: [], crashy: [] };

/**
 * Watches the journal and, at each event, every catalog entry: a kind is
 * `null` unless the server is ready, and a ready server shows a listing of a
 * kind it offers only after that kind's listing event since it became ready.
 */
function watchCatalogs(watched: McpHost) {
  const lies: string[] = [];
  /** Per server, the kinds listed since its current actor last moved (a replaced actor's steps do not count). */
  const listed = new Map<string, Set<Kind>>();
  const actors = new Map<string, string>();
  let checks = 0;
  const unsubscribe = watched.subscribe((event: JournalEvent) => {
    if (event.type === 'server.configured') actors.set(event.server, event.actor);
    if (event.type === 'server.transitioned' && event.actor === actors.get(event.server)) listed.set(event.server, new Set());
    if (event.type === 'resources.listed') listed.get(event.server)?.add('resources');
    if (event.type === 'prompts.listed') listed.get(event.server)?.add('prompts');
    for (const entry of watched.catalog()) {
      checks += 1;
      const shown = { resources: entry.resources, prompts: entry.prompts };
      for (const kind of KINDS) {
        const list = shown[kind];
        if (list === null) continue;
        const at = `#${event.seq} ${event.type}: ${entry.name} (${entry.state}) shows ${kind} ${JSON.stringify(list)}`;
        if (entry.state !== 'ready') lies.push(`${at} while not ready`);
        else if (!OFFERS[entry.name]?.includes(kind)) {
          if (list.length > 0) lies.push(`${at}, a kind it does not offer`);
        } else if (!listed.get(entry.name)?.has(kind)) lies.push(`${at} before its listing landed`);
      }
      if (entry.resources === null && entry.resource_templates !== null) lies.push(`#${event.seq}: ${entry.name} has templates without resources`);
    }
  });
  return { lies, checks: () => checks, unsubscribe };
}

describe('views never lie', () => {
  test('no catalog is shown listed before its listing landed, and no crash answers while the server shows ready', { timeout: 60_000 }, async () => {
    const dir = stateDirWith({});
    const servers = {
      cat: catalogServer(dir, 'cat'),
      alpha: { type: 'local', command: fixtureCommand('healthy') },
      crashy: {
        type: 'local',
        command: fixtureCommand('crash-mid-call'),
        env: { FIXTURE_PID_FILE: join(dir, 'crashy.pid') },
        reconnect: { max_attempts: 3, initial_delay_seconds: 0.05, max_delay_seconds: 0.2 },
      },
    };
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(dir, 'mcp_servers.json'), `${JSON.stringify({ servers })}\n`);
    host = createMcpHost({ stateDir: dir, persistJournal: false, logger: { info() {}, warn() {} } });
    const watch = watchCatalogs(host);
    await host.start();
    await host.settled();

    // A kind the server does not offer is known to be empty the moment it is ready.
    expect(host.catalog().find((entry) => entry.name === 'alpha')).toMatchObject({ state: 'ready', resources: [], resource_templates: [], prompts: [] });
    const cat = await untilListed(host, 'cat');
    expect(cat.resources?.map((resource) => resource.uri)).toEqual(['fixture://static', 'fixture://blob']);
    expect(cat.resource_templates?.map((template) => template.uriTemplate)).toEqual(['fixture://item/{id}']);
    expect(cat.prompts?.map((prompt) => prompt.name)).toEqual(['greet']);

    // The crash: the caller hears "process exited" only once the view left `ready`.
    const seq = host.events().at(-1)!.seq;
    const crashed = await host.callTool('crashy__crash', {});
    const stateWhenAnswered = host.server('crashy')?.state;
    expect(crashed.details.is_error).toBe(true);
    expect(crashed.content[0]).toMatchObject({ text: expect.stringContaining('process exited with code 7') });
    expect(stateWhenAnswered).toBe('error');
    expect(host.events(seq).find((event) => event.type === 'server.transitioned' && event.server === 'crashy')).toMatchObject({
      from: 'ready',
      to: 'error',
      error_kind: 'transport_closed',
    });
    await untilState(host, 'crashy', 'ready');

    // A restart lists again: nothing of the old connection's listing shows before the new one lands.
    await host.restartServer('cat');
    await untilListed(host, 'cat');
    await host.shutdown();
    watch.unsubscribe();

    expect(watch.lies).toEqual([]);
    expect(watch.checks()).toBeGreaterThan(0);
  });
});
