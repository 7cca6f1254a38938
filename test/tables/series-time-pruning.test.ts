// Issues 14 and 10: a series table's scan is pruned by a time bound however it is written. Orrery
// makes TIMESTAMP and TIMESTAMPTZ literals, now() and timestamp parameters TIMESTAMP_NS (engine/
// dialect.ts); DuckDB compares a TIMESTAMP column with a TIMESTAMP_NS value by casting the column,
// which it does not push into DuckLake's scan, so every file was read. Here each form must read
// as few files as the plain string bound that DuckDB prunes natively, and select the same rows.
// Files read come from DuckDB's EXPLAIN ANALYZE through a real Flight SQL client.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Table, TimestampNanosecond, makeData, makeVector } from 'apache-arrow';
import {
  clientFor,
  sharedEnv,
  startRole,
  startTestPostgres,
  type InProcessOrrery,
  type TestKey,
  type TestPostgres,
} from '../lakehouse/lakehouse-fixtures.js';
import type { TestFlightClient } from '../support/flight-client.js';

const admin: TestKey = { name: 'admin', key: 'admin-key-pruning-0001', audiences: ['ops'] };
const days = 8;
const dayNs = 86_400_000_000_000n;
/** Midnight UTC, `days - 1` days ago: day d's rows are written by one INSERT (one Parquet file). */
const firstDay = (BigInt(Date.now()) / 86_400_000n - BigInt(days - 1)) * dayNs;
const text = (nanos: bigint): string =>
  new Date(Number(nanos / 1_000_000n)).toISOString().slice(0, 19).replace('T', ' ');
/** The start of the last two days, to the second. */
const bound = firstDay + BigInt(days - 2) * dayNs;

/** Ways of bounding the scan to the last two days (or less), each with its plain-string twin. */
const lowerBounds: Record<string, [string, string]> = {
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
  'upper bound now()': [`ts > now()`, `ts > '${text(BigInt(Date.now() + 60_000) * 1_000_000n)}'`],
  'now() - INTERVAL': [`ts >= now() - INTERVAL 1 DAY`, `ts >= '${text(BigInt(Date.now() - 86_400_000) * 1_000_000n)}'`],
  'date_trunc of now()::TIMESTAMP': [
    `ts >= date_trunc('day', now()::TIMESTAMP) - INTERVAL 1 DAY`,
    `ts >= '${text(bound)}'`,
  ],
};

/** The series tables, one for each microsecond time type a series table's time column may have. */
const tables = { events: 'TIMESTAMP', events_tz: 'TIMESTAMPTZ' };

describe('series tables: time bounds prune the scan (#14, #10)', () => {
  let postgres: TestPostgres;
  let lakeDir: string;
  let orrery: InProcessOrrery;
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

  before(async () => {
    postgres = await startTestPostgres();
    lakeDir = mkdtempSync(join(tmpdir(), 'orrery-pruning-lake-'));
    orrery = await startRole(
      'serve',
      sharedEnv({ keys: [admin], admins: [admin.name], connectionString: postgres.connectionString, lakeDir }),
    );
    client = clientFor(orrery.flightPort, admin);
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
  after(async () => {
    client?.close();
    await orrery?.close();
    await postgres?.close();
    rmSync(lakeDir, { recursive: true, force: true });
  });

  it('the table is one file a day, and a string bound reads only the days it keeps', async () => {
    assert.equal(await count('n % 2 = 0'), (days * 5000) / 2);
    assert.equal(await explain('n % 2 = 0'), days);
    assert.equal(await explain(`ts >= '${text(bound)}'`), 2);
  });

  for (const [table, type] of Object.entries(tables)) {
    for (const [form, [condition, twin]] of Object.entries(lowerBounds)) {
      it(`${type} column, ${form}: reads the files the plain string bound reads, and the same rows`, async () => {
        const files = await explain(twin, table);
        assert.ok(files < days, `${twin} reads ${files} files`);
        assert.equal(await explain(condition, table), files, condition);
        if (form.includes('now')) return; // now() moves between two statements; rows are checked in test/sql
        assert.equal(await count(condition, table), await count(twin, table), condition);
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
