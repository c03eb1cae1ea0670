import { resolve } from 'node:path';
import type { Command } from 'commander';
import type { CliIO } from '../cli.js';
import { makeDirs } from '../files/make-dirs.js';
import { CliError, UsageError } from './errors.js';
import { directory } from './flags.js';

/** Registers `mcp-fleet diagrams [--out DIR] [--check]`. */
export function registerDiagramsCommand(program: Command, io: CliIO): void {
  program
    .command('diagrams')
    .description('write the state diagrams (Mermaid + SVG) generated from the machines')
    .option('--out <dir>', 'output directory', directory('--out'), 'diagrams')
    .option('--check', 'write nothing; exit 1 when the files in --out are not current')
    .action(async (options: { out: string; check?: boolean }) => {
      // Loaded when the command runs (the machines and the Graphviz renderer): `mcp-fleet --help` does not pay for them.
      const { staleDiagrams, writeDiagrams } = await import('../machines/diagrams.js');
      const dir = resolve(options.out);
      if (options.check) {
        const stale = await staleDiagrams(dir);
        if (stale.length > 0) {
          io.stderr(`error: stale diagrams in ${dir}: ${stale.join(', ')}; write them with \`mcp-fleet diagrams --out ${JSON.stringify(options.out)}\`\n`);
          io.setExitCode(1);
        } else io.stdout(`diagrams in ${dir} are current\n`);
        return;
      }
      // A directory the parser let through that the OS still refuses to make (`/sys/…`): the flag's value, one line.
      await makeDirs(dir).catch((error: NodeJS.ErrnoException) => {
        throw new UsageError('--out', `cannot create ${JSON.stringify(dir)} (${error.code ?? error.message})`);
      });
      const written = await writeDiagrams(dir).catch((error: NodeJS.ErrnoException) => {
        throw new CliError(`cannot write the diagrams to ${JSON.stringify(dir)} (${error.code ?? error.message})`);
      });
      io.stdout(`wrote ${written.map((file) => `${options.out}/${file}`).join(', ')}\n`);
    });
}
