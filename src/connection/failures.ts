/**
 * What went wrong, as its error kind and one line of text with every
 * configured secret redacted: for a connect that stopped (timeout, broken
 * stdout, an answer that breaks the schema) and for a call that failed
 * (cancelled, server gone, timeout, transport or protocol error).
 */
import { $ZodError } from 'zod/v4/core';
import { SdkErrorCode, SdkError } from '@modelcontextprotocol/client';
import { redact, secretValues } from '../config/masking.js';
import type { ServerConfig } from '../config/index.js';
import { FleetError, type ErrorKind } from '../errors.js';
import { AbortError } from './call-limiter.js';
import { describeExit, type ChildTransport, type ExitInfo } from './child-transport.js';
import { settle, sleep, type ConnectBound } from './deadlines.js';
import { describeRemoteFailure, httpStatus } from './remote-transport.js';
import { networkFailure } from './reachability.js';
import type { HandshakeProgress } from './tool-listing.js';
import { describeZodError } from '../config/zod-errors.js';

// How long to wait for the rest of a dead child's stderr before writing the error.
export const STDERR_FLUSH_MS = 500;

/** The error for a connect that neither failed to spawn nor lost its child. */
export function connectFailure(
  err: unknown,
  config: ServerConfig,
  bound: ConnectBound,
  progress: HandshakeProgress,
  transportFailure: [ErrorKind, string] | null,
  more: readonly string[] = [],
): FleetError {
  const secrets = [...secretValues(config), ...more];
  if (bound.timedOut()) {
    const seconds = `${config.timeout_seconds}s`;
    return new FleetError(
      'timeout',
      progress.phase === 'initialize'
        ? `no answer to initialize within ${seconds}`
        : `tools/list did not complete within ${seconds}`,
    );
  }
  if (transportFailure !== null) return new FleetError(transportFailure[0], redact(transportFailure[1], secrets));
  // The SDK words a probe answer that is not JSON-RPC as the validator's whole dump.
  if (err instanceof SdkError && err.code === SdkErrorCode.EraNegotiationFailed && err.cause instanceof $ZodError) {
    return new FleetError('protocol', `${progress.phase} failed: the server answered the version probe with something that is not a JSON-RPC message`);
  }
  const invalid = invalidAnswer(err);
  const why = invalid === null ? messageOf(err) : describeInvalidAnswer(invalid);
  return new FleetError('protocol', `${progress.phase} failed: ${redact(why, secrets)}`);
}

/**
 * Why a handshake over stdout failed, when stdout itself was the problem: a
 * message over the size limit, or no answer but lines that are not JSON-RPC
 * (a server logging to stdout, or not an MCP server at all). Null otherwise.
 */
export function brokenStdout(
  child: ChildTransport,
  phase: HandshakeProgress['phase'],
  timedOutAfter: number | null,
): string | null {
  if (child.overflow !== undefined) return `${phase} failed: ${child.overflow.message}`;
  if (timedOutAfter === null || child.junk.lines === 0) return null;
  return (
    `no valid answer to ${phase} within ${timedOutAfter}s: the server wrote ${child.junk.lines} ` +
    `line(s) on stdout that are not JSON-RPC (last: ${child.junk.last}); stdout must carry only MCP messages`
  );
}

/** "the server's answer does not follow the MCP schema: tools.1.inputSchema: …", as every zod error is described. */
function describeInvalidAnswer(err: Pick<$ZodError, 'issues'>): string {
  return `the server's answer does not follow the MCP schema: ${describeZodError(err as $ZodError).message}`;
}

/**
 * The schema issues of an answer that breaks the MCP schema: a ZodError, or
 * the SDK's `InvalidResult` error, which carries them only as JSON in its
 * message (`Invalid result for tools/list: [ … ]`). Null for anything else.
 */
function invalidAnswer(err: unknown): Pick<$ZodError, 'issues'> | null {
  if (err instanceof $ZodError) return err;
  if (!(err instanceof SdkError) || err.code !== SdkErrorCode.InvalidResult) return null;
  const json = /^Invalid result for [^:]+: (\[[\s\S]*\])$/.exec(err.message)?.[1];
  if (json === undefined) return null;
  try {
    const issues = JSON.parse(json) as $ZodError['issues'];
    return Array.isArray(issues) ? { issues } : null;
  } catch {
    return null;
  }
}

/** Why a connected child went away by itself: an oversized message, its exit, and the end of its stderr. */
export async function describeChildExit(
  child: ChildTransport,
  info: ExitInfo,
  stderrTail: () => string,
): Promise<string> {
  await settle(child.stderrEnded, STDERR_FLUSH_MS);
  // A message over the limit makes the SDK close the transport, which stops the child.
  const why = child.overflow ? `${child.overflow.message}; the connection was closed and the ` : '';
  return `${why}process ${describeExit(info)}${withTail(stderrTail())}`;
}

/** The state of a connection a failed call is judged by. */
export interface CallFailureContext {
  name: string;
  config: ServerConfig;
  secrets: readonly string[];
  /** The stdio child; undefined for remote servers. */
  child: ChildTransport | undefined;
  /** Why the connection went away by itself; settles only if it did. */
  lost: Promise<string>;
  /** Settles after `lost`, once `onClose` was told of the loss and has taken it in (at once when close() was called first). */
  reported: Promise<void>;
  /** close() was called. */
  closing(): boolean;
  /** Why close() was called, when the server was let go for a reason (its token lost). */
  closeReason(): FleetError | undefined;
  /** Every other server's secrets, redacted from a call's failure too. */
  fleetSecrets?: (() => readonly string[]) | undefined;
  /** The connection ended without close(). */
  closedAlone(): boolean;
  /**
   * A remote server no longer reached: ends the connection as if the server
   * had closed it (the watcher then takes the server out of `ready`).
   */
  lostReach?(why: string, kind?: ErrorKind): void;
  /** Aborts once the connection ended (closed, or gone by itself): what a 2026-07-28 call's input round stops at. */
  ended(): AbortSignal;
}

/** A FleetError with `secrets` redacted from its message (the same error when none was in it); any other error as it is. */
export function withoutSecrets(error: unknown, secrets: readonly string[]): unknown {
  if (!(error instanceof FleetError)) return error;
  const text = redact(error.message, secrets);
  return text === error.message ? error : new FleetError(error.kind, text);
}

/** The error a failed call rejects with: an AbortError when cancelled, else a FleetError. */
export async function callFailure(
  err: unknown,
  tool: string,
  signal: AbortSignal | undefined,
  at: CallFailureContext,
): Promise<Error> {
  const [kind, message] = await classifyCallFailure(err, tool, signal, at);
  // The tool name or server text may echo a secret; no cause is kept, as it could carry one.
  const text = redact(message, at.fleetSecrets === undefined ? at.secrets : [...at.secrets, ...at.fleetSecrets()]);
  return kind === 'cancelled' ? new AbortError(text) : new FleetError(kind, text);
}

async function classifyCallFailure(
  err: unknown,
  tool: string,
  signal: AbortSignal | undefined,
  at: CallFailureContext,
): Promise<[ErrorKind | 'cancelled', string]> {
  const { name, config, child, lost } = at;
  if (signal?.aborted) return ['cancelled', `call to tool "${tool}" on server "${name}" was cancelled`];
  // Closed for a reason (a hung server, a lost token): that is why, not the exit the close itself caused.
  const reason = at.closing() ? at.closeReason() : undefined;
  // The call lost its connection (a read-only one may run again after the reconnect), unless what was lost is the token.
  if (reason !== undefined) {
    const kind = reason.kind === 'needs_reauth' || reason.kind === 'auth' ? 'auth' : 'transport_closed';
    return [kind, `call to tool "${tool}" failed: ${reason.message}`];
  }
  // A loss the server caused explains the failure better than the close that followed it. It is
  // answered once its watcher took it in: no caller hears "process exited" of a server shown ready.
  if (child?.exitInfo !== undefined || at.closedAlone()) {
    const why = await lost;
    await at.reported;
    return ['transport_closed', `call to tool "${tool}" failed: ${why}`];
  }
  if (at.closing()) return ['transport_closed', `connection to server "${name}" was closed`];
  if (err instanceof SdkError && err.code === SdkErrorCode.ConnectionClosed) {
    // stdout can close a moment before the exit is reported: wait briefly for the exit code.
    const exited = lost.then(async (why) => {
      await at.reported;
      return why;
    });
    const why = child ? await Promise.race([exited, sleep(2 * STDERR_FLUSH_MS).then(() => 'connection closed')]) : 'connection closed';
    return ['transport_closed', `call to tool "${tool}" failed: ${why}`];
  }
  if (err instanceof SdkError && err.code === SdkErrorCode.RequestTimeout) {
    return ['timeout', `tool "${tool}" did not answer within ${config.call_timeout_seconds}s`];
  }
  // Already said in the call's own terms (a task that went silent or asked for input).
  if (err instanceof FleetError) return [err.kind, err.message];
  const remote = config.type === 'remote' ? describeRemoteFailure(err, config.url) : null;
  if (remote !== null && remote[0] === 'transport_closed' && networkFailure(err) !== undefined && at.lostReach !== undefined) {
    // The request never reached a server that had answered: it went away. Said once the server left ready,
    // as a stdio server's exit is, so no caller hears "could not reach" of a server still shown ready.
    at.lostReach(remote[1]);
    await at.reported;
    return ['transport_closed', `call to tool "${tool}" failed: ${remote[1]}`];
  }
  if (remote !== null && remote[0] === 'auth' && httpStatus(err) === 401 && at.lostReach !== undefined) {
    // The server refused the credentials it took at connect: no call can succeed until they are replaced.
    // It leaves ready (for needs_reauth when a person gives them) before the call answers.
    at.lostReach(remote[1], 'auth');
    await at.reported;
    return ['auth', `call to tool "${tool}" failed: ${remote[1]}`];
  }
  if (remote !== null) return [remote[0], `call to tool "${tool}" failed: ${remote[1]}`];
  const invalid = invalidAnswer(err);
  return ['protocol', `tool "${tool}" failed: ${invalid === null ? messageOf(err) : describeInvalidAnswer(invalid)}`];
}

/** ": <stderr tail>", or says there was none. */
export function withTail(tail: string): string {
  return tail === '' ? ' (no stderr output)' : `: ${tail}`;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
