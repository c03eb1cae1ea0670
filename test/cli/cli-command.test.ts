// The command the startup summary tells a person to run next, by how this CLI was started.
import path from 'node:path';
import { expect, test } from 'vitest';
import { cliCommand, commandFor } from '../../src/cli/invocation.js';

test.each([
  ['a clone, from its root', path.join(process.cwd(), 'bin', 'mcp-fleet.js'), 'node bin/mcp-fleet.js'],
  ['a clone, from elsewhere', '/srv/clones/mcp-fleet/bin/mcp-fleet.js', 'node /srv/clones/mcp-fleet/bin/mcp-fleet.js'],
  ["a project's install (its bin link)", '/home/ada/agent/node_modules/.bin/mcp-fleet', 'npx mcp-fleet'],
  ['a global install', '/usr/local/bin/mcp-fleet', 'mcp-fleet'],
])('%s', (_how, script, command) => {
  expect(cliCommand(script)).toBe(command);
});

test('a line to paste in any directory names a script by its absolute path, even from the clone’s root', () => {
  const script = path.join(process.cwd(), 'bin', 'mcp-fleet.js');
  expect(cliCommand(script, { anywhere: true })).toBe(`node ${script}`);
  expect(cliCommand(path.join(process.cwd(), 'sub dir', 'mcp-fleet.js'), { anywhere: true })).toBe(`node '${path.join(process.cwd(), 'sub dir', 'mcp-fleet.js')}'`);
  expect(cliCommand('/home/ada/agent/node_modules/.bin/mcp-fleet', { anywhere: true })).toBe('npx mcp-fleet');
});

test('a command for a profile’s state dir names the base and the profile, so the CLI resolves the same dir again', () => {
  const was = process.env.MCP_FLEET_PROFILE;
  try {
    delete process.env.MCP_FLEET_PROFILE;
    expect(commandFor('serve', '/srv/fleet')).toMatch(/ serve --state-dir \/srv\/fleet$/);
    process.env.MCP_FLEET_PROFILE = 'p1';
    expect(commandFor('serve', '/srv/fleet/profiles/p1')).toMatch(/^MCP_FLEET_PROFILE=p1 .+ serve --state-dir \/srv\/fleet$/);
    expect(commandFor('list --tools', '/srv/fleet/profiles/p1')).toMatch(/ list --tools --state-dir \/srv\/fleet$/);
  } finally {
    if (was === undefined) delete process.env.MCP_FLEET_PROFILE;
    else process.env.MCP_FLEET_PROFILE = was;
  }
});
