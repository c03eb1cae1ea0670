import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import type { CliIO } from '../cli.js';
import { importServers } from '../config/import.js';
import type { ServerConfigInput } from '../config/index.js';
import { createConfigStore, type ConfigStore } from '../config/store.js';
import { DATABASE_URL_ENV, DatabaseUnavailableError, isConnectionError } from '../fleet/database-errors.js';
import { loadSecretKey } from '../config/secrets/secret-key.js';
import { quoteName } from '../config/validate.js';
import { ConfigError, oneLine } from '../errors.js';
import { UsageError } from './errors.js';
import { checkDatabaseUrl, checked, directory, makeStateDir, stateDirOf, stateDirSource } from './flags.js';

/** Options of `mcp-fleet import`. */
export interface ImportCommandOptions {
  /** The state dir flag; see `resolveStateDir`. */
  stateDir?: string;
  /** Import into the config of the workers sharing this PostgreSQL (default `$MCP_FLEET_DATABASE_URL`) instead of the state dir. */
  databaseUrl?: string;
}

/** Registers `mcp-fleet import FILE [--state-dir D]` on the program. */
export function registerImportCommand(program: Command, io: CliIO): void {
  program
    .command('import')
    .description('add the servers of a Claude Desktop, Cursor or VS Code MCP config file')
    .argument('<file>', 'a JSON file with an "mcpServers" (or VS Code "servers") object')
    .option('--state-dir <dir>', 'state directory (default: $MCP_FLEET_STATE_DIR or ~/.mcp-fleet)', directory('--state-dir'))
    .option(
      '--database-url <url>',
      'import into the PostgreSQL the workers share (default: $MCP_FLEET_DATABASE_URL); secrets are sealed with the secret key',
      checked((value: string) => checkDatabaseUrl('--database-url', value)),
    )
    .action(async (file: string, options: ImportCommandOptions) => {
      io.setExitCode(await runImport(file, options, io));
    });
}

/**
 * Imports `file` into the config: names already configured are reported and
 * left alone. Prints names and reasons, never a value. Returns the exit code:
 * 0 when the file was read (even if some entries were skipped), 2 for a bad
 * `--database-url`, 1 otherwise.
 */
export async function runImport(file: string, options: ImportCommandOptions, io: CliIO): Promise<number> {
  try {
    // Checked first, as every command checks its flags and their variables: a usage error before anything is read.
    const stateDir = stateDirOf(options.stateDir);
    await makeStateDir(stateDir, stateDirSource(options.stateDir));
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
    // The stores' warnings are held until the import went through: a failure is one line, and the
    // refusal of a config file that does not parse names the file and its problem itself.
    const held: string[] = [];
    const logger = { warn: (message: string) => void held.push(message) };
    const databaseUrl = options.databaseUrl ?? process.env[DATABASE_URL_ENV];
    const source = options.databaseUrl === undefined ? `$${DATABASE_URL_ENV}` : '--database-url';
    const database = databaseUrl ? await openConfigDatabase(databaseUrl, source, stateDir, logger) : undefined;
    const store = database?.store ?? createConfigStore({ stateDir: () => stateDir, logger });
    try {
      await importInto(store, result, io, held);
    } finally {
      await database?.close();
    }
    return 0;
  } catch (err) {
    // ConfigError messages are built to be shown; system errors (EACCES on the
    // state dir, say) carry paths and codes, never file contents.
    if (err instanceof UsageError) {
      io.stderr(`error: ${oneLine(err.message)}\n`);
      return err.exitCode;
    }
    io.stderr(`mcp-fleet import: ${err instanceof Error ? oneLine(err.message) : String(err)}\n`);
    return 1;
  }
}


/** The shared database's config store, its schema in place; the secret key comes from the environment or the state dir. */
async function openConfigDatabase(url: string, source: string, stateDir: string, logger: { warn(message: string): void }) {
  checkDatabaseUrl(source, url);
  const key = loadSecretKey({ configDir: stateDir });
  // pg is loaded only for an import into the database.
  const [{ openDatabase }, { migrate }, { createPgConfigStore }, { checkSealingKey }] = await Promise.all([
    import('../fleet/database.js'),
    import('../fleet/migrations.js'),
    import('../config/pg-config-store.js'),
    import('../fleet/sealing-key.js'),
  ]);
  const db = openDatabase(url, { applicationName: 'mcp-fleet import' });
  try {
    await migrate(db.pool);
    await checkSealingKey(db.pool, key);
  } catch (err) {
    await db.close();
    throw isConnectionError(err) ? new DatabaseUnavailableError(url, { cause: err }) : err;
  }
  return { store: createPgConfigStore({ db, key, workerId: `import-${process.pid}`, logger }), close: () => db.close() };
}

/** Adds the servers of `result` that are not configured yet, and prints what was done, after the store's `warnings` once it has. */
async function importInto(store: ConfigStore, result: ReturnType<typeof importServers>, io: CliIO, warnings: readonly string[]): Promise<void> {
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
  for (const warning of warnings) io.stderr(`warning: ${warning}\n`);
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
}

function errorCode(err: unknown): string {
  return typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string'
    ? err.code
    : 'unknown error';
}
