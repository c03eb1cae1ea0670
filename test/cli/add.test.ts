// How `mcp-fleet add` turns flags into the POST body (the API validates it).
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildConfig } from '../../src/cli/add.js';
import { UsageError } from '../../src/cli/errors.js';

const flags = (extra: Record<string, unknown> = {}) => ({ env: [], header: [], ...extra });

afterEach(() => {
  delete process.env.FLEET_TEST_SECRET;
});

describe('buildConfig', () => {
  it('a local server: the operands are argv, cwd defaults to where the command was typed', () => {
    expect(buildConfig(['node', './server.js', '--flag'], flags())).toEqual({
      type: 'local',
      command: ['node', './server.js', '--flag'],
      cwd: process.cwd(),
    });
    expect(buildConfig(['node'], flags({ cwd: '/srv', timeout: '5', disabled: true }))).toEqual({
      type: 'local',
      command: ['node'],
      cwd: '/srv',
      timeout_seconds: 5,
      enabled: false,
    });
    // A relative --cwd (or one in --config) is where it led from here, not from the worker's directory.
    expect(buildConfig(['node'], flags({ cwd: '.' })).cwd).toBe(process.cwd());
    expect(buildConfig([], flags({ config: '{"command":["node"],"cwd":"sub/dir"}' })).cwd).toBe(join(process.cwd(), 'sub', 'dir'));
  });

  it('--env KEY=VALUE sets a value; --env KEY copies it from this environment', () => {
    process.env.FLEET_TEST_SECRET = 'from-the-shell';
    const config = buildConfig(['node'], flags({ env: ['PLAIN=1', 'WITH=equals=inside', 'FLEET_TEST_SECRET'] }));
    expect(config.env).toEqual({ PLAIN: '1', WITH: 'equals=inside', FLEET_TEST_SECRET: 'from-the-shell' });
  });

  it('--env KEY for an unset variable is an error naming it', () => {
    expect(() => buildConfig(['node'], flags({ env: ['FLEET_TEST_SECRET'] }))).toThrow(
      '--env: $FLEET_TEST_SECRET is not set in this shell',
    );
  });

  it('--header KEY copies it from the variable of that name, or of its shell spelling (X-Api-Key → X_API_KEY)', () => {
    process.env.X_FLEET_TEST_KEY = 'key-from-the-shell';
    try {
      const config = buildConfig([], flags({ url: 'https://mcp.example/mcp', header: ['X-Fleet-Test-Key'] }));
      expect(config.headers).toEqual({ 'X-Fleet-Test-Key': 'key-from-the-shell' });
    } finally {
      delete process.env.X_FLEET_TEST_KEY;
    }
    expect(() => buildConfig([], flags({ url: 'https://mcp.example/mcp', header: ['X-Fleet-Test-Key'] }))).toThrow(
      '--header: $X-Fleet-Test-Key and $X_FLEET_TEST_KEY are not set in this shell',
    );
  });

  it('a remote server: --url, headers and a bearer token taken from the environment', () => {
    process.env.FLEET_TEST_SECRET = 'tok-from-env';
    expect(
      buildConfig([], flags({ url: 'https://mcp.example/mcp', transport: 'sse', header: ['X-Team=blue'], tokenEnv: 'FLEET_TEST_SECRET' })),
    ).toEqual({
      type: 'remote',
      url: 'https://mcp.example/mcp',
      transport: 'sse',
      headers: { 'X-Team': 'blue' },
      auth: { kind: 'bearer', token: 'tok-from-env' },
    });
  });

  it('refuses contradictions and a missing command as usage errors naming the flag', () => {
    const refused = (command: string[], given: Record<string, unknown>) => {
      try {
        buildConfig(command, flags(given));
      } catch (error) {
        expect(error).toBeInstanceOf(UsageError);
        return (error as UsageError).message;
      }
      throw new Error('not refused');
    };
    expect(refused(['node'], { url: 'https://x.example' })).toBe('--url: a remote server runs no command: give either it or a command after --, not both');
    expect(refused(['node'], { config: '{"type":"remote","url":"https://x.example"}' })).toMatch(/^--config: a remote server runs no command/);
    expect(refused([], {})).toBe('COMMAND: give the command to run after --, or --url for a remote server');
    expect(refused([], { url: 'https://x.example', env: ['A=1'] })).toBe('--env: is for a local server; a remote server takes --header');
    expect(refused([], { url: 'https://x.example', cwd: '/tmp' })).toMatch(/^--cwd: is for a local server/);
    // A flag of a remote server on a local one would be dropped without a word, a header's secret with it.
    expect(refused(['node'], { header: ['X-Secret=hdrval-99887766'] })).toBe('--header: is for a remote server (--url); a local server takes --env');
    expect(refused(['node'], { transport: 'sse' })).toBe('--transport: is for a remote server (--url)');
    expect(refused(['node'], { tokenEnv: 'HOME' })).toBe('--token-env: is for a remote server (--url)');
  });

  it('--config is the base; flags override its fields', () => {
    const config = buildConfig(['node', 'b.js'], flags({ config: '{"type":"local","command":["node","a.js"],"max_concurrent_calls":1}' }));
    expect(config).toMatchObject({ command: ['node', 'b.js'], max_concurrent_calls: 1 });
    expect(() => buildConfig([], flags({ config: '[1]' }))).toThrow('--config: not a JSON object: got an array');
  });
});
