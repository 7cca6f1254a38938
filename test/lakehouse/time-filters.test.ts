// Issue 11, item 1: every natural way of writing a time bound works against every time column
// of the view sets, keeps nanoseconds, and gives the same answer as an RFC 3339 string. Real
// data (OTLP in, materialized by the admin procedure), real Flight SQL client over a socket.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import {
  Table,
  TimestampMicrosecond,
  TimestampNanosecond,
  Utf8,
  makeData,
  makeVector,
  vectorFromArray,
  type DataType,
} from 'apache-arrow';
import { FlightSql, packAny, type TestFlightClient } from '../support/flight-client.js';
import { logsRequest, postOtlp } from '../support/otlp.js';
import { adminKey, useOrrery } from '../support/orrery-process.js';

const minute = 60_000_000_000n;
const nowNs = BigInt(Date.now()) * 1_000_000n;
/** The bound the fixed-instant forms write: 45 minutes ago, with nanosecond digits. */
const pivot = (nowNs / 1_000_000_000n) * 1_000_000_000n - 45n * minute + 123_456_789n;

/** RFC 3339 with nine fractional digits, in UTC or at an offset (minutes east). */
function rfc3339(nanos: bigint, offsetMinutes = 0): string {
  const shifted = nanos + BigInt(offsetMinutes) * minute;
  const seconds = new Date(Number(shifted / 1_000_000_000n) * 1000).toISOString().slice(0, 19);
  const fraction = String(shifted % 1_000_000_000n).padStart(9, '0');
  if (offsetMinutes === 0) return `${seconds}.${fraction}Z`;
  const sign = offsetMinutes > 0 ? '+' : '-';
  const abs = Math.abs(offsetMinutes);
  return `${seconds}.${fraction}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}

/** Every time column of the view sets, as `view.column`. */
const timeColumns = [
  'log_entries.time',
  'log_entries.insert_time',
  'measures.time',
  'spans.begin',
  'spans.end',
  'blocks.begin_time',
  'blocks.end_time',
  'blocks.insert_time',
  'processes.start_time',
  'processes.insert_time',
  'streams.insert_time',
  'log_stats.time_bin',
];

/** Ways of writing the instant `pivot`; each must select what the RFC 3339 string selects. */
const fixedBounds: Record<string, string> = {
  'TIMESTAMP literal': `TIMESTAMP '${rfc3339(pivot).replace('T', ' ').replace('Z', '')}'`,
  'TIMESTAMPTZ literal': `TIMESTAMPTZ '${rfc3339(pivot)}'`,
  'TIMESTAMPTZ literal at an offset': `TIMESTAMPTZ '${rfc3339(pivot, 120)}'`,
  'string at an offset': `'${rfc3339(pivot, -330)}'`,
  'CAST AS TIMESTAMP WITH TIME ZONE': `CAST('${rfc3339(pivot)}' AS TIMESTAMP WITH TIME ZONE)`,
  '::timestamptz': `'${rfc3339(pivot)}'::timestamptz`,
  '::TIMESTAMP_NS': `'${rfc3339(pivot)}'::TIMESTAMP_NS`,
  'to_timestamp(text)': `to_timestamp('${rfc3339(pivot)}')`,
  'to_timestamp_nanos(integer)': `to_timestamp_nanos(${pivot})`,
  'make_timestamp_ns(integer)': `make_timestamp_ns(${pivot})`,
  'arrow_cast(text, UTC)': `arrow_cast('${rfc3339(pivot)}', 'Timestamp(Nanosecond, Some("UTC"))')`,
  'arrow_cast(text, +00:00)': `arrow_cast('${rfc3339(pivot)}', 'Timestamp(Nanosecond, Some("+00:00"))')`,
  'arrow_cast(nanos, no zone)': `arrow_cast(to_timestamp_nanos(${pivot}), 'Timestamp(Nanosecond, None)')`,
};

/** Ways of writing "an hour ago"; each must select what the RFC 3339 string of an hour ago selects. */
const relativeBounds: Record<string, string> = {
  "now() - INTERVAL '1 hour'": "now() - INTERVAL '1 hour'",
  'now() - INTERVAL 1 HOUR': 'now() - INTERVAL 1 HOUR',
  'current_timestamp - INTERVAL': "current_timestamp - INTERVAL '1 hour'",
  'transaction_timestamp()': "transaction_timestamp() - INTERVAL '60 minutes'",
  'arrow_cast(now(), UTC)': `arrow_cast(now(), 'Timestamp(Nanosecond, Some("UTC"))') - INTERVAL '1 hour'`,
  'to_timestamp(epoch seconds)': 'to_timestamp(epoch(now()) - 3600)',
  'now()::TIMESTAMPTZ': "now()::TIMESTAMPTZ - INTERVAL '1 hour'",
};

describe('issue 11: time filters', () => {
  const fixture = useOrrery({}, 'serve');
  let admin: TestFlightClient;
  const count = async (sql: string): Promise<number> => Number((await admin.query(sql)).getChildAt(0)!.get(0));
  const where = (column: string, condition: string): string => {
    const [view, name] = column.split('.');
    return `SELECT count(*) FROM ${view} WHERE ${condition.replaceAll('$c', `"${name}"`)}`;
  };

  before(async () => {
    admin = fixture.admin;
    const port = fixture.orrery.httpPort;
    const times = [pivot - 40n * minute, pivot - 1n, pivot, pivot + 1n, pivot + 20n * minute];
    const logs = times.map((time, i) => ({ time, severity: 9, body: `event ${i}`, target: 'filters' }));
    assert.equal(
      (await postOtlp(port, 'logs', adminKey.key, logsRequest({ 'service.name': 'filters' }, logs))).status,
      200,
    );
    const points = times.map((t, i) => ({ timeUnixNano: String(t), asDouble: i }));
    const metrics = {
      resourceMetrics: [
        { resource: { attributes: [] }, scopeMetrics: [{ metrics: [{ name: 'm', gauge: { dataPoints: points } }] }] },
      ],
    };
    assert.equal((await postOtlp(port, 'metrics', adminKey.key, JSON.stringify(metrics))).status, 200);
    const spans = times.map((t, i) => ({
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: `b7ad6b71692033${String(i).padStart(2, '0')}`,
      name: 's',
      startTimeUnixNano: String(t),
      endTimeUnixNano: String(t + 1000n),
      kind: 1,
    }));
    const traces = { resourceSpans: [{ resource: { attributes: [] }, scopeSpans: [{ spans }] }] };
    assert.equal((await postOtlp(port, 'traces', adminKey.key, JSON.stringify(traces))).status, 200);
    const begin = new Date(Date.now() - 3_600_000).toISOString();
    const end = new Date(Date.now() + 120_000).toISOString();
    for (const view of ['blocks', 'processes', 'streams', 'log_entries', 'measures', 'spans', 'log_stats']) {
      await admin.query(`SELECT * FROM materialize_partitions('${view}', '${begin}', '${end}', 3600)`);
    }
  });

  it('the data is there and a nanosecond moves the bound', async () => {
    assert.equal(await count(where('log_entries.time', `$c >= '${rfc3339(pivot)}'`)), 3);
    assert.equal(await count(where('log_entries.time', `$c >= '${rfc3339(pivot + 1n)}'`)), 2);
    assert.equal(await count(where('log_entries.time', `$c > TIMESTAMPTZ '${rfc3339(pivot - 1n)}'`)), 3);
    assert.equal(await count(where('spans.begin', `$c >= TIMESTAMP '${rfc3339(pivot + 1n).replace('Z', '')}'`)), 2);
    assert.equal(await count(where('log_entries.time', "$c >= now() - INTERVAL '1 hour'")), 4);
  });

  for (const column of timeColumns) {
    it(`${column}: every way of writing an instant selects the same rows`, async () => {
      const expected = await count(where(column, `$c >= '${rfc3339(pivot)}'`));
      const answers: Record<string, number> = {};
      for (const [form, bound] of Object.entries(fixedBounds)) {
        answers[form] = await count(where(column, `$c >= ${bound}`));
        answers[`${form}, reversed`] = await count(where(column, `${bound} <= $c`));
      }
      answers.BETWEEN = await count(
        where(column, `$c BETWEEN TIMESTAMPTZ '${rfc3339(pivot)}' AND now() + INTERVAL '1 day'`),
      );
      for (const [form, answer] of Object.entries(answers)) assert.equal(answer, expected, `${form} on ${column}`);
    });

    it(`${column}: every way of writing "an hour ago" selects the same rows`, async () => {
      const expected = await count(where(column, `$c >= '${new Date(Date.now() - 3_600_000).toISOString()}'`));
      for (const [form, bound] of Object.entries(relativeBounds)) {
        assert.equal(await count(where(column, `$c >= ${bound}`)), expected, `${form} on ${column}`);
      }
    });
  }

  /** Runs a prepared `count(*) ... WHERE column >= ?` with one bound parameter column. */
  async function countWithParameter(column: string, type: DataType, value: bigint | string): Promise<number> {
    const prepared = await admin.prepare(where(column, '$c >= ?'));
    const data =
      typeof value === 'string'
        ? vectorFromArray([value], new Utf8())
        : makeVector(makeData({ type, length: 1, nullCount: 0, data: BigInt64Array.from([value]) } as never));
    const [meta] = await admin.doPut(
      packAny('CommandPreparedStatementQuery', { preparedStatementHandle: prepared.handle }),
      new Table({ bound: data }),
    );
    const { preparedStatementHandle } = FlightSql.DoPutPreparedStatementResult.decode(meta) as unknown as {
      preparedStatementHandle: Uint8Array;
    };
    const info = await admin.getFlightInfo(packAny('CommandPreparedStatementQuery', { preparedStatementHandle }));
    return Number((await admin.doGet(info.endpoints[0].ticket)).table.getChildAt(0)!.get(0));
  }

  it('bound parameters: timestamps with and without a zone, at every unit, and text', async () => {
    const micros = pivot / 1000n;
    for (const column of timeColumns) {
      const expected = await count(where(column, `$c >= '${rfc3339(pivot)}'`));
      const expectedMicros = await count(where(column, `$c >= '${rfc3339(micros * 1000n)}'`));
      assert.equal(
        await countWithParameter(column, new TimestampNanosecond('UTC'), pivot),
        expected,
        `timestamp[ns, UTC] on ${column}`,
      );
      assert.equal(
        await countWithParameter(column, new TimestampNanosecond('+02:00'), pivot),
        expected,
        `timestamp[ns, +02:00] on ${column}`,
      );
      assert.equal(
        await countWithParameter(column, new TimestampNanosecond(), pivot),
        expected,
        `timestamp[ns] on ${column}`,
      );
      assert.equal(
        await countWithParameter(column, new TimestampMicrosecond('UTC'), micros),
        expectedMicros,
        `timestamp[us, UTC] on ${column}`,
      );
      assert.equal(
        await countWithParameter(column, new TimestampNanosecond(), rfc3339(pivot)),
        expected,
        `text on ${column}`,
      );
    }
    assert.equal(await countWithParameter('log_entries.time', new TimestampNanosecond('UTC'), pivot + 1n), 2);
  });

  it('count(*) is named as DataFusion names it (item 4), through the time-bound rewrite too', async () => {
    assert.deepEqual(
      (await admin.query('SELECT count(*) FROM log_entries')).schema.fields.map((f) => f.name),
      ['count(*)'],
    );
    const rewritten = await admin.query(
      `SELECT count(*), count(*) AS n FROM log_entries WHERE time >= TIMESTAMPTZ '${rfc3339(pivot)}'`,
    );
    assert.deepEqual(
      rewritten.schema.fields.map((f) => f.name),
      ['count(*)', 'n'],
    );
  });

  it('a timestamp written any way comes back as the same nanosecond instant', async () => {
    const table = await admin.query(
      `SELECT TIMESTAMPTZ '${rfc3339(pivot, 60)}' AS a, TIMESTAMP '${rfc3339(pivot).replace('Z', '')}' AS b, to_timestamp_nanos(${pivot}) AS c`,
    );
    for (const field of table.schema.fields) assert.equal(String(field.type), 'Timestamp<NANOSECOND, UTC>', field.name);
    const raw = (name: string): bigint => (table.getChild(name)!.data[0].values as BigInt64Array)[0];
    assert.deepEqual(['a', 'b', 'c'].map(raw), [pivot, pivot, pivot]);
  });
});
