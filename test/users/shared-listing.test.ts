// A per_user session whose listing equals the first session's holds that
// one (no copy per idle session); one that differs keeps its own. Real
// connections: the whoami fixture twice (the same tools) and the HTTP
// fixture (other tools) under the same server name.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Tool } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServerConfig, type RemoteServerConfig } from '../../src/config/schema.js';
import { shareListing } from '../../src/host/sessions.js';
import { fixture, startHttpFixture, type HttpFixture } from '../fixtures/index.js';
import { connectTracked, firstText } from '../connection/helpers.js';

let whoami: HttpFixture;
let other: ChildProcess;
let otherUrl: string;
beforeAll(async () => {
  whoami = await startHttpFixture('whoami', ['--http']);
  other = spawn(process.execPath, [fixture('http-server')], { env: { PATH: process.env.PATH ?? '', FIXTURE_HTTP_MODE: 'streamable' }, stdio: ['ignore', 'pipe', 'inherit'] });
  for await (const line of createInterface({ input: other.stdout! })) {
    const match = /^listening (\S+)$/.exec(line);
    if (match) {
      otherUrl = match[1]!;
      break;
    }
  }
});
afterAll(async () => {
  await whoami?.stop();
  if (other !== undefined && other.exitCode === null) {
    const exited = new Promise((resolve) => other.once('exit', resolve));
    other.kill('SIGTERM');
    await exited;
  }
});

function remoteConfig(url: string, token: string): RemoteServerConfig {
  const parsed = ServerConfig.parse({ type: 'remote', url, transport: 'streamable_http', protocol: '2025', headers: { 'x-user-token': token } });
  if (parsed.type !== 'remote') throw new Error('expected a remote config');
  return parsed;
}

describe('a per_user server\'s listing', () => {
  it('is held once for every session listed the same tools, and a session listed others keeps its own', async () => {
    const listings = new Map<string, Tool[]>();
    const alice = await connectTracked('web', remoteConfig(whoami.url, 'alice-token'));
    const bob = await connectTracked('web', remoteConfig(whoami.url, 'bob-token'));
    const carol = await connectTracked('web', remoteConfig(otherUrl, 'carol-token'));
    const carols = carol.allTools;
    expect(bob.allTools).not.toBe(alice.allTools);
    for (const connection of [alice, bob, carol]) shareListing(listings, 'web', connection);
    expect(bob.allTools).toBe(alice.allTools);
    expect(bob.tools.map((tool) => tool.name)).toEqual(['whoami']);
    expect(carol.allTools).toBe(carols);
    expect(carol.tools.map((tool) => tool.name)).toEqual(['echo', 'whoami']);
    // Calls go on through the shared listing, each with its own credentials.
    expect(JSON.parse(firstText(await bob.callTool('whoami', {}))).token).toBe('bob-token');
    expect(firstText(await carol.callTool('echo', { text: 'still mine' }))).toBe('still mine');
  });
});
