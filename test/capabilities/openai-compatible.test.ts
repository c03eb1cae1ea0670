import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import { HostModelError } from '../../src/agent/host-model.js';
import { createOpenAICompatibleModel } from '../../src/agent/openai-compatible.js';
import { startScriptedModel, textStep, toolCallsStep, type ScriptedModel } from '../support/scripted-model.js';

const KEY = 'sk-test-0123456789abcdef';
let endpoint: ScriptedModel | undefined;
afterEach(async () => {
  await endpoint?.close();
  endpoint = undefined;
});

describe('the OpenAI-compatible host model', () => {
  test('sends the chat-completions shape with the bearer key, and reads text and tool calls', async () => {
    endpoint = await startScriptedModel([
      toolCallsStep([{ id: 'call_1', name: 'everything__echo', args: { message: 'hi' } }]),
      textStep('done', 'length'),
    ]);
    const model = createOpenAICompatibleModel({ baseUrl: `${endpoint.baseUrl}/`, apiKey: KEY, model: 'test-model' });
    const tools = [{ name: 'everything__echo', description: 'Echoes', parameters: { type: 'object', properties: { message: { type: 'string' } } } }];
    const first = await model.complete({
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image', data: 'AAAA', mimeType: 'image/png' }] },
      ],
      tools,
      maxTokens: 20,
      temperature: 0.5,
      stopSequences: ['END'],
    });
    expect(first).toEqual({
      role: 'assistant',
      content: '',
      tool_calls: [{ id: 'call_1', name: 'everything__echo', arguments: '{"message":"hi"}' }],
      stop_reason: 'tool_use',
    });
    const [request] = endpoint.requests;
    expect(request!.path).toBe('/v1/chat/completions');
    expect(request!.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(request!.body).toEqual({
      model: 'test-model',
      messages: [
        { role: 'system', content: 'be brief' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'look' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
          ],
        },
      ],
      tools: [{ type: 'function', function: tools[0] }],
      max_tokens: 20,
      temperature: 0.5,
      stop: ['END'],
    });

    const second = await model.complete({
      messages: [
        { role: 'user', content: 'go' },
        first,
        { role: 'tool', tool_call_id: 'call_1', content: 'Echo: hi' },
      ],
    });
    expect(second).toEqual({ role: 'assistant', content: 'done', tool_calls: [], stop_reason: 'max_tokens' });
    expect(endpoint.requests[1]!.body.messages).toEqual([
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'everything__echo', arguments: '{"message":"hi"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'Echo: hi' },
    ]);
    expect(endpoint.requests[1]!.body).not.toHaveProperty('tools');
  });

  test('without an API key no Authorization header is sent', async () => {
    endpoint = await startScriptedModel([textStep('ok')]);
    const model = createOpenAICompatibleModel({ baseUrl: endpoint.baseUrl, model: 'local' });
    await model.complete({ messages: [{ role: 'user', content: 'hi' }] });
    expect(endpoint.requests[0]!.headers).not.toHaveProperty('authorization');
  });

  test('an HTTP error says the status and the provider message, with the key redacted', async () => {
    endpoint = await startScriptedModel([
      { status: 401, json: { error: { message: `Incorrect API key provided: ${KEY}` } } },
      { status: 502, text: '<html>\n  bad gateway\n</html>' },
    ]);
    const model = createOpenAICompatibleModel({ baseUrl: endpoint.baseUrl, apiKey: KEY, model: 'm' });
    const failure = await model.complete({ messages: [{ role: 'user', content: 'hi' }] }).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(HostModelError);
    expect(failure).toMatchObject({ status: 401, message: 'host model m answered HTTP 401: Incorrect API key provided: ••••' });
    await expect(model.complete({ messages: [{ role: 'user', content: 'hi' }] })).rejects.toThrow(
      'host model m answered HTTP 502: <html> bad gateway </html>',
    );
  });

  test('an answer that is not JSON, or not a completion, is an error naming the problem', async () => {
    endpoint = await startScriptedModel([{ text: 'hello' }, { json: { choices: [] } }, { json: { choices: [{ message: { content: 7 } }] } }]);
    const model = createOpenAICompatibleModel({ baseUrl: endpoint.baseUrl, model: 'm' });
    const ask = () => model.complete({ messages: [{ role: 'user', content: 'hi' }] });
    await expect(ask()).rejects.toThrow('host model m answered with something that is not JSON: hello');
    await expect(ask()).rejects.toThrow(/host model m answered in an unexpected shape: choices: /);
    await expect(ask()).rejects.toThrow(/unexpected shape: choices\.0\.message\.content: /);
  });

  test('an endpoint nobody listens on is an error saying so', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const model = createOpenAICompatibleModel({ baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: KEY, model: 'm' });
    await expect(model.complete({ messages: [{ role: 'user', content: 'hi' }] })).rejects.toThrow(
      `cannot reach host model at http://127.0.0.1:${port}/v1/chat/completions: ECONNREFUSED`,
    );
  });

  test('aborting the signal aborts the HTTP request', async () => {
    endpoint = await startScriptedModel([{ hang: true }]);
    const model = createOpenAICompatibleModel({ baseUrl: endpoint.baseUrl, model: 'm' });
    const controller = new AbortController();
    const pending = model.complete({ messages: [{ role: 'user', content: 'hi' }] }, { signal: controller.signal });
    await expect.poll(() => endpoint!.requests.length, { timeout: 10_000 }).toBe(1);
    controller.abort();
    await expect(pending).rejects.toThrow('host model request was cancelled');
    await endpoint.abandoned;
  });

  test('a malformed request is refused before anything is sent', async () => {
    endpoint = await startScriptedModel([]);
    const model = createOpenAICompatibleModel({ baseUrl: endpoint.baseUrl, model: 'm' });
    await expect(model.complete({ messages: [] })).rejects.toThrow(/^invalid model request: messages: /);
    await expect(model.complete({ messages: [{ role: 'robot', content: 'x' } as never] })).rejects.toThrow(
      /^invalid model request: messages\.0\.role: /,
    );
    expect(endpoint.requests).toHaveLength(0);
  });

  test('bad options are refused, naming the option', () => {
    expect(() => createOpenAICompatibleModel({ baseUrl: 'ftp://x', model: 'm' })).toThrow(
      'createOpenAICompatibleModel: baseUrl: baseUrl must be an http(s) URL',
    );
    expect(() => createOpenAICompatibleModel({ baseUrl: 'http://x/v1', model: '' })).toThrow(
      'createOpenAICompatibleModel: model: model must be a non-empty string',
    );
    expect(() => createOpenAICompatibleModel({ baseUrl: 'http://x/v1', model: 'm', apikey: 'k' } as never)).toThrow(
      /createOpenAICompatibleModel: .*apikey/,
    );
  });

  test('the model object does not carry the key where it could be printed', () => {
    const model = createOpenAICompatibleModel({ baseUrl: 'http://127.0.0.1:9/v1', apiKey: KEY, model: 'm' });
    expect(JSON.stringify(model)).not.toContain(KEY);
    expect(Object.values(model)).not.toContain(KEY);
  });
});
