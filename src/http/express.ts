/**
 * Express, loaded when the first management app is made rather than by
 * `import('mcp-fleet')`: an embedder that runs a host without serving the
 * API never needs it, and express with its dependencies is ~8 MiB of a
 * fresh process (`npm run bench -- --only package`). Express is CommonJS,
 * so it loads synchronously and `createManagementApp` stays synchronous.
 */
import { createRequire } from 'node:module';
import type express from 'express';

// The module itself, as Node's own module cache would keep it.
let loaded: typeof express | undefined;

export function loadExpress(): typeof express {
  loaded ??= createRequire(import.meta.url)('express') as typeof express;
  return loaded;
}
