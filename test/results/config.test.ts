// The config fields of kept results: their defaults, their bounds, and that
// unknown fields stay refused.
import { describe, expect, test } from 'vitest';
import { ServerConfig } from '../../src/config/schema.js';

const local = { type: 'local', command: ['node', 'server.js'] } as const;
const remote = { type: 'remote', url: 'https://example.invalid/mcp' } as const;

describe('large_results, results_ttl_seconds, results_max_bytes', () => {
  test.each([local, remote])('default to spill, 1 hour and 256 MiB (%j)', (base) => {
    expect(ServerConfig.parse(base)).toMatchObject({
      large_results: 'spill',
      results_ttl_seconds: 3600,
      results_max_bytes: 256 * 1024 * 1024,
    });
  });

  test.each([
    [{ large_results: 'drop' }, 'large_results'],
    [{ results_ttl_seconds: 0 }, 'results_ttl_seconds'],
    [{ results_ttl_seconds: 1.5 }, 'results_ttl_seconds'],
    [{ results_max_bytes: 1024 * 1024 - 1 }, 'results_max_bytes'],
    [{ results_spill: true }, 'results_spill'],
  ])('refuse %j naming the field', (extra, field) => {
    const parsed = ServerConfig.safeParse({ ...local, ...extra });
    expect(parsed.success).toBe(false);
    expect(JSON.stringify(parsed.error?.issues)).toContain(field);
  });

  test('take their smallest values', () => {
    expect(ServerConfig.parse({ ...local, large_results: 'truncate', results_ttl_seconds: 1, results_max_bytes: 1024 * 1024 })).toMatchObject({
      large_results: 'truncate',
      results_ttl_seconds: 1,
      results_max_bytes: 1024 * 1024,
    });
  });
});
