import { afterEach, beforeAll, afterAll, describe, expect, test } from 'vitest';
import { createMcpHost, type McpHost } from '../../src/host.js';
import { runAgentTurn, type ToolCallEvent } from '../../src/agent/agent-loop.js';
import { createOpenAICompatibleModel } from '../../src/agent/openai-compatible.js';
import { fixtureCommand } from '../fixtures/index.js';
import { stateDirWith, untilState } from '../host/helpers.js';
import { startScriptedModel, textStep, toolCallsStep, type ScriptedModel } from '../support/scripted-model.js';

const EVERYTHING = [process.execPath, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'];

// One host with real servers for every test of this file: the scripted model is what varies.
let host: McpHost;
beforeAll(async () => {
  host = createMcpHost({
    stateDir: stateDirWith({
      everything: { type: 'local', command: EVERYTHING },
      asks: { type: 'local', command: fixtureCommand('client-requests') },
    }),
    persistJournal: false,
    watchConfig: false,
  });
  await host.start();
  await untilState(host, 'everything', 'ready');
  await untilState(host, 'asks', 'ready');
});
afterAll(() => host.shutdown());

let endpoint: ScriptedModel | undefined;
afterEach(async () => {
  await endpoint?.close();
  endpoint = undefined;
});

const modelOf = (scripted: ScriptedModel) => createOpenAICompatibleModel({ baseUrl: scripted.baseUrl, apiKey: 'sk-loop-test-key', model: 'm' });

describe('runAgentTurn', () => {
  test('the model asks for everything__echo, gets its result, and answers', async () => {
    endpoint = await startScriptedModel([
      toolCallsStep([{ id: 'call_1', name: 'everything__echo', args: { message: 'hi' } }]),
      (request) => textStep(`The tool said: ${request.body.messages.at(-1).content}`),
    ]);
    const events: ToolCallEvent[] = [];
    const turn = await runAgentTurn(modelOf(endpoint), [{ role: 'user', content: 'Echo hi, please.' }], host, {
      onToolCall: (event) => events.push(event),
    });

    expect(turn).toMatchObject({ text: 'The tool said: Echo: hi', rounds: 2, stop: 'answered' });
    expect(turn.messages).toEqual([
      { role: 'user', content: 'Echo hi, please.' },
      { role: 'assistant', content: '', tool_calls: [{ id: 'call_1', name: 'everything__echo', arguments: '{"message":"hi"}' }], stop_reason: 'tool_use' },
      { role: 'tool', tool_call_id: 'call_1', content: 'Echo: hi' },
      { role: 'assistant', content: 'The tool said: Echo: hi', tool_calls: [], stop_reason: 'end_turn' },
    ]);
    // The model was offered the registry's tools, schemas verbatim.
    const offered = endpoint.requests[0]!.body.tools as Array<{ type: string; function: { name: string; parameters: unknown } }>;
    const echo = host.tools().find((tool) => tool.name === 'everything__echo')!;
    expect(offered.map((tool) => tool.function.name).sort()).toEqual(host.tools().map((tool) => tool.name).sort());
    expect(offered.find((tool) => tool.function.name === 'everything__echo')).toEqual({
      type: 'function',
      function: { name: 'everything__echo', description: echo.description, parameters: echo.parameters },
    });
    expect(events.map((event) => event.type)).toEqual(['call', 'result']);
  });

  test('several tool calls of one answer run at the same time', async () => {
    endpoint = await startScriptedModel([
      toolCallsStep([
        { id: 'a', name: 'asks__rendezvous', args: { id: 'a', expect: 2 } },
        { id: 'b', name: 'asks__rendezvous', args: { id: 'b', expect: 2 } },
      ]),
      textStep('both met'),
    ]);
    const turn = await runAgentTurn(modelOf(endpoint), [{ role: 'user', content: 'go' }], host);
    expect(turn.stop).toBe('answered');
    // A sequential loop would leave the first call waiting alone (an error result).
    expect(turn.messages.filter((message) => message.role === 'tool')).toEqual([
      { role: 'tool', tool_call_id: 'a', content: 'met a' },
      { role: 'tool', tool_call_id: 'b', content: 'met b' },
    ]);
  });

  test('tool errors and unusable arguments go back to the model as text, and it can recover', async () => {
    endpoint = await startScriptedModel([
      toolCallsStep([
        { id: 'bad', name: 'everything__echo', args: '{"message": ' },
        { id: 'arr', name: 'everything__echo', args: '[1]' },
        { id: 'unknown', name: 'nope__tool', args: {} },
      ]),
      textStep('sorry'),
    ]);
    const turn = await runAgentTurn(modelOf(endpoint), [{ role: 'user', content: 'go' }], host);
    expect(turn.text).toBe('sorry');
    const tools = turn.messages.filter((message) => message.role === 'tool');
    expect(tools[0]).toMatchObject({ tool_call_id: 'bad', content: expect.stringMatching(/^error: the arguments are not valid JSON/) });
    expect(tools[1]).toMatchObject({ tool_call_id: 'arr', content: 'error: the arguments must be a JSON object; call the tool again with one' });
    expect(tools[2]).toMatchObject({ tool_call_id: 'unknown', content: 'error: unknown tool "nope__tool"' });
    // What the model saw on its second call is exactly that.
    expect(endpoint.requests[1]!.body.messages.slice(-3).map((message: { content: string }) => message.content)).toEqual(
      tools.map((message) => message.content),
    );
  });

  test('a model that keeps calling tools stops at maxRounds', async () => {
    const again = () => toolCallsStep([{ id: `c${endpoint!.requests.length}`, name: 'everything__echo', args: { message: 'more' } }]);
    endpoint = await startScriptedModel([again, again, again, again]);
    const turn = await runAgentTurn(modelOf(endpoint), [{ role: 'user', content: 'loop' }], host, { maxRounds: 3 });
    expect(turn).toMatchObject({ stop: 'max_rounds', rounds: 3, text: '' });
    expect(endpoint.requests).toHaveLength(3);
    expect(turn.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'c3', content: 'Echo: more' });
    await expect(runAgentTurn(modelOf(endpoint), [{ role: 'user', content: 'x' }], host, { maxRounds: 0 })).rejects.toThrow(
      new RangeError('runAgentTurn: maxRounds: must be at least 1'),
    );
  });

  test('options and messages it cannot use are refused before the model is asked, naming what is wrong', async () => {
    endpoint = await startScriptedModel([]);
    const model = modelOf(endpoint);
    const refused = (messages: unknown, options?: unknown) => runAgentTurn(model, messages as never, host, options as never).then(() => 'ran', (error: Error) => `${error.name}: ${error.message}`);
    expect(await refused([{ role: 'user', content: 'x' }], { maxround: 2 })).toMatch(/^TypeError: runAgentTurn: unknown option maxround; the options are maxRounds, /);
    expect(await refused('hi')).toBe('TypeError: runAgentTurn: messages must be an array of chat messages');
    expect(await refused([{ role: 'wizard', content: 'x' }])).toMatch(/^TypeError: runAgentTurn: messages: 0\.role: /);
    expect(endpoint.requests).toHaveLength(0);
  });

  test("an adapter's answer is read as the AssistantMessage schema reads it: no tool_calls is none, anything else is named", async () => {
    // A small adapter of another provider, written to the exported schema: tool_calls left out, a field of its own.
    const adapter = { complete: async () => ({ role: 'assistant' as const, content: 'hi', provider_id: 'r-1' }) };
    const turn = await runAgentTurn(adapter as never, [{ role: 'user', content: 'x' }], host);
    expect(turn).toMatchObject({ stop: 'answered', text: 'hi', rounds: 1 });
    expect(turn.messages.at(-1)).toEqual({ role: 'assistant', content: 'hi', provider_id: 'r-1', tool_calls: [] });
    const broken = { complete: async () => ({ role: 'assistant', content: 5 }) };
    await expect(runAgentTurn(broken as never, [{ role: 'user', content: 'x' }], host)).rejects.toThrow(
      new TypeError('model.complete answered no assistant message: content: expected string, received number'),
    );
  });

  test('a failing model call rejects the turn with the reason', async () => {
    endpoint = await startScriptedModel([{ status: 500, json: { error: { message: 'overloaded' } } }]);
    await expect(runAgentTurn(modelOf(endpoint), [{ role: 'user', content: 'x' }], host)).rejects.toThrow(
      'host model m answered HTTP 500: overloaded',
    );
  });
});
