// Issue 14 with issue 17's rollups of view sets: a query over log_entries reads the coarsest ready
// rollup of it, exactly. Through Flight SQL against a real Orrery whose daemon materializes OTLP
// ingestion: for an admin and two audiences, each dashboard query (buckets, windows on and off
// bucket boundaries, measures, the audience) names the rollup it read in its provenance and answers
// what the same query over the raw rows answers, also while a late block's bucket is pending.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { plainRows, scalar } from '../lakehouse/lakehouse-fixtures.js';
import type { TestFlightClient } from '../support/flight-client.js';
import { dayStart, hourStart, rawTwin, rollupRead, useLogsOrrery, type LogSender } from '../support/log-sender.js';

const minuteNs = 60_000_000_000n;
const iso = (nanos: bigint): string => new Date(Number(nanos / 1_000_000n)).toISOString();

describe('queries over a view set read its rollups (issues 14 and 17)', () => {
  // No refresh jobs: a rollup's job is due at create_rollup whatever its schedule, and would refresh the rollups before
  // the first test reads them unrefreshed; the tests refresh by themselves.
  const fixture = useLogsOrrery('rewrite-views-01', {
    ORRERY_ROLLUP_RAW_EDGES_MIN_ROWS: '0',
    ORRERY_ROLLUP_REFRESH_JOBS: 'off',
  });
  let asAdmin: TestFlightClient;
  let clients: TestFlightClient[];
  let logs: LogSender;

  /** Dashboard queries over the last eight hours; `read` is the rollup each must read. */
  const queries = (): Array<{ sql: string; read: string }> => {
    const [from, to] = [iso(hourStart(8)), iso(hourStart(1))];
    const [offFrom, offTo] = [iso(hourStart(8) + 17n * minuteNs), iso(hourStart(1) + 41n * minuteNs)];
    return [
      {
        sql: `select date_trunc('hour', time) as h, target, count(*) as n, max(level) as top from log_entries where time >= '${from}' and time < '${to}' group by all order by 1, 2`,
        read: 'logs_hourly',
      },
      {
        sql: `select target, avg(level) as mean, sum(level) as total, min(level) as low from log_entries where time >= '${from}' and time < '${to}' group by target order by target`,
        read: 'logs_hourly',
      },
      {
        // Off the hour at both ends: whole hours from the rollup, the edges from raw rows.
        sql: `select time_bucket(interval '2 hours', time) as b, count(*) as n, max(level) as top from log_entries where time >= '${offFrom}' and time < '${offTo}' group by b order by b`,
        read: 'logs_hourly',
      },
      {
        // Open at its end, off the hour: whole hours up to the watermark, raw rows at its start and after it.
        sql: `select target, count(*) as n, max(level) as top from log_entries where time >= '${offFrom}' group by target order by target`,
        read: 'logs_hourly',
      },
      {
        // Open at its end from a whole hour: the daily rollup when that hour starts a UTC day (a suite
        // started between 08:00 and 09:00 UTC), else the hourly one.
        sql: `select audience, count(*) filter (where target = 'cart') as carts, count(*) as n from log_entries where time >= '${from}' group by audience order by audience`,
        read: hourStart(8) === dayStart(0) ? 'logs_daily' : 'logs_hourly',
      },
      {
        // A window of whole days: the daily rollup of the hourly one (today's bucket is still filling).
        sql: `select date_trunc('day', time) as d, target, count(*) as n from log_entries where time >= '${iso(dayStart(2))}' and time < '${iso(dayStart(-1))}' group by all order by 1, 2`,
        read: 'logs_daily',
      },
    ];
  };

  /** Each query, for every key: the rollup named, and the raw rows' answer. */
  const check = async (): Promise<void> => {
    for (const client of clients) {
      for (const { sql, read } of queries()) {
        assert.equal(rollupRead(await client.query(sql)), read, sql);
        const [got, want] = await Promise.all([plainRows(client, sql), plainRows(client, rawTwin(sql))]);
        assert.ok(want.length > 0, sql);
        assert.deepEqual(got, want, sql);
      }
    }
  };

  before(async () => {
    ({ admin: asAdmin, clients, logs } = fixture);
    const { teamA, teamB } = fixture.keys;
    await logs.send(teamA, 'cart', hourStart(7) + 3n * minuteNs, 40, 9);
    await logs.send(teamB, 'cart', hourStart(6) + 5n * minuteNs, 30, 13);
    await logs.send(teamB, 'stock', hourStart(5), 24, 17);
    await plainRows(
      asAdmin,
      `select snouttime.create_rollup('logs_hourly', 'log_entries', interval '1 hour',
         select_list => 'target, count(*) as n, count(level) as level_n, sum(level) as level_sum, min(level) as level_min, max(level) as level_max',
         group_by => 'target')`,
    );
    await plainRows(
      asAdmin,
      `select snouttime.create_rollup('logs_daily', 'logs_hourly', interval '1 day',
         select_list => 'target, sum(n) as n', group_by => 'target')`,
    );
  });

  it('reads raw rows until the rollups are refreshed, saying so', async () => {
    const [{ sql }] = queries();
    const text = (await asAdmin.query(sql)).schema.metadata.get('orrery.provenance');
    assert.match(text ?? '', /not ready: the rollup has not been refreshed yet/);
  });

  it('reads the coarsest ready rollup once refreshed, exactly as raw rows answer, for every key', async () => {
    await plainRows(asAdmin, `select snouttime.refresh_rollup('logs_hourly')`);
    await plainRows(asAdmin, `select snouttime.refresh_rollup('logs_daily')`);
    await check();
  });

  it('reads only the stored rows of a closed window before the watermark: no Postgres read per statement', async () => {
    // Closed windows of whole hours before the current one, nothing pending: the stored rows hold
    // every answer. Each query runs once to keep the rollup's invalidations, then again while the
    // invalidations table is locked: a read of the never-stale view (or of the invalidations) would
    // wait for the lock; the stored rows alone answer at once.
    const closed = queries().slice(0, 2);
    for (const client of clients) for (const { sql } of closed) await plainRows(client, sql);
    const lock = await fixture.postgres.pool.connect();
    const answered: string[] = [];
    let released = false;
    const release = async (): Promise<void> => {
      if (released) return;
      released = true;
      await lock.query('COMMIT');
      lock.release();
    };
    try {
      await lock.query('BEGIN');
      await lock.query('LOCK TABLE rollup_view_invalidations IN ACCESS EXCLUSIVE MODE');
      // Released after a while whatever happens, so a read that waits ends (and fails below).
      const timer = setTimeout(() => void release(), 20_000);
      try {
        for (const client of clients)
          for (const { sql, read } of closed) {
            assert.equal(rollupRead(await client.query(sql)), read, sql);
            if (!released) answered.push(sql);
          }
      } finally {
        clearTimeout(timer);
      }
    } finally {
      await release();
    }
    assert.equal(answered.length, clients.length * closed.length, 'every query answered while the lock was held');
    await check();
  });

  it('answers a late block exactly while its bucket is pending, and after the refresh', async () => {
    await logs.send(fixture.keys.teamA, 'stock', hourStart(6) + 11n * minuteNs, 5, 21);
    assert.ok(
      (await scalar(asAdmin, `SELECT pending_buckets FROM list_rollups() WHERE name = 'logs_hourly'`)) > 0,
      'the late block left a bucket pending',
    );
    await check();
    await plainRows(asAdmin, `select snouttime.refresh_rollup('logs_hourly')`);
    await plainRows(asAdmin, `select snouttime.refresh_rollup('logs_daily')`);
    await check();
  });

  it('reads, for a closed window with a pending bucket, the stored rows and that bucket alone, through a rollup of a rollup too', async () => {
    // Two days back (closed for both rollups at any hour): a day of records, both rollups refreshed,
    // then a late block in it, pending in the hourly and the daily rollup.
    const [from, to] = [iso(dayStart(2)), iso(dayStart(1))];
    await logs.send(fixture.keys.teamA, 'cart', dayStart(2) + 60n * minuteNs, 12, 5);
    for (const rollup of ['logs_hourly', 'logs_daily'])
      await plainRows(asAdmin, `select snouttime.refresh_rollup('${rollup}')`);
    await logs.send(fixture.keys.teamB, 'stock', dayStart(2) + 125n * minuteNs, 3, 11);
    const window = `time >= '${from}' and time < '${to}'`;
    const reads = [
      {
        sql: `select date_trunc('hour', time) as h, target, count(*) as n from log_entries where ${window} group by all order by 1, 2`,
        read: 'logs_hourly',
      },
      {
        sql: `select date_trunc('day', time) as d, target, count(*) as n from log_entries where ${window} group by all order by 1, 2`,
        read: 'logs_daily',
      },
    ];
    /** The scans of the set's files in an admin's plan of `sql`. */
    const setScans = async (sql: string): Promise<number> => {
      const plan = (await asAdmin.query(`EXPLAIN ANALYZE ${sql}`))
        .toArray()
        .map((row) => Object.values(row.toJSON() as Record<string, unknown>).join('\n'))
        .join('\n');
      return plan.match(/READ_PARQUET/g)?.length ?? 0;
    };
    for (const { sql, read } of reads) {
      for (const client of clients) {
        assert.equal(rollupRead(await client.query(sql)), read, sql);
        assert.deepEqual(await plainRows(client, sql), await plainRows(client, rawTwin(sql)), sql);
      }
      // The pending hour's (or day's) records: one scan of the set. The whole never-stale view also
      // scanned the set for the rows after the watermark (and, through the daily rollup, the hourly
      // rollup's view for each of its parts).
      assert.equal(await setScans(sql), 1, sql);
    }
  });
});
