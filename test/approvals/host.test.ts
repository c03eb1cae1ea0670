// Approvals on a real host with a real stdio fixture server (test/fixtures/healthy.mjs).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { createMcpHost, type McpHost, type McpHostOptions } from '../../src/host.js';
import type { ApprovalRequest } from '../../src/approvals/approvals.js';
import type { JournalEvent } from '../../src/journal/events.js';
import { fixtureCommand } from '../fixtures/index.js';
import { stateDirWith, untilState } from '../host/helpers.js';

const SECRET = 'sk-approval-secret-0123456789';

let host: McpHost | undefined;
afterEach(async () => {
  await host?.shutdown();
  host = undefined;
});

async function started(extra: Record<string, unknown> = {}, options: Partial<McpHostOptions> = {}): Promise<McpHost> {
  const dir = stateDirWith({
    h: {
      type: 'local',
      command: fixtureCommand('healthy'),
      env: { API_KEY: SECRET },
      tools: { approval: { echo: 'ask', wait_for_cancel: 'ask', add: 'deny' } },
      ...extra,
    },
  });
  host = createMcpHost({ stateDir: dir, persistJournal: false, ...options });
  await host.start();
  await untilState(host, 'h', 'ready');
  return host;
}

/** Resolves with the first pending approval once one waits. */
function nextApproval(target: McpHost) {
  return new Promise<ReturnType<McpHost['approvals']>[number]>((resolve) => {
    const check = () => {
      const [first] = target.approvals();
      if (first === undefined) return false;
      unsubscribe();
      resolve(first);
      return true;
    };
    const unsubscribe = target.subscribe(() => void check());
    check();
  });
}

function approvalEvents(target: McpHost): JournalEvent[] {
  return target.events().filter((event) => event.type.startsWith('approval.'));
}

const text = (result: { content: Array<{ type: string; text?: string }> }) =>
  result.content.map((block) => block.text ?? '').join('\n');

describe('tools.approval on a real host', () => {
  test('auto calls as before; deny is never offered nor called', async () => {
    const h = await started();
    expect((await h.callTool('h__readonly_tool', {})).details.is_error).toBe(false);
    const names = h.tools().map((tool) => tool.name);
    expect(names).toContain('h__echo');
    expect(names).not.toContain('h__add');
    // Found by name as tools() lists it: not at all.
    expect(h.tool('h__add')).toBeUndefined();
    expect(h.toolServer('h__add')).toBeUndefined();
    expect(h.tool('h__echo')?.name).toBe('h__echo');
    expect(h.tools({ loading: 'deferred' }).map((tool) => tool.name)).not.toContain('h__add');
    const found = h.searchTools('adds two numbers', { limit: 20 }).find((tool) => tool.name === 'h__add');
    expect(found?.available).toBe(false);
    expect(h.searchTools('returns its text', { limit: 20 }).find((tool) => tool.name === 'h__echo')?.available).toBe(true);
    const search = await h.callTool('search_tools', { query: 'adds two numbers' });
    expect(JSON.stringify(search.details.structured)).not.toContain('h__add');
    const denied = await h.callTool('h__add', { a: 1, b: 2 });
    expect(denied.details.is_error).toBe(true);
    expect(text(denied)).toContain('denied by policy');
    expect(approvalEvents(h)).toEqual([]);
  });

  test('an ask call waits for a decision: allowed, it runs; the journal has both, secrets masked', async () => {
    const h = await started();
    const call = h.callTool('h__echo', { text: SECRET });
    const pending = await nextApproval(h);
    expect(pending).toMatchObject({ server: 'h', tool: 'h__echo', original: 'echo', arguments: { text: '••••' } });
    expect(Date.parse(pending.expires_at) - Date.parse(pending.requested_at)).toBe(300_000);
    // What a plain JavaScript caller may pass: refused by name, the call still waiting.
    const loose = h.decideApproval as (id: string, decision: unknown, by: unknown) => boolean;
    expect(() => loose(pending.id, 'maybe', 'api')).toThrow('decideApproval: decision must be "allow" or "deny", not "maybe"');
    expect(() => loose(pending.id, 'allow', 'hacker')).toThrow('decideApproval: by must be "page" or "api", not "hacker"');
    expect(() => loose(pending.id, 'ALLOW', undefined)).toThrow(/decision must be/);
    expect(h.approvals().map((approval) => approval.id)).toEqual([pending.id]);
    expect(h.decideApproval(pending.id, 'allow', 'api')).toBe(true);
    const result = await call;
    expect(result.details.is_error).toBe(false);
    expect(h.approvals()).toEqual([]);
    expect(h.decideApproval(pending.id, 'deny', 'api')).toBe(false);
    const events = approvalEvents(h);
    expect(events).toMatchObject([
      { type: 'approval.requested', server: 'h', id: pending.id, tool: 'h__echo', original: 'echo', arguments: { text: '••••' } },
      { type: 'approval.decided', server: 'h', id: pending.id, tool: 'h__echo', decision: 'allow', by: 'api' },
    ]);
    expect(JSON.stringify(h.events())).not.toContain(SECRET);
  });

  test('denied from the page: the model is told who denied it', async () => {
    const h = await started();
    const call = h.callTool('h__echo', { text: 'hi' });
    const pending = await nextApproval(h);
    h.decideApproval(pending.id, 'deny', 'page');
    const result = await call;
    expect(result.details.is_error).toBe(true);
    expect(text(result)).toMatch(/approval denied \(by page\)/);
    expect(approvalEvents(h).at(-1)).toMatchObject({ type: 'approval.decided', decision: 'deny', by: 'page' });
  });

  test('no decision within approval_timeout_seconds: an is_error result saying so', async () => {
    const h = await started({ approval_timeout_seconds: 0.3 });
    const result = await h.callTool('h__echo', { text: 'hi' });
    expect(result.details.is_error).toBe(true);
    expect(text(result)).toContain('timed out after 0.3 s');
    expect(h.approvals()).toEqual([]);
    expect(approvalEvents(h).at(-1)).toMatchObject({ type: 'approval.decided', decision: 'timeout', by: null });
  });

  test("the call's own signal cancels the wait", async () => {
    const h = await started();
    const controller = new AbortController();
    const call = h.callTool('h__wait_for_cancel', {}, { signal: controller.signal });
    const pending = await nextApproval(h);
    controller.abort();
    const result = await call;
    expect(result.details.is_error).toBe(true);
    expect(text(result)).toContain('cancelled');
    expect(h.approvals()).toEqual([]);
    expect(h.decideApproval(pending.id, 'allow', 'api')).toBe(false);
    expect(approvalEvents(h).at(-1)).toMatchObject({ type: 'approval.decided', decision: 'cancelled', by: null });
  });

  test('an onApproval callback that throws ends its call with that error, and the wait with it', async () => {
    const h = await started();
    const result = await h.callTool('h__echo', { text: 'x' }, {
      onApproval: () => {
        throw new Error('the page could not show it');
      },
    });
    expect(result.details.is_error).toBe(true);
    expect(text(result)).toContain('the page could not show it');
    expect(h.approvals()).toEqual([]);
    const [requested, decided] = approvalEvents(h);
    expect(decided).toMatchObject({ type: 'approval.decided', id: (requested as { id: string }).id, decision: 'cancelled', by: null });
  });

  test('an approve callback decides: allow runs the call, deny refuses it; by: callback', async () => {
    const asked: ApprovalRequest[] = [];
    const h = await started(
      {},
      {
        approve: async (request, { signal }) => {
          asked.push(request);
          expect(signal.aborted).toBe(false);
          return request.arguments['text'] === 'yes' ? 'allow' : 'deny';
        },
      },
    );
    const allowed = await h.callTool('h__echo', { text: 'yes' });
    expect(allowed.details.is_error).toBe(false);
    expect(text(allowed)).toBe('yes');
    const denied = await h.callTool('h__echo', { text: 'no' });
    expect(denied.details.is_error).toBe(true);
    expect(text(denied)).toContain('approval denied (by callback)');
    expect(asked[0]).toMatchObject({ server: 'h', tool: 'h__echo', original: 'echo', arguments: { text: 'yes' } });
    expect(typeof asked[0]?.id).toBe('string');
    expect(Number.isNaN(Date.parse(asked[0]!.requested_at))).toBe(false);
    expect(h.approvals()).toEqual([]);
    expect(approvalEvents(h).filter((event) => event.type === 'approval.decided')).toMatchObject([
      { decision: 'allow', by: 'callback' },
      { decision: 'deny', by: 'callback' },
    ]);
  });

  test('a callback that throws denies; a synchronous answer works too', async () => {
    let calls = 0;
    const h = await started(
      {},
      {
        approve: () => {
          calls += 1;
          if (calls === 1) throw new Error('boom');
          return 'allow';
        },
      },
    );
    expect((await h.callTool('h__echo', { text: 'a' })).details.is_error).toBe(true);
    expect((await h.callTool('h__echo', { text: 'b' })).details.is_error).toBe(false);
  });

  test('approval_from_annotations: readOnlyHint is auto; an explicit "*" wins over it', async () => {
    const h = await started({ approval_from_annotations: true, tools: { approval: { '*': 'ask' } } });
    const call = h.callTool('h__readonly_tool', {});
    const pending = await nextApproval(h);
    expect(pending.tool).toBe('h__readonly_tool');
    h.decideApproval(pending.id, 'allow', 'api');
    expect((await call).details.is_error).toBe(false);
  });

  test('a changed tools.approval applies without a restart', async () => {
    const h = await started();
    expect(h.tools().map((tool) => tool.name)).not.toContain('h__add');
    await h.updateServer('h', { tools: { approval: { add: 'auto' } } });
    expect(h.tools().map((tool) => tool.name)).toContain('h__add');
    expect(text(await h.callTool('h__add', { a: 1, b: 2 }))).toBe('3');
    // echo is auto again: no wait.
    expect((await h.callTool('h__echo', { text: 'x' })).details.is_error).toBe(false);
  });

  test('shutdown answers a waiting call at once: not made, cancelled', async () => {
    const h = await started();
    const call = h.callTool('h__echo', { text: 'late' });
    await nextApproval(h);
    await h.shutdown();
    host = undefined;
    // Answered by the shutdown itself, not by the approval's timeout.
    const result = await call;
    expect(result.details.is_error).toBe(true);
    expect(text(result)).toContain('the host shut down');
  });

  test('a denied tool of an on-demand server waiting to start is refused without starting it', async () => {
    const pidFile = join(mkdtempSync(join(tmpdir(), 'mcp-fleet-approval-od-')), 'pid');
    const dir = stateDirWith({
      od: {
        type: 'local',
        command: fixtureCommand('healthy'),
        env: { FIXTURE_PID_FILE: pidFile },
        start: 'on_demand',
        tools: { approval: { add: 'deny' } },
      },
    });
    // A first run learns the catalog.
    const first = createMcpHost({ stateDir: dir, watchConfig: false, logger: { info() {}, warn() {} } });
    await first.start();
    await untilState(first, 'od', 'ready');
    await first.shutdown();
    rmSync(pidFile);
    host = createMcpHost({ stateDir: dir, watchConfig: false, logger: { info() {}, warn() {} } });
    await host.start();
    await host.settled();
    expect(host.server('od')?.state).toBe('pending');
    expect(host.searchTools('adds two numbers', { limit: 20 }).find((tool) => tool.name === 'od__add')?.available).toBe(false);
    const denied = await host.callTool('od__add', { a: 1, b: 2 });
    expect(denied.details.is_error).toBe(true);
    expect(text(denied)).toContain('denied by policy');
    expect(existsSync(pidFile)).toBe(false);
  });
});
