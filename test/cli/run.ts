// Runs the built `mcp-fleet` command as a user would, in an environment with
// nothing that would redirect it (no token, state dir or profile of the
// test's own environment).
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { cleanEnv } from '../security/processes.js';

export const BIN = resolve('bin/mcp-fleet.js');

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `mcp-fleet ARGS`, with `env` added; resolves with its exit code and output. */
export function cli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((done) => {
    execFile(process.execPath, [BIN, ...args], { env: cleanEnv(env), timeout: 30_000 }, (err, stdout, stderr) => {
      done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

export { cleanEnv };
