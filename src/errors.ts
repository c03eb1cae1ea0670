import { z } from 'zod';

/**
 * Why a server is in `error` (docs/contract.md, Error kinds), or
 * `needs_reauth` when it waits for a human's consent. `unreachable`: no
 * answer at all (refused, no such host, TLS, a 5xx before any MCP message);
 * `protocol`: it answered and broke the protocol.
 */
export const ErrorKind = z.enum(['spawn_failed', 'unreachable', 'timeout', 'protocol', 'auth', 'transport_closed', 'config', 'needs_reauth']);
export type ErrorKind = z.infer<typeof ErrorKind>;

/**
 * A failure with the `error_kind` the status shows. Callers branch on
 * `instanceof` and `kind`, never on message text. The message is one line and
 * must never contain a secret: build it from names, codes and redacted text.
 */
export class FleetError extends Error {
  override readonly name = 'FleetError';
  constructor(
    readonly kind: ErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(oneLine(message), options);
  }
}

/** A config or request that does not validate; `field` is a dotted path. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    message: string,
    readonly field?: string,
  ) {
    super(oneLine(message));
  }
}

export function isFleetError(err: unknown): err is FleetError {
  return err instanceof FleetError;
}

export function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' | ').trim();
}

/** The named server is not configured. */
export class NotFoundError extends Error {
  override readonly name = 'NotFoundError';
  constructor(readonly server: string) {
    super(`no server named "${server}"`);
  }
}

/** A server of that name already exists. */
export class ConflictError extends Error {
  override readonly name = 'ConflictError';
  /** `invalidEntry`: why the file's entry of that name does not validate, when that is the one in the way. */
  constructor(
    readonly server: string,
    invalidEntry?: string,
  ) {
    super(
      invalidEntry === undefined
        ? `a server named "${server}" already exists`
        : oneLine(`a server named "${server}" is already in the file, in an entry that does not validate (${invalidEntry}); fix it in the file, or remove that server first`),
    );
  }
}

/** A server that must be ready for what was asked (a catalog refresh) is not. */
export class NotReadyError extends Error {
  override readonly name = 'NotReadyError';
  constructor(
    readonly server: string,
    readonly state: string,
  ) {
    super(`server "${server}" is not ready (state: ${state})`);
  }
}

/**
 * A server added or changed through management ended in `error`; nothing was
 * persisted (management is all-or-nothing).
 */
export class StartFailedError extends Error {
  override readonly name = 'StartFailedError';
  constructor(
    readonly server: string,
    readonly kind: ErrorKind,
    reason: string,
  ) {
    super(oneLine(`server "${server}" failed to start (${kind}): ${reason}`));
  }
}

/** A change was asked for against a version of the server's config that is no longer the stored one. */
export class PreconditionFailedError extends Error {
  override readonly name = 'PreconditionFailedError';
  constructor(
    readonly server: string,
    readonly expected: number,
    readonly actual: number | null,
  ) {
    super(
      actual === null
        ? `server "${server}" is not stored any more (If-Match: ${expected})`
        : `server "${server}" is at version ${actual}, not ${expected} (If-Match): read it again and re-apply your change`,
    );
  }
}

/** The host cannot take the request: it was never started, or it is shutting down. */
export class HostNotRunningError extends Error {
  override readonly name = 'HostNotRunningError';
  constructor(readonly reason: 'not_started' | 'shutting_down') {
    super(reason === 'not_started' ? 'the host is not started: call start() first' : 'the host is shutting down');
  }
}
