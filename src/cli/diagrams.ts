import { resolve } from 'node:path';
import type { Command } from 'commander';
import type { CliIO } from '../cli.js';
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
          io.stderr(`stale diagrams in ${dir}: ${stale.join(', ')} — run \`npm run diagrams\`\n`);
          io.setExitCode(1);
        } else io.stdout(`diagrams in ${dir} are current\n`);
        return;
      }
      const written = await writeDiagrams(dir);
      io.stdout(`wrote ${written.map((file) => `${options.out}/${file}`).join(', ')}\n`);
    });
}
