import { ProtocolError, ProtocolErrorCode, SdkError, SdkErrorCode } from '@modelcontextprotocol/client';
import type { Tool } from '@modelcontextprotocol/client';
import { describe, expect, it, vi } from 'vitest';
import { toAgentTool } from '../../src/catalog/tools/adapter.js';
import type { CallFunction } from '../../src/catalog/tools/adapter.js';
import type { ExecuteOptions } from '../../src/catalog/tools/agent-tool.js';

const schema = {
  type: 'object' as const,
  properties: { path: { type: 'string', description: 'where' } },
  required: ['path'],
  additionalProperties: false,
};
const readFile: Tool = {
  name: 'read.file',
  title: 'Read a file',
  description: 'Reads a file',
  inputSchema: schema,
  annotations: { readOnlyHint: true, openWorldHint: false },
};
const ok: CallFunction = async () => ({ content: [{ type: 'text', text: 'ok' }] });

describe('toAgentTool', () => {
  it('names, describes and passes schema and annotations through verbatim', () => {
    const tool = toAgentTool('my files', readFile, ok);
    expect(tool.name).toBe('my_files__read_file');
    expect(tool.server).toBe('my files');
    expect(tool.originalName).toBe('read.file');
    expect(tool.description).toBe('Reads a file');
    expect(tool.parameters).toBe(schema);
    expect(tool.annotations).toEqual({ readOnlyHint: true, openWorldHint: false });
  });

  it('falls back from description to title to the empty string, and omits absent annotations', () => {
    const { description: _d, annotations: _a, ...noDescription } = readFile;
    expect(toAgentTool('s', noDescription, ok).description).toBe('Read a file');
    const { title: _t, ...bare } = noDescription;
    const tool = toAgentTool('s', bare, ok);
    expect(tool.description).toBe('');
    expect('annotations' in tool).toBe(false);
  });

  it('calls with the original name, the arguments and the caller options, and converts the result', async () => {
    const call = vi.fn<CallFunction>(async () => ({
      content: [{ type: 'text', text: 'contents' }],
      structuredContent: { size: 8 },
    }));
    const options: ExecuteOptions = { signal: new AbortController().signal, onProgress: () => {} };
    const result = await toAgentTool('fs', readFile, call).execute({ path: '/tmp/a' }, options);
    expect(call).toHaveBeenCalledExactlyOnceWith('read.file', { path: '/tmp/a' }, options);
    expect(result).toEqual({
      content: [{ type: 'text', text: 'contents' }],
      details: { is_error: false, structured: { size: 8 }, server: 'fs', tool: 'read.file' },
    });
  });

  it('turns a thrown error into a one-line is_error result', async () => {
    const failing = toAgentTool('fs', readFile, async () => {
      throw new ProtocolError(ProtocolErrorCode.InternalError, 'disk on fire\n  at somewhere');
    });
    const result = await failing.execute({ path: 'x' });
    expect(result).toEqual({
      content: [{ type: 'text', text: 'disk on fire | at somewhere' }],
      details: { is_error: true, server: 'fs', tool: 'read.file' },
    });
  });

  it('survives a call that throws synchronously, throws a non-Error, or resolves to garbage', async () => {
    const sync = toAgentTool('fs', readFile, (() => {
      throw new TypeError('not a function');
    }) as CallFunction);
    expect(await sync.execute({})).toMatchObject({ content: [{ text: 'not a function' }], details: { is_error: true } });

    const stringly = toAgentTool('fs', readFile, () => Promise.reject('plain string'));
    expect(await stringly.execute({})).toMatchObject({ content: [{ text: 'plain string' }], details: { is_error: true } });

    const empty = toAgentTool('fs', readFile, () => Promise.reject(new Error('')));
    expect((await empty.execute({})).details.is_error).toBe(true);

    const garbage = toAgentTool('fs', readFile, async () => 42);
    expect(await garbage.execute({})).toMatchObject({ content: [{ text: '42' }], details: { is_error: false } });
  });

  it('says "cancelled" when the signal was aborted, though the SDK error reads like a timeout', async () => {
    const controller = new AbortController();
    const call: CallFunction = (_name, _args, { signal }) =>
      new Promise((_resolve, reject) => {
        signal?.addEventListener('abort', () => reject(new SdkError(SdkErrorCode.RequestTimeout, 'Request timed out')));
      });
    const pending = toAgentTool('fs', readFile, call).execute({}, { signal: controller.signal });
    controller.abort();
    const result = await pending;
    expect(result.details.is_error).toBe(true);
    expect(result.content).toEqual([{ type: 'text', text: 'the call to fs/read.file was cancelled' }]);
  });

  it('reports a real timeout (same code, signal not aborted) as the timeout it is', async () => {
    const timedOut = toAgentTool('fs', readFile, () =>
      Promise.reject(new SdkError(SdkErrorCode.RequestTimeout, 'Request timed out')),
    );
    const result = await timedOut.execute({}, { signal: new AbortController().signal });
    expect(result.content).toEqual([{ type: 'text', text: 'Request timed out' }]);
  });

  it('does not start a call whose signal is already aborted', async () => {
    const call = vi.fn(ok);
    const result = await toAgentTool('fs', readFile, call).execute({}, { signal: AbortSignal.abort() });
    expect(call).not.toHaveBeenCalled();
    expect(result.content).toEqual([{ type: 'text', text: 'the call to fs/read.file was cancelled' }]);
  });
});
