// OTLP logs decoding: bodies from the real OpenTelemetry JS SDK (protobuf and JSON), then OTLP/JSON variants.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { SeverityNumber } from '@opentelemetry/api-logs';
import { decodeLogs, type OtlpLogRecord, type ResourceGroup } from '../../src/ingestion/otlp/index.js';
import { jsonBody, nanos, sdkLogs, snakeCaseJson } from './otel-sdk.js';

const traceId = '0af7651916cd43dd8448eb211c80319c';
const spanId = 'b7ad6b7169203331';
const scope = { name: 'checkout', version: '1.2.3' };

async function sdkBodies() {
  return sdkLogs({ 'service.name': 'shop', 'host.name': 'h1', 'process.pid': 4242 }, (logger) => {
    const log = logger('checkout', '1.2.3');
    log.emit({
      timestamp: [1_700_000_000, 123_456_789],
      observedTimestamp: [1_700_000_001, 5],
      severityNumber: SeverityNumber.INFO,
      severityText: 'INFO',
      body: 'order placed',
      attributes: {
        'order.id': 'o-1',
        items: 3,
        total: 12.5,
        paid: true,
        tags: ['a', 'b'],
        raw: new Uint8Array([1, 2, 255]),
      },
      context: trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId, traceFlags: 1 }),
    });
    log.emit({
      timestamp: [1_700_000_002, 0],
      severityNumber: SeverityNumber.ERROR2,
      body: { code: 7, reasons: ['late', null] },
    });
    logger('audit').emit({ timestamp: [1_700_000_003, 999], severityNumber: SeverityNumber.WARN, body: 42 });
  });
}

const expected: ResourceGroup<OtlpLogRecord>[] = [
  {
    resource: {
      attributes: { 'service.name': 'shop', 'host.name': 'h1', 'process.pid': 4242 },
      droppedAttributesCount: 0,
    },
    schemaUrl: '',
    records: [
      {
        timeUnixNano: 1_700_000_000_123_456_789n,
        observedTimeUnixNano: 1_700_000_001_000_000_005n,
        severityNumber: 9,
        severityText: 'INFO',
        body: 'order placed',
        attributes: { 'order.id': 'o-1', items: 3, total: 12.5, paid: true, tags: ['a', 'b'], raw: 'AQL/' },
        traceId,
        spanId,
        scope,
      },
      {
        timeUnixNano: 1_700_000_002_000_000_000n,
        observedTimeUnixNano: 0n, // replaced below by the SDK's own observed time
        severityNumber: 18,
        severityText: '',
        body: '{"code":7,"reasons":["late",null]}',
        attributes: {},
        traceId: null,
        spanId: null,
        scope,
      },
      {
        timeUnixNano: 1_700_000_003_000_000_999n,
        observedTimeUnixNano: 0n,
        severityNumber: 13,
        severityText: '',
        body: '42',
        attributes: {},
        traceId: null,
        spanId: null,
        scope: { name: 'audit', version: '' },
      },
    ],
  },
];

describe('decodeLogs on SDK bodies', () => {
  for (const contentType of ['protobuf', 'json'] as const) {
    it(`decodes the SDK's ${contentType} body exactly`, async () => {
      const sdk = await sdkBodies();
      const want = structuredClone(expected);
      // Records without observedTimestamp get the SDK's clock: take it from the SDK's own records.
      want[0].records[1].observedTimeUnixNano = nanos(sdk.records[1].hrTimeObserved);
      want[0].records[2].observedTimeUnixNano = nanos(sdk.records[2].hrTimeObserved);
      assert.deepEqual(decodeLogs(sdk[contentType], contentType), want);
    });
  }

  it('decodes the same records from snake_case OTLP/JSON', async () => {
    const sdk = await sdkBodies();
    assert.deepEqual(decodeLogs(snakeCaseJson(sdk.json), 'json'), decodeLogs(sdk.protobuf, 'protobuf'));
  });
});

describe('decodeLogs on hand-written OTLP/JSON', () => {
  const request = (record: Record<string, unknown>, resource: Record<string, unknown> = {}) =>
    jsonBody({ resourceLogs: [{ resource, scopeLogs: [{ logRecords: [record] }] }] });
  const only = (groups: ResourceGroup<OtlpLogRecord>[]): OtlpLogRecord => groups[0].records[0];

  it('reads 64-bit ints as strings or numbers, enums by number or name', () => {
    const record = only(
      decodeLogs(
        request({
          timeUnixNano: '1700000000123456789',
          observedTimeUnixNano: 1_700_000_000,
          severityNumber: 'SEVERITY_NUMBER_WARN3',
          attributes: [
            { key: 'big', value: { intValue: '9007199254740993' } },
            { key: 'neg', value: { intValue: '-5' } },
            { key: 'nan', value: { doubleValue: 'NaN' } },
            {
              key: 'nested',
              value: {
                kvlistValue: { values: [{ key: 'k', value: { arrayValue: { values: [{ boolValue: false }, {}] } } }] },
              },
            },
            { key: 'empty' },
          ],
        }),
        'json',
      ),
    );
    assert.equal(record.timeUnixNano, 1_700_000_000_123_456_789n);
    assert.equal(record.observedTimeUnixNano, 1_700_000_000n);
    assert.equal(record.severityNumber, 15);
    assert.deepEqual(record.attributes, {
      big: '9007199254740993',
      neg: -5,
      nan: Number.NaN,
      nested: { k: [false, null] },
      empty: null,
    });
  });

  it('lowercases hex ids and treats empty or all-zero ids as absent', () => {
    const upper = only(decodeLogs(request({ traceId: traceId.toUpperCase(), spanId: spanId.toUpperCase() }), 'json'));
    assert.deepEqual([upper.traceId, upper.spanId], [traceId, spanId]);
    const empty = only(decodeLogs(request({ traceId: '', spanId: '' }), 'json'));
    assert.deepEqual([empty.traceId, empty.spanId], [null, null]);
    const zeros = only(decodeLogs(request({ traceId: '0'.repeat(32), spanId: '0'.repeat(16) }), 'json'));
    assert.deepEqual([zeros.traceId, zeros.spanId], [null, null]);
  });

  it('gives defaults for an empty record and keeps resource details', () => {
    const groups = decodeLogs(
      jsonBody({
        resourceLogs: [
          {
            resource: { attributes: [{ key: 'service.name', value: { stringValue: 'a' } }], droppedAttributesCount: 2 },
            schemaUrl: 'https://opentelemetry.io/schemas/1.26.0',
            scopeLogs: [{ scope: { name: 's' }, logRecords: [{}] }],
          },
          { scopeLogs: [] },
        ],
      }),
      'json',
    );
    assert.deepEqual(groups, [
      {
        resource: { attributes: { 'service.name': 'a' }, droppedAttributesCount: 2 },
        schemaUrl: 'https://opentelemetry.io/schemas/1.26.0',
        records: [
          {
            timeUnixNano: 0n,
            observedTimeUnixNano: 0n,
            severityNumber: 0,
            severityText: '',
            body: '',
            attributes: {},
            traceId: null,
            spanId: null,
            scope: { name: 's', version: '' },
          },
        ],
      },
      { resource: { attributes: {}, droppedAttributesCount: 0 }, schemaUrl: '', records: [] },
    ]);
  });

  it('renders bodies: strings as is, scalars as literals, bytes and structures as JSON', () => {
    const bodies = [
      [{ stringValue: 'plain "text"' }, 'plain "text"'],
      [{ boolValue: true }, 'true'],
      [{ doubleValue: 0.25 }, '0.25'],
      [{ intValue: '12' }, '12'],
      [{ bytesValue: 'AQL/' }, '"AQL/"'],
      [{ arrayValue: { values: [{ intValue: 1 }, { stringValue: 'x' }] } }, '[1,"x"]'],
      [{ kvlistValue: {} }, '{}'],
      [{}, ''],
    ] as const;
    for (const [body, text] of bodies)
      assert.equal(only(decodeLogs(request({ body }), 'json')).body, text, JSON.stringify(body));
  });

  it('keeps the last of duplicate attribute keys and a __proto__ key as data', () => {
    const record = only(
      decodeLogs(
        request({
          attributes: [
            { key: 'a', value: { intValue: 1 } },
            { key: 'a', value: { intValue: 2 } },
            { key: '__proto__', value: { stringValue: 'p' } },
          ],
        }),
        'json',
      ),
    );
    assert.equal(record.attributes.a, 2);
    assert.equal(Object.getOwnPropertyDescriptor(record.attributes, '__proto__')?.value, 'p');
    assert.equal(Object.getPrototypeOf(record.attributes), Object.prototype);
  });

  it('accepts an empty request', () => {
    assert.deepEqual(decodeLogs(jsonBody({}), 'json'), []);
    assert.deepEqual(decodeLogs(new Uint8Array(0), 'protobuf'), []);
  });
});
