import { levelOf, type OtlpLogRecord, type OtlpMetricPoint, type OtlpSpan } from './otlp/index.js';

// Block payloads are newline-delimited JSON, one object per record, in the columns the
// view sets read (see payloadColumns in src/views). Nanosecond times are written as JSON
// integers, exactly: JSON.stringify cannot write a bigint.

/** micromegas levels from OTLP severity numbers (one mapping for both ways of writing lines). */
export { levelOf } from './otlp/index.js';

// Lines are assembled as strings rather than through an object and JSON.stringify: this
// runs once per record on the ingestion hot path.
const str = (value: string | null): string => (value === null ? 'null' : JSON.stringify(value));

/** A log record as a payload line; a record without a time takes its observed time, else `fallback`. */
export function logLine(record: OtlpLogRecord, fallback: bigint): string {
  const time = record.timeUnixNano || record.observedTimeUnixNano || fallback;
  const properties = record.severityText
    ? { ...record.attributes, 'otel.severity_text': record.severityText }
    : record.attributes;
  return (
    `{"time":${time},"target":${str(record.scope.name)},"level":${levelOf(record.severityNumber)},"msg":${str(record.body)},` +
    `"properties":${JSON.stringify(properties)},"trace_id":${str(record.traceId)},"span_id":${str(record.spanId)}}`
  );
}

export function metricLine(point: OtlpMetricPoint, fallback: bigint): string {
  const extra: Record<string, unknown> = { 'otel.kind': point.kind };
  if (point.count !== null) extra['otel.count'] = point.count;
  if (point.min !== null) extra['otel.min'] = point.min;
  if (point.max !== null) extra['otel.max'] = point.max;
  const value = point.value ?? point.sum;
  return (
    `{"time":${point.timeUnixNano || fallback},"target":${str(point.scope.name)},"name":${str(point.name)},"unit":${str(point.unit)},` +
    `"value":${value === null || !Number.isFinite(value) ? 'null' : value},"properties":${JSON.stringify({ ...point.attributes, ...extra })}}`
  );
}

export function spanLine(span: OtlpSpan): string {
  return (
    `{"begin":${span.startTimeUnixNano},"end":${span.endTimeUnixNano},"trace_id":${str(span.traceId)},"span_id":${str(span.spanId)},` +
    `"parent_span_id":${str(span.parentSpanId)},"name":${str(span.name)},"kind":${span.kind},"target":${str(span.scope.name)},` +
    `"status_code":${span.statusCode},"status_message":${str(span.statusMessage)},"properties":${JSON.stringify(span.attributes)}}`
  );
}
