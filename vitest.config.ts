import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Tests that spawn bin/mcp-fleet.js or import 'mcp-fleet' run dist/: built here once when stale.
    globalSetup: ['./test/support/build-dist.ts'],
    // Integration tests spawn real MCP servers; two cores are shared between them.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
