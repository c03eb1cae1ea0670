import { describe, expect, it } from 'vitest';
import type { AgentTool } from '../../src/catalog/tools/agent-tool.js';
import { toAnthropicTools, toOpenAIResponsesTools, toOpenAITools } from '../../src/catalog/tools/provider-formats.js';

const schema = { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] };

/** A tool as the adapter would build it. */
function tool(name: string, extra: Partial<AgentTool> = {}): AgentTool {
  return {
    name,
    description: `${name} of fs`,
    parameters: schema,
    server: 'fs',
    originalName: name.replace('fs__', ''),
    execute: async () => ({ content: [], details: { is_error: false, server: 'fs', tool: name } }),
    ...extra,
  };
}

const read = tool('fs__read', { alwaysLoad: true });
const list = tool('fs__list');
const write = tool('fs__write');
const tools = [read, list, write];

const anthropic = (name: string) => ({ name, description: `${name} of fs`, input_schema: schema });
const responses = (name: string, strict: boolean | null = null) => ({
  type: 'function',
  name,
  description: `${name} of fs`,
  parameters: schema,
  strict,
});

describe('toAnthropicTools with deferred loading', () => {
  it('without options, or with deferLoading false, is the plain format', () => {
    const plain = [anthropic('fs__read'), anthropic('fs__list'), anthropic('fs__write')];
    expect(toAnthropicTools(tools)).toStrictEqual(plain);
    expect(toAnthropicTools(tools, {})).toStrictEqual(plain);
    expect(toAnthropicTools(tools, { deferLoading: false, toolSearch: 'regex' })).toStrictEqual(plain);
  });

  it('defers every tool not alwaysLoad and puts the bm25 search tool first', () => {
    expect(toAnthropicTools(tools, { deferLoading: true })).toStrictEqual([
      { type: 'tool_search_tool_bm25_20251119', name: 'tool_search_tool_bm25' },
      anthropic('fs__read'),
      { ...anthropic('fs__list'), defer_loading: true },
      { ...anthropic('fs__write'), defer_loading: true },
    ]);
  });

  it('uses the regex search tool when asked', () => {
    expect(toAnthropicTools(tools, { deferLoading: true, toolSearch: 'regex' })[0]).toStrictEqual({
      type: 'tool_search_tool_regex_20251119',
      name: 'tool_search_tool_regex',
    });
  });

  it('defers what the predicate says, never an alwaysLoad tool', () => {
    const asked: string[] = [];
    const out = toAnthropicTools(tools, {
      deferLoading: (t) => {
        asked.push(t.name);
        return true;
      },
    });
    expect(asked).toEqual(['fs__list', 'fs__write']);
    expect(out).toStrictEqual([
      { type: 'tool_search_tool_bm25_20251119', name: 'tool_search_tool_bm25' },
      anthropic('fs__read'),
      { ...anthropic('fs__list'), defer_loading: true },
      { ...anthropic('fs__write'), defer_loading: true },
    ]);
    expect(toAnthropicTools(tools, { deferLoading: (t) => t.name === 'fs__write' })).toStrictEqual([
      { type: 'tool_search_tool_bm25_20251119', name: 'tool_search_tool_bm25' },
      anthropic('fs__read'),
      anthropic('fs__list'),
      { ...anthropic('fs__write'), defer_loading: true },
    ]);
  });

  it('defers every tool when none is alwaysLoad: the search tool is the non-deferred one', () => {
    const out = toAnthropicTools([list, write], { deferLoading: true });
    expect(out).toStrictEqual([
      { type: 'tool_search_tool_bm25_20251119', name: 'tool_search_tool_bm25' },
      { ...anthropic('fs__list'), defer_loading: true },
      { ...anthropic('fs__write'), defer_loading: true },
    ]);
    expect(out.filter((entry) => !('defer_loading' in entry))).toHaveLength(1);
  });

  it('adds no search tool when nothing ends up deferred', () => {
    expect(toAnthropicTools([read], { deferLoading: true })).toStrictEqual([anthropic('fs__read')]);
    expect(toAnthropicTools(tools, { deferLoading: () => false })).toStrictEqual(toAnthropicTools(tools));
    expect(toAnthropicTools([], { deferLoading: true })).toStrictEqual([]);
  });

  it('gives each call its own search tool entry', () => {
    const first = toAnthropicTools([list], { deferLoading: true })[0] as { name: string };
    first.name = 'changed';
    expect(toAnthropicTools([list], { deferLoading: true })[0]).toStrictEqual({
      type: 'tool_search_tool_bm25_20251119',
      name: 'tool_search_tool_bm25',
    });
  });
});

describe('toOpenAIResponsesTools', () => {
  it('without deferLoading: flat function tools, strict null unless given, no search tool', () => {
    expect(toOpenAIResponsesTools(tools)).toStrictEqual([
      responses('fs__read'),
      responses('fs__list'),
      responses('fs__write'),
    ]);
    expect(toOpenAIResponsesTools([list], { strict: false, deferLoading: false })).toStrictEqual([
      responses('fs__list', false),
    ]);
  });

  it('defers every tool not alwaysLoad and puts the hosted tool_search first', () => {
    expect(toOpenAIResponsesTools(tools, { strict: false, deferLoading: true })).toStrictEqual([
      { type: 'tool_search' },
      responses('fs__read', false),
      { ...responses('fs__list', false), defer_loading: true },
      { ...responses('fs__write', false), defer_loading: true },
    ]);
  });

  it('defers what the predicate says, never an alwaysLoad tool', () => {
    expect(toOpenAIResponsesTools(tools, { deferLoading: (t) => t.name !== 'fs__list' })).toStrictEqual([
      { type: 'tool_search' },
      responses('fs__read'),
      responses('fs__list'),
      { ...responses('fs__write'), defer_loading: true },
    ]);
  });

  it('adds no search tool when nothing ends up deferred', () => {
    expect(toOpenAIResponsesTools([read], { deferLoading: true })).toStrictEqual([responses('fs__read')]);
  });
});

describe('toOpenAITools (Chat Completions) is unchanged', () => {
  it('has no deferred-loading fields', () => {
    expect(toOpenAITools([read, list])).toStrictEqual([
      { type: 'function', function: { name: 'fs__read', description: 'fs__read of fs', parameters: schema } },
      { type: 'function', function: { name: 'fs__list', description: 'fs__list of fs', parameters: schema } },
    ]);
  });
});
