import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import type { CliIO } from '../cli.js';
import { importServers } from '../services/config/import.js';
import type { ServerConfigInput } from '../services/config/schema.js';
import { createConfigStore } from '../services/config/store.js';
import { quoteName } from '../services/config/validate.js';
import { ConfigError, oneLine } from '../services/support/errors.js';
import { resolveStateDir } from '../services/config/paths.js';

/** Options of `mcp-fleet import`. */
export interface ImportCommandOptions {
  /** The state dir flag; see `resolveStateDir`. */
  stateDir?: string;
}

/** Registers `mcp-fleet import FILE [--state-dir D]` on the program. */
export function registerImportCommand(program: Command, io: CliIO): void {
  program
    .command('import')
    .description('add the servers of a Claude Desktop, Cursor or VS Code MCP config file')
    .argument('<file>', 'a JSON file with an "mcpServers" (or VS Code "servers") object')
    .option('--state-dir <dir>', 'state directory (default: $MCP_FLEET_STATE_DIR or ~/.mcp-fleet)')
    .action(async (file: string, options: ImportCommandOptions) => {
      io.setExitCode(await runImport(file, options, io));
    });
}

/**
 * Imports `file` into the config: names already configured are reported and
 * left alone. Prints names and reasons, never a value. Returns the exit code:
 * 0 when the file was read (even if some entries were skipped), 1 otherwise.
 */
export async function runImport(file: string, options: ImportCommandOptions, io: CliIO): Promise<number> {
  try {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      throw new ConfigError(`cannot read ${file} (${errorCode(err)})`);
    }
    let result: ReturnType<typeof importServers>;
    try {
      result = importServers(text);
    } catch (err) {
      if (err instanceof ConfigError) throw new ConfigError(`${file}: ${err.message}`);
      throw err;
    }
    const stateDir = resolveStateDir(options.stateDir);
    const store = createConfigStore({
      stateDir: () => stateDir,
      logger: { warn: (message) => io.stderr(`warning: ${message}\n`) },
    });
    const imported: string[] = [];
    const skipped = [...result.skipped];
    await store.update((current, { invalidNames }) => {
      const taken = new Set([...Object.keys(current), ...invalidNames]);
      const next: Record<string, ServerConfigInput> = { ...current };
      for (const [name, config] of result.servers) {
        if (taken.has(name)) {
          skipped.push({ name, reason: 'already configured (not overwritten)' });
        } else {
          next[name] = config;
          imported.push(name);
        }
      }
      return next;
    });
    const count = `${imported.length} server${imported.length === 1 ? '' : 's'}`;
    io.stdout(
      imported.length > 0
        ? `imported ${count} into ${store.file()}: ${imported.join(', ')}\n`
        : `nothing imported into ${store.file()}\n`,
    );
    if (skipped.length > 0) {
      io.stdout(`skipped ${skipped.length}:\n${skipped.map((s) => `  ${quoteName(s.name)}: ${s.reason}\n`).join('')}`);
    }
    for (const warning of result.warnings) io.stderr(`warning: ${warning}\n`);
    return 0;
  } catch (err) {
    // ConfigError messages are built to be shown; system errors (EACCES on the
    // state dir, say) carry paths and codes, never file contents.
    io.stderr(`mcp-fleet import: ${err instanceof Error ? oneLine(err.message) : String(err)}\n`);
    return 1;
  }
}

function errorCode(err: unknown): string {
  return typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string'
    ? err.code
    : 'unknown error';
}
