// Issue 9, items 1 and 5: what the materializer (DuckDB) or Postgres cannot read never leaves decoding:
// invalid Unicode wherever a string sits, timestamps past what TIMESTAMP_NS holds, and NUL in resource
// attributes (stored in Postgres) are refused with a 400 naming the field. Both encodings.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  decodeLogs,
  decodeMetrics,
  decodeTraces,
  OtlpDecodeError,
  type OtlpContentType,
  type OtlpSignal,
} from '../../src/ingestion/otlp/index.js';
import { MAX_TIME_UNIX_NANO } from '../../src/ingestion/otlp/otlp-fields.js';
import { exportRequestTypes } from '../../src/ingestion/otlp/otlp-proto.js';

const decoders = { logs: decodeLogs, metrics: decodeMetrics, traces: decodeTraces } as const;
const traceId = '0af7651916cd43dd8448eb211c80319c';
const spanId = 'b7ad6b7169203331';

/** One request object in both encodings (ids as hex for JSON, bytes for protobuf). */
function bodies(signal: OtlpSignal, request: object): Record<OtlpContentType, Uint8Array> {
  const json = Buffer.from(JSON.stringify(request));
  const forProtobuf = JSON.parse(JSON.stringify(request), (key, value) =>
    (key === 'traceId' || key === 'spanId') && typeof value === 'string'
      ? Buffer.from(value, 'hex').toString('base64')
      : value,
  );
  const type = exportRequestTypes[signal];
  return { json, protobuf: type.encode(type.fromObject(forProtobuf)).finish() };
}

const kv = (key: string, value: string) => ({ key, value: { stringValue: value } });
const logsRequest = (resource: object[], scope: string, record: object) => ({
  resourceLogs: [{ resource: { attributes: resource }, scopeLogs: [{ scope: { name: scope }, logRecords: [record] }] }],
});
const metricsRequest = (name: string, point: object) => ({
  resourceMetrics: [
    { scopeMetrics: [{ metrics: [{ name, unit: 'By', gauge: { dataPoints: [{ asDouble: 1, ...point }] } }] }] },
  ],
});
const spansRequest = (span: object) => ({
  resourceSpans: [{ scopeSpans: [{ spans: [{ traceId, spanId, name: 's', ...span }] }] }],
});

const refusedWith = (run: () => unknown, message: string | RegExp): void => {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof OtlpDecodeError);
    assert.equal(error.httpStatus, 400);
    if (typeof message === 'string') assert.equal(error.message, message);
    else assert.match(error.message, message);
    return true;
  });
};

const RL = '$.resourceLogs[0]';
const LOG0 = `${RL}.scopeLogs[0].logRecords[0]`;
/** Every place a string sits, with its path in the JSON refusal. */
const surrogateCases: Array<[string, OtlpSignal, (bad: string) => object, string]> = [
  ['a log body', 'logs', (bad) => logsRequest([], 's', { body: { stringValue: bad } }), `${LOG0}.body.stringValue`],
  [
    'a log attribute value',
    'logs',
    (bad) => logsRequest([], 's', { attributes: [kv('k', bad)] }),
    `${LOG0}.attributes[0].value.stringValue`,
  ],
  [
    'a log attribute key',
    'logs',
    (bad) => logsRequest([], 's', { attributes: [kv(bad, 'v')] }),
    `${LOG0}.attributes[0].key`,
  ],
  [
    'a value in an array attribute',
    'logs',
    (bad) =>
      logsRequest([], 's', { attributes: [{ key: 'k', value: { arrayValue: { values: [{ stringValue: bad }] } } }] }),
    `${LOG0}.attributes[0].value.arrayValue.values[0].stringValue`,
  ],
  [
    'a key in a kvlist body',
    'logs',
    (bad) => logsRequest([], 's', { body: { kvlistValue: { values: [kv(bad, 'v')] } } }),
    `${LOG0}.body.kvlistValue.values[0].key`,
  ],
  ['a severity text', 'logs', (bad) => logsRequest([], 's', { severityText: bad }), `${LOG0}.severityText`],
  ['a scope name', 'logs', (bad) => logsRequest([], bad, {}), `${RL}.scopeLogs[0].scope.name`],
  [
    'a resource attribute value',
    'logs',
    (bad) => logsRequest([kv('service.name', bad)], 's', {}),
    `${RL}.resource.attributes[0].value.stringValue`,
  ],
  [
    'a resource attribute key',
    'logs',
    (bad) => logsRequest([kv(bad, 'v')], 's', {}),
    `${RL}.resource.attributes[0].key`,
  ],
  [
    'a metric name',
    'metrics',
    (bad) => metricsRequest(bad, {}),
    '$.resourceMetrics[0].scopeMetrics[0].metrics[0].name',
  ],
  [
    'a metric point attribute',
    'metrics',
    (bad) => metricsRequest('m', { attributes: [kv('k', bad)] }),
    '$.resourceMetrics[0].scopeMetrics[0].metrics[0].gauge.dataPoints[0].attributes[0].value.stringValue',
  ],
  ['a span name', 'traces', (bad) => spansRequest({ name: bad }), '$.resourceSpans[0].scopeSpans[0].spans[0].name'],
  [
    'a span status message',
    'traces',
    (bad) => spansRequest({ status: { message: bad } }),
    '$.resourceSpans[0].scopeSpans[0].spans[0].status.message',
  ],
];

describe('issue 9: invalid Unicode is refused', () => {
  for (const [where, signal, request, path] of surrogateCases) {
    for (const [bad, unit] of [
      ['a\ud800b', 'D800'],
      ['a\udc00b', 'DC00'],
    ]) {
      it(`a lone surrogate U+${unit} in ${where}`, () => {
        const { json, protobuf } = bodies(signal, request(bad));
        refusedWith(
          () => decoders[signal](json, 'json'),
          `${path}: not valid Unicode (a lone surrogate U+${unit} at index 1)`,
        );
        // protobufjs encodes a lone surrogate as bytes that are not UTF-8, and refuses to decode them.
        refusedWith(
          () => decoders[signal](protobuf, 'protobuf'),
          /^body is not a valid Export\w+ServiceRequest protobuf message: .*not valid for encoding utf-8/,
        );
      });
    }
  }

  it('keeps surrogate pairs (characters beyond the BMP)', () => {
    for (const contentType of ['json', 'protobuf'] as const) {
      const groups = decodeLogs(
        bodies('logs', logsRequest([], 's', { body: { stringValue: 'a😀b' } }))[contentType],
        contentType,
      );
      assert.equal(groups[0].records[0].body, 'a😀b');
    }
  });

  it('refuses invalid UTF-8 bytes inside a protobuf string', () => {
    // LogRecord.body(5) = AnyValue.string_value(1) = 61 FF 62 ("a", an invalid byte, "b")
    const record = Buffer.from([0x2a, 0x05, 0x0a, 0x03, 0x61, 0xff, 0x62]);
    const wrap = (field: number, bytes: Buffer): Buffer =>
      Buffer.concat([Buffer.from([(field << 3) | 2, bytes.length]), bytes]);
    refusedWith(() => decodeLogs(wrap(1, wrap(2, wrap(2, record))), 'protobuf'), /not valid for encoding utf-8/);
  });
});

const LOG = '$.resourceLogs[0].scopeLogs[0].logRecords[0]';
const POINT = '$.resourceMetrics[0].scopeMetrics[0].metrics[0].gauge.dataPoints[0]';
const SPAN = '$.resourceSpans[0].scopeSpans[0].spans[0]';
const timeFields: Array<[OtlpSignal, string, string, (time: string) => object]> = [
  ['logs', LOG, 'timeUnixNano', (t) => logsRequest([], 's', { timeUnixNano: t })],
  ['logs', LOG, 'observedTimeUnixNano', (t) => logsRequest([], 's', { observedTimeUnixNano: t })],
  ['metrics', POINT, 'timeUnixNano', (t) => metricsRequest('m', { timeUnixNano: t })],
  ['metrics', POINT, 'startTimeUnixNano', (t) => metricsRequest('m', { startTimeUnixNano: t })],
  ['traces', SPAN, 'startTimeUnixNano', (t) => spansRequest({ startTimeUnixNano: t })],
  ['traces', SPAN, 'endTimeUnixNano', (t) => spansRequest({ endTimeUnixNano: t })],
];

describe('issue 9: timestamps past 2262-04-11T23:47:16Z are refused', () => {
  const outOfRange = [(1n << 64n) - 1n, (1n << 63n) - 1n, (1n << 63n) - 2n, MAX_TIME_UNIX_NANO];
  for (const [signal, path, name, request] of timeFields) {
    for (const contentType of ['json', 'protobuf'] as const) {
      it(`${signal} ${name} (${contentType})`, () => {
        for (const time of outOfRange) {
          refusedWith(
            () => decoders[signal](bodies(signal, request(String(time)))[contentType], contentType),
            `${path}.${name}: ${time} is out of range: timestamps must be nanoseconds since 1970 before 2262-04-11T23:47:16Z (below ${MAX_TIME_UNIX_NANO})`,
          );
        }
        const last = MAX_TIME_UNIX_NANO - 1n;
        const [group] = decoders[signal](bodies(signal, request(String(last)))[contentType], contentType) as Array<{
          records: object[];
        }>;
        assert.ok(Object.values(group.records[0]).includes(last), `${last} is accepted`);
      });
    }
  }
});

describe('issue 9: NUL in a resource attribute is refused (Postgres cannot store it)', () => {
  const RES = '$.resourceLogs[0].resource.attributes';
  const cases: Array<[string, object[], string]> = [
    [
      'a value',
      [kv('host.name', 'a\u0000b')],
      `${RES}["host.name"]: a resource attribute may not contain NUL (U+0000)`,
    ],
    ['a key', [kv('a\u0000b', 'v')], `${RES}: a resource attribute key may not contain NUL (U+0000)`],
    [
      'an array item',
      [{ key: 'k', value: { arrayValue: { values: [{ stringValue: 'x' }, { stringValue: '\u0000' }] } } }],
      `${RES}["k"][1]: a resource attribute may not contain NUL (U+0000)`,
    ],
    [
      'a kvlist key',
      [{ key: 'k', value: { kvlistValue: { values: [kv('\u0000', 'v')] } } }],
      `${RES}["k"]: a resource attribute key may not contain NUL (U+0000)`,
    ],
  ];
  for (const [where, attributes, message] of cases) {
    for (const contentType of ['json', 'protobuf'] as const) {
      it(`in ${where} (${contentType})`, () =>
        refusedWith(
          () => decodeLogs(bodies('logs', logsRequest(attributes, 's', {}))[contentType], contentType),
          message,
        ));
    }
  }

  it('NUL in a record stays: DuckDB stores it', () => {
    const groups = decodeLogs(
      bodies('logs', logsRequest([], 's', { body: { stringValue: 'a\u0000b' }, attributes: [kv('k', '\u0000')] })).json,
      'json',
    );
    assert.equal(groups[0].records[0].body, 'a\u0000b');
    assert.deepEqual(groups[0].records[0].attributes, { k: '\u0000' });
  });
});
