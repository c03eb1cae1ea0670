import { SdkError, SdkErrorCode, type OAuthClientProvider } from '@modelcontextprotocol/client';
import { connect, type ConnectOptions, type ServerConnection } from './connection.js';
import type { ServerConfig } from '../config/index.js';
import { FleetError } from '../errors.js';

/** Keeps a server's OAuth token fresh while it is ready (a `FleetOAuthProvider`). */
export interface AuthKeeper {
  /** Refreshes before expiry; `onLost` when consent is needed again. Returns the stop function. */
  keepFresh(onLost: (error: FleetError) => void): () => void;
}

/** A connection plus a promise that settles when it ends without being asked to. */
export interface LiveConnection {
  readonly connection: ServerConnection;
  /** Resolves with the reason when the server goes away by itself; never rejects. */
  readonly lost: Promise<FleetError>;
  /**
   * Says the loss was taken in (the server's actor left `ready`), or that nobody
   * watches for it any more. The calls the loss broke wait for it, so none
   * returns "process exited" while the server still shows ready. Idempotent.
   */
  readonly lossHandled: () => void;
  /** The OAuth provider of an OAuth server, whose token the watcher keeps fresh. */
  readonly auth?: AuthKeeper;
}

/** What a live connection is opened with, beside its server and signal. */
export interface LiveConnectOptions extends Pick<ConnectOptions, 'setupClient' | 'eras' | 'answerInput' | 'lifecycle'> {
  /** The OAuth provider of an OAuth server, which also keeps its token fresh. */
  authProvider?: OAuthClientProvider & AuthKeeper;
}

/** Opens a connection whose unexpected end a watcher actor can await. */
export async function openLiveConnection(
  name: string,
  config: ServerConfig,
  signal: AbortSignal,
  options: LiveConnectOptions = {},
): Promise<LiveConnection> {
  const { authProvider } = options;
  let markLost: (error: FleetError) => void = () => {};
  const lost = new Promise<FleetError>((resolve) => (markLost = resolve));
  let lossHandled: () => void = () => {};
  const handled = new Promise<void>((resolve) => (lossHandled = resolve));
  const onClose = (error: FleetError): Promise<void> => {
    markLost(error);
    return handled;
  };
  const connection = await connect(name, config, { ...options, signal, onClose });
  if (signal.aborted) {
    // The actor moved on while the handshake finished: nobody would own this child.
    await connection.close();
    throw new FleetError('transport_closed', 'connection abandoned: the server was stopped while connecting');
  }
  return authProvider === undefined ? { connection, lost, lossHandled } : { connection, lost, lossHandled, auth: authProvider };
}

export interface WatchOptions {
  /** Ping every this many ms; 0 never pings. */
  pingIntervalMs: number;
  /** A ping unanswered this long means the server hung. */
  pingTimeoutMs: number;
}

/**
 * Calls `onLost` once when the connection ends by itself, or when a ping goes
 * unanswered (a hung server still has a live process). Returns the stop function.
 */
export function watchLiveConnection(
  live: LiveConnection,
  options: WatchOptions,
  onLost: (error: FleetError) => void,
): () => void {
  let watching = true;
  const lose = (error: FleetError) => {
    if (!watching) return;
    watching = false;
    clearInterval(timer);
    stopAuth();
    try {
      onLost(error);
    } finally {
      // `onLost` moved the actor (and the journal) synchronously: the broken calls may now answer.
      live.lossHandled();
    }
  };
  void live.lost.then(lose);
  // A token that can no longer be refreshed ends the connection as an auth failure.
  const stopAuth = live.auth?.keepFresh(lose) ?? (() => {});
  let pinging = false;
  // The 2026-07-28 era has no ping; a modern stdio server's exit is still seen by `lost`.
  const pings = options.pingIntervalMs > 0 && live.connection.client.getProtocolEra() !== 'modern';
  const timer =
    pings
      ? setInterval(() => {
          if (pinging) return;
          pinging = true;
          live.connection.client
            .ping({ timeout: options.pingTimeoutMs })
            .then(
              () => undefined,
              (error: unknown) => {
                if (!watching) return;
                if (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout) {
                  const seconds = options.pingTimeoutMs / 1000;
                  lose(new FleetError('timeout', `no answer to ping within ${seconds}s: the server hung`));
                } else {
                  // Over HTTP nothing else reports a server no longer reached (refused, reset, DNS) or one
                  // that refuses the credentials now: a remote connection has no process whose exit would.
                  const failure = live.connection.pingFailure(error);
                  if (failure !== null) lose(failure);
                }
              },
            )
            .finally(() => (pinging = false));
        }, options.pingIntervalMs)
      : undefined;
  // A pinging timer must not keep an embedding process alive on its own.
  timer?.unref();
  return () => {
    watching = false;
    clearInterval(timer);
    stopAuth();
    // Not watched any more (the actor left `ready` on its own account): no call waits on a watcher.
    live.lossHandled();
  };
}
