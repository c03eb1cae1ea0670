/**
 * Export failures, heard: the OTLP exporters report a failed export only to
 * the SDK's diag logger, which is silent unless an application registers one,
 * so a worker exporting to a collector that is down or refusing said nothing.
 * This logs each failure through the worker's logger, at most one line per
 * signal and endpoint per window (a minute), the next line carrying how many
 * failures it held back. Traces and metrics may post to the same URL: each
 * signal keeps its own window, so neither's failures are told as the other's. The endpoint is shown without credentials, query or fragment, and
 * no value of `OTEL_EXPORTER_OTLP_*_HEADERS` reaches a line.
 */
import { MASK, redact } from '../config/masking.js';

type Env = Record<string, string | undefined>;
export type ExportSignal = 'traces' | 'metrics';

/** What a failure line says, beside its message. */
export interface ExportFailureFields {
  endpoint: string;
  signal: ExportSignal;
  /** Why the export failed (the error's message, secrets masked). */
  reason: string;
  /** Failures held back since the previous line for this endpoint (0 on the first line of a window). */
  suppressed: number;
}

/** Where failure lines go: the worker's logger (`logger.warn`), or a stand-in until it exists. */
export type ExportFailureSink = (fields: ExportFailureFields, message: string) => void;

/** One line per endpoint per this many milliseconds. */
const EXPORT_FAILURE_WINDOW_MS = 60_000;

interface EndpointState {
  endpoint: string;
  signal: ExportSignal;
  suppressed: number;
  latest: string;
  timer: NodeJS.Timeout;
}

/** Counts and rate-limits export failures per endpoint; `flush()` writes what is held back (at shutdown). */
export class ExportFailureLog {
  #sink: ExportFailureSink;
  readonly #windowMs: number;
  readonly #secrets: string[];
  /** By signal and endpoint. */
  readonly #open = new Map<string, EndpointState>();

  constructor(options: { sink: ExportFailureSink; secrets?: Iterable<string>; windowMs?: number }) {
    this.#sink = options.sink;
    this.#windowMs = options.windowMs ?? EXPORT_FAILURE_WINDOW_MS;
    this.#secrets = [...(options.secrets ?? [])].filter((value) => value !== '');
  }

  /** Sends the lines from now on to `sink` (the worker's logger, once it exists). */
  useSink(sink: ExportFailureSink): void {
    this.#sink = sink;
  }

  /** One failed export to `endpoint` (already shown without credentials). */
  failed(endpoint: string, signal: ExportSignal, error: unknown): void {
    const reason = this.#reasonOf(error);
    const open = this.#open.get(windowKey(signal, endpoint));
    if (open !== undefined) {
      open.suppressed += 1;
      open.latest = reason;
      return;
    }
    this.#sink({ endpoint, signal, reason, suppressed: 0 }, `telemetry: ${signal} export to ${endpoint} failed: ${reason}`);
    this.#openWindow(endpoint, signal, reason);
  }

  /** Writes the count held back for every endpoint and stops the timers. */
  flush(): void {
    for (const state of this.#open.values()) {
      clearTimeout(state.timer);
      this.#writeHeldBack(state);
    }
    this.#open.clear();
  }

  #openWindow(endpoint: string, signal: ExportSignal, latest: string): void {
    const key = windowKey(signal, endpoint);
    const state: EndpointState = {
      endpoint,
      signal,
      suppressed: 0,
      latest,
      timer: setTimeout(() => {
        this.#open.delete(key);
        // Failures went on through the window: one line for all of them, and a new window.
        if (state.suppressed > 0) {
          this.#writeHeldBack(state);
          this.#openWindow(endpoint, signal, state.latest);
        }
      }, this.#windowMs),
    };
    // A pending count must not keep the worker alive; `flush()` writes it at shutdown.
    state.timer.unref();
    this.#open.set(key, state);
  }

  #writeHeldBack(state: EndpointState): void {
    if (state.suppressed === 0) return;
    const { endpoint } = state;
    const times = state.suppressed === 1 ? '1 more time' : `${state.suppressed} more times`;
    this.#sink(
      { endpoint, signal: state.signal, reason: state.latest, suppressed: state.suppressed },
      `telemetry: ${state.signal} export to ${endpoint} failed ${times} since the last line (latest: ${state.latest})`,
    );
  }

  #reasonOf(error: unknown): string {
    let text: string;
    if (error instanceof Error) {
      const code = (error as { code?: unknown }).code;
      text = error.message === '' ? error.name : error.message;
      // An HTTP answer: the exporter's error carries the status as `code`.
      if (typeof code === 'number') text = `HTTP ${code}${text === `${code}` ? '' : ` ${text}`}`;
    } else {
      text = error === undefined ? 'unknown error' : String(error);
    }
    return redact(text.replace(/\s+/g, ' ').trim().slice(0, 300), this.#secrets);
  }
}

const windowKey = (signal: ExportSignal, endpoint: string) => `${signal} ${endpoint}`;

/**
 * The URL the OTLP/HTTP exporter of `signal` posts to, resolved as the
 * exporter resolves it: the signal's own endpoint, else the general one plus
 * `v1/<signal>`, else the local default; a value that is not a URL is skipped
 * (the exporter skips it too, telling only its silent diag logger).
 */
export function otlpEndpoint(env: Env, signal: ExportSignal): string {
  const own = asUrl(env[`OTEL_EXPORTER_OTLP_${signal.toUpperCase()}_ENDPOINT`]);
  if (own !== undefined) return own.href;
  const base = env['OTEL_EXPORTER_OTLP_ENDPOINT']?.trim();
  if (base !== undefined && asUrl(base) !== undefined) {
    const joined = `${base}${base.endsWith('/') ? '' : '/'}v1/${signal}`;
    if (asUrl(joined) !== undefined) return joined;
  }
  return `http://localhost:4318/v1/${signal}`;
}

/** The endpoint variables for `signal` that are set but not URLs, so the exporter ignores them. */
export function unusableEndpointVariables(env: Env, signal: ExportSignal): string[] {
  return [`OTEL_EXPORTER_OTLP_${signal.toUpperCase()}_ENDPOINT`, 'OTEL_EXPORTER_OTLP_ENDPOINT'].filter((name) => {
    const value = env[name]?.trim();
    return value !== undefined && value !== '' && asUrl(value) === undefined;
  });
}

function asUrl(value: string | undefined): URL | undefined {
  const trimmed = value?.trim();
  if (trimmed === undefined || trimmed === '') return undefined;
  try {
    return new URL(trimmed);
  } catch {
    return undefined;
  }
}

/** `url` fit for a log line: scheme, host, port and path only. */
export function displayEndpoint(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  } catch {
    return '(an endpoint that is not a URL)';
  }
}

/**
 * Every value that must not reach a failure line: the header values of
 * `OTEL_EXPORTER_OTLP[_<SIGNAL>]_HEADERS` (as written and URL-decoded), and
 * the endpoint's password, user and query values.
 */
export function exportSecrets(env: Env, signal: ExportSignal): string[] {
  const out: string[] = [];
  for (const name of ['OTEL_EXPORTER_OTLP_HEADERS', `OTEL_EXPORTER_OTLP_${signal.toUpperCase()}_HEADERS`]) {
    for (const pair of (env[name] ?? '').split(',')) {
      const at = pair.indexOf('=');
      if (at < 0) continue;
      const value = pair.slice(at + 1).trim();
      out.push(value, safeDecode(value));
    }
  }
  try {
    const parsed = new URL(otlpEndpoint(env, signal));
    out.push(parsed.password, safeDecode(parsed.password), parsed.username, safeDecode(parsed.username), parsed.search.slice(1));
    for (const value of parsed.searchParams.values()) out.push(value);
  } catch {
    // Not a URL: the exporter refuses it at startup; nothing of it is logged here.
  }
  return out.filter((value) => value !== '' && value !== MASK);
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
