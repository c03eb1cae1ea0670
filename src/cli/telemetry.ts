/**
 * The worker's OpenTelemetry export, turned on by the standard `OTEL_*`
 * environment variables: an OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`, or
 * the traces/metrics one) or `OTEL_TRACES_EXPORTER` / `OTEL_METRICS_EXPORTER`
 * naming `otlp` or `console`. The SDK packages are imported only then, so a
 * worker without them configured loads none of them; the library itself only
 * uses `@opentelemetry/api`, which records nothing until this (or an
 * embedding application) registers an SDK.
 *
 * Supported: `OTEL_SDK_DISABLED`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
 * `OTEL_TRACES_EXPORTER` and `OTEL_METRICS_EXPORTER` (`otlp`, `console`, `none`),
 * `OTEL_EXPORTER_OTLP[_TRACES|_METRICS]_PROTOCOL` (`http/protobuf`, the default,
 * or `http/json`), the exporters' own `OTEL_EXPORTER_OTLP_*` (endpoint,
 * headers, timeout, compression), `OTEL_TRACES_SAMPLER[_ARG]`,
 * `OTEL_BSP_SCHEDULE_DELAY` and `OTEL_METRIC_EXPORT_INTERVAL`.
 */
import type { ContextManager, Sampler } from '@opentelemetry/api';
import type { ExportResult } from '@opentelemetry/core';
import {
  displayEndpoint,
  ExportFailureLog,
  exportSecrets,
  otlpEndpoint,
  unusableEndpointVariables,
  type ExportFailureSink,
  type ExportSignal,
} from '../telemetry/export-failures.js';
import { SCOPE_VERSION } from '../telemetry/tracer.js';

/** A running export: flushes and stops it. */
export interface TelemetryExport {
  /** What is exported, for the startup line: e.g. `traces (otlp http/json), metrics (otlp http/protobuf)`. */
  readonly summary: string;
  /** Where failed exports are logged from now on (the worker's logger); until then, `warn`. */
  logFailuresTo(sink: ExportFailureSink): void;
  shutdown(): Promise<void>;
}

type Env = Record<string, string | undefined>;
type Signal = 'traces' | 'metrics';

/** The exporters `OTEL_*` asks for, per signal; empty when export is off. */
export function requestedExporters(env: Env, signal: Signal): string[] {
  if (isTrue(env['OTEL_SDK_DISABLED'])) return [];
  const named = env[signal === 'traces' ? 'OTEL_TRACES_EXPORTER' : 'OTEL_METRICS_EXPORTER'];
  if (named !== undefined && named.trim() !== '') {
    const list = named.split(',').map((name) => name.trim().toLowerCase()).filter((name) => name !== '');
    return list.includes('none') ? [] : list;
  }
  // No exporter named: an OTLP endpoint is the ask.
  const endpoint = env['OTEL_EXPORTER_OTLP_ENDPOINT'] ?? env[`OTEL_EXPORTER_OTLP_${signal.toUpperCase()}_ENDPOINT`];
  return endpoint !== undefined && endpoint !== '' ? ['otlp'] : [];
}

/** Starts the export `env` asks for and registers it globally; null when it asks for none. */
export async function startTelemetryExport(env: Env = process.env, warn: (text: string) => void = () => {}): Promise<TelemetryExport | null> {
  const traces = requestedExporters(env, 'traces');
  const metricsOut = requestedExporters(env, 'metrics');
  if (traces.length === 0 && metricsOut.length === 0) return null;

  const [api, core, resources] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
  ]);
  const resource = resources
    .resourceFromAttributes({ 'service.name': 'mcp-fleet', 'service.version': SCOPE_VERSION })
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const shutdowns: Array<() => Promise<void>> = [];
  const summary: string[] = [];
  const failures = new ExportFailureLog({
    sink: (_fields, message) => warn(message),
    secrets: [...exportSecrets(env, 'traces'), ...exportSecrets(env, 'metrics')],
  });

  if (traces.length > 0) {
    const sdk = await import('@opentelemetry/sdk-trace-base');
    const processors = [];
    for (const name of traces) {
      if (name === 'console') {
        processors.push(new sdk.SimpleSpanProcessor(new sdk.ConsoleSpanExporter()));
        summary.push('traces (console)');
      } else if (name === 'otlp') {
        const protocol = otlpProtocol(env, 'traces', warn);
        const exporter = reportingFailures(
          protocol === 'http/json'
            ? new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter()
            : new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter(),
          failures,
          env,
          'traces',
          warn,
        );
        const delay = positiveNumber(env['OTEL_BSP_SCHEDULE_DELAY']);
        processors.push(new sdk.BatchSpanProcessor(exporter, delay === undefined ? {} : { scheduledDelayMillis: delay }));
        summary.push(`traces (otlp ${protocol})`);
      } else {
        warn(`OTEL_TRACES_EXPORTER: "${name}" is not supported here (otlp, console, none); ignored`);
      }
    }
    const sampler = samplerFrom(env, sdk, warn);
    const provider = new sdk.BasicTracerProvider({ resource, spanProcessors: processors, ...(sampler === undefined ? {} : { sampler }) });
    const { AsyncLocalStorageContextManager } = await import('@opentelemetry/context-async-hooks');
    const contextManager: ContextManager = new AsyncLocalStorageContextManager().enable();
    api.context.setGlobalContextManager(contextManager);
    api.propagation.setGlobalPropagator(
      new core.CompositePropagator({ propagators: [new core.W3CTraceContextPropagator(), new core.W3CBaggagePropagator()] }),
    );
    api.trace.setGlobalTracerProvider(provider);
    shutdowns.push(() => provider.shutdown());
  }

  if (metricsOut.length > 0) {
    const sdk = await import('@opentelemetry/sdk-metrics');
    const interval = positiveNumber(env['OTEL_METRIC_EXPORT_INTERVAL']) ?? 60_000;
    const readers = [];
    for (const name of metricsOut) {
      let exporter;
      if (name === 'console') {
        exporter = new sdk.ConsoleMetricExporter();
        summary.push('metrics (console)');
      } else if (name === 'otlp') {
        const protocol = otlpProtocol(env, 'metrics', warn);
        exporter = reportingFailures(
          protocol === 'http/json'
            ? new (await import('@opentelemetry/exporter-metrics-otlp-http')).OTLPMetricExporter()
            : new (await import('@opentelemetry/exporter-metrics-otlp-proto')).OTLPMetricExporter(),
          failures,
          env,
          'metrics',
          warn,
        );
        summary.push(`metrics (otlp ${protocol})`);
      } else {
        warn(`OTEL_METRICS_EXPORTER: "${name}" is not supported here (otlp, console, none); ignored`);
        continue;
      }
      readers.push(
        new sdk.PeriodicExportingMetricReader({ exporter, exportIntervalMillis: interval, exportTimeoutMillis: Math.min(30_000, interval) }),
      );
    }
    const provider = new sdk.MeterProvider({ resource, readers });
    api.metrics.setGlobalMeterProvider(provider);
    shutdowns.push(() => provider.shutdown());
  }

  let stopped: Promise<void> | undefined;
  return {
    summary: summary.join(', '),
    logFailuresTo(sink) {
      failures.useSink(sink);
    },
    shutdown() {
      // Flushes what is buffered; an unreachable collector must not keep the worker from exiting.
      // The last flush's failures, and the count held back, are logged before the worker exits.
      stopped ??= Promise.allSettled(shutdowns.map((stop) => stop())).then(() => failures.flush());
      return stopped;
    },
  };
}

/**
 * `exporter`, its failed exports also told to `failures`: the SDK hands them
 * only to its diag logger, silent unless an application registers one. The
 * instance's own `export` is wrapped (not the exporter proxied) so every other
 * method, e.g. a metric exporter's temporality choice, stays its own.
 */
function reportingFailures<Items, T extends Exporting<Items>>(
  exporter: T,
  failures: ExportFailureLog,
  env: Env,
  signal: ExportSignal,
  warn: (text: string) => void,
): T {
  const endpoint = displayEndpoint(otlpEndpoint(env, signal));
  for (const name of unusableEndpointVariables(env, signal)) {
    // The value itself is not printed: it may hold credentials.
    warn(`${name} is not a URL; ${signal} are exported to ${endpoint}`);
  }
  const target: Exporting<Items> = exporter;
  const exportItems = target.export.bind(exporter);
  target.export = (items, done) =>
    exportItems(items, (result) => {
      // ExportResultCode.SUCCESS is 0; the enum is not imported so this module loads no SDK package until export starts.
      if (result.code !== 0) failures.failed(endpoint, signal, result.error);
      done(result);
    });
  return exporter;
}

interface Exporting<Items> {
  export(items: Items, done: (result: ExportResult) => void): void;
}

/** The OTLP protocol for `signal`: `http/protobuf` (OpenTelemetry's default) or `http/json`; gRPC is not shipped. */
function otlpProtocol(env: Env, signal: Signal, warn: (text: string) => void): 'http/protobuf' | 'http/json' {
  const asked = (env[`OTEL_EXPORTER_OTLP_${signal.toUpperCase()}_PROTOCOL`] ?? env['OTEL_EXPORTER_OTLP_PROTOCOL'] ?? 'http/protobuf').trim();
  if (asked === 'http/json' || asked === 'http/protobuf') return asked;
  warn(`OTEL_EXPORTER_OTLP_PROTOCOL: "${asked}" is not supported here (http/protobuf, http/json); using http/protobuf`);
  return 'http/protobuf';
}

/** The sampler `OTEL_TRACES_SAMPLER` names; undefined for the SDK's default (parent-based, always on). */
function samplerFrom(env: Env, sdk: typeof import('@opentelemetry/sdk-trace-base'), warn: (text: string) => void): Sampler | undefined {
  const name = env['OTEL_TRACES_SAMPLER']?.trim();
  if (name === undefined || name === '') return undefined;
  const ratio = Number(env['OTEL_TRACES_SAMPLER_ARG'] ?? '1');
  const rate = Number.isFinite(ratio) && ratio >= 0 && ratio <= 1 ? ratio : 1;
  switch (name) {
    case 'always_on':
      return new sdk.AlwaysOnSampler();
    case 'always_off':
      return new sdk.AlwaysOffSampler();
    case 'traceidratio':
      return new sdk.TraceIdRatioBasedSampler(rate);
    case 'parentbased_always_on':
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new sdk.ParentBasedSampler({ root: new sdk.TraceIdRatioBasedSampler(rate) });
    default:
      warn(`OTEL_TRACES_SAMPLER: "${name}" is not supported here; using the default (parentbased_always_on)`);
      return undefined;
  }
}

function positiveNumber(value: string | undefined): number | undefined {
  const n = Number(value);
  return value !== undefined && value !== '' && Number.isFinite(n) && n > 0 ? n : undefined;
}

function isTrue(value: string | undefined): boolean {
  return value?.trim().toLowerCase() === 'true';
}
