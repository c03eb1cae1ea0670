import { connect, type ServerConnection } from './connection.js';
import type { ServerConfig } from './config/schema.js';
import { FleetError } from './errors.js';

/** A connection plus a promise that settles when it ends without being asked to. */
export interface LiveConnection {
  readonly connection: ServerConnection;
  /** Resolves with the reason when the server goes away by itself; never rejects. */
  readonly lost: Promise<FleetError>;
}

/** Opens a connection whose unexpected end a watcher actor can await. */
export async function openLiveConnection(
  name: string,
  config: ServerConfig,
  signal: AbortSignal,
): Promise<LiveConnection> {
  let markLost: (error: FleetError) => void = () => {};
  const lost = new Promise<FleetError>((resolve) => (markLost = resolve));
  const connection = await connect(name, config, { signal, onClose: (error) => markLost(error) });
  if (signal.aborted) {
    // The actor moved on while the handshake finished: nobody would own this child.
    await connection.close();
    throw new FleetError('transport_closed', 'connection abandoned: the server was stopped while connecting');
  }
  return { connection, lost };
}
