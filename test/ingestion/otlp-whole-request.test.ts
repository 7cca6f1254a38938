// Issue 9, item 5: a request is stored whole or not at all, and a client's mistake anywhere in it (first or
// last resource; resource attribute key or value, scope, record) is a 400 with a message, never a 500.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import protobuf from 'protobufjs';
import { exportRequestTypes } from '../../src/ingestion/otlp/otlp-proto.js';
import type { OtlpSignal } from '../../src/ingestion/otlp/index.js';
import { readerKey, useOrrery } from '../support/orrery-process.js';

const traceId = '0af7651916cd43dd8448eb211c80319c';
const spanId = 'b7ad6b7169203331';
const levels = {
  logs: ['resourceLogs', 'scopeLogs', 'logRecords'],
  metrics: ['resourceMetrics', 'scopeMetrics', 'metrics'],
  traces: ['resourceSpans', 'scopeSpans', 'spans'],
} as const;
const goodRecord = (signal: OtlpSignal, i: number): Record<string, unknown> =>
  signal === 'logs'
    ? { timeUnixNano: String(1_700_000_000_000_000_000n + BigInt(i)), body: { stringValue: `record ${i}` } }
    : signal === 'metrics'
      ? { name: `m${i}`, gauge: { dataPoints: [{ timeUnixNano: '1700000000000000000', asDouble: i }] } }
      : {
          traceId,
          spanId: spanId.slice(0, 15) + String(i),
          name: `span ${i}`,
          startTimeUnixNano: '1700000000000000000',
        };
const badRecord = (signal: OtlpSignal): Record<string, unknown> =>
  signal === 'logs'
    ? { timeUnixNano: '18446744073709551615' }
    : signal === 'metrics'
      ? { name: 'm', gauge: { dataPoints: [{ timeUnixNano: '9223372036854775807', asDouble: 1 }] } }
      : { traceId, spanId, name: 's', endTimeUnixNano: '9223372036854775807' };

/** A good record with one attribute (on the data point, for metrics). */
function withAttribute(signal: OtlpSignal, attribute: object): Record<string, unknown> {
  const record = goodRecord(signal, 9);
  if (signal !== 'metrics') return { ...record, attributes: [attribute] };
  return {
    name: 'm9',
    gauge: { dataPoints: [{ timeUnixNano: '1700000000000000000', asDouble: 9, attributes: [attribute] }] },
  };
}

interface ResourceSpec {
  attributes?: object[];
  scope?: object;
  record?: Record<string, unknown>;
}

function request(signal: OtlpSignal, resources: ResourceSpec[], service = 'svc'): object {
  const [r, s, rec] = levels[signal];
  return {
    [r]: resources.map((spec, i) => ({
      resource: { attributes: spec.attributes ?? [{ key: 'service.name', value: { stringValue: `${service}${i}` } }] },
      [s]: [{ scope: spec.scope ?? { name: 'lib' }, [rec]: [spec.record ?? goodRecord(signal, i)] }],
    })),
  };
}

/** The one mistake each case puts in one resource of the request. */
const mistakes: Array<[string, (signal: OtlpSignal) => ResourceSpec, RegExp]> = [
  [
    'NUL in a resource attribute value',
    () => ({ attributes: [{ key: 'host.name', value: { stringValue: 'h\u0000' } }] }),
    /resource\.attributes\["host\.name"\]: a resource attribute may not contain NUL/,
  ],
  [
    'NUL in a resource attribute key',
    () => ({ attributes: [{ key: 'host\u0000name', value: { stringValue: 'h' } }] }),
    /resource\.attributes: a resource attribute key may not contain NUL/,
  ],
  [
    'a lone surrogate in a resource attribute',
    () => ({ attributes: [{ key: 'host.name', value: { stringValue: '\ud800' } }] }),
    /resource\.attributes\[0\]\.value\.stringValue: not valid Unicode/,
  ],
  ['a scope name that is a number', () => ({ scope: { name: 5 } }), /scope\.name: expected a string, got 5/],
  ['a record time out of range', (signal) => ({ record: badRecord(signal) }), /[tT]imeUnixNano: \d+ is out of range/],
  [
    'a lone surrogate in a record attribute',
    (signal) => ({ record: withAttribute(signal, { key: 'k', value: { stringValue: 'x\udfff' } }) }),
    /attributes\[0\]\.value\.stringValue: not valid Unicode/,
  ],
];

const keys = JSON.stringify([
  { name: 'admin', key: 'admin-key-0123' },
  { ...readerKey, audiences: ['public'] },
]);

describe('issue 9 item 5: OTLP requests are stored whole or not at all', () => {
  const fixture = useOrrery({ MICROMEGAS_API_KEYS: keys });
  const post = async (
    signal: OtlpSignal,
    body: Uint8Array,
    contentType: string,
  ): Promise<{ status: number; body: Buffer }> => {
    const response = await fetch(`http://127.0.0.1:${fixture.orrery.httpPort}/v1/${signal}`, {
      method: 'POST',
      headers: { 'content-type': contentType, authorization: `Bearer ${readerKey.key}` },
      body: new Uint8Array(body),
    });
    return { status: response.status, body: Buffer.from(await response.arrayBuffer()) };
  };
  const stored = async (): Promise<Record<string, number>> => {
    const { rows } = await fixture.orrery.metadata.query(
      `SELECT (SELECT count(*) FROM processes)::int AS processes, (SELECT count(*) FROM streams)::int AS streams,
              (SELECT count(*) FROM blocks)::int AS blocks, (SELECT count(DISTINCT payload_file) FROM blocks)::int AS named`,
    );
    // Through the store, so the s3:// pass counts the same objects; those holding bytes (the one a local store
    // reserves for the next group's payloads is empty until that group writes it).
    let objects = 0;
    for (const key of await fixture.orrery.store.list('blobs/'))
      if ((await fixture.orrery.store.size(key)) !== 0) objects++;
    return { ...rows[0], objects };
  };

  for (const signal of ['logs', 'metrics', 'traces'] as const) {
    for (const [what, mistake, message] of mistakes) {
      for (const position of ['first', 'last'] as const) {
        it(`${signal}: ${what} in the ${position} of three resources is a 400 and stores nothing`, async () => {
          const specs: ResourceSpec[] = [{}, {}, {}];
          specs[position === 'first' ? 0 : 2] = mistake(signal);
          const body = Buffer.from(JSON.stringify(request(signal, specs)));
          const before = await stored();
          const answer = await post(signal, body, 'application/json');
          assert.equal(answer.status, 400);
          const index = position === 'first' ? 0 : 2;
          const status = JSON.parse(answer.body.toString()) as { message: string };
          assert.match(status.message, new RegExp(`^\\$\\.${levels[signal][0]}\\[${index}\\]`));
          assert.match(status.message, message);
          assert.deepEqual(await stored(), before);
        });
      }
    }

    it(`${signal}: the same mistakes sent as protobuf are a 400 (google.rpc.Status) and store nothing`, async () => {
      const type = exportRequestTypes[signal];
      const Status = new protobuf.Type('Status')
        .add(new protobuf.Field('code', 1, 'int32'))
        .add(new protobuf.Field('message', 2, 'string'));
      for (const [, mistake, message] of mistakes.filter(([what]) => !what.includes('scope name'))) {
        const object = JSON.parse(JSON.stringify(request(signal, [{}, mistake(signal)])), (key, value) =>
          (key === 'traceId' || key === 'spanId') && typeof value === 'string'
            ? Buffer.from(value, 'hex').toString('base64')
            : value,
        );
        const before = await stored();
        const answer = await post(signal, type.encode(type.fromObject(object)).finish(), 'application/x-protobuf');
        assert.equal(answer.status, 400);
        const text = String((Status.decode(answer.body) as unknown as { message: string }).message);
        // A lone surrogate is not UTF-8 once encoded, which protobuf decoding itself refuses.
        assert.ok(message.test(text) || /not valid for encoding utf-8/.test(text), text);
        assert.deepEqual(await stored(), before);
      }
    });

    it(`${signal}: three good resources are stored, once, however often the request is retried`, async () => {
      const body = Buffer.from(JSON.stringify(request(signal, [{}, {}, {}], 'retried')));
      const before = await stored();
      for (let i = 0; i < 2; i++) assert.equal((await post(signal, body, 'application/json')).status, 200);
      const after = await stored();
      assert.equal(after.blocks - before.blocks, 3);
      assert.equal(after.streams - before.streams, 3);
      // One object holds the three payloads, and the blocks name it. The retry wrote its own, which no block
      // names (its rows were there): the orphan sweep deletes it.
      assert.equal(after.named - before.named, 1);
      assert.equal(after.objects - before.objects, 2);
    });
  }

  it('requests naming the same resources in opposite orders, at once, are all stored (rows are written in one order)', async () => {
    const pair = (i: number, reversed: boolean): Uint8Array => {
      const resources = [0, 1].map((r) => ({
        attributes: [{ key: 'service.name', value: { stringValue: `order${i}_${r}` } }],
        record: goodRecord('logs', r + (reversed ? 10 : 0)),
      }));
      return Buffer.from(JSON.stringify(request('logs', reversed ? resources.reverse() : resources)));
    };
    const before = await stored();
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => [
        post('logs', pair(i, false), 'application/json'),
        post('logs', pair(i, true), 'application/json'),
      ]).flat(),
    );
    assert.deepEqual(
      answers.map((a) => a.status),
      answers.map(() => 200),
      answers.map((a) => a.body.toString()).join('\n'),
    );
    const after = await stored();
    assert.equal(after.processes - before.processes, 40);
    assert.equal(after.blocks - before.blocks, 80);
  });
});
