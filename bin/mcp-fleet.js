#!/usr/bin/env node
// Runs the TypeScript CLI directly through tsx, so the command is always the
// source it ships with: no build step between a clean clone and `--help`.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');
