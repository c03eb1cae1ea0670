// The standalone GET stream of a 2025 Streamable HTTP connection: opened by
// default (what a server sends outside a request comes on it), left shut with
// `standaloneStream: false` (a per_user session, which nobody watches for
// those), against the real whoami fixture, which records every GET stream.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServerConfig, type RemoteServerConfig } from '../../src/config/schema.js';
import { withoutStandaloneStream } from '../../src/connection/remote-transport.js';
import { startHttpFixture, type HttpFixture } from '../fixtures/index.js';
import { untilValue } from '../support/wait.js';
import { connectTracked, firstText } from './helpers.js';

let fixture: HttpFixture;
beforeAll(async () => {
  fixture = await startHttpFixture('whoami', ['--http']);
});
afterAll(async () => {
  await fixture?.stop();
});

function remoteConfig(token: string): RemoteServerConfig {
  const parsed = ServerConfig.parse({ type: 'remote', url: fixture.url, transport: 'streamable_http', protocol: '2025', headers: { 'x-user-token': token } });
  if (parsed.type !== 'remote') throw new Error('expected a remote config');
  return parsed;
}

/** The session ids of the GET streams the fixture saw opened. */
async function streams(): Promise<Array<string | null>> {
  return (await (await fetch(new URL('/streams', fixture.url))).json()) as Array<string | null>;
}

describe('the standalone GET stream', () => {
  it('without it the connection lists and calls as before, and no GET stream is opened; by default one is', async () => {
    const shut = await connectTracked('quiet', remoteConfig('quiet-token'), { standaloneStream: false });
    const quiet = JSON.parse(firstText(await shut.callTool('whoami', {}))) as { token: string; session: string };
    expect(quiet.token).toBe('quiet-token');
    expect(shut.tools.map((tool) => tool.name)).toEqual(['whoami']);

    // The default connection's stream is asked for after its initialize, as the quiet one's would have been: long after.
    const open = await connectTracked('watched', remoteConfig('watched-token'));
    const watched = JSON.parse(firstText(await open.callTool('whoami', {}))) as { session: string };
    const seen = await untilValue(async () => {
      const list = await streams();
      return list.includes(watched.session) ? list : undefined;
    }, 'the default connection to open its GET stream');
    expect(seen).toEqual([watched.session]);
    expect(seen).not.toContain(quiet.session);
  });

  it('only the endpoint\'s own GET without Last-Event-ID is answered 405 in place; a resumption and any other request go out', async () => {
    const endpoint = new URL('http://127.0.0.1:9/mcp');
    const sent: string[] = [];
    const inner = async (url: string | URL, init?: RequestInit): Promise<Response> => {
      sent.push(`${init?.method ?? 'GET'} ${String(url)} ${new Headers(init?.headers).get('last-event-id') ?? '-'}`);
      return new Response('{}', { status: 200 });
    };
    const fetchLike = withoutStandaloneStream(endpoint, inner);
    const standalone = await fetchLike(endpoint, { method: 'GET', headers: { accept: 'text/event-stream' } });
    expect(standalone.status).toBe(405);
    expect((await fetchLike(endpoint, { method: 'GET', headers: { 'last-event-id': 'e-7' } })).status).toBe(200);
    expect((await fetchLike(endpoint, { method: 'POST', body: '{}' })).status).toBe(200);
    expect((await fetchLike(new URL('http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp'), { method: 'GET' })).status).toBe(200);
    expect(sent).toEqual([
      'GET http://127.0.0.1:9/mcp e-7',
      'POST http://127.0.0.1:9/mcp -',
      'GET http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp -',
    ]);
  });
});
