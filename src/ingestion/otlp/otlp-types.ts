/** How an OTLP/HTTP body is serialized: binary protobuf or the OTLP/JSON mapping. */
export type OtlpContentType = 'protobuf' | 'json';

/** An OTLP signal, named as in its `/v1/<signal>` path. */
export type OtlpSignal = 'logs' | 'metrics' | 'traces';

/**
 * A decoded AnyValue, as JSON-compatible data: ints beyond ±2^53 become decimal strings, bytes become
 * base64 strings, arrays and key-value lists become arrays and objects, an empty AnyValue is null.
 */
export type AttrValue = string | number | boolean | null | AttrValue[] | { [key: string]: AttrValue };

/** Attributes by key; with duplicate keys the last one wins. */
export type Attributes = Record<string, AttrValue>;

/** The entity that produced the telemetry (service instance, host, ...). */
export interface OtlpResource {
  attributes: Attributes;
  droppedAttributesCount: number;
}

/** The instrumentation scope (library or component) that produced a record. */
export interface OtlpScope {
  name: string;
  version: string;
}

/** The records of one ResourceLogs / ResourceMetrics / ResourceSpans entry of a request, in order. */
export interface ResourceGroup<R> {
  resource: OtlpResource;
  /** The resource's schema URL (scope-level schema URLs are not kept). */
  schemaUrl: string;
  records: R[];
}

/** One OTLP log record. */
export interface OtlpLogRecord {
  /** Unix epoch nanoseconds; 0n when the sender left it unknown. */
  timeUnixNano: bigint;
  observedTimeUnixNano: bigint;
  /** 0 (unspecified) or 1 (TRACE) … 24 (FATAL4). */
  severityNumber: number;
  severityText: string;
  /** A string body as is; numbers and booleans as their literal; bytes (base64), arrays and lists as JSON; '' when absent. */
  body: string;
  attributes: Attributes;
  /** 32 lowercase hex digits, or null when absent or all zeros. */
  traceId: string | null;
  /** 16 lowercase hex digits, or null when absent or all zeros. */
  spanId: string | null;
  scope: OtlpScope;
}

/** The data kind of an OTLP metric. */
export type MetricKind = 'gauge' | 'sum' | 'histogram' | 'exponential_histogram' | 'summary';

/** One data point of an OTLP metric, with the metric's identity copied in. */
export interface OtlpMetricPoint {
  name: string;
  unit: string;
  description: string;
  kind: MetricKind;
  timeUnixNano: bigint;
  startTimeUnixNano: bigint;
  /** Gauge and sum: the double or int value as a number; null for the other kinds. */
  value: number | null;
  /** Histograms and summaries: the population count; null for gauge and sum. */
  count: number | null;
  /** Histograms and summaries: the sum when the sender set it. */
  sum: number | null;
  /** Histograms: min and max when set; summaries: the 0 and 1 quantiles when present. */
  min: number | null;
  max: number | null;
  attributes: Attributes;
  scope: OtlpScope;
}

/** One OTLP span. */
export interface OtlpSpan {
  /** 32 lowercase hex digits. */
  traceId: string;
  /** 16 lowercase hex digits. */
  spanId: string;
  /** 16 lowercase hex digits, or null for a root span. */
  parentSpanId: string | null;
  name: string;
  /** SpanKind: 0 unspecified, 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  startTimeUnixNano: bigint;
  endTimeUnixNano: bigint;
  attributes: Attributes;
  /** Status code: 0 unset, 1 ok, 2 error. */
  statusCode: number;
  statusMessage: string;
  /** The number of span events sent (their contents are not kept). */
  events: number;
  scope: OtlpScope;
}
