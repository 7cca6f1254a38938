// Issue 14: queries read the coarsest ready rollup, with provenance on the result. Through a
// real Flight SQL client over a socket against a real Orrery (Postgres, DuckDB, DuckLake): the
// provenance in the Arrow schema metadata of the stream, and a seeded set of dashboard queries
// (buckets x windows on and off bucket boundaries x aggregates) each equal to its raw twin, the rollup read named.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DuckDBConnection } from '@duckdb/node-api';
import type { Table } from 'apache-arrow';
import { plainRows } from '../lakehouse/lakehouse-fixtures.js';
import { countedCalls } from '../support/counted-calls.js';
import { packAny } from '../support/flight-client.js';
import { useOrrery } from '../support/orrery-process.js';

const provenanceOf = (table: Table): unknown => {
  const text = table.schema.metadata.get('orrery.provenance');
  return text === undefined ? undefined : JSON.parse(text);
};

/** The same query over a subquery of the table, which no rollup answers: the raw answer. */
const rawTwin = (sql: string): string => sql.replace(' from metrics ', ' from (select * from metrics) as metrics ');

/** A small deterministic generator (mulberry32), so a failing case names its seed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('queries read rollups (issue 14)', () => {
  // Every window off the hour reads raw edges, however few rows its whole buckets replace.
  const fixture = useOrrery({ ORRERY_ROLLUP_RAW_EDGES_MIN_ROWS: '0' });

  it('sets up a table with an hourly rollup and a daily rollup of it', async () => {
    const run = (sql: string): Promise<Table> => fixture.admin.query(sql);
    await run(`CREATE TABLE metrics (ts TIMESTAMPTZ, host VARCHAR, cpu DOUBLE) WITH (time_column = 'ts')`);
    await run(`INSERT INTO metrics SELECT TIMESTAMPTZ '2024-01-01 00:00:00+00' + i * INTERVAL '23 minutes',
                 CASE WHEN i % 3 = 0 THEN 'a' WHEN i % 3 = 1 THEN 'b' ELSE NULL END,
                 CASE WHEN i % 11 = 0 THEN NULL ELSE (i % 13)::DOUBLE END FROM range(0, 6000) t(i)`);
    await run(`select snouttime.create_rollup('metrics_hourly', 'metrics', interval '1 hour',
                 select_list => 'host, count(*) as n, sum(cpu) as cpu_sum, min(cpu) as cpu_min, max(cpu) as cpu_max, count(cpu) as cpu_n',
                 group_by => 'host')`);
    await run(`select snouttime.create_rollup('metrics_daily', 'metrics_hourly', interval '1 day',
                 select_list => 'host, sum(n) as n, sum(cpu_sum) as cpu_sum, min(cpu_min) as cpu_min, max(cpu_max) as cpu_max, sum(cpu_n) as cpu_n',
                 group_by => 'host')`);
    await run(`select snouttime.refresh_rollup('metrics_hourly')`);
    await run(`select snouttime.refresh_rollup('metrics_daily')`);
  });

  it('puts the provenance in the Arrow schema metadata of the stream (orrery.provenance)', async () => {
    const sql = `select date_trunc('month', ts) as m, host, count(*) as n from metrics where ts >= '2024-01-01' and ts < '2024-03-01' group by all order by m, host`;
    const table = await fixture.admin.query(sql);
    assert.deepEqual(provenanceOf(table), {
      resources: [
        {
          level: 'main',
          table: 'metrics',
          rollup: {
            name: 'metrics_daily',
            grain: '1 day',
            covered: { from: null, to: null },
            window: { from: '2024-01-01T00:00:00Z', to: '2024-03-01T00:00:00Z' },
          },
          skipped_rollup: [
            {
              name: 'metrics_hourly',
              grain: '01:00:00',
              reason: 'a coarser rollup answers the level (metrics_daily)',
            },
          ],
        },
      ],
    });
    assert.deepEqual(
      table.schema.fields.map((f) => f.name),
      ['m', 'host', 'n'],
    );
    assert.deepEqual(await plainRows(fixture.admin, sql), await plainRows(fixture.admin, rawTwin(sql)));
  });

  it('says why every rollup was skipped, also when none is read, and says nothing for tables without rollups', async () => {
    const skipped = await fixture.reader.query(`select host, count(*) as n from metrics group by host`);
    assert.deepEqual(provenanceOf(skipped), {
      resources: [
        {
          level: 'main',
          table: 'metrics',
          rollup: null,
          skipped_rollup: ['metrics_daily', 'metrics_hourly'].map((name) => ({
            name,
            grain: name === 'metrics_daily' ? '1 day' : '01:00:00',
            reason: 'the level has no window: no lower bound on ts',
          })),
        },
      ],
    });
    await fixture.admin.query(`CREATE TABLE deploys (ts TIMESTAMPTZ, service VARCHAR) WITH (time_column = 'ts')`);
    const none = await fixture.admin.query(`select count(*) as n from deploys where ts >= '2024-01-01'`);
    assert.equal(provenanceOf(none), undefined);
  });

  it('answers seeded dashboard queries exactly as raw rows do, reading the rollup expected', async () => {
    const next = random(14);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)];
    const buckets = [
      { sql: `date_trunc('hour', ts)`, hourly: true },
      { sql: `date_trunc('day', ts)`, hourly: false },
      { sql: `date_trunc('week', ts)`, hourly: false },
      { sql: `date_trunc('month', ts)`, hourly: false },
      { sql: `time_bucket(interval '6 hours', ts)`, hourly: true },
      { sql: `time_bucket(interval '1 day', ts)`, hourly: false },
      { sql: `date_bin(interval '30 minutes', ts)`, hourly: null },
      { sql: null, hourly: false },
    ];
    const measures = [
      'count(*) as n',
      'sum(cpu) as s',
      'min(cpu) as lo',
      'max(cpu)',
      'avg(cpu) as mean',
      'count(cpu) as c',
      `count(*) filter (where host = 'a') as a_n`,
      'count(distinct host) as hosts',
    ];
    for (let i = 0; i < 40; i++) {
      const bucket = pick(buckets);
      const hourAligned = next() < 0.4;
      const startDay = 1 + Math.floor(next() * 40);
      // A third of the windows start off the hour: read as whole hours plus raw edges.
      const offMinutes = next() < 0.33 ? 1 + Math.floor(next() * 59) : 0;
      const start = new Date(Date.UTC(2024, 0, startDay, hourAligned ? 1 + Math.floor(next() * 20) : 0, offMinutes));
      const end = new Date(start.getTime() + (1 + Math.floor(next() * 30)) * 86_400_000);
      const byHost = next() < 0.5;
      const chosen = measures.filter(() => next() < 0.4);
      if (chosen.length === 0) chosen.push(measures[0]);
      const columns = [...(bucket.sql ? [`${bucket.sql} as b`] : []), ...(byHost ? ['host'] : []), ...chosen];
      const groups = [...(bucket.sql ? ['b'] : []), ...(byHost ? ['host'] : [])];
      const sql =
        `select ${columns.join(', ')} from metrics where ts >= '${start.toISOString()}' and ts < '${end.toISOString()}'` +
        (groups.length > 0 ? ` group by ${groups.join(', ')} order by ${groups.join(', ')}` : '');
      const table = await fixture.reader.query(sql);
      const expected =
        bucket.hourly === null
          ? null
          : bucket.hourly || hourAligned || offMinutes > 0
            ? 'metrics_hourly'
            : 'metrics_daily';
      const read = (provenanceOf(table) as { resources: Array<{ rollup: { name: string } | null }> }).resources[0]
        .rollup;
      assert.equal(read?.name ?? null, expected, `case ${i}: ${sql}`);
      assert.deepEqual(await plainRows(fixture.reader, sql), await plainRows(fixture.reader, rawTwin(sql)), sql);
    }
  });

  it('a window open at its end and off the hour: raw rows at its start, its whole hours from there on through the never-stale view', async () => {
    const sql = `select host, count(*) as n, max(cpu) as top from metrics where ts >= '2024-01-20 13:17:00' group by host order by host`;
    const check = async (): Promise<void> => {
      const table = await fixture.reader.query(sql);
      const level = (
        provenanceOf(table) as {
          resources: Array<{ rollup: { name: string; buckets?: { from: string; to: string | null } } | null }>;
        }
      ).resources[0];
      assert.equal(level.rollup?.name, 'metrics_hourly');
      assert.equal(level.rollup?.buckets?.from, '2024-01-20T14:00:00Z');
      // The whole hours are open, as the window is: the rows after the watermark come from the rollup's view (its
      // kept tail aggregate), not from a second raw scan of the table.
      assert.equal(level.rollup?.buckets?.to, null);
      assert.deepEqual(await plainRows(fixture.reader, sql), await plainRows(fixture.reader, rawTwin(sql)));
    };
    await check();
    // A row of now's hour (after the watermark) and a late one in a stored hour (pending): both counted.
    await fixture.admin.query(`INSERT INTO metrics VALUES (now(), 'a', 1000), ('2024-01-21 05:00:00+00', 'b', 2000)`);
    await check();
  });

  it('a statement sent again is rewritten again once what it reads changed: a write, a retention (no snapshot)', async () => {
    const sql = `select date_trunc('day', ts) as d, count(*) as n from metrics where ts >= '2024-01-02' and ts < '2024-01-05' group by d order by d`;
    const read = async (): Promise<unknown> =>
      (provenanceOf(await fixture.reader.query(sql)) as { resources: Array<{ rollup: { name: string } | null }> })
        .resources[0].rollup?.name;
    const answer = () => plainRows(fixture.reader, sql);
    assert.equal(await read(), 'metrics_daily');
    const before = await answer();
    assert.deepEqual(await answer(), before);
    await fixture.admin.query(`INSERT INTO metrics VALUES ('2024-01-03 12:00:00+00', 'a', 1)`);
    assert.equal(await read(), 'metrics_daily');
    const after = await answer();
    assert.notDeepEqual(after, before);
    assert.deepEqual(after, await plainRows(fixture.reader, rawTwin(sql)));
    // Retention lives in Postgres: no DuckLake snapshot tells the statement's kept rewrite it changed.
    await fixture.admin.query(`select set_rollup_retention('metrics_daily', interval '1 day')`);
    const table = await fixture.reader.query(sql);
    const level = (
      provenanceOf(table) as {
        resources: Array<{ rollup: { name: string } | null; skipped_rollup: Array<{ name: string; reason: string }> }>;
      }
    ).resources[0];
    assert.equal(level.rollup?.name, 'metrics_hourly');
    assert.match(
      level.skipped_rollup.find((s) => s.name === 'metrics_daily')!.reason,
      /before the range the rollup covers \(its retention keeps 1 day\)/,
    );
    assert.deepEqual(await answer(), after);
    await fixture.admin.query(`select set_rollup_retention('metrics_daily', NULL)`);
    assert.equal(await read(), 'metrics_daily');
  });
  it("after a refresh, reads the rollups' states from DuckLake's catalog in Postgres (inlined there), lists no table and reads no change feed again", async () => {
    const sql = `select date_trunc('day', ts) as d, count(*) as n from metrics where ts >= '2024-01-02' and ts < '2024-01-05' group by d order by d`;
    /**
     * DuckDB statements while `work` runs that read a rollup's state table at a snapshot, list the lake's tables
     * (the schema has not changed) or read the table's change feed (its rows have not changed).
     */
    const lakeReads = (work: () => Promise<void>): Promise<number> =>
      countedCalls(DuckDBConnection.prototype, 'runAndReadAll', work, (text) =>
        /__state" AT \(VERSION|duckdb_tables\(\)|ducklake_table_changes/.test(String(text)),
      );
    await fixture.admin.query(`INSERT INTO metrics VALUES ('2024-01-04 12:00:00+00', 'b', 2)`);
    for (const rollup of ['metrics_hourly', 'metrics_daily'])
      await fixture.admin.query(`select snouttime.refresh_rollup('${rollup}')`);
    // A refresh of the hourly rollup alone: a snapshot changing its state, and no row of metrics.
    const reads = await lakeReads(async () => {
      await fixture.admin.query(`select snouttime.refresh_rollup('metrics_hourly')`);
      const table = await fixture.reader.query(sql);
      assert.equal(
        (provenanceOf(table) as { resources: Array<{ rollup: { name: string } | null }> }).resources[0].rollup?.name,
        'metrics_daily',
      );
      assert.deepEqual(await plainRows(fixture.reader, sql), await plainRows(fixture.reader, rawTwin(sql)));
    });
    assert.equal(reads, 0);
  });

  it('a statement sent again reads the window its clock bounds have now, also once they moved since its rewrite was kept', async () => {
    // Rows over the last hours, in the hourly rollup.
    await fixture.admin.query(
      `INSERT INTO metrics SELECT now() - i * INTERVAL '10 minutes', 'a', 1 FROM range(0, 30) t(i)`,
    );
    await fixture.admin.query(`select snouttime.refresh_rollup('metrics_hourly')`);
    // An hour boundary shifted to fall 4 s from now: date_trunc('hour', now() + X) moves then, whatever the time of day.
    const flipAt = Math.ceil(Date.now() / 1000) * 1000 + 4000;
    const shift = 3600 - ((flipAt / 1000) % 3600);
    const hour = `date_trunc('hour', now()::TIMESTAMP + interval ${shift} second)`;
    const sql = `select host, count(*) as n from metrics where ts >= ${hour} - interval 3 hour and ts < ${hour} group by host order by host`;
    const read = async (): Promise<{ from: string; to: string | null } | undefined> => {
      const level = (
        provenanceOf(await fixture.reader.query(sql)) as {
          resources: Array<{ rollup: { name: string; window: { from: string; to: string | null } } | null }>;
        }
      ).resources[0];
      assert.equal(level.rollup?.name, 'metrics_hourly', sql);
      return level.rollup?.window;
    };
    const to = (at: number): string =>
      new Date(Math.floor((at + shift * 1000) / 3_600_000) * 3_600_000).toISOString().replace('.000Z', 'Z');
    // Before the boundary: the first read rewrites, the next ones reuse the rewrite (its bounds evaluated ahead once).
    const before = await read();
    assert.equal(before?.to, to(flipAt - 1000));
    while (Date.now() < flipAt - 1500) assert.deepEqual(await read(), before);
    await new Promise((resolve) => setTimeout(resolve, flipAt + 500 - Date.now()));
    // After it: the window an hour on, and the answer the raw rows give.
    assert.equal((await read())?.to, to(flipAt + 500));
    assert.notEqual(to(flipAt + 500), before?.to);
    assert.deepEqual(await plainRows(fixture.reader, sql), await plainRows(fixture.reader, rawTwin(sql)));
  });

  it("reads a DATE column's bounds as the days they keep: whole weeks, and the provenance's window in them", async () => {
    const run = (sql: string): Promise<Table> => fixture.admin.query(sql);
    await run(`CREATE TABLE days (d DATE, host VARCHAR) WITH (time_column = 'd')`);
    await run(`INSERT INTO days SELECT DATE '2024-01-01' + (i % 60)::INTEGER, 'h' || (i % 4) FROM range(0, 900) t(i)`);
    await run(`select snouttime.create_rollup('days_daily', 'days', interval '1 day', select_list => 'count(*) as n')`);
    await run(
      `select snouttime.create_rollup('days_weekly', 'days_daily', interval '7 days', select_list => 'sum(n) as n')`,
    );
    await run(`select snouttime.refresh_rollup('days_daily')`);
    await run(`select snouttime.refresh_rollup('days_weekly')`);
    // After Sunday 2024-01-07 and up to Sunday 2024-02-04, inclusive: the days from Monday 01-08 to Monday 02-05.
    const where = `where d > DATE '2024-01-07' and d <= DATE '2024-02-04'`;
    const sql = `select count(*) as n from days ${where}`;
    const { resources } = provenanceOf(await run(sql)) as {
      resources: Array<{ level: string; table: string; rollup: unknown; skipped_rollup: unknown }>;
    };
    assert.deepEqual(
      resources.map((r) => [r.level, r.table]),
      [['main', 'days']],
    );
    assert.deepEqual(resources[0].rollup, {
      name: 'days_weekly',
      grain: '7 days',
      covered: { from: null, to: null },
      window: { from: '2024-01-08T00:00:00Z', to: '2024-02-05T00:00:00Z' },
    });
    assert.deepEqual(resources[0].skipped_rollup, [
      { name: 'days_daily', grain: '1 day', reason: 'a coarser rollup answers the level (days_weekly)' },
    ]);
    const raw = await plainRows(fixture.admin, `select count(*) as n from (select * from days) as days ${where}`);
    assert.deepEqual(await plainRows(fixture.admin, sql), raw);
    assert.deepEqual(raw, [{ n: 420 }]);
  });

  it('a window written with the clock reads the instant its rewrite worked out: planned, then run seconds later, it answers as raw rows do at the planned instant', async () => {
    const run = (sql: string): Promise<Table> => fixture.admin.query(sql);
    await run(`CREATE TABLE ticks (ts TIMESTAMPTZ, v BIGINT) WITH (time_column = 'ts')`);
    // A row a second, each with its own value, from 10 minutes ago to 10 minutes on.
    await run(
      `INSERT INTO ticks SELECT date_trunc('second', now()) + to_seconds(i), i * i + 1000 * i FROM range(-600, 600) t(i)`,
    );
    await run(
      `select snouttime.create_rollup('ticks_secondly', 'ticks', interval '1 second', select_list => 'count(*) as n, sum(v) as s')`,
    );
    await run(`select snouttime.refresh_rollup('ticks_secondly')`);
    const sql = `select count(*) as n, sum(v) as s from ticks where ts >= date_trunc('second', now()) - interval 30 second and ts < date_trunc('second', now())`;
    const info = await fixture.reader.getFlightInfo(packAny('CommandStatementQuery', { query: sql }));
    const { rollup } = (
      JSON.parse(info.schema.metadata.get('orrery.provenance') ?? '{}') as {
        resources: Array<{ rollup: { name: string; window: { from: string; to: string } } | null }>;
      }
    ).resources[0];
    assert.equal(rollup?.name, 'ticks_secondly');
    // Run in a later second than the one it was planned in: its now() is still the planned one.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const answered = (await fixture.reader.doGet(info.endpoints[0].ticket)).table.toArray().map((r) => r.toJSON());
    const raw = await plainRows(
      fixture.reader,
      `select count(*) as n, sum(v) as s from (select * from ticks) as ticks where ts >= TIMESTAMPTZ '${rollup!.window.from}' and ts < TIMESTAMPTZ '${rollup!.window.to}'`,
    );
    assert.deepEqual(
      answered.map((r) => ({ n: Number(r.n), s: Number(r.s) })),
      raw.map((r) => ({ n: Number(r.n), s: Number(r.s) })),
    );
    assert.equal(Number(raw[0].n), 30);
  });
});
