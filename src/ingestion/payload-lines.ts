import type { OtlpLogRecord, OtlpMetricPoint, OtlpSpan } from './otlp/index.js';

// Block payloads are newline-delimited JSON, one object per record, in the columns the
// view sets read (see payloadColumns in src/views). Nanosecond times are written as JSON
// integers, exactly: JSON.stringify cannot write a bigint.

/** micromegas levels: 1 fatal, 2 error, 3 warn, 4 info, 5 debug, 6 trace, from OTLP severity numbers. */
export function levelOf(severityNumber: number): number {
  if (severityNumber <= 0) return 4;
  if (severityNumber <= 4) return 6;
  if (severityNumber <= 8) return 5;
  if (severityNumber <= 12) return 4;
  if (severityNumber <= 16) return 3;
  if (severityNumber <= 20) return 2;
  return 1;
}

function line(times: Record<string, bigint>, rest: Record<string, unknown>): string {
  const head = Object.entries(times)
    .map(([key, value]) => `"${key}":${value}`)
    .join(',');
  const tail = JSON.stringify(rest).slice(1);
  return tail === '}' ? `{${head}}` : `{${head},${tail}`;
}

/** A log record as a payload line; a record without a time takes its observed time, else `fallback`. */
export function logLine(record: OtlpLogRecord, fallback: bigint): string {
  const time = record.timeUnixNano || record.observedTimeUnixNano || fallback;
  const properties = record.severityText ? { ...record.attributes, 'otel.severity_text': record.severityText } : record.attributes;
  return line(
    { time },
    {
      target: record.scope.name,
      level: levelOf(record.severityNumber),
      msg: record.body,
      properties,
      trace_id: record.traceId,
      span_id: record.spanId,
    },
  );
}

export function metricLine(point: OtlpMetricPoint, fallback: bigint): string {
  const extra: Record<string, unknown> = { 'otel.kind': point.kind };
  if (point.count !== null) extra['otel.count'] = point.count;
  if (point.min !== null) extra['otel.min'] = point.min;
  if (point.max !== null) extra['otel.max'] = point.max;
  return line(
    { time: point.timeUnixNano || fallback },
    {
      target: point.scope.name,
      name: point.name,
      unit: point.unit,
      value: point.value ?? point.sum,
      properties: { ...point.attributes, ...extra },
    },
  );
}

export function spanLine(span: OtlpSpan): string {
  return line(
    { begin: span.startTimeUnixNano, end: span.endTimeUnixNano },
    {
      trace_id: span.traceId,
      span_id: span.spanId,
      parent_span_id: span.parentSpanId,
      name: span.name,
      kind: span.kind,
      target: span.scope.name,
      status_code: span.statusCode,
      status_message: span.statusMessage,
      properties: span.attributes,
    },
  );
}
