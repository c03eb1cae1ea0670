import { describe, expect, it } from 'vitest';
import type { AgentTool } from '../../src/catalog/tools/agent-tool.js';
import { toAnthropicTools, toOpenAITools } from '../../src/catalog/tools/provider-formats.js';

/** A tool as the adapter would build it. */
function tool(server: string, name: string, original = name): AgentTool {
  return {
    name,
    description: `${original} of ${server}`,
    parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
    server,
    originalName: original,
    execute: async () => ({ content: [], details: { is_error: false, server, tool: original } }),
  };
}

describe('provider formats', () => {
  const tools = [tool('fs', 'fs__read'), { ...tool('fs', 'fs__list'), parameters: { type: 'object', $defs: { x: {} } } }];

  it('toOpenAITools passes schemas verbatim and forwards `strict` only when given', () => {
    const out = toOpenAITools(tools);
    expect(out).toEqual([
      { type: 'function', function: { name: 'fs__read', description: 'fs__read of fs', parameters: tools[0]?.parameters } },
      { type: 'function', function: { name: 'fs__list', description: 'fs__list of fs', parameters: tools[1]?.parameters } },
    ]);
    expect(out[1]?.function.parameters).toStrictEqual({ type: 'object', $defs: { x: {} } });
    expect(out.every((t) => !('strict' in t.function))).toBe(true);
    expect(toOpenAITools(tools, { strict: true }).map((t) => t.function.strict)).toEqual([true, true]);
    expect(toOpenAITools(tools, { strict: false }).map((t) => t.function.strict)).toEqual([false, false]);
  });

  it('toAnthropicTools passes schemas verbatim as input_schema', () => {
    expect(toAnthropicTools(tools)).toStrictEqual([
      { name: 'fs__read', description: 'fs__read of fs', input_schema: tools[0]?.parameters },
      { name: 'fs__list', description: 'fs__list of fs', input_schema: { type: 'object', $defs: { x: {} } } },
    ]);
  });
});
