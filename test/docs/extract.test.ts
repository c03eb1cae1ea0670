// The extractor of runnable documentation examples, on the sample page and on
// small pages written here: which blocks count, their lines, their packages,
// and one clear error for a mark that cannot be honoured.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../support/packed-project.js';
import { DocExampleError, documentationExamples, documentationFiles, extractExamples } from './extract.js';

const SAMPLE = 'test/docs/fixtures/sample.md';

describe('extractExamples', () => {
  it('finds every marked block of the sample page, by the line of its opening fence, and nothing else', () => {
    const examples = extractExamples(readFileSync(join(ROOT, SAMPLE), 'utf8'), SAMPLE);
    expect(examples.map((example) => example.name)).toEqual([
      `${SAMPLE}:12 (js)`,
      `${SAMPLE}:37 (ts)`,
      `${SAMPLE}:68 (sh)`,
      `${SAMPLE}:76 (js)`,
      `${SAMPLE}:83 (ts)`,
      `${SAMPLE}:92 (sh)`,
      `${SAMPLE}:100 (js)`,
      `${SAMPLE}:110 (js)`,
      `${SAMPLE}:116 (js)`,
    ]);
    expect(examples.map((example) => example.packages)).toEqual([
      ['@modelcontextprotocol/server-everything'],
      ['@modelcontextprotocol/server-memory'],
      [],
      [],
      [],
      [],
      [],
      [],
      ['no-such-package-for-mcp-fleet'],
    ]);
    // The list item's indentation is off the sh block's lines; the fences are not part of the code.
    expect(examples[2]!.code).toBe(
      'test -f "$MCP_FLEET_STATE_DIR/worker.json"\nmcp-fleet list | grep everything\nmcp-fleet list --tools | grep memory__read_graph\n',
    );
    expect(examples.some((example) => example.code.includes('never run'))).toBe(false);
  });

  it('takes tilde fences, ignores other info words and versions in the install line, keeps CRLF pages working', () => {
    const page = [
      'Intro',
      '~~~ts runnable title="x"',
      '// npm install mcp-fleet zod@4.6.7 @modelcontextprotocol/sdk@^1',
      'export {};',
      '~~~',
      '```json',
      '{ "runnable": true }',
      '```',
    ].join('\r\n');
    expect(extractExamples(page, 'page.md')).toEqual([
      {
        file: 'page.md',
        line: 2,
        lang: 'ts',
        code: '// npm install mcp-fleet zod@4.6.7 @modelcontextprotocol/sdk@^1\nexport {};\n',
        packages: ['zod', '@modelcontextprotocol/sdk'],
        name: 'page.md:2 (ts)',
      },
    ]);
  });

  it('does not close a block on a shorter fence or one of the other character', () => {
    const page = ['````js runnable', 'const s = `', '```', '~~~~', '`;', '````'].join('\n');
    expect(extractExamples(page, 'p.md')[0]?.code).toBe('const s = `\n```\n~~~~\n`;\n');
  });

  it.each([
    ['```python runnable\nprint(1)\n```\n', 'p.md:1: a runnable example is js, ts, sh (```js runnable), not "python runnable"'],
    ['```runnable\nls\n```\n', 'p.md:1: a runnable example is js, ts, sh (```js runnable), not "runnable"'],
    ['text\n```js runnable\nconsole.log(1)\n', 'p.md:2: the runnable js block is never closed by a ``` line'],
    ['```sh runnable\n\n```\n', 'p.md:1: the runnable sh block is empty'],
    ['```js runnable\n// npm install zod\n```\n', 'p.md:1: `// npm install zod` does not install mcp-fleet'],
    ['```ts runnable\n// npm install mcp-fleet -D zod\n```\n', 'p.md:1: `npm install` line: "-D" is not a package name'],
  ])('rejects a bad mark with one error naming file and line: %j', (page, message) => {
    expect(() => extractExamples(page, 'p.md')).toThrow(new DocExampleError(message));
  });
});

describe('the documentation', () => {
  it('is README.md and every page under docs/, and its marks all parse', () => {
    const files = documentationFiles(ROOT);
    expect(files[0]).toBe('README.md');
    expect(files).toContain('docs/http-and-cli.md');
    expect(files.every((file) => file.endsWith('.md'))).toBe(true);
    // Throws a DocExampleError naming file and line for a bad mark.
    expect(documentationExamples(ROOT).every((example) => files.includes(example.file))).toBe(true);
  });
});
