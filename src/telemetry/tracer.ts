/**
 * Where mcp-fleet's telemetry goes: the tracer and meter of the global
 * OpenTelemetry API. Nothing is recorded unless the embedding application
 * registers an SDK; until then the checks here are a few property reads, so
 * instrumented paths can skip building spans, attributes and closures.
 */
import { createNoopMeter, metrics, ProxyTracerProvider, trace, type Meter, type MeterProvider, type Tracer } from '@opentelemetry/api';

/** The instrumentation scope: mcp-fleet's name and version (as CLIENT_INFO). */
export const SCOPE_NAME = 'mcp-fleet';
export const SCOPE_VERSION = '0.1.0';

// The API's no-op provider, which a proxy without a delegate hands out.
const NOOP_TRACER_PROVIDER = new ProxyTracerProvider().getDelegate();

// Caches of what the global OpenTelemetry API hands out: the same for every host in the process.
let scopeTracer: Tracer | undefined;

/** mcp-fleet's tracer (a proxy: it follows a provider registered later). */
export function tracer(): Tracer {
  return (scopeTracer ??= trace.getTracer(SCOPE_NAME, SCOPE_VERSION));
}

/** Whether an OpenTelemetry tracer provider is registered: spans could be recorded. */
export function tracingOn(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegate() !== NOOP_TRACER_PROVIDER;
}

let meterFor: MeterProvider | undefined;
let scopeMeter: Meter | null = null;

/**
 * mcp-fleet's meter from the registered meter provider; null while none is
 * registered (the API then hands out its no-op provider). Cached per provider:
 * a provider registered or replaced later is picked up on the next call.
 */
export function meter(): Meter | null {
  const provider = metrics.getMeterProvider();
  if (provider !== meterFor) {
    meterFor = provider;
    const scoped = provider.getMeter(SCOPE_NAME, SCOPE_VERSION);
    // The API's default provider hands every caller its one no-op meter.
    scopeMeter = scoped === createNoopMeter() ? null : scoped;
  }
  return scopeMeter;
}
