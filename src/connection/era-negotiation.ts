/**
 * Which MCP era a connect speaks (SDK `versionNegotiation`), and what a
 * remembered verdict lets it skip (`prior`). `auto` probes with
 * `server/discover` once and then reuses the verdict: a modern verdict
 * carries the server's advertisement (zero round trips), a legacy one goes
 * straight to `initialize` until it is {@link LEGACY_VERDICT_MAX_AGE_MS} old
 * (a server may be upgraded; a stale legacy verdict would never notice).
 */
import { createHash } from 'node:crypto';
import { SdkError, SdkErrorCode, type Client, type PriorDiscovery, type VersionNegotiationOptions } from '@modelcontextprotocol/client';
import type { ServerConfig } from '../config/index.js';
import { FleetError } from '../errors.js';
import type { EraVerdict, EraVerdicts } from './era-verdicts.js';

/** The modern revision a `2026` server is pinned to. */
export const MODERN_REVISION = '2026-07-28';
/** How long a legacy verdict is trusted before the server is probed again. */
export const LEGACY_VERDICT_MAX_AGE_MS = 7 * 24 * 3600 * 1000;
/**
 * The probe's bound on stdio under `auto`, where silence means a legacy
 * server that ignores unknown requests (the SDK then falls back to
 * `initialize`); over HTTP silence is an outage and the connect's own
 * deadline applies.
 */
export const STDIO_PROBE_MS = 3000;

/** The SDK's negotiation options for a server's `protocol` setting. */
export function versionNegotiation(config: ServerConfig): VersionNegotiationOptions {
  const probe = config.type === 'local' ? { timeoutMs: Math.min(STDIO_PROBE_MS, config.timeout_seconds * 1000) } : {};
  switch (config.protocol) {
    case '2025':
      return { mode: 'legacy' };
    case '2026':
      // A pin has no fallback to hurry to: silence is only a slow start (a Python
      // server takes seconds to import its SDK), bounded by the connect's deadline.
      return { mode: { pin: MODERN_REVISION } };
    case 'auto':
      return { mode: 'auto', probe };
  }
}

/**
 * The key of a server's verdict: its name and transport identity (command and
 * cwd, or URL), hashed so no argument (which may hold a secret) is stored.
 */
export function eraKey(name: string, config: ServerConfig): string {
  const identity = config.type === 'local' ? JSON.stringify([config.command, config.cwd]) : config.url;
  return `${name}:${createHash('sha256').update(identity).digest('hex').slice(0, 16)}`;
}

/** What a remembered verdict lets the connect skip; undefined: negotiate as configured. */
export function priorFor(config: ServerConfig, verdict: EraVerdict | undefined, now = Date.now()): PriorDiscovery | undefined {
  if (verdict === undefined || config.protocol === '2025') return undefined;
  if (verdict.era === 'modern') return { kind: 'modern', discover: verdict.discover };
  if (config.protocol === '2026') return undefined;
  return now - Date.parse(verdict.learned_at) < LEGACY_VERDICT_MAX_AGE_MS ? { kind: 'legacy' } : undefined;
}

/** The verdict a connected client stands for; `previous` is kept when nothing changed (no rewrite). */
export function verdictOf(client: Client, previous: EraVerdict | undefined, now = new Date()): EraVerdict | undefined {
  const era = client.getProtocolEra();
  if (era === undefined) return undefined;
  if (era === 'modern') return modernVerdict(client, previous, now);
  if (previous?.era === 'legacy' && now.getTime() - Date.parse(previous.learned_at) < LEGACY_VERDICT_MAX_AGE_MS) return previous;
  return { era: 'legacy', learned_at: now.toISOString() };
}

function modernVerdict(client: Client, previous: EraVerdict | undefined, now: Date): EraVerdict | undefined {
  const discover = client.getDiscoverResult();
  if (discover === undefined) return undefined;
  if (previous?.era === 'modern' && JSON.stringify(previous.discover) === JSON.stringify(discover)) return previous;
  return { era: 'modern', discover, learned_at: now.toISOString() };
}

/**
 * True when a probe in place ended the connection: a stdio server that exits
 * on any request before `initialize` (rmcp-built servers do). It is a legacy
 * server; the connect spawns it again for `initialize`.
 */
export function probeEndedConnection(err: unknown): boolean {
  return err instanceof SdkError && err.code === SdkErrorCode.EraNegotiationFailed && /closed during the server\/discover probe/.test(err.message);
}

/**
 * A stdio server exited (with a code) while being probed: a legacy server
 * that exits on any request before `initialize`, or one that exits anyway.
 * The connect spawns it once more with the legacy verdict; if this escapes,
 * it reads as the exit it is.
 */
export class ProbeEndedError extends FleetError {
  constructor(message: string) {
    super('spawn_failed', message);
  }
}

export interface KnownEra {
  config: ServerConfig;
  /** The verdict's key ({@link eraKey}). */
  key: string;
  eras: EraVerdicts | undefined;
  /** The connect's signal: once aborted, nothing is retried. */
  signal: AbortSignal;
}

/**
 * Opens a connection with what is known of the server's era, and learns from
 * it. A probe that ended a stdio server in place opens it once more as a
 * legacy server. A remembered verdict the server refuses (a `protocol` error)
 * is dropped; a stale modern one fails loudly at the first request, so the
 * era is negotiated afresh at once. Failures of any other kind keep it.
 */
export async function openInKnownEra<T extends { client: Client }>(
  open: (prior: PriorDiscovery | undefined) => Promise<T>,
  { config, key, eras, signal }: KnownEra,
): Promise<T> {
  const known = eras?.recall(key);
  const prior = priorFor(config, known);
  const openOrRespawn = (attempt: PriorDiscovery | undefined): Promise<T> =>
    open(attempt).catch((err: unknown) => {
      if (err instanceof ProbeEndedError && !signal.aborted) return open({ kind: 'legacy' });
      throw err;
    });
  const connection = await openOrRespawn(prior).catch((err: unknown) => {
    if (signal.aborted || prior === undefined || !(err instanceof FleetError && err.kind === 'protocol')) throw err;
    eras?.forget(key);
    if (prior.kind !== 'modern') throw err;
    return openOrRespawn(undefined);
  });
  const verdict = verdictOf(connection.client, eras?.recall(key));
  if (verdict !== undefined && verdict !== known) eras?.learn(key, verdict);
  return connection;
}
