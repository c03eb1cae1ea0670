// MCP Apps against an own fixture (apps-server.mjs, on both eras): the
// extension in the client's capabilities, the app cache and what drops it,
// the bridge's approvals, callbacks and schema checks, the HTTP route.
import { connectApp } from '../support/apps.js';
import { Client, InMemoryTransport, StreamableHTTPClientTransport, type JSONRPCMessage } from '@modelcontextprotocol/client';
import { App } from '@modelcontextprotocol/ext-apps';
import { afterEach, describe, expect, test } from 'vitest';
import { createMcpHost, type McpHost, type McpHostOptions } from '../../src/host.js';
import type { ApprovalRequest } from '../../src/approvals/approvals.js';
import { resultToText } from '../../src/catalog/tools/adapter.js';
import { FleetError, NotReadyError } from '../../src/errors.js';
import { fixtureCommand } from '../fixtures/index.js';
import { stateDirWith, untilState } from '../host/helpers.js';
import { serve, TOKEN } from '../http/helpers.js';
import { until, untilValue } from '../support/wait.js';

const hosts: McpHost[] = [];
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
  await Promise.all(hosts.splice(0).map((host) => host.shutdown()));
});

function appsServer(extra: Record<string, unknown> = {}) {
  return { type: 'local', command: fixtureCommand('apps-server'), ...extra };
}

async function startHost(servers: Record<string, unknown>, options: McpHostOptions = {}): Promise<McpHost> {
  const host = createMcpHost({
    stateDir: stateDirWith(servers),
    watchConfig: false,
    persistJournal: false,
    logger: { info() {}, warn() {} },
    ...options,
  });
  hosts.push(host);
  await host.start();
  for (const name of Object.keys(servers)) await untilState(host, name, 'ready', 30_000);
  return host;
}


describe('the MCP Apps extension in the client capabilities', () => {
  for (const [protocol, era] of [
    ['2025', 'legacy'],
    ['2026', 'modern'],
  ] as const) {
    test(`a ${era} server sees it`, async () => {
      const host = await startHost({ apps: appsServer({ protocol }) });
      const seen = JSON.parse(resultToText(await host.callTool('apps__client_capabilities', {})));
      expect(seen.era).toBe(era);
      expect(seen.capabilities.extensions['io.modelcontextprotocol/ui']).toEqual({ mimeTypes: ['text/html;profile=mcp-app'] });
    });
  }
});

describe('app-only tools of an on_demand server', () => {
  test("a model's call is refused from the last run's catalog, without starting the server", async () => {
    const dir = stateDirWith({ apps: appsServer({ start: 'on_demand' }) });
    const open = () => {
      const host = createMcpHost({ stateDir: dir, watchConfig: false, logger: { info() {}, warn() {} } });
      hosts.push(host);
      return host;
    };
    const first = open();
    // Never run before: it starts once to learn its catalog (app-only tools with their ui), which the journal keeps.
    await first.start();
    await untilState(first, 'apps', 'ready');
    await first.shutdown();

    const host = open();
    await host.start();
    await host.settled();
    const entry = host.catalog().find((server) => server.name === 'apps')!;
    expect(entry.state).toBe('pending');
    expect(entry.tools.find((tool) => tool.name === 'apps__app_echo')).toMatchObject({ model_visible: false, ui: { visibility: ['app'] } });
    expect(host.searchTools('echoes its text for the app', { limit: 50 }).map((hit) => hit.name)).not.toContain('apps__app_echo');
    const refused = await host.callTool('apps__app_echo', { text: 'hi' });
    expect(refused.details.is_error).toBe(true);
    expect(resultToText(refused)).toContain('is app-only');
    expect(host.server('apps')?.state).toBe('pending');
  });
});

describe('toolUi', () => {
  test("reads the app with its resource's _meta.ui, keeps it, and reads it again after the server announces a tool list change", async () => {
    const host = await startHost({ apps: appsServer() });
    const first = await host.toolUi('apps__show');
    expect(first).toEqual({
      tool: 'apps__show',
      server: 'apps',
      original: 'show',
      resourceUri: 'ui://fixture/app.html',
      html: expect.stringContaining('<p>v1</p>'),
      csp: { connectDomains: ['https://api.example.test'], resourceDomains: [], frameDomains: [], baseUriDomains: [] },
      permissions: { clipboardWrite: {} },
      prefersBorder: true,
      domain: null,
      visibility: ['model', 'app'],
    });
    // Kept: the same read serves the next use.
    expect(await host.toolUi('apps__show')).toEqual(first);
    // A tool without its own app.
    expect(await host.toolUi('apps__client_capabilities')).toBeNull();

    expect(resultToText(await host.callTool('apps__bump', {}))).toBe('v2');
    // The server announced tools/list_changed: the cache is dropped and the next use reads v2.
    const next = await untilValue(async () => {
      const ui = await host.toolUi('apps__show');
      return ui?.html.includes('<p>v2</p>') ? ui : undefined;
    }, 'the app read again after list_changed');
    expect(next.resourceUri).toBe('ui://fixture/app.html');
  });

  test('a 2025-era server that offers subscriptions: the app is read again after resources/updated names it', async () => {
    const host = await startHost({ apps: appsServer({ protocol: '2025' }) });
    expect((await host.toolUi('apps__show'))?.html).toContain('<p>v1</p>');
    // The host subscribed on its first read; the server tells it of the change, with no list change.
    const touched = await untilValue(async () => {
      const answer = JSON.parse(resultToText(await host.callTool('apps__touch', {})));
      return answer.subscribed ? answer : undefined;
    }, 'the subscription to reach the server');
    await untilValue(async () => {
      const ui = await host.toolUi('apps__show');
      return ui?.html.includes(`<p>v${touched.version}</p>`) ? ui : undefined;
    }, 'the app read again after resources/updated');
  });

  test("the host's subscription and a gateway client's are one count: the client letting go leaves the host's", async () => {
    const host = await startHost({ apps: appsServer({ protocol: '2025' }) });
    const subscribed = async () => JSON.parse(resultToText(await host.callTool('apps__touch', {}))).subscribed as boolean;
    expect((await host.toolUi('apps__show'))?.html).toContain('<p>v1</p>');
    await untilValue(async () => (await subscribed()) || undefined, "the host's subscription to reach the server");
    const served = await serve(host);
    closers.push(() => served.close());
    const client = new Client({ name: 'apps-subscriber', version: '1.0.0' }, { versionNegotiation: { mode: 'legacy' } });
    const transport = new StreamableHTTPClientTransport(new URL('/mcp/servers/apps', served.url), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } });
    await client.connect(transport);
    // The closers run at once: the worker may be gone before this DELETE reaches it.
    closers.push(() => transport.terminateSession().catch(() => {}).finally(() => client.close()));
    await client.subscribeResource({ uri: 'ui://fixture/app.html' });
    await client.unsubscribeResource({ uri: 'ui://fixture/app.html' });
    // The host still holds it: the server still tells of changes, so the app cache stays current.
    expect(await subscribed()).toBe(true);
  });

  test('rejects with NotReadyError while its server is not ready, and reads it again once the server is back', async () => {
    const host = await startHost({ apps: appsServer() });
    expect((await host.toolUi('apps__show'))?.html).toContain('v1');
    await host.updateServer('apps', { enabled: false });
    await untilState(host, 'apps', 'disabled');
    await expect(host.toolUi('apps__show')).rejects.toBeInstanceOf(NotReadyError);
    await host.updateServer('apps', { enabled: true });
    await untilState(host, 'apps', 'ready');
    expect((await host.toolUi('apps__show'))?.html).toContain('<p>v1</p>');
  });

  test('a resource that is not an app (another MIME type) is refused', async () => {
    const host = await startHost({ apps: appsServer({ env: { FIXTURE_APP_MIME: 'text/html' } }) });
    await expect(host.toolUi('apps__show')).rejects.toThrow(/is not an MCP App \(mimeType "text\/html", expected text\/html;profile=mcp-app\)/);
  });

  test('a resource the server fails to read is a protocol FleetError saying why, and the API answers it so', async () => {
    const host = await startHost({ apps: appsServer({ env: { FIXTURE_APP_UNREADABLE: '1' } }) });
    const failed = await host.toolUi('apps__show').then(() => undefined, (error: unknown) => error);
    expect(failed).toBeInstanceOf(FleetError);
    expect(failed).toMatchObject({ kind: 'protocol', message: expect.stringMatching(/^server apps: resource ui:\/\/fixture\/app\.html could not be read: .*the app is being rebuilt/) });
    const served = await serve(host);
    closers.push(() => served.close());
    const answer = await served.request('/api/mcp/tools/apps__show/ui');
    expect(answer.json.error).toMatchObject({ code: 'protocol', message: expect.stringContaining('the app is being rebuilt') });
  });

  test('GET /api/mcp/tools/:name/ui answers the app, 404 without one', async () => {
    const host = await startHost({ apps: appsServer() });
    const served = await serve(host);
    closers.push(() => served.close());
    const ok = await served.request('/api/mcp/tools/apps__show/ui');
    expect(ok.status).toBe(200);
    expect(ok.json).toMatchObject({ tool: 'apps__show', resourceUri: 'ui://fixture/app.html', prefersBorder: true });
    for (const name of ['apps__client_capabilities', 'nobody__nothing']) {
      const missing = await served.request(`/api/mcp/tools/${name}/ui`);
      expect(missing.status).toBe(404);
      expect(missing.json.error.code).toBe('not_found');
    }
    const listed = (await served.request('/api/mcp/tools')).json.tools;
    expect(listed.find((tool: { name: string }) => tool.name === 'apps__app_echo')).toMatchObject({
      ui: { resource_uri: null, visibility: ['app'] },
      model_visible: false,
    });
  });
});

describe('appBridge', () => {
  test("the app's call of an app-only tool goes through the approval gate like any call", async () => {
    const asked: ApprovalRequest[] = [];
    const host = await startHost(
      { apps: appsServer({ tools: { approval: { app_echo: 'ask' } } }) },
      {
        approve: (request) => {
          asked.push(request);
          return request.arguments.text === 'no' ? 'deny' : 'allow';
        },
      },
    );
    expect(host.tools().map((tool) => tool.name)).not.toContain('apps__app_echo');
    const { app } = await connectApp(host, 'apps__show', closers);
    const allowed = await app.callServerTool({ name: 'app_echo', arguments: { text: 'hi' } });
    expect(allowed).toMatchObject({ content: [{ type: 'text', text: 'app says hi' }] });
    const denied = await app.callServerTool({ name: 'app_echo', arguments: { text: 'no' } });
    expect(denied.isError).toBe(true);
    expect(asked.map((request) => [request.tool, request.original, request.arguments])).toEqual([
      ['apps__app_echo', 'app_echo', { text: 'hi' }],
      ['apps__app_echo', 'app_echo', { text: 'no' }],
    ]);
    // The journal has the decisions, as for a model's call.
    const decided = host.events().filter((event) => event.type === 'approval.decided');
    expect(decided.map((event) => event.type === 'approval.decided' && event.decision)).toEqual(['allow', 'deny']);
  });

  test('ui/message, ui/open-link and ui/update-model-context go to the callbacks; without one each is refused', async () => {
    const host = await startHost({ apps: appsServer() });
    const messages: unknown[] = [];
    const links: string[] = [];
    const contexts: unknown[] = [];
    const sizes: unknown[] = [];
    const { app, session } = await connectApp(host, 'apps__show', closers, {
      onMessage: (message) => void messages.push(message),
      onOpenLink: (link) => void links.push(link.url),
      onUpdateModelContext: (context) => void contexts.push(context),
    });
    session.onSizeChange = (size) => sizes.push(size);
    await app.sendMessage({ role: 'user', content: [{ type: 'text', text: 'hello host' }] });
    await app.openLink({ url: 'https://example.test/page' });
    await app.updateModelContext({ content: [{ type: 'text', text: 'page 3' }] });
    await app.sendSizeChanged({ width: 320, height: 240 });
    expect(messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'hello host' }] }]);
    expect(links).toEqual(['https://example.test/page']);
    expect(contexts).toEqual([{ content: [{ type: 'text', text: 'page 3' }] }]);
    await until(() => sizes.length === 1, 'the size change');
    expect(sizes).toEqual([{ width: 320, height: 240 }]);

    const bare = await connectApp(host, 'apps__show', closers);
    await expect(bare.app.sendMessage({ role: 'user', content: [{ type: 'text', text: 'x' }] })).rejects.toThrow(/not available/);
    await expect(bare.app.openLink({ url: 'https://example.test/' })).rejects.toThrow(/not available/);
    await expect(bare.app.updateModelContext({ content: [] })).rejects.toThrow(/not available/);
  });

  test('tool input, result and cancellation reach the app', async () => {
    const host = await startHost({ apps: appsServer() });
    const inputs: unknown[] = [];
    const results: unknown[] = [];
    const cancelled: unknown[] = [];
    const { session } = await connectApp(host, 'apps__show', closers, {}, (app) => {
      app.ontoolinput = (params) => inputs.push(params.arguments);
      app.ontoolresult = (params) => results.push(params);
      app.ontoolcancelled = (params) => cancelled.push(params);
    });
    await session.sendToolInput({ page: 1 });
    await session.sendToolResult({ content: [{ type: 'text', text: 'shown v1' }] });
    await session.sendToolCancelled('user closed it');
    await until(() => inputs.length + results.length + cancelled.length === 3, 'the notifications');
    expect(inputs).toEqual([{ page: 1 }]);
    expect(results).toEqual([{ content: [{ type: 'text', text: 'shown v1' }] }]);
    expect(cancelled).toEqual([{ reason: 'user closed it' }]);
  });

  test('a malformed message is rejected by its schema and never routed', async () => {
    const asked: ApprovalRequest[] = [];
    const host = await startHost(
      { apps: appsServer({ tools: { approval: { '*': 'ask' } } }) },
      {
        approve: (request) => {
          asked.push(request);
          return 'allow';
        },
      },
    );
    const [hostSide, appSide] = InMemoryTransport.createLinkedPair();
    const session = await host.appBridge('apps__show', hostSide);
    const app = new App({ name: 'test-app', version: '1.0.0' }, {}, { autoResize: false });
    await app.connect(appSide);
    await session.initialized;
    closers.push(async () => {
      await session.close();
      await app.close();
    });
    // Raw messages on the app's side of the transport, past the App's own checks; their answers are caught here.
    const answers: JSONRPCMessage[] = [];
    const appReceives = appSide.onmessage;
    appSide.onmessage = (message, extra) => {
      if ('id' in message && typeof message.id === 'number' && message.id >= 1000) answers.push(message);
      else appReceives?.(message, extra);
    };
    // tools/call without a name, one whose arguments are not an object; a resources/read without a uri.
    await appSide.send({ jsonrpc: '2.0', id: 1001, method: 'tools/call', params: { arguments: { text: 'hi' } } } as JSONRPCMessage);
    await appSide.send({ jsonrpc: '2.0', id: 1002, method: 'tools/call', params: { name: 'app_echo', arguments: 'hi' } } as JSONRPCMessage);
    await appSide.send({ jsonrpc: '2.0', id: 1003, method: 'resources/read', params: { url: 'ui://fixture/app.html' } } as JSONRPCMessage);
    await until(() => answers.length === 3, 'three answers');
    for (const answer of answers) {
      expect(answer).toMatchObject({ jsonrpc: '2.0', error: { message: expect.stringMatching(/invalid/i) } });
      expect(answer).not.toHaveProperty('result');
    }
    // The same call, well formed, is routed (and asks for approval): the gate saw only that one.
    const routed = await app.callServerTool({ name: 'app_echo', arguments: { text: 'ok' } });
    expect(routed.content).toEqual([{ type: 'text', text: 'app says ok' }]);
    expect(asked.map((request) => request.arguments)).toEqual([{ text: 'ok' }]);
  });

  test('refuses a tool of no server, and a server that is not ready', async () => {
    const host = await startHost({ apps: appsServer() });
    const [hostSide] = InMemoryTransport.createLinkedPair();
    await expect(host.appBridge('nobody__nothing', hostSide)).rejects.toThrow(/no tool named "nobody__nothing"/);
    await host.updateServer('apps', { enabled: false });
    await untilState(host, 'apps', 'disabled');
    await expect(host.appBridge('apps__show', hostSide)).rejects.toBeInstanceOf(NotReadyError);
  });
});
