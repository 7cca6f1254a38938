// Malformed OTLP requests: each refusal has its code, HTTP status and a message naming the bad input.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import protobuf from 'protobufjs';
import {
  contentTypeOf,
  decodeBody,
  decodeLogs,
  decodeMetrics,
  decodeTraces,
  MAX_ANY_VALUE_DEPTH,
  OtlpDecodeError,
  otlpErrorCodes,
  type OtlpContentType,
} from '../../src/ingestion/otlp/index.js';
import { IngestAdmission } from '../../src/ingestion/admission.js';
import { jsonBody } from './otel-sdk.js';

// Protobuf built field by field, so that the bytes can be wrong in exactly one place.
const lengthDelimited = (field: number, bytes: Uint8Array): Uint8Array =>
  protobuf.Writer.create()
    .uint32((field << 3) | 2)
    .bytes(bytes)
    .finish();
const concat = (...parts: Uint8Array[]): Uint8Array => Buffer.concat(parts);
const bytes = (n: number): Uint8Array => Uint8Array.from({ length: n }, (_, i) => i + 1);
// ExportLogsServiceRequest.resource_logs(1) > ResourceLogs.scope_logs(2) > ScopeLogs.log_records(2)
const protobufLogs = (record: Uint8Array): Uint8Array =>
  lengthDelimited(1, lengthDelimited(2, lengthDelimited(2, record)));
// ExportTraceServiceRequest.resource_spans(1) > ResourceSpans.scope_spans(2) > ScopeSpans.spans(2)
const protobufSpans = (span: Uint8Array): Uint8Array =>
  lengthDelimited(1, lengthDelimited(2, lengthDelimited(2, span)));

const jsonLogs = (record: unknown): Uint8Array =>
  jsonBody({ resourceLogs: [{ scopeLogs: [{ logRecords: [record] }] }] });
const jsonSpans = (span: unknown): Uint8Array => jsonBody({ resourceSpans: [{ scopeSpans: [{ spans: [span] }] }] });
const jsonMetric = (metric: unknown): Uint8Array =>
  jsonBody({ resourceMetrics: [{ scopeMetrics: [{ metrics: [metric] }] }] });
const nest = (depth: number): unknown =>
  depth === 0 ? { stringValue: 'leaf' } : { arrayValue: { values: [nest(depth - 1)] } };

const LOG = '$.resourceLogs[0].scopeLogs[0].logRecords[0]';
const SPAN = '$.resourceSpans[0].scopeSpans[0].spans[0]';
const METRIC = '$.resourceMetrics[0].scopeMetrics[0].metrics[0]';
const traceId = '0af7651916cd43dd8448eb211c80319c';
const spanId = 'b7ad6b7169203331';

type Decoder = (body: Uint8Array, contentType: OtlpContentType) => unknown;
const malformedCases: Array<[string, Decoder, Uint8Array, OtlpContentType, string | RegExp]> = [
  [
    'truncated protobuf',
    decodeLogs,
    Uint8Array.from([0x0a, 0xff]),
    'protobuf',
    /^body is not a valid ExportLogsServiceRequest protobuf message: index out of range/,
  ],
  [
    'invalid wire type',
    decodeMetrics,
    Uint8Array.from([0x0f]),
    'protobuf',
    'body is not a valid ExportMetricsServiceRequest protobuf message: invalid wire type 7 at offset 1',
  ],
  [
    'JSON sent as protobuf',
    decodeTraces,
    jsonBody({ resourceSpans: [] }),
    'protobuf',
    /^body is not a valid ExportTraceServiceRequest protobuf message: /,
  ],
  [
    'a 15-byte trace id',
    decodeLogs,
    protobufLogs(lengthDelimited(9, bytes(15))),
    'protobuf',
    `${LOG}.traceId: expected 16 bytes (32 hex digits), got 15 bytes`,
  ],
  [
    'a 9-byte span id',
    decodeLogs,
    protobufLogs(lengthDelimited(10, bytes(9))),
    'protobuf',
    `${LOG}.spanId: expected 8 bytes (16 hex digits), got 9 bytes`,
  ],
  [
    'a span without trace id',
    decodeTraces,
    protobufSpans(lengthDelimited(2, bytes(8))),
    'protobuf',
    `${SPAN}.traceId: required, expected 16 bytes (32 hex digits)`,
  ],
  [
    'a span with a 7-byte parent',
    decodeTraces,
    protobufSpans(concat(lengthDelimited(1, bytes(16)), lengthDelimited(2, bytes(8)), lengthDelimited(4, bytes(7)))),
    'protobuf',
    `${SPAN}.parentSpanId: expected 8 bytes (16 hex digits), got 7 bytes`,
  ],
  ['invalid JSON', decodeLogs, Buffer.from('{"resourceLogs": ['), 'json', /^body is not valid JSON: /],
  ['invalid UTF-8', decodeLogs, Uint8Array.from([0x7b, 0xff, 0x7d]), 'json', 'JSON body is not valid UTF-8'],
  [
    'a JSON array',
    decodeLogs,
    jsonBody([]),
    'json',
    'JSON body must be an ExportLogsServiceRequest object, got an array',
  ],
  [
    'a JSON number',
    decodeMetrics,
    jsonBody(3),
    'json',
    'JSON body must be an ExportMetricsServiceRequest object, got 3',
  ],
  [
    'resourceLogs not a list',
    decodeLogs,
    jsonBody({ resourceLogs: {} }),
    'json',
    '$.resourceLogs: expected an array, got an object',
  ],
  [
    'a resource that is not an object',
    decodeLogs,
    jsonBody({ resourceLogs: [1] }),
    'json',
    '$.resourceLogs[0]: expected an object, got 1',
  ],
  [
    'a negative dropped count',
    decodeLogs,
    jsonBody({ resourceLogs: [{ resource: { droppedAttributesCount: -1 } }] }),
    'json',
    '$.resourceLogs[0].resource.droppedAttributesCount: expected an unsigned 32-bit integer, got -1',
  ],
  [
    'a scope name that is a number',
    decodeLogs,
    jsonBody({ resourceLogs: [{ scopeLogs: [{ scope: { name: 5 } }] }] }),
    'json',
    '$.resourceLogs[0].scopeLogs[0].scope.name: expected a string, got 5',
  ],
  [
    'a time that is a word',
    decodeLogs,
    jsonLogs({ timeUnixNano: 'soon' }),
    'json',
    `${LOG}.timeUnixNano: expected an unsigned 64-bit integer, got "soon"`,
  ],
  [
    'a negative time',
    decodeLogs,
    jsonLogs({ time_unix_nano: '-1' }),
    'json',
    `${LOG}.timeUnixNano: expected an unsigned 64-bit integer, got "-1"`,
  ],
  [
    'a time past 2^64',
    decodeLogs,
    jsonLogs({ observedTimeUnixNano: '18446744073709551616' }),
    'json',
    `${LOG}.observedTimeUnixNano: expected an unsigned 64-bit integer, got "18446744073709551616"`,
  ],
  [
    'a fractional time',
    decodeLogs,
    jsonLogs({ timeUnixNano: 1.5 }),
    'json',
    `${LOG}.timeUnixNano: expected an unsigned 64-bit integer, got 1.5`,
  ],
  [
    'an unknown severity name',
    decodeLogs,
    jsonLogs({ severityNumber: 'LOUD' }),
    'json',
    `${LOG}.severityNumber: expected an enum number, got "LOUD"`,
  ],
  [
    'a severity text that is a number',
    decodeLogs,
    jsonLogs({ severityText: 5 }),
    'json',
    `${LOG}.severityText: expected a string, got 5`,
  ],
  [
    'a body that is a bare string',
    decodeLogs,
    jsonLogs({ body: 'text' }),
    'json',
    `${LOG}.body: expected an object, got "text"`,
  ],
  [
    'a 31-digit trace id',
    decodeLogs,
    jsonLogs({ traceId: traceId.slice(1) }),
    'json',
    `${LOG}.traceId: expected 16 bytes (32 hex digits), got 31 hex digits`,
  ],
  [
    'a base64 trace id',
    decodeLogs,
    jsonLogs({ traceId: 'CvdlGRbNQ92ESOshHIAxnA==' }),
    'json',
    `${LOG}.traceId: expected 32 hex digits, got "CvdlGRbNQ92ESOshHIAxnA=="`,
  ],
  [
    'attributes as an object',
    decodeLogs,
    jsonLogs({ attributes: { a: 1 } }),
    'json',
    `${LOG}.attributes: expected an array, got an object`,
  ],
  [
    'an AnyValue with two values',
    decodeLogs,
    jsonLogs({ attributes: [{ key: 'a', value: { stringValue: 'x', intValue: 1 } }] }),
    'json',
    `${LOG}.attributes[0].value: an AnyValue sets both stringValue and intValue`,
  ],
  [
    'a fractional intValue',
    decodeLogs,
    jsonLogs({ attributes: [{ key: 'a', value: { intValue: '1.5' } }] }),
    'json',
    `${LOG}.attributes[0].value.intValue: expected a signed 64-bit integer, got "1.5"`,
  ],
  [
    'a boolValue that is a string',
    decodeLogs,
    jsonLogs({ attributes: [{ key: 'a', value: { boolValue: 'yes' } }] }),
    'json',
    `${LOG}.attributes[0].value.boolValue: expected a boolean, got "yes"`,
  ],
  [
    'bytesValue that is not base64',
    decodeLogs,
    jsonLogs({ body: { bytesValue: '***' } }),
    'json',
    `${LOG}.body.bytesValue: expected base64 bytes, got "***"`,
  ],
  [
    'an attribute key that is a number',
    decodeLogs,
    jsonLogs({ attributes: [{ key: 1 }] }),
    'json',
    `${LOG}.attributes[0].key: expected a string, got 1`,
  ],
  [
    'AnyValues nested too deep',
    decodeLogs,
    jsonLogs({ body: nest(MAX_ANY_VALUE_DEPTH) }),
    'json',
    new RegExp(
      `^${LOG.replace(/[$.[\]]/g, '\\$&')}\\.body(\\.arrayValue\\.values\\[0\\])+: AnyValue nested deeper than ${MAX_ANY_VALUE_DEPTH} levels$`,
    ),
  ],
  [
    'a metric with two kinds of data',
    decodeMetrics,
    jsonMetric({ name: 'm', gauge: {}, sum: {} }),
    'json',
    `${METRIC}: a metric sets both gauge and sum`,
  ],
  [
    'a number point without a value',
    decodeMetrics,
    jsonMetric({ name: 'm', gauge: { dataPoints: [{ timeUnixNano: '1' }] } }),
    'json',
    `${METRIC}.gauge.dataPoints[0]: a number data point needs asDouble or asInt`,
  ],
  [
    'a number point with two values',
    decodeMetrics,
    jsonMetric({ name: 'm', sum: { dataPoints: [{ asDouble: 1, asInt: '1' }] } }),
    'json',
    `${METRIC}.sum.dataPoints[0]: a data point sets both asDouble and asInt`,
  ],
  [
    'a histogram count that is a word',
    decodeMetrics,
    jsonMetric({ name: 'm', histogram: { dataPoints: [{ count: 'many' }] } }),
    'json',
    `${METRIC}.histogram.dataPoints[0].count: expected an unsigned 64-bit integer, got "many"`,
  ],
  [
    'a sum that is a word',
    decodeMetrics,
    jsonMetric({ name: 'm', summary: { dataPoints: [{ sum: 'lots' }] } }),
    'json',
    `${METRIC}.summary.dataPoints[0].sum: expected a number, got "lots"`,
  ],
  [
    'data points not a list',
    decodeMetrics,
    jsonMetric({ name: 'm', exponentialHistogram: { dataPoints: 'none' } }),
    'json',
    `${METRIC}.exponentialHistogram.dataPoints: expected an array, got "none"`,
  ],
  [
    'an all-zero trace id',
    decodeTraces,
    jsonSpans({ traceId: '0'.repeat(32), spanId }),
    'json',
    `${SPAN}.traceId: all-zero ids are invalid`,
  ],
  [
    'a span without span id',
    decodeTraces,
    jsonSpans({ traceId }),
    'json',
    `${SPAN}.spanId: required, expected 8 bytes (16 hex digits)`,
  ],
  [
    'an unknown status code',
    decodeTraces,
    jsonSpans({ traceId, spanId, status: { code: 'BAD' } }),
    'json',
    `${SPAN}.status.code: expected an enum number, got "BAD"`,
  ],
  [
    'an unknown span kind name',
    decodeTraces,
    jsonSpans({ traceId, spanId, kind: 'SERVER' }),
    'json',
    `${SPAN}.kind: expected an enum number, got "SERVER"`,
  ],
  [
    'events not a list',
    decodeTraces,
    jsonSpans({ traceId, spanId, events: 2 }),
    'json',
    `${SPAN}.events: expected an array, got 2`,
  ],
];

describe('malformed OTLP requests get OTLP_MALFORMED_BODY (400)', () => {
  for (const [name, decode, body, contentType, message] of malformedCases) {
    it(`refuses ${name}`, () => {
      assert.throws(
        () => decode(body, contentType),
        (error: unknown) => {
          assert.ok(error instanceof OtlpDecodeError);
          assert.equal(error.code, 'OTLP_MALFORMED_BODY');
          assert.equal(error.httpStatus, 400);
          if (typeof message === 'string') assert.equal(error.message, message);
          else assert.match(error.message, message);
          return true;
        },
      );
    });
  }
});

describe('otlpErrorCodes', () => {
  it('lists codes with their HTTP statuses, each triggered by a test', async () => {
    const triggered = new Map<string, number>();
    const record = (error: unknown) => {
      assert.ok(error instanceof OtlpDecodeError);
      triggered.set(error.code, error.httpStatus);
    };
    await decodeBody(Buffer.from('x'), 'br').catch(record);
    await decodeBody(Buffer.alloc(2), undefined, { maxBytes: 1 }).catch(record);
    try {
      contentTypeOf('text/plain');
    } catch (error) {
      record(error);
    }
    try {
      decodeLogs(Buffer.from('{'), 'json');
    } catch (error) {
      record(error);
    }
    const admission = new IngestAdmission({ concurrent: 1, concurrentPerKey: 1, memoryBytes: 10 });
    admission.admit('a');
    for (const key of ['a', 'b']) {
      try {
        admission.admit(key);
      } catch (error) {
        record(error);
      }
    }
    assert.deepEqual(
      Object.fromEntries(triggered),
      Object.fromEntries(Object.entries(otlpErrorCodes).map(([code, { httpStatus }]) => [code, httpStatus])),
    );
  });
});
