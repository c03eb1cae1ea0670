import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { apiTokenPath, configPath, journalPath, resolveStateDir } from '../../src/config/paths.js';

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('resolveStateDir', () => {
  it('prefers the flag, then MCP_FLEET_STATE_DIR, then ~/.mcp-fleet', () => {
    vi.stubEnv('MCP_FLEET_PROFILE', '');
    vi.stubEnv('MCP_FLEET_STATE_DIR', '/env/dir');
    expect(resolveStateDir('/flag/dir')).toBe('/flag/dir');
    expect(resolveStateDir()).toBe('/env/dir');
    vi.stubEnv('MCP_FLEET_STATE_DIR', '');
    expect(resolveStateDir()).toBe(path.join(os.homedir(), '.mcp-fleet'));
  });

  it('reads the environment on every call: a switch mid-run takes effect at once', () => {
    vi.stubEnv('MCP_FLEET_STATE_DIR', '/first');
    vi.stubEnv('MCP_FLEET_PROFILE', '');
    expect(resolveStateDir()).toBe('/first');
    vi.stubEnv('MCP_FLEET_STATE_DIR', '/second');
    expect(resolveStateDir()).toBe('/second');
    vi.stubEnv('MCP_FLEET_PROFILE', 'work');
    expect(resolveStateDir()).toBe('/second/profiles/work');
    vi.stubEnv('MCP_FLEET_PROFILE', 'home');
    expect(resolveStateDir()).toBe('/second/profiles/home');
    vi.stubEnv('HOME', '/elsewhere');
    vi.stubEnv('MCP_FLEET_STATE_DIR', '');
    expect(resolveStateDir()).toBe('/elsewhere/.mcp-fleet/profiles/home');
  });

  it('puts a profile under the flag dir too', () => {
    vi.stubEnv('MCP_FLEET_PROFILE', 'ci_1');
    expect(resolveStateDir('/flag')).toBe('/flag/profiles/ci_1');
  });

  it('resolves a relative flag against the working directory', () => {
    vi.stubEnv('MCP_FLEET_PROFILE', '');
    expect(resolveStateDir('rel/dir')).toBe(path.resolve('rel/dir'));
  });

  it.each(['..', '../etc', 'a/b', 'has space', 'x'.repeat(65), 'é'])('rejects the profile name %j', (name) => {
    vi.stubEnv('MCP_FLEET_PROFILE', name);
    let caught: unknown;
    try {
      resolveStateDir('/base');
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).field).toBe('MCP_FLEET_PROFILE');
    expect((caught as ConfigError).message).toContain('MCP_FLEET_PROFILE must be 1 to 64 characters');
  });
});

describe('file paths', () => {
  it('places each file in the state dir', () => {
    expect(configPath('/s')).toBe('/s/mcp_servers.json');
    expect(apiTokenPath('/s')).toBe('/s/api_token');
    expect(journalPath('/s')).toBe('/s/events.jsonl');
  });
});
