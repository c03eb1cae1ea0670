#!/usr/bin/env node
// The `mcp-fleet` command runs the compiled CLI in dist/: plain JavaScript, no
// TypeScript loader at start. A clone builds dist/ with `npm run build`, which
// `npm ci`, `npm start` and `npm test` run for it.
import { existsSync } from 'node:fs';

const cli = new URL('../dist/cli.js', import.meta.url);
if (existsSync(cli)) {
  await import(cli.href);
} else {
  process.stderr.write('mcp-fleet: dist/cli.js is missing; run `npm run build` in the mcp-fleet checkout\n');
  process.exitCode = 1;
}
