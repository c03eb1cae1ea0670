// An OpenTelemetry SDK registered globally for one test file (vitest runs each
// file in its own process): spans into an in-memory exporter, metrics into an
// in-memory metric exporter read on demand.
import { context, metrics, trace, type AttributeValue, type Attributes } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type MetricData,
} from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';

export interface TestSdk {
  spans(): ReadableSpan[];
  /** Every metric collected so far (cumulative). */
  metrics(): Promise<MetricData[]>;
  reset(): void;
  shutdown(): Promise<void>;
}

export function registerTestSdk(): TestSdk {
  const spanExporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spanExporter)] });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(tracerProvider);
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 3_600_000 });
  const meterProvider = new MeterProvider({ readers: [reader] });
  metrics.setGlobalMeterProvider(meterProvider);
  return {
    spans: () => spanExporter.getFinishedSpans(),
    async metrics() {
      metricExporter.reset();
      await reader.forceFlush();
      return metricExporter.getMetrics().flatMap((resource) => resource.scopeMetrics.flatMap((scope) => scope.metrics));
    },
    reset: () => spanExporter.reset(),
    async shutdown() {
      await Promise.all([tracerProvider.shutdown(), meterProvider.shutdown()]);
      trace.disable();
      metrics.disable();
      context.disable();
    },
  };
}

/** The one finished span named `name` (fails when there are none or several). */
export function onlySpan(spans: readonly ReadableSpan[], name: string): ReadableSpan {
  const found = spans.filter((span) => span.name === name);
  if (found.length !== 1) throw new Error(`expected one span "${name}", found ${found.length}: ${spans.map((s) => s.name).join(', ')}`);
  return found[0]!;
}

/** The id of `span`'s parent, or undefined for a root. */
export function parentOf(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}

/** Every string anywhere in spans (names, attributes, events, status) and metric data point attributes. */
export function everyRecordedString(spans: readonly ReadableSpan[], data: readonly MetricData[]): string[] {
  const out: string[] = [];
  const fromAttributes = (attributes: Attributes | undefined) => {
    for (const [key, value] of Object.entries(attributes ?? {})) {
      out.push(key);
      for (const item of Array.isArray(value) ? value : [value as AttributeValue]) out.push(String(item));
    }
  };
  for (const span of spans) {
    out.push(span.name, span.status.message ?? '');
    fromAttributes(span.attributes);
    for (const event of span.events) {
      out.push(event.name);
      fromAttributes(event.attributes);
    }
    for (const link of span.links) fromAttributes(link.attributes);
  }
  for (const metric of data) {
    out.push(metric.descriptor.name);
    for (const point of metric.dataPoints as Array<{ attributes: Attributes }>) fromAttributes(point.attributes);
  }
  return out;
}
