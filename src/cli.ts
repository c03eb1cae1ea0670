import { readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError } from 'commander';
import { registerDiagramsCommand } from './cli/diagrams.js';
import { registerAddCommand } from './cli/add.js';
import { registerApprovalsCommands } from './cli/approvals.js';
import { registerAuthCommand } from './cli/auth.js';
import { registerCallCommand } from './cli/call.js';
import { registerConnectCommand } from './cli/connect.js';
import { CliError, USAGE_EXIT_CODE } from './cli/errors.js';
import { registerImportCommand } from './cli/import.js';
import { registerListCommand } from './cli/list.js';
import { registerRefreshCommand } from './cli/refresh.js';
import { registerRegistryCommand } from './cli/registry.js';
import { registerRemoveCommand } from './cli/remove.js';
import { registerSearchCommand } from './cli/search.js';
import { registerServeCommand } from './cli/serve.js';
import { registerUsersCommand } from './cli/users.js';

/** Where a command writes, and how it reports its exit code; swapped in tests. */
export interface CliIO {
  /** Normal output (summaries, results). */
  stdout(text: string): void;
  /** Warnings and errors. */
  stderr(text: string): void;
  /** Records the exit code; the process ends on its own once output is flushed. */
  setExitCode(code: number): void;
  /** Calls `listener` once stdout's reader went away (`mcp-fleet serve | head -2`): the real process's only. */
  onStdoutGone?(listener: () => void): void;
}

/** Whether stdout's reader went away (`mcp-fleet list | head -1`): what is left to print has nowhere to go. */
let stdoutGone = false;
const stdoutGoneListeners: Array<() => void> = [];

/** The real process's streams and exit code. */
export const processIO: CliIO = {
  stdout: (text) => {
    if (!stdoutGone) process.stdout.write(text);
  },
  stderr: (text) => process.stderr.write(text),
  setExitCode: (code) => {
    process.exitCode = code;
  },
  onStdoutGone: (listener) => {
    stdoutGoneListeners.push(listener);
  },
};

/**
 * Marks stdout gone when its reader closes it (EPIPE), instead of dying on the
 * unhandled stream error with a stack trace, and tells who asked.
 */
function watchStdout(): void {
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    if (stdoutGone) return;
    stdoutGone = true;
    for (const listener of stdoutGoneListeners.splice(0)) listener();
  });
}

/**
 * The `mcp-fleet` program. Each command lives in its own module under
 * `src/cli/` and registers itself here with `register<Name>Command(program, io)`.
 * Commander's own exits throw a `CommanderError` instead (every command
 * inherits that); {@link runCli} turns them into exit codes.
 */
export function buildProgram(io: CliIO = processIO): Command {
  const program = new Command('mcp-fleet')
    .description('The MCP client layer of an AI-agent host')
    .version(packageVersion())
    .configureOutput({
      writeOut: io.stdout,
      writeErr: io.stderr,
      // Commander puts its "(Did you mean list?)" on a line of its own: every failure is one line.
      outputError: (text, write) => write(text.replace(/\n\(Did you mean (.+)\?\)\n?$/, ' (did you mean $1?)\n')),
    })
    .exitOverride();
  registerServeCommand(program, io);
  registerListCommand(program, io);
  registerAddCommand(program, io);
  registerRemoveCommand(program, io);
  registerCallCommand(program, io);
  registerSearchCommand(program, io);
  registerApprovalsCommands(program, io);
  registerRefreshCommand(program, io);
  registerUsersCommand(program, io);
  registerAuthCommand(program, io);
  registerImportCommand(program, io);
  registerRegistryCommand(program, io);
  registerDiagramsCommand(program, io);
  registerConnectCommand(program, io);
  return program;
}

/** `--help` and `--version`: not errors. No command at all (`mcp-fleet`, `mcp-fleet users`) shows the help on stderr, a usage error. */
const NOT_USAGE_ERRORS = new Set(['commander.helpDisplayed', 'commander.version']);

/**
 * Runs `mcp-fleet` on `argv` (`process.argv` form). A bad flag value, a
 * missing or unknown flag or argument is one `error: …` line and exit code 2;
 * a command that fails is one line and exit code 1; only a bug shows a stack.
 */
export async function runCli(argv: readonly string[], io: CliIO = processIO): Promise<void> {
  try {
    await buildProgram(io).parseAsync([...argv]);
  } catch (err) {
    if (err instanceof CommanderError) {
      // Commander has printed its one line (or the help) already.
      io.setExitCode(NOT_USAGE_ERRORS.has(err.code) ? err.exitCode : USAGE_EXIT_CODE);
      return;
    }
    // A parser's UsageError is thrown while commander parses, outside any command's action.
    if (!(err instanceof CliError)) throw err;
    io.stderr(`error: ${err.message}\n`);
    io.setExitCode(err.exitCode);
  }
}

function packageVersion(): string {
  const pkg: unknown = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  return typeof pkg === 'object' && pkg !== null && 'version' in pkg && typeof pkg.version === 'string'
    ? pkg.version
    : '0.0.0';
}

// The binary (bin/mcp-fleet.js) imports this file; tests import it too and must not run it.
function isEntry(): boolean {
  const invoked = process.argv[1];
  if (invoked === undefined) return false;
  const candidates = [new URL(import.meta.url), new URL('../bin/mcp-fleet.js', import.meta.url)];
  try {
    const real = realpathSync(invoked);
    return candidates.some((url) => realpathSync(fileURLToPath(url)) === real);
  } catch {
    return false;
  }
}

if (isEntry()) {
  watchStdout();
  await runCli(process.argv);
}
