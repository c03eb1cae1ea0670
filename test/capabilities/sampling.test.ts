import { afterEach, describe, expect, test } from 'vitest';
import { createMcpHost, type McpHost } from '../../src/host.js';
import { resultToText } from '../../src/catalog/tools/adapter.js';
import { createOpenAICompatibleModel } from '../../src/agent/openai-compatible.js';
import { fixtureCommand } from '../fixtures/index.js';
import { stateDirWith, untilState } from '../host/helpers.js';
import { startScriptedModel, textStep, type ScriptedModel } from '../support/scripted-model.js';

const EVERYTHING = [process.execPath, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'];
const KEY = 'sk-sampling-secret-0123456789';

let host: McpHost | undefined;
let endpoint: ScriptedModel | undefined;
afterEach(async () => {
  await host?.shutdown();
  await endpoint?.close();
  host = endpoint = undefined;
});

async function startHost(servers: Record<string, unknown>, options: Parameters<typeof createMcpHost>[0] = {}): Promise<McpHost> {
  host = createMcpHost({ stateDir: stateDirWith(servers), persistJournal: false, watchConfig: false, ...options });
  await host.start();
  for (const name of Object.keys(servers)) await untilState(host, name, 'ready');
  return host;
}

describe('sampling', () => {
  test("server-everything's sampling request is answered by the host model", async () => {
    endpoint = await startScriptedModel([textStep('Sampled: the sky is blue')]);
    const hostModel = createOpenAICompatibleModel({ baseUrl: endpoint.baseUrl, apiKey: KEY, model: 'scripted-1' });
    await startHost({ everything: { type: 'local', command: EVERYTHING } }, { hostModel });
    expect(host!.tools().map((tool) => tool.name)).toContain('everything__trigger-sampling-request');

    const result = await host!.callTool('everything__trigger-sampling-request', { prompt: 'sky?', maxTokens: 33 });
    expect(result.details.is_error).toBe(false);
    const text = resultToText(result);
    expect(text).toContain('"text": "Sampled: the sky is blue"');
    expect(text).toContain('"model": "scripted-1"');
    expect(text).toContain('"stopReason": "endTurn"');
    expect(endpoint.requests).toHaveLength(1);
    expect(endpoint.requests[0]!.body).toMatchObject({
      model: 'scripted-1',
      messages: [
        { role: 'system', content: 'You are a helpful test server.' },
        { role: 'user', content: 'Resource trigger-sampling-request context: sky?' },
      ],
      max_tokens: 33,
      temperature: 0.7,
    });
  });

  test('without a host model sampling is not declared, and a server that asks anyway gets an error saying why', async () => {
    await startHost({ everything: { type: 'local', command: EVERYTHING }, asks: { type: 'local', command: fixtureCommand('client-requests') } });
    expect(host!.tools().map((tool) => tool.name)).not.toContain('everything__trigger-sampling-request');

    const result = await host!.callTool('asks__sample', { prompt: 'hello?' });
    expect(result.details.is_error).toBe(true);
    expect(JSON.parse(resultToText(result))).toEqual({
      error: {
        code: -32601,
        message: 'MCP error -32601: sampling is not available: no host model is configured (createMcpHost({ hostModel }))',
        data: { reason: 'no_host_model' },
      },
    });
  });

  test('a failing model call gives the server a JSON-RPC error naming the failure, never the key', async () => {
    endpoint = await startScriptedModel([{ status: 429, json: { error: { message: `Rate limit reached for key ${KEY}` } } }]);
    const hostModel = createOpenAICompatibleModel({ baseUrl: endpoint.baseUrl, apiKey: KEY, model: 'scripted-1' });
    const logged: string[] = [];
    const logger = { info: (line: string) => logged.push(line), warn: (line: string) => logged.push(line) };
    await startHost({ asks: { type: 'local', command: fixtureCommand('client-requests') } }, { hostModel, logger });

    const result = await host!.callTool('asks__sample', { prompt: 'hello?' });
    expect(result.details.is_error).toBe(true);
    const { error } = JSON.parse(resultToText(result));
    expect(error).toEqual({
      code: -32603,
      message: 'MCP error -32603: host model scripted-1 answered HTTP 429: Rate limit reached for key ••••',
      data: { reason: 'host_model_failed' },
    });
    const everything = JSON.stringify({ result, events: host!.events(), logged });
    expect(everything).not.toContain(KEY);
  });

  test('a server that cancels its sampling request aborts the model call', async () => {
    endpoint = await startScriptedModel([{ hang: true }]);
    const hostModel = createOpenAICompatibleModel({ baseUrl: endpoint.baseUrl, model: 'slow-model' });
    await startHost({ asks: { type: 'local', command: fixtureCommand('client-requests') } }, { hostModel });

    // The server's request times out and it sends notifications/cancelled; the HTTP request must end with it.
    // The timeout leaves the host time to have the model call out by then, however busy the machine: a
    // cancellation that came first would leave nothing to abort.
    const call = host!.callTool('asks__sample', { prompt: 'hello?', timeoutMs: 3000 });
    await expect.poll(() => endpoint!.requests.length, { timeout: 10_000 }).toBe(1);
    const result = await call;
    expect(result.details.is_error).toBe(true);
    expect(resultToText(result)).toContain('Request timed out');
    await endpoint.abandoned;
  });

  test('a conversation with images maps to chat messages; content the model cannot take is refused naming it', async () => {
    endpoint = await startScriptedModel([textStep('cut short', 'length')]);
    const hostModel = createOpenAICompatibleModel({ baseUrl: endpoint.baseUrl, model: 'scripted-1' });
    await startHost({ asks: { type: 'local', command: fixtureCommand('client-requests') } }, { hostModel });
    const image = { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' };
    const ok = await host!.callTool('asks__sample', {
      params: {
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'what is this?' }, image] },
          { role: 'assistant', content: { type: 'text', text: 'a pixel' } },
          { role: 'user', content: { type: 'text', text: 'sure?' } },
        ],
        maxTokens: 5,
        stopSequences: ['\n\n'],
      },
    });
    expect(JSON.parse(resultToText(ok)).result).toEqual({
      role: 'assistant',
      content: { type: 'text', text: 'cut short' },
      model: 'scripted-1',
      stopReason: 'maxTokens',
    });
    expect(endpoint.requests[0]!.body).toEqual({
      model: 'scripted-1',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is this?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          ],
        },
        { role: 'assistant', content: 'a pixel' },
        { role: 'user', content: 'sure?' },
      ],
      max_tokens: 5,
      stop: ['\n\n'],
    });

    const audio = await host!.callTool('asks__sample', {
      params: { messages: [{ role: 'user', content: { type: 'audio', data: 'AAAA', mimeType: 'audio/wav' } }], maxTokens: 5 },
    });
    expect(JSON.parse(resultToText(audio)).error).toMatchObject({
      code: -32602,
      message: 'MCP error -32602: messages[0]: audio content is not supported by the host model',
    });
    const withTools = await host!.callTool('asks__sample', {
      params: {
        messages: [{ role: 'user', content: { type: 'text', text: 'x' } }],
        maxTokens: 5,
        tools: [{ name: 't', inputSchema: { type: 'object' } }],
      },
    });
    expect(JSON.parse(resultToText(withTools)).error.message).toContain('tool use in sampling is not supported');
    expect(endpoint.requests).toHaveLength(1);
  });
});
