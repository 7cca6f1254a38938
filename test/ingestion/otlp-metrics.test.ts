// OTLP metrics decoding: SDK counters, up-down counters, gauges, histograms and exponential histograms
// (protobuf and JSON), then OTLP/JSON summaries and data point corner cases.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ValueType } from '@opentelemetry/api';
import { decodeMetrics, type OtlpMetricPoint } from '../../src/ingestion/otlp/index.js';
import { jsonBody, nanos, sdkMetrics, snakeCaseJson } from './otel-sdk.js';

async function sdkBodies() {
  return sdkMetrics({ 'service.name': 'shop' }, (meter) => {
    const m = meter('shop.metrics', '2.0.0');
    const requests = m.createCounter('requests', {
      valueType: ValueType.INT,
      unit: '{request}',
      description: 'Handled requests',
    });
    requests.add(3, { route: '/a' });
    requests.add(4, { route: '/a' });
    requests.add(1, { route: '/b' });
    const queue = m.createUpDownCounter('queue.depth', { valueType: ValueType.DOUBLE });
    queue.add(2.5);
    queue.add(-1);
    m.createGauge('temperature', { unit: 'Cel' }).record(21.5, { room: 'lab' });
    const latency = m.createHistogram('latency', { unit: 'ms', advice: { explicitBucketBoundaries: [10, 100] } });
    for (const v of [5, 50, 500]) latency.record(v);
    const size = m.createHistogram('exp.size', { unit: 'By' });
    for (const v of [1, 2, 4]) size.record(v);
  });
}

type Expected = Omit<OtlpMetricPoint, 'timeUnixNano' | 'startTimeUnixNano' | 'scope'>;
const scalar = { count: null, sum: null, min: null, max: null };
const expected: Expected[] = [
  {
    name: 'exp.size',
    unit: 'By',
    description: '',
    kind: 'exponential_histogram',
    value: null,
    count: 3,
    sum: 7,
    min: 1,
    max: 4,
    attributes: {},
  },
  {
    name: 'latency',
    unit: 'ms',
    description: '',
    kind: 'histogram',
    value: null,
    count: 3,
    sum: 555,
    min: 5,
    max: 500,
    attributes: {},
  },
  { name: 'queue.depth', unit: '', description: '', kind: 'sum', value: 1.5, ...scalar, attributes: {} },
  {
    name: 'requests',
    unit: '{request}',
    description: 'Handled requests',
    kind: 'sum',
    value: 7,
    ...scalar,
    attributes: { route: '/a' },
  },
  {
    name: 'requests',
    unit: '{request}',
    description: 'Handled requests',
    kind: 'sum',
    value: 1,
    ...scalar,
    attributes: { route: '/b' },
  },
  {
    name: 'temperature',
    unit: 'Cel',
    description: '',
    kind: 'gauge',
    value: 21.5,
    ...scalar,
    attributes: { room: 'lab' },
  },
];

const byNameAndAttributes = (
  a: { name: string; attributes: object },
  b: { name: string; attributes: object },
): number => `${a.name}${JSON.stringify(a.attributes)}`.localeCompare(`${b.name}${JSON.stringify(b.attributes)}`);

describe('decodeMetrics on SDK bodies', () => {
  for (const contentType of ['protobuf', 'json'] as const) {
    it(`decodes the SDK's ${contentType} body to one record per data point`, async () => {
      const sdk = await sdkBodies();
      const groups = decodeMetrics(sdk[contentType], contentType);
      assert.equal(groups.length, 1);
      assert.deepEqual(groups[0].resource, { attributes: { 'service.name': 'shop' }, droppedAttributesCount: 0 });
      const points = [...groups[0].records].sort(byNameAndAttributes);
      assert.deepEqual(
        points.map(({ timeUnixNano: _time, startTimeUnixNano: _start, scope: _scope, ...rest }) => rest),
        expected,
      );
      // Timestamps are the SDK's own, to the nanosecond.
      const sdkPoints = sdk.metrics.scopeMetrics
        .flatMap((s) =>
          s.metrics.flatMap((m) => m.dataPoints.map((p) => ({ name: m.descriptor.name, attributes: p.attributes, p }))),
        )
        .sort(byNameAndAttributes);
      assert.deepEqual(
        points.map((p) => [p.startTimeUnixNano, p.timeUnixNano]),
        sdkPoints.map(({ p }) => [nanos(p.startTime), nanos(p.endTime)]),
      );
      for (const p of points) assert.deepEqual(p.scope, { name: 'shop.metrics', version: '2.0.0' });
    });
  }

  it('decodes the same points from snake_case OTLP/JSON', async () => {
    const sdk = await sdkBodies();
    assert.deepEqual(decodeMetrics(snakeCaseJson(sdk.json), 'json'), decodeMetrics(sdk.protobuf, 'protobuf'));
  });
});

describe('decodeMetrics on hand-written OTLP/JSON', () => {
  const request = (metric: Record<string, unknown>) =>
    jsonBody({ resourceMetrics: [{ scopeMetrics: [{ scope: { name: 's', version: '1' }, metrics: [metric] }] }] });

  it('decodes a summary, with min and max from the 0 and 1 quantiles', () => {
    const [group] = decodeMetrics(
      request({
        name: 'rpc.duration',
        unit: 's',
        summary: {
          data_points: [
            {
              start_time_unix_nano: '1700000000000000000',
              time_unix_nano: '1700000060000000001',
              count: '10',
              sum: 55.5,
              quantile_values: [
                { quantile: 0, value: 0.5 },
                { quantile: 0.5, value: 5 },
                { quantile: 1, value: 12 },
              ],
              attributes: [{ key: 'method', value: { stringValue: 'Get' } }],
            },
            { timeUnixNano: 2, count: 0 },
          ],
        },
      }),
      'json',
    );
    assert.deepEqual(group.records, [
      {
        name: 'rpc.duration',
        unit: 's',
        description: '',
        kind: 'summary',
        timeUnixNano: 1_700_000_060_000_000_001n,
        startTimeUnixNano: 1_700_000_000_000_000_000n,
        value: null,
        count: 10,
        sum: 55.5,
        min: 0.5,
        max: 12,
        attributes: { method: 'Get' },
        scope: { name: 's', version: '1' },
      },
      {
        name: 'rpc.duration',
        unit: 's',
        description: '',
        kind: 'summary',
        timeUnixNano: 2n,
        startTimeUnixNano: 0n,
        value: null,
        count: 0,
        sum: 0,
        min: null,
        max: null,
        attributes: {},
        scope: { name: 's', version: '1' },
      },
    ]);
  });

  it('reads asInt as a string, asDouble specials, and histogram fields left unset as null', () => {
    const gauge = decodeMetrics(
      request({
        name: 'g',
        gauge: {
          dataPoints: [
            { timeUnixNano: '1', asInt: '-3' },
            { timeUnixNano: '2', asDouble: '-Infinity' },
          ],
        },
      }),
      'json',
    )[0].records;
    assert.deepEqual(
      gauge.map((p) => p.value),
      [-3, -Infinity],
    );
    const [histogram] = decodeMetrics(
      request({ name: 'h', histogram: { dataPoints: [{ timeUnixNano: '1', count: '4' }] } }),
      'json',
    )[0].records;
    assert.deepEqual([histogram.count, histogram.sum, histogram.min, histogram.max], [4, null, null, null]);
  });

  it('skips points flagged as having no recorded value, and metrics without data', () => {
    const groups = decodeMetrics(
      jsonBody({
        resourceMetrics: [
          {
            scopeMetrics: [
              {
                metrics: [
                  {
                    name: 'stale',
                    sum: {
                      dataPoints: [
                        { timeUnixNano: '1', flags: 1 },
                        { timeUnixNano: '2', asInt: 9 },
                      ],
                    },
                  },
                  { name: 'nothing' },
                ],
              },
            ],
          },
        ],
      }),
      'json',
    );
    assert.deepEqual(
      groups[0].records.map((p) => [p.name, p.timeUnixNano, p.value]),
      [['stale', 2n, 9]],
    );
  });
});
