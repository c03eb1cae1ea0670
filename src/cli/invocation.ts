// How a person runs this CLI again, for the commands it prints to paste: the
// same program, and paths that mean the same from any directory.
import path from 'node:path';

/**
 * The command of this CLI: `node bin/mcp-fleet.js` from a clone, `npx
 * mcp-fleet` from a project that installed the package (its bin link in
 * node_modules/.bin), `mcp-fleet` from a global install.
 */
export function cliCommand(script: string, { anywhere = false } = {}): string {
  if (script.endsWith('.js')) return `node ${anywhere ? shellWord(path.resolve(script)) : display(script)}`;
  return script.split(path.sep).includes('node_modules') ? 'npx mcp-fleet' : 'mcp-fleet';
}

/**
 * The command of the CLI running now; `anywhere`: for a line to paste in
 * another terminal, in any directory (a script run by its path is named by
 * its absolute path).
 */
export function thisCli(options: { anywhere?: boolean } = {}): string {
  return cliCommand(process.argv[1] ?? 'bin/mcp-fleet.js', options);
}

/** A path relative to the working directory when it is below it, for short readable lines. */
export function display(file: string): string {
  const relative = path.relative(process.cwd(), file);
  return relative !== '' && !relative.startsWith('..') && !path.isAbsolute(relative) ? relative : file;
}

/** A word as a POSIX shell reads it back: bare when safe, else single-quoted. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}
