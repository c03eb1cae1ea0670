// How a person runs this CLI again, for the commands it prints to paste: the
// same program, and paths that mean the same from any directory.
import path from 'node:path';
import { PROFILE_ENV } from '../config/paths.js';

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

/**
 * A command of this CLI to paste, reaching the state dir `stateDir` (as
 * resolved): with a profile (`$MCP_FLEET_PROFILE`) the dir is named by its
 * base and the profile set before the command, as the CLI resolves them
 * again; naming the resolved dir with the profile still set would add the
 * profile a second time.
 */
export function commandFor(words: string, stateDir: string, options: { anywhere?: boolean } = {}): string {
  const cli = thisCli(options);
  const profile = process.env[PROFILE_ENV]?.trim();
  const suffix = profile ? path.join('profiles', profile) : '';
  const base = suffix !== '' && stateDir.endsWith(`${path.sep}${suffix}`) ? stateDir.slice(0, -suffix.length - 1) : undefined;
  if (base === undefined) return `${cli} ${words} --state-dir ${shellWord(stateDir)}`;
  return `${PROFILE_ENV}=${shellWord(profile!)} ${cli} ${words} --state-dir ${shellWord(base)}`;
}
