// OTLP traces decoding: spans from the real OpenTelemetry JS SDK (protobuf and JSON), then OTLP/JSON variants.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { decodeTraces, type OtlpSpan, type ResourceGroup } from '../../src/ingestion/otlp/index.js';
import { jsonBody, sdkSpans, snakeCaseJson } from './otel-sdk.js';

const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
const rootId = '00f067aa0ba902b7';
const childId = 'b7ad6b7169203331';

async function sdkBodies() {
  return sdkSpans({ 'service.name': 'api' }, { traceIds: [traceId], spanIds: [rootId, childId] }, (tracer) => {
    const t = tracer('api.http', '0.9.1');
    const root = t.startSpan('GET /orders', {
      kind: SpanKind.SERVER,
      startTime: [1_700_000_000, 0],
      attributes: { 'http.status_code': 500 },
    });
    const child = t.startSpan(
      'SELECT orders',
      { kind: SpanKind.CLIENT, startTime: [1_700_000_000, 250] },
      trace.setSpan(ROOT_CONTEXT, root),
    );
    child.addEvent('retry', [1_700_000_000, 300]);
    child.addEvent('retry', [1_700_000_000, 400]);
    child.setStatus({ code: SpanStatusCode.ERROR, message: 'deadlock' });
    child.end([1_700_000_000, 999_999_999]);
    root.setStatus({ code: SpanStatusCode.OK });
    root.end([1_700_000_001, 1]);
  });
}

const scope = { name: 'api.http', version: '0.9.1' };
const expected: ResourceGroup<OtlpSpan>[] = [
  {
    resource: { attributes: { 'service.name': 'api' }, droppedAttributesCount: 0 },
    schemaUrl: '',
    records: [
      {
        traceId,
        spanId: childId,
        parentSpanId: rootId,
        name: 'SELECT orders',
        kind: 3,
        startTimeUnixNano: 1_700_000_000_000_000_250n,
        endTimeUnixNano: 1_700_000_000_999_999_999n,
        attributes: {},
        statusCode: 2,
        statusMessage: 'deadlock',
        events: 2,
        scope,
      },
      {
        traceId,
        spanId: rootId,
        parentSpanId: null,
        name: 'GET /orders',
        kind: 2,
        startTimeUnixNano: 1_700_000_000_000_000_000n,
        endTimeUnixNano: 1_700_000_001_000_000_001n,
        attributes: { 'http.status_code': 500 },
        statusCode: 1,
        statusMessage: '',
        events: 0,
        scope,
      },
    ],
  },
];

describe('decodeTraces on SDK bodies', () => {
  for (const contentType of ['protobuf', 'json'] as const) {
    it(`decodes the SDK's ${contentType} body exactly (spans in the order they ended)`, async () => {
      const sdk = await sdkBodies();
      assert.deepEqual(decodeTraces(sdk[contentType], contentType), expected);
    });
  }

  it('decodes the same spans from snake_case OTLP/JSON', async () => {
    const sdk = await sdkBodies();
    assert.deepEqual(decodeTraces(snakeCaseJson(sdk.json), 'json'), expected);
  });
});

describe('decodeTraces on hand-written OTLP/JSON', () => {
  it('reads enum names, and an all-zero or empty parent as a root span', () => {
    const span = (extra: Record<string, unknown>) => ({ traceId, spanId: rootId, name: 'x', ...extra });
    const [group] = decodeTraces(
      jsonBody({
        resourceSpans: [
          {
            scopeSpans: [
              {
                spans: [
                  span({
                    kind: 'SPAN_KIND_PRODUCER',
                    status: { code: 'STATUS_CODE_ERROR', message: 'm' },
                    parentSpanId: '0000000000000000',
                  }),
                  span({ parentSpanId: '', events: [{}, {}, {}] }),
                ],
              },
            ],
          },
        ],
      }),
      'json',
    );
    assert.deepEqual(
      group.records.map((s) => [s.kind, s.statusCode, s.statusMessage, s.parentSpanId, s.events]),
      [
        [4, 2, 'm', null, 0],
        [0, 0, '', null, 3],
      ],
    );
  });
});
