// The agent tools a host hands out (`tools()`, `allTools()`, `tool()`) call
// as `callTool` does: the access rules, the caller's quota, the journal and,
// on a per_user server, the caller's own session. A real host on real
// fixture servers over stdio; the principal comes from the listing or from
// the call's own options.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMcpHost, type AgentToolResult, type McpHost } from '../../src/index.js';
import type { JournalEvent } from '../../src/journal/events.js';
import { fixtureCommand } from '../fixtures/index.js';

let host: McpHost;
let dir: string;
const called: JournalEvent[] = [];
const alice = { id: 'alice' };
const carol = { id: 'carol' };
const textOf = (result: AgentToolResult) => (result.content[0] as { text: string }).text;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-handed-out-'));
  writeFileSync(
    join(dir, 'mcp_servers.json'),
    JSON.stringify({
      servers: {
        // alice alone may see it.
        team: { type: 'local', command: fixtureCommand('healthy'), access: { users: ['alice'] } },
        // Each caller's own process, with their own token.
        mine: {
          type: 'local',
          command: fixtureCommand('whoami'),
          env: { USER_TOKEN: '${user.TOKEN}' },
          scope: 'per_user',
          user_inputs: { TOKEN: { description: 'your token' } },
        },
      },
    }),
    { mode: 0o600 },
  );
  host = createMcpHost({
    stateDir: dir,
    persistJournal: false,
    logger: { info: () => {}, warn: () => {} },
    userQuota: { calls_per_minute: 2 },
  });
  host.subscribe((event) => {
    if (event.type === 'tool.called') called.push(event);
  });
  await host.start();
  await host.settled();
  await host.setInputs('mine', { TOKEN: 'admin-token' });
  await host.setInputs('mine', { TOKEN: 'alice-token' }, { principal: alice });
});
afterAll(async () => {
  await host?.shutdown();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe('a handed-out tool calls as callTool does', () => {
  it("as the principal it was listed for: journaled as theirs, within their quota; another principal's call follows that principal's rules", async () => {
    const echo = host.tools({ principal: alice }).find((tool) => tool.name === 'team__echo');
    expect(echo).toBeDefined();
    const before = called.length;
    expect(textOf(await echo!.execute({ text: 'one' }))).toBe('one');
    expect(textOf(await host.tool('team__echo', { principal: alice })!.execute({ text: 'two' }))).toBe('two');
    // The quota is two calls a minute: the third is refused and not made.
    const third = await echo!.execute({ text: 'three' });
    expect(third.details.is_error).toBe(true);
    expect(third.details.quota?.limit).toBe('calls_per_minute');
    // Named as every result of a call names its tool: the server's own name of it.
    expect([third.details.server, third.details.tool]).toEqual(['team', 'echo']);
    expect(called.slice(before).map((event) => event.type === 'tool.called' && [event.principal, event.outcome, event.refused_by ?? null])).toEqual([
      ['alice', 'ok', null],
      ['alice', 'ok', null],
      ['alice', 'error', 'calls_per_minute'],
    ]);
    // carol may not see the server: the tool is unknown to her, whoever listed it.
    const asCarol = await echo!.execute({ text: 'x' }, { principal: carol });
    expect(asCarol.details.is_error).toBe(true);
    expect(textOf(asCarol)).toBe('unknown tool "team__echo"');
  });

  it('listed for nobody (the admin), it calls as the admin, and journals the call', async () => {
    const before = called.length;
    const echo = host.allTools().find((tool) => tool.name === 'team__echo')!;
    for (let i = 0; i < 3; i++) expect(textOf(await echo.execute({ text: `admin ${i}` }))).toBe(`admin ${i}`);
    expect(called.slice(before).map((event) => event.type === 'tool.called' && event.principal)).toEqual(['admin', 'admin', 'admin']);
  });

  it("a per_user server's tool listed for a principal runs in that principal's session, with their own input", async () => {
    // The admin's session learns the catalog; alice has no session of her own yet.
    expect(JSON.parse(textOf(await host.callTool('mine__whoami', {}))).token).toBe('admin-token');
    const unlimited = { id: 'alice', quota: { calls_per_minute: null } };
    const whoami = host.tools({ principal: unlimited }).find((tool) => tool.name === 'mine__whoami');
    expect(whoami).toBeDefined();
    // The call opens hers.
    expect(JSON.parse(textOf(await whoami!.execute({}))).token).toBe('alice-token');
    expect(host.sessions({ principal: alice }).map((session) => session.server)).toEqual(['mine']);
  });

  it('a malformed principal is an error result, never a throw', async () => {
    const result = await host.callTool('team__echo', { text: 'x' }, { principal: { id: '' } });
    expect(result.details.is_error).toBe(true);
    expect(textOf(result)).toMatch(/^callTool: options\.principal\.id: /);
    const echo = host.allTools().find((tool) => tool.name === 'team__echo')!;
    expect((await echo.execute({ text: 'x' }, { principal: { id: '' } })).details.is_error).toBe(true);
  });
});
