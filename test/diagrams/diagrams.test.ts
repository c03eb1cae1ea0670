import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';
import { generateDiagrams, staleDiagrams, toDot, toMermaid } from '../../src/machines/diagrams.js';
import { serverMachine } from '../../src/machines/server.machine.js';
import { cli } from '../support/cli.js';

const committed = fileURLToPath(new URL('../../diagrams/', import.meta.url));

test('the committed diagrams are the ones the machines generate (run `npm run diagrams`)', async () => {
  expect(await staleDiagrams(committed)).toEqual([]);
});

test('generation is byte-identical across runs', async () => {
  const first = await generateDiagrams();
  const second = await generateDiagrams();
  expect(second).toEqual(first);
  expect(Object.keys(first).sort()).toEqual(['README.md', 'host.mmd', 'host.svg', 'registry.mmd', 'registry.svg', 'server.mmd', 'server.svg', 'session.mmd', 'session.svg', 'transaction.mmd', 'transaction.svg']);
});

test('the server diagram shows every SPEC state and its guarded transitions', () => {
  const mermaid = toMermaid(serverMachine);
  for (const state of ['disabled', 'pending', 'authenticating', 'ready', 'needs_reauth', 'error', 'stopped']) {
    expect(mermaid).toContain(`state "${state}" as ${state}`);
  }
  expect(mermaid).toContain('pending_connecting --> ready : connect done');
  expect(mermaid).toContain('pending_connecting --> needs_reauth : connect failed [needsAPerson]');
  expect(mermaid).toContain('any_state --> stopped : server.stop');
});

test('SVG nodes carry state ids so a page can highlight the current state', async () => {
  const svg = await readFile(`${committed}server.svg`, 'utf8');
  expect(svg).toContain('id="state_ready"');
  expect(svg).toContain('id="state_pending"');
  expect(toDot(serverMachine)).toContain('lhead="cluster_pending"');
});

test('the diagrams README embeds the Mermaid source of each machine', async () => {
  const readme = await readFile(`${committed}README.md`, 'utf8');
  expect(readme).toContain('```mermaid\n' + toMermaid(serverMachine));
});

test('`mcp-fleet diagrams --check` on a stale directory: exit 1, one error line that says how to write them', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-stale-diagrams-'));
  try {
    writeFileSync(join(dir, 'server.mmd'), 'not the diagram\n');
    const run = await cli(['diagrams', '--check', '--out', dir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(new RegExp(`^error: stale diagrams in ${dir}: server\\.mmd, .*; write them with \`mcp-fleet diagrams --out "${dir}"\`\\n$`));
    expect((await cli(['diagrams', '--out', dir])).code).toBe(0);
    expect(await cli(['diagrams', '--check', '--out', dir])).toMatchObject({ code: 0, stdout: `diagrams in ${dir} are current\n` });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
