import { afterEach, describe, expect, test } from 'vitest';
import { createMcpHost, type McpHost } from '../../src/host.js';
import { resultToText } from '../../src/catalog/tools/adapter.js';
import type { ElicitationHandler, ElicitationRequest } from '../../src/connection/capabilities/elicitation.js';
import { fixtureCommand } from '../fixtures/index.js';
import { stateDirWith, untilState } from '../host/helpers.js';

const EVERYTHING = [process.execPath, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'];

let host: McpHost | undefined;
afterEach(async () => {
  await host?.shutdown();
  host = undefined;
});

async function everythingWith(elicitation: ElicitationHandler | undefined): Promise<McpHost> {
  host = createMcpHost({
    stateDir: stateDirWith({ everything: { type: 'local', command: EVERYTHING } }),
    persistJournal: false,
    watchConfig: false,
    ...(elicitation ? { elicitation } : {}),
  });
  await host.start();
  await untilState(host, 'everything', 'ready');
  return host;
}

/** The "Raw result" JSON server-everything puts at the end of its answer: what the client sent back. */
function rawResult(text: string): unknown {
  return JSON.parse(text.slice(text.indexOf('Raw result:') + 'Raw result:'.length));
}

describe('elicitation', () => {
  test('form mode: the callback gets the schema and its defaults; an accepted form is completed with them', async () => {
    const asked: ElicitationRequest[] = [];
    await everythingWith((request) => {
      asked.push(request);
      return { action: 'accept', content: { name: 'Ada Lovelace', check: true, integer: 7 } };
    });
    const result = await host!.callTool('everything__trigger-elicitation-request', {});
    expect(result.details.is_error).toBe(false);
    const text = resultToText(result);
    expect(text).toContain('- Name: Ada Lovelace');
    expect(text).toContain('- Favorite Integer: 7');

    expect(asked).toHaveLength(1);
    const [request] = asked;
    expect(request).toMatchObject({ mode: 'form', server: 'everything', message: 'Please provide inputs for the following fields:' });
    if (request!.mode !== 'form') throw new Error('expected a form');
    expect(Object.keys(request!.requestedSchema.properties)).toContain('email');
    expect(request!.defaults).toMatchObject({
      firstLine: 'It was a dark and stormy night.',
      integer: 42,
      number: 3.14,
      untitledMultipleSelectEnum: ['Guitar'],
    });
    expect(request!.defaults).not.toHaveProperty('name');
    // What went back: the user's values over the schema's defaults.
    expect(rawResult(text)).toMatchObject({
      action: 'accept',
      content: { name: 'Ada Lovelace', check: true, integer: 7, firstLine: 'It was a dark and stormy night.', number: 3.14 },
    });
  });

  test('decline and cancel reach the server as they are', async () => {
    const answers = [{ action: 'decline' } as const, { action: 'cancel' } as const];
    await everythingWith(() => answers.shift()!);
    const declined = resultToText(await host!.callTool('everything__trigger-elicitation-request', {}));
    expect(declined).toContain('User declined to provide the requested information.');
    const cancelled = resultToText(await host!.callTool('everything__trigger-elicitation-request', {}));
    expect(cancelled).toContain('User cancelled the elicitation dialog.');
  });

  test('without a callback every request is declined at once', async () => {
    await everythingWith(undefined);
    const form = await host!.callTool('everything__trigger-elicitation-request', {});
    expect(resultToText(form)).toContain('User declined to provide the requested information.');
    const url = await host!.callTool('everything__trigger-url-elicitation', { url: 'https://example.com/consent' });
    expect(resultToText(url)).toContain('User declined to open the URL');
  });

  test('URL mode: the callback gets the URL; accepting carries no form data', async () => {
    const asked: ElicitationRequest[] = [];
    await everythingWith((request) => {
      asked.push(request);
      return { action: 'accept', content: { ignored: 'yes' } };
    });
    const result = await host!.callTool('everything__trigger-url-elicitation', {
      url: 'https://example.com/consent',
      message: 'Open it',
      elicitationId: 'el-1',
    });
    const text = resultToText(result);
    expect(text).toContain('User completed the URL elicitation flow.');
    expect(rawResult(text)).toEqual({ action: 'accept' });
    expect(asked).toEqual([
      { mode: 'url', server: 'everything', message: 'Open it', url: 'https://example.com/consent', elicitationId: 'el-1' },
    ]);
  });

  test('a callback that throws or answers nonsense gives the server an error saying so', async () => {
    const behaviours: Array<() => unknown> = [
      () => {
        throw new Error('the dialog crashed');
      },
      () => ({ action: 'accept', content: { name: { nested: true } } }),
    ];
    await everythingWith(() => behaviours.shift()!() as never);
    const thrown = await host!.callTool('everything__trigger-elicitation-request', {});
    expect(thrown.details.is_error).toBe(true);
    expect(resultToText(thrown)).toContain('elicitation callback failed: the dialog crashed');
    const invalid = await host!.callTool('everything__trigger-elicitation-request', {});
    expect(invalid.details.is_error).toBe(true);
    expect(resultToText(invalid)).toContain('elicitation callback returned an invalid response: content.name:');
  });

  test("a server's cancellation aborts the callback's signal", async () => {
    let aborted: unknown;
    host = createMcpHost({
      stateDir: stateDirWith({ asks: { type: 'local', command: fixtureCommand('client-requests') } }),
      persistJournal: false,
      watchConfig: false,
      elicitation: (_request, { signal }) =>
        new Promise((resolve) => {
          const onAbort = () => {
            aborted = signal.reason;
            resolve({ action: 'cancel' });
          };
          // On a busy machine the cancellation can be in before the callback runs: the signal is aborted already then.
          if (signal.aborted) onAbort();
          else signal.addEventListener('abort', onAbort, { once: true });
        }),
    });
    await host.start();
    await untilState(host, 'asks', 'ready');
    const result = await host.callTool('asks__elicit', { timeoutMs: 300 });
    expect(resultToText(result)).toContain('Request timed out');
    await expect.poll(() => aborted, { timeout: 10_000 }).toMatch(/Request timed out/);
  });
});
