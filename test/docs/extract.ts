// Finds the runnable examples of the documentation: fenced code blocks whose
// info string is `js runnable`, `ts runnable` or `sh runnable`. Fences follow
// CommonMark (``` or ~~~, three or more; a block closes only on a fence of the
// same character at least as long), so a page can show a marked block inside a
// longer fence without it being run. Fences may be indented (inside a list
// item); that indentation is taken off the block's lines.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The languages a runnable example may be written in. */
export const RUNNABLE_LANGUAGES = ['js', 'ts', 'sh'] as const;
export type RunnableLanguage = (typeof RUNNABLE_LANGUAGES)[number];

/** One runnable example of a Markdown file. */
export interface DocExample {
  /** The Markdown file, as the caller named it (a path relative to the repository). */
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: RunnableLanguage;
  /** The block's text, without its fences, ending with a newline. */
  code: string;
  /** Packages the `// npm install mcp-fleet <pkg>…` first line asks for, besides mcp-fleet; without versions. */
  packages: string[];
  /** `file:line (lang)`: the test's name, and how a failure points at the example. */
  name: string;
}

/** A runnable mark that cannot be honoured: says which file and line. */
export class DocExampleError extends Error {
  override readonly name = 'DocExampleError';
}

const FENCE = /^([ \t]*)(`{3,}|~{3,})(.*)$/;
const INSTALL = /^\/\/\s*npm\s+install\b(.*)$/;
// npm's rule for a package name, scoped or not, optionally followed by @version (ignored).
const PACKAGE = /^((?:@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*)(?:@[^@\s/]+)?$/;

/** The runnable examples of one Markdown text, in order. Throws DocExampleError on a bad mark. */
export function extractExamples(markdown: string, file: string): DocExample[] {
  const lines = markdown.split(/\r?\n/);
  const examples: DocExample[] = [];
  for (let index = 0; index < lines.length; index += 1) {
    const open = FENCE.exec(lines[index]!);
    if (!open) continue;
    const [, indent = '', fence = '', info = ''] = open;
    // CommonMark: a backtick fence's info string has no backtick (that line is inline code).
    if (fence.startsWith('`') && info.includes('`')) continue;
    const line = index + 1;
    const words = info.trim().split(/\s+/).filter((word) => word !== '');
    const runnable = words.slice(1).includes('runnable') || words[0] === 'runnable';

    const body: string[] = [];
    let closed = false;
    for (index += 1; index < lines.length; index += 1) {
      const text = lines[index]!;
      const close = /^[ \t]*(`{3,}|~{3,})[ \t]*$/.exec(text);
      if (close && close[1]![0] === fence[0] && close[1]!.length >= fence.length) {
        closed = true;
        break;
      }
      body.push(stripIndent(text, indent.length));
    }
    if (!runnable) continue;

    const where = `${file}:${line}`;
    const lang = words[0];
    if (!isRunnableLanguage(lang)) {
      throw new DocExampleError(`${where}: a runnable example is ${RUNNABLE_LANGUAGES.join(', ')} (\`\`\`js runnable), not ${JSON.stringify(info.trim())}`);
    }
    if (!closed) throw new DocExampleError(`${where}: the runnable ${lang} block is never closed by a ${fence} line`);
    if (body.every((text) => text.trim() === '')) throw new DocExampleError(`${where}: the runnable ${lang} block is empty`);
    examples.push({
      file,
      line,
      lang,
      code: `${body.join('\n')}\n`,
      packages: lang === 'sh' ? [] : installHeader(body[0] ?? '', where),
      name: `${where} (${lang})`,
    });
  }
  return examples;
}

/** README.md and every .md file under docs/ (any depth), relative to `root`, `/`-separated, sorted. */
export function documentationFiles(root: string): string[] {
  const pages = (dir: string, prefix: string): string[] =>
    readdirSync(join(root, dir), { withFileTypes: true })
      .flatMap((entry) =>
        entry.isDirectory() ? pages(join(dir, entry.name), `${prefix}${entry.name}/`) : entry.name.endsWith('.md') ? [`${prefix}${entry.name}`] : [],
      );
  return ['README.md', ...pages('docs', 'docs/').sort()];
}

/** Every runnable example of README.md and docs/, file by file. */
export function documentationExamples(root: string): DocExample[] {
  return documentationFiles(root).flatMap((file) => extractExamples(readFileSync(join(root, file), 'utf8'), file));
}

function isRunnableLanguage(lang: string | undefined): lang is RunnableLanguage {
  return (RUNNABLE_LANGUAGES as readonly string[]).includes(lang ?? '');
}

/** Up to `width` columns of leading whitespace off, as CommonMark does for an indented fence's lines. */
function stripIndent(text: string, width: number): string {
  let cut = 0;
  while (cut < width && (text[cut] === ' ' || text[cut] === '\t')) cut += 1;
  return text.slice(cut);
}

/** The packages of a `// npm install mcp-fleet a b@1` first line, besides mcp-fleet; [] without one. */
function installHeader(first: string, where: string): string[] {
  const header = INSTALL.exec(first.trim());
  if (!header) return [];
  const names = header[1]!.trim().split(/\s+/).filter((word) => word !== '');
  if (!names.includes('mcp-fleet')) throw new DocExampleError(`${where}: \`${first.trim()}\` does not install mcp-fleet`);
  return names
    .map((word) => {
      const name = PACKAGE.exec(word)?.[1];
      if (name === undefined) throw new DocExampleError(`${where}: \`npm install\` line: ${JSON.stringify(word)} is not a package name`);
      return name;
    })
    .filter((name) => name !== 'mcp-fleet');
}
