// The approval routes over HTTP against a real host with a real fixture server.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createMcpHost, type McpHost } from '../../src/host.js';
import { fixtureCommand } from '../fixtures/index.js';
import { stateDirWith, untilState } from '../host/helpers.js';
import { serve, TOKEN, type Served } from '../http/helpers.js';

let host: McpHost;
let served: Served;
beforeAll(async () => {
  const dir = stateDirWith({
    h: { type: 'local', command: fixtureCommand('healthy'), tools: { approval: { echo: 'ask', add: 'deny' } } },
  });
  host = createMcpHost({ stateDir: dir, persistJournal: false });
  await host.start();
  await untilState(host, 'h', 'ready');
  served = await serve(host);
});
afterAll(async () => {
  await served?.close();
  await host?.shutdown();
});

async function waitingCall(): Promise<{ id: string; call: ReturnType<Served['request']> }> {
  const call = served.request('/api/mcp/tools/h__echo/call', { method: 'POST', body: { arguments: { text: 'via http' } } });
  for (let tries = 0; tries < 200; tries += 1) {
    const { json } = await served.request('/api/mcp/approvals');
    const found = (json.approvals as Array<{ id: string; tool: string }>).find((approval) => approval.tool === 'h__echo');
    if (found) return { id: found.id, call };
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error('no approval appeared');
}

describe('GET/POST /api/mcp/approvals', () => {
  test('needs the token', async () => {
    expect((await served.request('/api/mcp/approvals', { noAuth: true })).status).toBe(401);
    const post = await served.request('/api/mcp/approvals/x', { method: 'POST', body: { decision: 'allow' }, noAuth: true });
    expect(post.status).toBe(401);
  });

  test('an empty list, and 404 for an unknown id', async () => {
    const list = await served.request('/api/mcp/approvals');
    expect(list.status).toBe(200);
    expect(list.json).toEqual({ approvals: [] });
    const unknown = await served.request('/api/mcp/approvals/nope', { method: 'POST', body: { decision: 'allow' } });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.code).toBe('not_found');
  });

  test.each([[{}], [{ decision: 'maybe' }], [{ decision: 'allow', extra: 1 }]])('400 naming decision for %j', async (body) => {
    const reply = await served.request('/api/mcp/approvals/any', { method: 'POST', body });
    expect(reply.status).toBe(400);
    expect(reply.json.error).toMatchObject({ code: 'invalid_request', field: 'decision' });
  });

  test('a call through POST /api/mcp/tools/:name/call waits; allowed through the API, it completes (by: api)', async () => {
    const { id, call } = await waitingCall();
    const decided = await served.request(`/api/mcp/approvals/${id}`, { method: 'POST', body: { decision: 'allow' } });
    expect(decided.status).toBe(200);
    expect(decided.json).toEqual({ id, decision: 'allow', by: 'api' });
    const result = await call;
    expect(result.json.details.is_error).toBe(false);
    expect(result.json.content[0].text).toBe('via http');
    // Decided: gone.
    expect((await served.request(`/api/mcp/approvals/${id}`, { method: 'POST', body: { decision: 'deny' } })).status).toBe(404);
    const events = host.events().filter((event) => event.type === 'approval.decided');
    expect(events.at(-1)).toMatchObject({ id, decision: 'allow', by: 'api' });
  });

  test('a streamed call announces its wait as an `approval` event with the id, then sends the result once decided', async () => {
    const response = await fetch(`http://127.0.0.1:${served.port}/api/mcp/tools/h__echo/call`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, accept: 'text/event-stream', 'content-type': 'application/json' },
      body: JSON.stringify({ arguments: { text: 'streamed' } }),
    });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const untilText = async (pattern: RegExp) => {
      while (!pattern.test(text)) {
        const { done, value } = await reader.read();
        if (done) throw new Error(`the stream ended: ${text}`);
        text += decoder.decode(value, { stream: true });
      }
    };
    await untilText(/event: approval\ndata: .*\n\n/);
    const announced = JSON.parse(/event: approval\ndata: (.*)\n\n/.exec(text)![1]!);
    const { json } = await served.request('/api/mcp/approvals');
    expect(json.approvals).toEqual([announced]);
    expect(announced).toMatchObject({ tool: 'h__echo', arguments: { text: 'streamed' } });
    expect((await served.request(`/api/mcp/approvals/${announced.id}`, { method: 'POST', body: { decision: 'allow' } })).status).toBe(200);
    await untilText(/event: result\ndata: .*\n\n/);
    const result = JSON.parse(/event: result\ndata: (.*)\n\n/.exec(text)![1]!);
    expect(result.content[0].text).toBe('streamed');
    expect(text.match(/^event: /gm)).toHaveLength(2);
  });

  test("a decision sent with the page's session cookie is journaled as by: page", async () => {
    const session = await served.request('/ui/session', { method: 'POST', body: { token: TOKEN }, noAuth: true });
    const cookie = (session.headers['set-cookie']?.[0] ?? '').split(';')[0]!;
    const { id, call } = await waitingCall();
    const origin = `http://127.0.0.1:${served.port}`;
    const decided = await served.request(`/api/mcp/approvals/${id}`, {
      method: 'POST',
      body: { decision: 'deny' },
      noAuth: true,
      headers: { cookie, origin },
    });
    expect(decided.json).toEqual({ id, decision: 'deny', by: 'page' });
    const result = await call;
    expect(result.json.details.is_error).toBe(true);
    expect(result.json.content[0].text).toContain('denied (by page)');
  });

  test('a denied tool is not listed and its call is an is_error answer', async () => {
    const tools = await served.request('/api/mcp/tools');
    expect(tools.json.tools.map((tool: { name: string }) => tool.name)).not.toContain('h__add');
    const call = await served.request('/api/mcp/tools/h__add/call', { method: 'POST', body: { arguments: { a: 1, b: 1 } } });
    expect(call.status).toBe(200);
    expect(call.json.details.is_error).toBe(true);
    expect(call.json.content[0].text).toContain('denied by policy');
  });
});
