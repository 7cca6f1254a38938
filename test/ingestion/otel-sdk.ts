// Telemetry made by the real OpenTelemetry JS SDK (in-memory exporters and a pull reader) and serialized
// by its own OTLP serializers, as the OTLP/HTTP exporters send it.
import type { HrTime, Meter, Tracer } from '@opentelemetry/api';
import type { Logger } from '@opentelemetry/api-logs';
import {
  JsonLogsSerializer,
  JsonMetricsSerializer,
  JsonTraceSerializer,
  ProtobufLogsSerializer,
  ProtobufMetricsSerializer,
  ProtobufTraceSerializer,
} from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  InMemoryLogRecordExporter,
  LoggerProvider,
  SimpleLogRecordProcessor,
  type ReadableLogRecord,
} from '@opentelemetry/sdk-logs';
import { AggregationType, MeterProvider, MetricReader, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';

/** Resource attributes given to every provider. */
export type ResourceAttributes = Record<string, string | number | boolean | string[]>;

/** Both OTLP/HTTP encodings of one request. */
export interface Bodies {
  readonly protobuf: Uint8Array;
  readonly json: Uint8Array;
}

const must = (body: Uint8Array | undefined): Uint8Array => {
  if (body === undefined) throw new Error('the SDK serializer returned nothing');
  return body;
};

/** Nanoseconds since the epoch of an SDK HrTime. */
export const nanos = (time: HrTime): bigint => BigInt(time[0]) * 1_000_000_000n + BigInt(time[1]);

/** Emits log records through an SDK LoggerProvider and returns what its exporter received, serialized. */
export async function sdkLogs(
  resource: ResourceAttributes,
  emit: (logger: (name: string, version?: string) => Logger) => void,
): Promise<Bodies & { records: ReadableLogRecord[] }> {
  const exporter = new InMemoryLogRecordExporter();
  const provider = new LoggerProvider({
    resource: resourceFromAttributes(resource),
    processors: [new SimpleLogRecordProcessor({ exporter })],
  });
  emit((name, version) => provider.getLogger(name, version));
  await provider.forceFlush();
  const records = exporter.getFinishedLogRecords();
  await provider.shutdown();
  return {
    records,
    protobuf: must(ProtobufLogsSerializer.serializeRequest(records)),
    json: must(JsonLogsSerializer.serializeRequest(records)),
  };
}

class PullReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

/** Records measurements through an SDK MeterProvider (instruments named `exp*` get exponential histograms), collects once. */
export async function sdkMetrics(
  resource: ResourceAttributes,
  record: (meter: (name: string, version?: string) => Meter) => void,
): Promise<Bodies & { metrics: ResourceMetrics }> {
  const reader = new PullReader();
  const provider = new MeterProvider({
    resource: resourceFromAttributes(resource),
    readers: [reader],
    views: [{ instrumentName: 'exp*', aggregation: { type: AggregationType.EXPONENTIAL_HISTOGRAM } }],
  });
  record((name, version) => provider.getMeter(name, version));
  const { resourceMetrics, errors } = await reader.collect();
  if (errors.length > 0) throw errors[0];
  await provider.shutdown();
  return {
    metrics: resourceMetrics,
    protobuf: must(ProtobufMetricsSerializer.serializeRequest(resourceMetrics)),
    json: must(JsonMetricsSerializer.serializeRequest(resourceMetrics)),
  };
}

/** Records spans through an SDK tracer whose ids come, in order, from the given lists. */
export async function sdkSpans(
  resource: ResourceAttributes,
  ids: { traceIds: string[]; spanIds: string[] },
  run: (tracer: (name: string, version?: string) => Tracer) => void,
): Promise<Bodies & { spans: ReadableSpan[] }> {
  const exporter = new InMemorySpanExporter();
  let trace = 0;
  let span = 0;
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes(resource),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
    idGenerator: { generateTraceId: () => ids.traceIds[trace++], generateSpanId: () => ids.spanIds[span++] },
  });
  run((name, version) => provider.getTracer(name, version));
  await provider.forceFlush();
  const spans = exporter.getFinishedSpans();
  await provider.shutdown();
  return {
    spans,
    protobuf: must(ProtobufTraceSerializer.serializeRequest(spans)),
    json: must(JsonTraceSerializer.serializeRequest(spans)),
  };
}

/** Rewrites every object key of an OTLP/JSON body to snake_case (attribute keys are values, so they stay). */
export function snakeCaseJson(body: Uint8Array): Uint8Array {
  const rewrite = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(rewrite);
    if (typeof value !== 'object' || value === null) return value;
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), rewrite(v)]),
    );
  };
  return Buffer.from(JSON.stringify(rewrite(JSON.parse(Buffer.from(body).toString('utf8')))));
}

/** A UTF-8 body from a JSON value. */
export const jsonBody = (value: unknown): Uint8Array => Buffer.from(JSON.stringify(value));
