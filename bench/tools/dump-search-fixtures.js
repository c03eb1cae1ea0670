// Regenerates bench/fixtures/search/*.json, the real tool lists the `search`
// suite mixes into its generated catalog: starts each server over stdio,
// asks tools/list once and stores the answer's tools verbatim (sorted by
// name, so a new server version shows as a readable diff).
//   node bench/tools/dump-search-fixtures.js
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const BENCH = join(dirname(fileURLToPath(import.meta.url)), '..');
const ROOT = join(BENCH, '..');
const OUT = join(BENCH, 'fixtures', 'search');
// The filesystem server needs a directory to allow and the memory server a file it never writes on tools/list.
const scratch = mkdtempSync(join(os.tmpdir(), 'mcp-fleet-search-dump-'));

/** Server name (as the suite mounts it) → how to start it. */
const SERVERS = {
  everything: [join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js'), 'stdio'],
  filesystem: [join(ROOT, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js'), scratch],
  memory: [join(ROOT, 'node_modules/@modelcontextprotocol/server-memory/dist/index.js')],
  'sequential-thinking': [join(BENCH, 'node_modules/@modelcontextprotocol/server-sequential-thinking/dist/index.js')],
  // Headless and isolated: tools/list starts no browser, and nothing may touch a profile on disk.
  playwright: [join(BENCH, 'node_modules/@playwright/mcp/cli.js'), '--headless', '--isolated'],
};

async function listTools(args) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args,
    env: { ...process.env, MEMORY_FILE_PATH: join(scratch, 'memory.jsonl') },
    stderr: 'ignore',
  });
  const client = new Client({ name: 'mcp-fleet-search-dump', version: '1.0.0' });
  await client.connect(transport);
  try {
    const tools = [];
    let cursor;
    do {
      const page = await client.listTools(cursor === undefined ? {} : { cursor });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return tools.sort((a, b) => a.name.localeCompare(b.name));
  } finally {
    await client.close();
  }
}

mkdirSync(OUT, { recursive: true });
try {
  for (const [server, args] of Object.entries(SERVERS)) {
    const tools = await listTools(args);
    writeFileSync(join(OUT, `${server}.json`), `${JSON.stringify(tools, null, 2)}\n`);
    console.log(`${server}: ${tools.length} tools`);
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
