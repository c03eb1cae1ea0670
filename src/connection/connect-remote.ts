/**
 * The remote handshake: open the server over Streamable HTTP or SSE and
 * initialize (remote-transport.ts), then list every tool. A failure closes the
 * client and is reported as the transport saw it (auth, HTTP status, a
 * server never reached), or else as a timeout or protocol error.
 */
import type { Client } from '@modelcontextprotocol/client';
import type { RemoteServerConfig } from '../config/index.js';
import { AbortError } from './call-limiter.js';
import type { ConnectOptions, Handshake, ServerConnection } from './connection.js';
import type { ConnectBound } from './deadlines.js';
import { connectFailure } from './failures.js';
import { openConnection } from './open-connection.js';
import { createRetryAfterLog } from './rate-limits.js';
import { createReachWitness } from './reachability.js';
import { describeRemoteFailure, openRemote } from './remote-transport.js';
import { listAllTools, type HandshakeProgress } from './tool-listing.js';
import { observeHandshake, observeToolListing } from '../telemetry/connects.js';

/** Opens and initializes a remote server and lists its tools, within `bound`. */
export async function connectRemote(
  name: string,
  config: RemoteServerConfig,
  bound: ConnectBound,
  handshake: Handshake,
  options: ConnectOptions,
): Promise<ServerConnection> {
  const progress: HandshakeProgress = { phase: 'initialize' };
  let client: Client | undefined;
  const witness = createReachWitness();
  try {
    const retryAfter = createRetryAfterLog();
    const session = await observeHandshake(name, config, (opened) => opened.client, () =>
      openRemote(config, handshake, bound, options.authProvider, retryAfter, witness, options.standaloneStream ?? true),
    );
    client = session.client;
    const opened = client;
    const listing = await observeToolListing(name, config, opened, () => listAllTools(opened, bound, progress));
    return openConnection(name, config, client, listing, options, null, retryAfter);
  } catch (err) {
    await client?.close();
    if (options.signal?.aborted) throw new AbortError(`connect to server "${name}" was aborted`);
    throw connectFailure(err, config, bound, progress, describeRemoteFailure(err, config.url, witness), options.secrets);
  }
}
