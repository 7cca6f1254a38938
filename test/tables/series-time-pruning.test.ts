// Issues 14 and 10: a series table's scan is pruned by a time bound however it is written. Orrery
// makes TIMESTAMP and TIMESTAMPTZ literals, now() and timestamp parameters TIMESTAMP_NS (engine/
// dialect.ts); DuckDB compares a TIMESTAMP column with a TIMESTAMP_NS value by casting the column,
// which it does not push into DuckLake's scan, so every file was read. Here each form must read
// as few files as the plain string bound that DuckDB prunes natively, and select the same rows.
// Files read come from DuckDB's EXPLAIN ANALYZE through a real Flight SQL client.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { Table, TimestampNanosecond, makeData, makeVector } from 'apache-arrow';
import { useLakeOrrery, type TestKey } from '../lakehouse/lakehouse-fixtures.js';
import type { TestFlightClient } from '../support/flight-client.js';

const admin: TestKey = { name: 'admin', key: 'admin-key-pruning-0001', audiences: ['ops'] };
const days = 8;
const dayNs = 86_400_000_000_000n;
/**
 * Midnight UTC, `days - 2` days ago: day d's rows are written by one INSERT (one Parquet file). The
 * last file is tomorrow's, so rows stay after now() (a bound of the clock has a file to read) even
 * when the day turns while the suite runs.
 */
const firstDay = (BigInt(Date.now()) / 86_400_000n - BigInt(days - 2)) * dayNs;
const text = (nanos: bigint): string =>
  new Date(Number(nanos / 1_000_000n)).toISOString().slice(0, 19).replace('T', ' ');
/** The start of the last two days (today and tomorrow), to the second. */
const bound = firstDay + BigInt(days - 2) * dayNs;

/** Text of an instant to the microsecond (series tables keep microseconds). */
const exact = (nanos: bigint): string => `${text(nanos)}.${String((nanos / 1000n) % 1_000_000n).padStart(6, '0')}`;

/**
 * Ways of bounding the scan to the last days (three at most), each with its plain-string twin. A bound
 * of the clock has its twin at an instant of the server's clock (ns): a day that turns while the suite
 * runs, or the last rows of a day's file (at 23:59:42.72) passing, moves both alike.
 */
const lowerBounds: Record<string, [string, string | ((now: bigint) => string)]> = {
  'TIMESTAMP literal': [`ts >= TIMESTAMP '${text(bound)}'`, `ts >= '${text(bound)}'`],
  'TIMESTAMP literal, reversed': [`TIMESTAMP '${text(bound)}' <= ts`, `ts >= '${text(bound)}'`],
  'TIMESTAMP literal, strict': [`ts > TIMESTAMP '${text(bound)}'`, `ts > '${text(bound)}'`],
  'TIMESTAMPTZ literal at an offset': [
    `ts >= TIMESTAMPTZ '${text(bound + 2n * 3_600_000_000_000n)}+02:00'`,
    `ts >= '${text(bound)}'`,
  ],
  'nanosecond literal': [`ts > TIMESTAMP '${text(bound)}.000000001'`, `ts > '${text(bound)}'`],
  '::TIMESTAMP cast': [`ts >= '${text(bound)}'::TIMESTAMP`, `ts >= '${text(bound)}'`],
  BETWEEN: [
    `ts BETWEEN TIMESTAMP '${text(bound)}' AND TIMESTAMPTZ '${text(bound + dayNs)}+00:00'`,
    `ts BETWEEN '${text(bound)}' AND '${text(bound + dayNs)}'`,
  ],
  'upper bound now()': [`ts > now()`, (now) => `ts > '${exact(now)}'`],
  'now() - INTERVAL': [`ts >= now() - INTERVAL 1 DAY`, (now) => `ts >= '${exact(now - dayNs)}'`],
  'date_trunc of now()::TIMESTAMP': [
    `ts >= date_trunc('day', now()::TIMESTAMP) - INTERVAL 1 DAY`,
    (now) => `ts >= '${text(now - (now % dayNs) - dayNs)}'`,
  ],
};

/** The series tables, one for each microsecond time type a series table's time column may have. */
const tables = { events: 'TIMESTAMP', events_tz: 'TIMESTAMPTZ' };

describe('series tables: time bounds prune the scan (#14, #10)', () => {
  const lake = useLakeOrrery({ keys: [admin] });
  let client: TestFlightClient;

  /** Files DuckLake's scan read, from EXPLAIN ANALYZE (0 when every file was pruned). */
  const filesRead = (table: Table): number => {
    const plan = table
      .toArray()
      .map((row) => Object.values(row.toJSON() as Record<string, unknown>).join('\n'))
      .join('\n');
    assert.match(plan, /TABLE_SCAN/);
    return [...plan.matchAll(/Total Files Read: (\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
  };
  const explain = async (where: string, table = 'events'): Promise<number> =>
    filesRead(await client.query(`EXPLAIN ANALYZE SELECT count(*) FROM ${table} WHERE ${where}`));
  const count = async (where: string, table = 'events'): Promise<number> =>
    Number((await client.query(`SELECT count(*) FROM ${table} WHERE ${where}`)).getChildAt(0)!.get(0));
  /** The server's clock, in ns since the epoch. */
  const serverNow = async (): Promise<bigint> =>
    BigInt((await client.query('SELECT epoch_ns(now()) AS n')).getChildAt(0)!.get(0) as bigint);

  before(async () => {
    client = lake.client(admin);
    for (const [table, type] of Object.entries(tables)) {
      await client.query(`CREATE TABLE ${table} (ts ${type}, n BIGINT) WITH (time_column = 'ts')`);
      for (let d = 0; d < days; d++) {
        // 5,000 rows a day, 17.28 s apart: more than DuckLake inlines, so each day is a file of its own.
        await client.query(
          `INSERT INTO ${table} SELECT '${text(firstDay + BigInt(d) * dayNs)}'::VARCHAR::TIMESTAMP + to_microseconds(i * 17280000), i FROM range(5000) t(i)`,
        );
      }
    }
  });

  it('the table is one file a day, and a string bound reads only the days it keeps', async () => {
    assert.equal(await count('n % 2 = 0'), (days * 5000) / 2);
    assert.equal(await explain('n % 2 = 0'), days);
    assert.equal(await explain(`ts >= '${text(bound)}'`), 2);
  });

  for (const [table, type] of Object.entries(tables)) {
    for (const [form, [condition, twin]] of Object.entries(lowerBounds)) {
      it(`${type} column, ${form}: reads the files the plain string bound reads, and the same rows`, async () => {
        if (typeof twin === 'string') {
          const files = await explain(twin, table);
          assert.ok(files < days, `${twin} reads ${files} files`);
          assert.equal(await explain(condition, table), files, condition);
          assert.equal(await count(condition, table), await count(twin, table), condition);
          return;
        }
        // now() is read between the server's clock just before and just after: the files its twin reads
        // then (fewer as the clock rises, equal unless a file's edge passed in between) bracket its own.
        // Rows are checked in test/sql, where now() is one value for both forms.
        const earlier = twin(await serverNow());
        const files = await explain(condition, table);
        const later = twin(await serverNow());
        const [most, least] = [await explain(earlier, table), await explain(later, table)];
        assert.ok(most < days, `${earlier} reads ${most} files`);
        assert.ok(
          least <= files && files <= most,
          `${condition} reads ${files} files; ${earlier} ${most}, ${later} ${least}`,
        );
      });
    }
  }

  it('a timestamp parameter bound by a client prunes as its literal does', async () => {
    const parameters = new Table({
      bound: makeVector(
        makeData({ type: new TimestampNanosecond('UTC'), length: 1, nullCount: 0, data: BigInt64Array.from([bound]) }),
      ),
    });
    const plan = await client.queryPrepared('EXPLAIN ANALYZE SELECT count(*) FROM events WHERE ts >= ?', parameters);
    assert.equal(filesRead(plan), 2);
    const rows = await client.queryPrepared('SELECT count(*) FROM events WHERE ts >= ?', parameters);
    assert.equal(Number(rows.getChildAt(0)!.get(0)), await count(`ts >= '${text(bound)}'`));
  });
});
