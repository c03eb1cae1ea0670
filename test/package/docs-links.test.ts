import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** README.md and every page of docs/ (the notes other branches leave in docs/_incoming are not pages yet). */
const pages = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** The text outside fenced code blocks: a link inside a code sample is not a link. */
function prose(markdown: string): string {
  return markdown.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as `-`, repeats numbered. */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, text] of prose(markdown).matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = text!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

test('every relative link and image of the README and docs/ names a file that exists, and an anchor that heading gives', () => {
  const broken: string[] = [];
  for (const page of pages) {
    const text = prose(readFileSync(join(root, page), 'utf8'));
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue; // https:, mailto:
      const [path, anchor] = target!.split('#') as [string, string | undefined];
      const file = path === '' ? join(root, page) : resolve(dirname(join(root, page)), path);
      if (!existsSync(file)) {
        broken.push(`${page}: ${target} (no such file)`);
        continue;
      }
      if (anchor === undefined || !file.endsWith('.md') || statSync(file).isDirectory()) continue;
      if (!anchorsOf(readFileSync(file, 'utf8')).has(anchor)) broken.push(`${page}: ${target} (no heading ${relative(root, file)}#${anchor})`);
    }
  }
  expect(broken).toEqual([]);
});

test('the README links every page of docs/, and the docs index does too', () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const index = readFileSync(join(root, 'docs/README.md'), 'utf8');
  for (const page of pages.filter((page) => page.startsWith('docs/') && page !== 'docs/README.md')) {
    expect(readme, `README.md links ${page}`).toContain(`](${page})`);
    expect(index, `docs/README.md links ${page}`).toContain(`](${page.slice('docs/'.length)})`);
  }
});

test('the README, the docs and the source speak of the project in its own words', () => {
  // No citation of an outside contract document, of work items, or of when a measurement was made.
  const forbidden = /\bSPEC\b|§ ?[0-9]|\bthe issue\b|issue's|\bissue [0-9]+|final code|[0-9]{2}:[0-9]{2} UTC/;
  const files = [...pages, ...sourceFiles('src')];
  const found = files.flatMap((file) =>
    readFileSync(join(root, file), 'utf8')
      .split('\n')
      .flatMap((line, index) => (forbidden.test(line) ? [`${file}:${index + 1}: ${line.trim()}`] : [])),
  );
  expect(found).toEqual([]);
});

function sourceFiles(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(`${dir}/${entry.name}`) : [`${dir}/${entry.name}`],
  );
}
