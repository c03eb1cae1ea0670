// Which output schemas the gateway lists: one every client can compile, in
// JavaScript and in Python (the Python SDK and FastMCP compile patterns with
// `re`, and fail a call whose tool's schema they cannot).
import { expect, test } from 'vitest';
import type { AgentTool } from '../../src/catalog/index.js';
import { createOutputSchemas } from '../../src/gateway/output-schemas.js';

const tool = (outputSchema: Record<string, unknown>) => ({ outputSchema }) as unknown as AgentTool;
const withPattern = (pattern: string) => tool({ type: 'object', properties: { p: { type: 'string', pattern } } });

test.each([
  ['a plain pattern', '^[a-z]+$', true],
  ['a lookbehind, which both read', '(?<=a)b', true],
  ['a Unicode property escape, which re refuses', '^\\p{L}+$', false],
  ['a JavaScript named group, which re refuses', '^(?<year>\\d{4})$', false],
  ['a code point escape, which re refuses', '^\\u{1F600}$', false],
  ['a pattern no engine compiles', '(', false],
])('%s', (_what, pattern, listed) => {
  expect(createOutputSchemas()(withPattern(pattern)) !== undefined).toBe(listed);
});

test('a patternProperties key counts as a pattern, however deep', () => {
  const nested = tool({ type: 'object', properties: { m: { type: 'object', patternProperties: { '^\\p{Lu}': { type: 'string' } } } } });
  expect(createOutputSchemas()(nested)).toBeUndefined();
});
