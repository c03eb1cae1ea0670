// MCP Apps against real servers: the npm App servers (server-basic-vanillajs,
// server-pdf on a local PDF) and an own fixture (apps-server.mjs, both eras).
// An ext-apps `App` on the other end of an in-memory transport stands in for
// the frame an embedder renders.
import { connectApp } from '../support/apps.js';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, test } from 'vitest';
import { createMcpHost, type McpHost } from '../../src/host.js';
import { runAgentTurn } from '../../src/agent/agent-loop.js';
import { createOpenAICompatibleModel } from '../../src/agent/openai-compatible.js';
import { resultToText } from '../../src/catalog/tools/adapter.js';
import { toAnthropicTools, toOpenAIResponsesTools, toOpenAITools } from '../../src/catalog/tools/provider-formats.js';
import { serve } from '../http/helpers.js';
import { startScriptedModel, textStep, toolCallsStep } from '../support/scripted-model.js';
import { fixtureCommand } from '../fixtures/index.js';
import { stateDirWith, untilState } from '../host/helpers.js';

// Their packages export no entry: their bin scripts are run by path.
const serverScript = (name: string) => fileURLToPath(new URL(`../../node_modules/@modelcontextprotocol/${name}/dist/index.js`, import.meta.url));
const vanillaJs = serverScript('server-basic-vanillajs');
const pdfServer = serverScript('server-pdf');
const PDF = fileURLToPath(new URL('../fixtures/apps/one-page.pdf', import.meta.url));

const hosts: McpHost[] = [];
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
  await Promise.all(hosts.splice(0).map((host) => host.shutdown()));
});

async function startHost(servers: Record<string, unknown>): Promise<McpHost> {
  const host = createMcpHost({ stateDir: stateDirWith(servers), watchConfig: false, persistJournal: false, logger: { info() {}, warn() {} } });
  hosts.push(host);
  await host.start();
  for (const name of Object.keys(servers)) await untilState(host, name, 'ready', 30_000);
  return host;
}


const textOf = (result: { content?: unknown[] }) =>
  (result.content ?? []).map((block) => (block as { text?: string }).text ?? '').join('\n');

describe('server-basic-vanillajs', () => {
  test('its tool carries its ui in the catalog; toolUi reads its html; its app asks the server for the time through the bridge', async () => {
    const host = await startHost({
      clock: { type: 'local', command: [process.execPath, vanillaJs, '--stdio'] },
      other: { type: 'local', command: fixtureCommand('healthy') },
    });
    const entry = host.catalog().find((server) => server.name === 'clock')!;
    expect(entry.tools).toContainEqual(
      expect.objectContaining({
        name: 'clock__get-time',
        ui: { resource_uri: 'ui://get-time/mcp-app.html', visibility: ['model', 'app'] },
        model_visible: true,
      }),
    );
    // mcp-fleet's own resource tools name no app.
    expect(entry.tools.find((tool) => tool.name === 'clock__read_resource')).toMatchObject({ ui: null, model_visible: true });
    expect(host.tools().map((tool) => tool.name)).toContain('clock__get-time');

    const ui = await host.toolUi('clock__get-time');
    expect(ui).toMatchObject({
      tool: 'clock__get-time',
      server: 'clock',
      original: 'get-time',
      resourceUri: 'ui://get-time/mcp-app.html',
      csp: { connectDomains: [], resourceDomains: [], frameDomains: [], baseUriDomains: [] },
      permissions: {},
      prefersBorder: null,
      domain: null,
      visibility: ['model', 'app'],
    });
    expect(ui!.html).toMatch(/<html/i);
    // A tool without an app has none.
    expect(await host.toolUi('other__echo')).toBeNull();
    expect(await host.toolUi('nobody__nothing')).toBeNull();

    const { app } = await connectApp(host, 'clock__get-time', closers);
    const answer = await app.callServerTool({ name: 'get-time', arguments: {} });
    expect(answer.isError).toBeFalsy();
    // An ISO time, as the server's own tool answers it.
    expect(JSON.stringify(answer)).toMatch(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/);

    // Another configured server's tool, by its own name or the agent-facing one: refused, never routed.
    for (const name of ['echo', 'other__echo']) {
      const refused = await app.callServerTool({ name, arguments: { text: 'hi' } });
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toContain('is not a tool of server "clock"');
    }
    // Its own server's resources are readable through the bridge.
    const read = await app.readServerResource({ uri: 'ui://get-time/mcp-app.html' });
    expect(read.contents[0]).toMatchObject({ uri: 'ui://get-time/mcp-app.html', mimeType: 'text/html;profile=mcp-app' });
  });
});

describe('server-pdf on a local PDF', () => {
  const APP_ONLY = ['read_pdf_bytes', 'submit_page_data', 'submit_save_data', 'submit_viewer_state', 'poll_pdf_commands', 'save_pdf'];
  const pdfConfig = { type: 'local', command: [process.execPath, pdfServer, '--stdio', PDF], tools: { always_load: true } };

  test('display_pdf has an app; its app-only tools are listed with model_visible false and never reach a model', async () => {
    const host = await startHost({ pdf: pdfConfig });
    const served = await serve(host);
    closers.push(() => served.close());

    const listed = (await served.request('/api/mcp/tools')).json.tools as Array<{ name: string; ui: unknown; model_visible: boolean }>;
    expect(listed.find((tool) => tool.name === 'pdf__display_pdf')).toMatchObject({
      ui: { resource_uri: 'ui://pdf-viewer/mcp-app.html', visibility: ['model', 'app'] },
      model_visible: true,
    });
    for (const original of APP_ONLY) {
      expect(listed.find((tool) => tool.name === `pdf__${original}`)).toMatchObject({
        ui: { resource_uri: null, visibility: ['app'] },
        model_visible: false,
      });
    }
    expect(listed.find((tool) => tool.name === 'pdf__list_pdfs')).toMatchObject({ ui: null, model_visible: true });

    const appOnly = (names: string[]) => names.filter((name) => APP_ONLY.some((original) => name === `pdf__${original}`));
    const eager = host.tools().map((tool) => tool.name);
    expect(eager).toContain('pdf__display_pdf');
    expect(appOnly(eager)).toEqual([]);
    // Deferred: the always-loaded tools (every one of this server) and search_tools, still without the app's.
    const deferred = host.tools({ loading: 'deferred' }).map((tool) => tool.name);
    expect(deferred).toContain('pdf__display_pdf');
    expect(appOnly(deferred)).toEqual([]);
    // The search finds nothing of the app's, even asked for by name.
    for (const query of ['read pdf bytes chunk', 'save_pdf', 'submit page data']) {
      expect(appOnly(host.searchTools(query, { limit: 50 }).map((hit) => hit.name))).toEqual([]);
    }
    expect(host.searchTools('display pdf viewer').map((hit) => hit.name)).toContain('pdf__display_pdf');
    expect(appOnly((await served.request('/api/mcp/tools/search?q=save%20pdf')).json.tools.map((hit: { name: string }) => hit.name))).toEqual([]);
    // Every provider format, even handed every tool.
    const every = host.allTools();
    expect(appOnly(every.map((tool) => tool.name))).toHaveLength(APP_ONLY.length);
    expect(appOnly(toOpenAITools(every).map((tool) => tool.function.name))).toEqual([]);
    expect(appOnly(toAnthropicTools(every).map((tool) => tool.name))).toEqual([]);
    expect(appOnly(toAnthropicTools(every, { deferLoading: true }).map((tool) => tool.name))).toEqual([]);
    expect(appOnly(toOpenAIResponsesTools(every).flatMap((tool) => ('name' in tool ? [tool.name] : [])))).toEqual([]);

    // A model's call of one is refused, saying why, without reaching the server.
    const refused = await host.callTool('pdf__read_pdf_bytes', { url: 'x' });
    expect(refused.details.is_error).toBe(true);
    expect(resultToText(refused)).toContain('is app-only');
    const overHttp = await served.request('/api/mcp/tools/pdf__save_pdf/call', { method: 'POST', body: { arguments: {} } });
    expect(overHttp.json.details.is_error).toBe(true);

    // The agent loop: no request body it sends names an app-only tool; a model that guesses one is told it is app-only.
    const guess = toolCallsStep([{ id: 'c1', name: 'pdf__read_pdf_bytes', args: { url: 'x' } }]);
    const model = await startScriptedModel([guess, textStep('done'), guess, textStep('done')]);
    closers.push(() => model.close());
    for (const loading of ['eager', 'deferred'] as const) {
      model.requests.length = 0;
      await runAgentTurn(createOpenAICompatibleModel({ baseUrl: model.baseUrl, apiKey: 'sk-test', model: 'm' }), [{ role: 'user', content: 'read it' }], host, { loading });
    }
    const toolNames = model.requests.flatMap((request) => (request.body.tools ?? []).map((tool: { function: { name: string } }) => tool.function.name));
    expect(toolNames).toContain('pdf__display_pdf');
    expect(appOnly(toolNames)).toEqual([]);
    expect(JSON.stringify(model.requests.map((request) => request.body.tools))).not.toMatch(/read_pdf_bytes|save_pdf|submit_page_data/);
    expect(model.requests[1]!.body.messages.at(-1)).toMatchObject({ role: 'tool', content: expect.stringContaining('is app-only') });
  });

  test("display_pdf's app reads the PDF through its app-only tool over the bridge", async () => {
    const host = await startHost({ pdf: pdfConfig });
    const ui = await host.toolUi('pdf__display_pdf');
    expect(ui).toMatchObject({
      resourceUri: 'ui://pdf-viewer/mcp-app.html',
      csp: { connectDomains: ['https://unpkg.com'], resourceDomains: ['https://unpkg.com'], frameDomains: [], baseUriDomains: [] },
      permissions: { clipboardWrite: {} },
    });
    // The URL the server gives the PDF it was started with.
    const listing = resultToText(await host.callTool('pdf__list_pdfs', {}));
    const url = listing.match(/file:\/\/\S*one-page\.pdf/)?.[0];
    expect(url, listing).toBeDefined();

    const { app } = await connectApp(host, 'pdf__display_pdf', closers);
    const chunk = await app.callServerTool({ name: 'read_pdf_bytes', arguments: { url, offset: 0 } });
    expect(chunk.isError).toBeFalsy();
    const bytes = (chunk.structuredContent as { bytes: string; totalBytes: number }).bytes;
    expect(Buffer.from(bytes, 'base64').subarray(0, 5).toString('latin1')).toBe('%PDF-');
    expect((chunk.structuredContent as { totalBytes: number }).totalBytes).toBe(readFileSync(PDF).length);
  });
});
