// 2026-07-28 multi-round-trip requests (input_required) through the host: the
// same elicitation, sampling and roots handlers that answer a 2025 server's
// requests answer a modern server's embedded ones; requestState comes back
// byte for byte; a server that never stops asking is cut off after a bound.
// Real fixture processes (modern.mjs), over stdio, on both eras.
import { afterEach, describe, expect, test } from 'vitest';
import { createMcpHost, type McpHost } from '../../src/host.js';
import { createOpenAICompatibleModel } from '../../src/agent/openai-compatible.js';
import type { ElicitationRequest, ElicitationValue } from '../../src/connection/capabilities/elicitation.js';
import { INPUT_REQUIRED_MAX_ROUNDS } from '../../src/connection/connection.js';
import { resultToText } from '../../src/catalog/tools/adapter.js';
import { fixtureCommand } from '../fixtures/index.js';
import { stateDirWith, untilState } from '../host/helpers.js';
import { startScriptedModel, textStep, type ScriptedModel } from '../support/scripted-model.js';

let host: McpHost | undefined;
let endpoint: ScriptedModel | undefined;
afterEach(async () => {
  await host?.shutdown();
  await endpoint?.close();
  host = endpoint = undefined;
});

const asked: ElicitationRequest[] = [];
afterEach(() => void asked.splice(0));

/** The modern fixture as `modern` (2026-07-28) and, dual-era, as `legacy` spoken to in 2025. */
const BOTH_ERAS = {
  modern: { type: 'local', command: fixtureCommand('modern') },
  legacy: { type: 'local', command: fixtureCommand('modern', '--legacy', 'stateless'), protocol: '2025' },
};

/** A host with `servers`, all ready; its elicitation handler notes each request and accepts with `content`. */
async function startHost(
  options: Parameters<typeof createMcpHost>[0] = {},
  servers: Record<string, unknown> = BOTH_ERAS,
  content: Record<string, ElicitationValue> = { name: 'Ada' },
): Promise<McpHost> {
  host = createMcpHost({
    stateDir: stateDirWith(servers),
    persistJournal: false,
    watchConfig: false,
    elicitation: async (request) => {
      asked.push(request);
      return { action: 'accept', content };
    },
    roots: [{ uri: 'file:///srv/project', name: 'project' }],
    ...options,
  });
  await host.start();
  for (const name of Object.keys(servers)) await untilState(host, name, 'ready');
  return host;
}

async function callText(tool: string, args: Record<string, unknown> = {}): Promise<{ text: string; isError: boolean }> {
  const result = await host!.callTool(tool, args);
  return { text: resultToText(result), isError: result.details.is_error };
}

describe('input_required', () => {
  test('an elicitation is answered by the host handler on both eras', async () => {
    await startHost();
    expect(await callText('modern__era')).toEqual({ text: 'modern', isError: false });
    expect(await callText('legacy__era')).toEqual({ text: 'legacy', isError: false });
    expect(await callText('modern__ask', { message: 'Your name?' })).toEqual({ text: 'hello Ada', isError: false });
    expect(await callText('legacy__ask', { message: 'Your name?' })).toEqual({ text: 'hello Ada', isError: false });
    expect(asked.map((request) => [request.server, request.message])).toEqual([
      ['modern', 'Your name?'],
      ['legacy', 'Your name?'],
    ]);
  });

  test('requestState is echoed byte for byte across the round', async () => {
    await startHost();
    expect(await callText('modern__two_step')).toEqual({ text: 'state intact, hello Ada', isError: false });
  });

  test('roots and sampling are served from the same handlers', async () => {
    endpoint = await startScriptedModel([textStep('sampled modern'), textStep('sampled legacy')]);
    await startHost({ hostModel: createOpenAICompatibleModel({ baseUrl: endpoint.baseUrl, model: 'scripted-1' }) });
    expect(await callText('modern__list_roots')).toEqual({ text: 'file:///srv/project', isError: false });
    expect(await callText('modern__sample', { prompt: 'hi' })).toEqual({ text: 'sampled modern', isError: false });
    expect(await callText('legacy__sample', { prompt: 'hi' })).toEqual({ text: 'sampled legacy', isError: false });
    expect(endpoint.requests).toHaveLength(2);
  });

  describe('a handler waiting on a person is bounded as the 2025 call is', () => {
    /** A host whose elicitation handler never answers by itself; each call's handler signal is noted. */
    async function waitingHost(fields: Record<string, unknown> = {}) {
      const signals: AbortSignal[] = [];
      const started = await startHost(
        {
          elicitation: (_request, { signal }) => {
            signals.push(signal);
            return new Promise(() => {});
          },
        },
        { modern: { type: 'local', command: fixtureCommand('modern'), ...fields } },
      );
      return { started, signals };
    }

    test('by the call timeout: the call fails as a timeout, and the handler is told', async () => {
      const { started, signals } = await waitingHost({ call_timeout_seconds: 1 });
      const result = await started.callTool('modern__ask', { message: 'Your name?' });
      expect(result.details.is_error).toBe(true);
      expect(resultToText(result)).toBe('tool "ask" did not answer within 1s');
      expect(signals.map((signal) => signal.aborted)).toEqual([true]);
    });

    test("by the connection's end: a restart ends the call, and the handler is told", async () => {
      const { started, signals } = await waitingHost({ call_timeout_seconds: 60 });
      const call = started.callTool('modern__ask', { message: 'Your name?' });
      await expect.poll(() => signals.length).toBe(1);
      await started.restartServer('modern');
      const result = await call;
      expect(result.details.is_error).toBe(true);
      expect(signals[0]!.aborted).toBe(true);
    });

    test("by the caller's signal: the call is cancelled, and the handler is told", async () => {
      const { started, signals } = await waitingHost({ call_timeout_seconds: 60 });
      const controller = new AbortController();
      const call = started.callTool('modern__ask', { message: 'Your name?' }, { signal: controller.signal }).then(
        (result) => result,
        (error: unknown) => error,
      );
      await expect.poll(() => signals.length).toBe(1);
      controller.abort();
      await call;
      expect(signals[0]!.aborted).toBe(true);
    });
  });

  test('a server that asks round after round is cut off after the bound, as a tool error', async () => {
    await startHost();
    const result = await callText('modern__ask_forever');
    expect(result.isError).toBe(true);
    expect(result.text).toBe(
      `tool "ask_forever" failed: Multi-round-trip request 'tools/call' still required input after ${INPUT_REQUIRED_MAX_ROUNDS} rounds (inputRequired.maxRounds)`,
    );
    expect(asked).toHaveLength(INPUT_REQUIRED_MAX_ROUNDS);
  });

  test('a task that asks for input while it runs is answered by the same handler, once, with tasks/update', async () => {
    const running = await startHost({}, { t: { type: 'local', command: fixtureCommand('tasks-server') } }, { ok: true });
    const progress: string[] = [];
    const result = await running.callTool('t__approve_job', {}, { onProgress: (update) => progress.push(update.message ?? '') });
    expect(resultToText(result)).toBe('job approved and done');
    expect(progress).toEqual(['waiting for approval', 'approved']);
    expect(asked.map((request) => [request.server, request.message])).toEqual([['t', 'Run the job?']]);
  });
});
