import type { Command } from 'commander';
import type { CliIO } from '../cli.js';
import type { ToolSearchResult } from '../host/tool-search.js';
import { action, ApiClient, formatTable, printJson, withClientOptions, type ClientFlags } from './client.js';
import { UsageError } from './errors.js';
import { integer } from './flags.js';

interface SearchFlags extends ClientFlags {
  /** At most this many results (the worker's default when absent). */
  limit?: number;
}

/** Widest description column before it is cut with `…`. */
const DESCRIPTION_WIDTH = 70;

/**
 * Registers `mcp-fleet search QUERY [--limit N]`: the running worker's tools
 * ranked by relevance to QUERY (`GET /api/mcp/tools/search`).
 */
export function registerSearchCommand(program: Command, io: CliIO): void {
  withClientOptions(program.command('search'))
    .description('find tools of the running worker by what they do, best match first')
    .argument('<query...>', 'what you want to do, e.g. "read a file"')
    .option('--limit <n>', 'at most this many results (1-100, default 8)', integer('--limit', 1, 100))
    .action(
      action(io, async (words: string[], flags: SearchFlags) => {
        const query = words.join(' ').trim();
        if (query === '') throw new UsageError('QUERY', 'empty; give a search query, e.g. `mcp-fleet search read a file`');
        const params = new URLSearchParams({ q: query });
        if (flags.limit !== undefined) params.set('limit', String(flags.limit));
        const client = await ApiClient.connect(flags);
        const { tools } = await client.request<{ tools: ToolSearchResult[] }>('GET', `/api/mcp/tools/search?${params}`);
        if (flags.json) printJson(io, { tools });
        else io.stdout(`${formatSearchTable(tools, query)}\n`);
      }),
    );
}

/** SCORE TOOL AVAILABLE DESCRIPTION, best match first. */
export function formatSearchTable(tools: ToolSearchResult[], query: string): string {
  if (tools.length === 0) return `no tool matches "${query}"`;
  return formatTable(
    ['SCORE', 'TOOL', 'AVAILABLE', 'DESCRIPTION'],
    tools.map((tool) => [
      tool.score.toFixed(2),
      tool.name,
      tool.available ? 'yes' : tool.denied ? 'denied' : 'no',
      firstLine(tool.description, DESCRIPTION_WIDTH),
    ]),
  );
}

function firstLine(text: string, max: number): string {
  const line = text.split('\n', 1)[0] ?? '';
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
