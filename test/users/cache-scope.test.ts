// What mcp-fleet keeps of a 2026-07-28 server's lists follows their
// `cacheScope`, against a real server (the SDK's v2 server package) whose
// tool list depends on the caller's credential. A per_user server's sessions
// are each their own authorization context: a private list is shown to the
// principal whose session listed it and to no one else (tools, search,
// catalog, the names a call resolves); a public one is the server's, shown to
// every principal. A shared server has one credential, the fleet's: its list,
// private or not, is that one context's, shown to whoever may see the server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMcpHost, type McpHost } from '../../src/index.js';
import { fixtureCommand, startHttpFixture, type HttpFixture } from '../fixtures/index.js';
import { stateDirWith, untilState } from '../host/helpers.js';

const TOKENS = { alice: 'alice-token-SCOPE-1', bob: 'bob-token-SCOPE-2' } as const;
type Who = keyof typeof TOKENS;
const principal = (who: Who) => ({ id: who });

const perUser = (scope: 'public' | 'private' | 'public,private' | 'public,public') => ({
  type: 'local',
  command: fixtureCommand('scoped-tools', '--scope', scope),
  env: { USER_TOKEN: '${user.TOKEN}' },
  scope: 'per_user',
  protocol: '2026',
  user_inputs: { TOKEN: { description: 'your token' } },
  timeout_seconds: 20,
});

let host: McpHost;
let remote: HttpFixture;

beforeAll(async () => {
  remote = await startHttpFixture('scoped-tools', ['--http', '--scope', 'private']);
  host = createMcpHost({
    stateDir: stateDirWith({
      private: perUser('private'),
      public: perUser('public'),
      paged: perUser('public,private'),
      paged_public: perUser('public,public'),
      shared: { type: 'remote', url: remote.url, protocol: '2026', headers: { Authorization: 'Bearer fleet-token-SHARED' } },
    }),
  });
  await host.start();
  await untilState(host, 'shared', 'ready');
  for (const who of ['alice', 'bob'] as const) {
    for (const server of ['private', 'public', 'paged', 'paged_public']) await host.setInputs(server, { TOKEN: TOKENS[who] }, { principal: principal(who) });
  }
}, 60_000);
afterAll(async () => {
  await host?.shutdown();
  await remote?.stop();
});

async function whoami(server: string, who: Who): Promise<{ credential: string }> {
  const result = await host.callTool(`${server}__whoami`, {}, { principal: principal(who) });
  expect(result.details.is_error, JSON.stringify(result.content)).toBe(false);
  return JSON.parse((result.content[0] as { text: string }).text);
}

const toolsOf = (server: string, who: Who | undefined) =>
  host
    .tools(who === undefined ? {} : { principal: principal(who) })
    .filter((tool) => tool.server === server)
    .map((tool) => tool.name)
    .sort();
const catalogOf = (server: string, who: Who | undefined) =>
  host
    .catalog(who === undefined ? {} : { principal: principal(who) })
    .find((entry) => entry.name === server)!
    .tools.map((tool) => tool.name)
    .sort();
const found = (query: string, who: Who | undefined) =>
  host.searchTools(query, who === undefined ? {} : { principal: principal(who) }).map((hit) => hit.name);

describe('cacheScope', { timeout: 60_000 }, () => {
  it('private: each principal is shown the list their own session got, never another\'s', async () => {
    expect((await whoami('private', 'alice')).credential).toBe(TOKENS.alice);
    expect(toolsOf('private', 'alice')).toEqual(['private__notes_alice', 'private__whoami']);
    // Bob has no session yet: alice's private list is not his to see, in any surface.
    expect(toolsOf('private', 'bob')).toEqual([]);
    expect(catalogOf('private', 'bob')).toEqual([]);
    expect(found('notes', 'bob')).not.toContain('private__notes_alice');
    expect(JSON.stringify(host.tools({ principal: principal('bob') }))).not.toContain(TOKENS.alice);
    // Nor the admin's (another principal, with no session of its own).
    expect(toolsOf('private', undefined)).toEqual([]);

    expect((await whoami('private', 'bob')).credential).toBe(TOKENS.bob);
    expect(toolsOf('private', 'bob')).toEqual(['private__notes_bob', 'private__whoami']);
    expect(catalogOf('private', 'bob')).toEqual(['private__notes_bob', 'private__whoami']);
    expect(found('notes', 'bob')).toContain('private__notes_bob');
    expect(found('notes', 'bob')).not.toContain('private__notes_alice');
    expect(JSON.stringify(host.searchTools('notes', { principal: principal('bob') }))).not.toContain(TOKENS.alice);
    // Alice's stays hers.
    expect(toolsOf('private', 'alice')).toEqual(['private__notes_alice', 'private__whoami']);
    expect(catalogOf('private', 'alice')).toEqual(['private__notes_alice', 'private__whoami']);
    expect(found('notes', 'alice')).toContain('private__notes_alice');
    expect(found('notes', 'alice')).not.toContain('private__notes_bob');
  });

  it('private: a tool of another\'s list is not resolved through it; the call goes to the caller\'s own session', async () => {
    // Bob names alice's tool: his own server has no such tool, and it says so; nothing of alice's answers.
    const result = await host.callTool('private__notes_alice', {}, { principal: principal('bob') });
    expect(result.details.is_error).toBe(true);
    expect(JSON.stringify(result.content)).not.toContain(TOKENS.alice);
  });

  it('public: the list one session got is the server\'s, shown to every principal', async () => {
    expect((await whoami('public', 'alice')).credential).toBe(TOKENS.alice);
    expect(toolsOf('public', 'bob')).toEqual(['public__notes_alice', 'public__whoami']);
    expect(catalogOf('public', undefined)).toEqual(['public__notes_alice', 'public__whoami']);
    expect(found('notes', 'bob')).toContain('public__notes_alice');
  });

  it('a paginated list with one private page is private; with every page public, public', async () => {
    expect((await whoami('paged', 'alice')).credential).toBe(TOKENS.alice);
    expect(toolsOf('paged', 'alice')).toEqual(['paged__notes_alice', 'paged__whoami']);
    expect(toolsOf('paged', 'bob')).toEqual([]);
    expect((await whoami('paged_public', 'alice')).credential).toBe(TOKENS.alice);
    expect(toolsOf('paged_public', 'bob')).toEqual(['paged_public__notes_alice', 'paged_public__whoami']);
  });

  it('a shared server is one authorization context: its private list (the fleet credential\'s) is shown to every principal', async () => {
    for (const who of ['alice', 'bob', undefined] as const) {
      expect(toolsOf('shared', who)).toEqual(['shared__notes_fleet', 'shared__whoami']);
    }
    expect((await whoami('shared', 'bob')).credential).toBe('fleet-token-SHARED');
  });

  it('new inputs drop what the old credential was shown privately', async () => {
    await host.setInputs('private', { TOKEN: 'carol-token-SCOPE-3' }, { principal: principal('alice') });
    expect(toolsOf('private', 'alice')).toEqual([]);
    expect((await whoami('private', 'alice')).credential).toBe('carol-token-SCOPE-3');
    expect(toolsOf('private', 'alice')).toEqual(['private__notes_carol', 'private__whoami']);
  });
});
