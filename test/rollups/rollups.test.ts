// Issue 17: rollups that are never stale, through Flight SQL against a real Orrery (Postgres,
// DuckDB, DuckLake): create_rollup as the spec writes it, the never-stale read checked against
// the same aggregation over the source after every kind of write, refresh_rollup's ranges, the
// refresh job, audience isolation, rollups of rollups, retention, drop_rollup and every refusal.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import {
  Table,
  TimestampMicrosecond,
  TimestampNanosecond,
  Utf8,
  makeData,
  makeVector,
  vectorFromArray,
} from 'apache-arrow';
import {
  clientFor,
  plain,
  plainRows,
  pollUntil,
  refusal,
  scalar,
  sharedEnv,
  startRole,
  startTestPostgres,
  type InProcessOrrery,
  type TestKey,
  type TestPostgres,
} from '../lakehouse/lakehouse-fixtures.js';
import { MetadataStore } from '../../src/metadata/index.js';
import { Rollups } from '../../src/rollups/index.js';
import { ringRows } from '../../src/rollups/tail-values.js';
import { changeFeedReads, countedCalls } from '../support/counted-calls.js';
import { storedMakingsDuring } from '../support/kept-makings.js';
import { FlightSql, packAny, unpackAny, type TestFlightClient } from '../support/flight-client.js';
import {
  beginTransaction,
  endTransaction,
  queryInTransaction,
  readAfterWrite,
} from '../support/flight-transactions.js';
import { refreshPendingRanges } from '../support/pending-ranges.js';
import { jobLeftForADay, jobRunOnSchedule, scheduleDaily } from '../support/refresh-jobs.js';

const admin: TestKey = { name: 'admin', key: 'admin-key-rollups-0001', audiences: ['ops'] };
const teamA: TestKey = { name: 'team-a', key: 'team-a-key-rollups-0001', audiences: ['team-a'] };
const teamB: TestKey = { name: 'team-b', key: 'team-b-key-rollups-0001', audiences: ['team-b'] };

/** The spec's contract: the rollup answers exactly the aggregation of its source as the same moment sees it. */
const hourlyOfSource = `SELECT time_bucket(INTERVAL 1 HOUR, ts::TIMESTAMP) AS bucket, host, count(*) AS n, sum(cpu) AS cpu_sum,
  max(cpu) AS cpu_max, audience FROM metrics GROUP BY ALL`;
const order = ' ORDER BY bucket, host, audience';

describe('rollups (issue 17)', () => {
  let postgres: TestPostgres;
  let lakeDir: string;
  let orrery: InProcessOrrery;
  let asAdmin: TestFlightClient;
  let asTeamA: TestFlightClient;
  let asTeamB: TestFlightClient;

  const same = async (client: TestFlightClient, rollup: string, source: string): Promise<void> => {
    const [got, want] = await Promise.all([
      plainRows(client, `SELECT * FROM ${rollup}${order}`),
      plainRows(client, `${source}${order}`),
    ]);
    assert.deepEqual(got, want);
  };

  before(async () => {
    postgres = await startTestPostgres();
    lakeDir = mkdtempSync(join(tmpdir(), 'orrery-rollups-lake-'));
    orrery = await startRole(
      'all',
      sharedEnv({
        keys: [admin, teamA, teamB],
        admins: [admin.name],
        connectionString: postgres.connectionString,
        lakeDir,
      }),
    );
    asAdmin = clientFor(orrery.flightPort, admin);
    asTeamA = clientFor(orrery.flightPort, teamA);
    asTeamB = clientFor(orrery.flightPort, teamB);
    await asAdmin.updateCount(
      `CREATE TABLE metrics (ts TIMESTAMPTZ, host VARCHAR, cpu DOUBLE) WITH (time_column = 'ts')`,
    );
    await asAdmin.updateCount(
      `INSERT INTO metrics VALUES ('2024-01-01 00:10:00+00', 'a', 1.0), ('2024-01-01 00:20:00+00', 'b', 2.0),
         ('2024-01-01 01:30:00+00', 'a', 3.0)`,
    );
    await asAdmin.updateCount(`INSERT INTO metrics VALUES (now(), 'a', 4.0)`);
  });
  after(async () => {
    for (const c of [asAdmin, asTeamA, asTeamB]) c?.close();
    await orrery?.close();
    await postgres?.close();
    rmSync(lakeDir, { recursive: true, force: true });
  });

  it('create_rollup as the spec writes it; the view reads raw until the first refresh, then stays exact', async () => {
    const created = await asAdmin.query(
      `select snouttime.create_rollup('metrics_hourly', 'metrics', interval '1 hour',
        select_list => 'host, count(*) as n, sum(cpu) as cpu_sum, max(cpu) as cpu_max',
        group_by    => 'host')`,
    );
    assert.deepEqual(
      created.toArray().map((r) => ({ ...r })),
      [{ create_rollup: 'metrics_hourly' }],
    );
    // The spec's RETURNS regclass: text naming its SQL type, which Flight SQL clients read as the column's type name.
    const [field] = created.schema.fields;
    assert.equal(String(field.type), 'Utf8');
    assert.equal(field.metadata.get('ARROW:FLIGHT:SQL:TYPE_NAME'), 'regclass');
    // Its refresh job, every minute; from its first run on the test refreshes by itself (a day between runs).
    assert.deepEqual(await plainRows(asAdmin, `SELECT kind, target, schedule FROM snouttime.jobs`), [
      { kind: 'refresh', target: 'metrics_hourly', schedule: '00:01:00' },
    ]);
    assert.equal(await scheduleDaily(asAdmin, 'metrics_hourly'), 'metrics_hourly refreshes every 1 day');
    await same(asAdmin, 'metrics_hourly', hourlyOfSource);
    // The refresh job starts at once, whatever its schedule: its first run materializes every closed bucket.
    const { kind, target, last_status, last_error } = await jobRunOnSchedule(asAdmin, 'metrics_hourly');
    assert.deepEqual(
      { kind, target, last_status, last_error },
      { kind: 'refresh', target: 'metrics_hourly', last_status: 'ok', last_error: null },
    );
    // Every bucket before the watermark: the three of 2024, and now()'s row's hour when the hour
    // turned between its insert and the refresh.
    const [{ watermark }] = await plainRows(
      asAdmin,
      `SELECT watermark FROM list_rollups() WHERE name = 'metrics_hourly'`,
    );
    const closed = await scalar(
      asAdmin,
      `SELECT count(*) FROM (${hourlyOfSource}) WHERE bucket < TIMESTAMP '${String(watermark)}'`,
    );
    assert.ok(closed === 3 || closed === 4, `${closed} closed buckets`);
    assert.equal(await scalar(asAdmin, 'SELECT count(*) FROM metrics_hourly_materialized'), closed);
    await same(asAdmin, 'metrics_hourly', hourlyOfSource);
    assert.equal(await refreshPendingRanges(asAdmin, 'metrics_hourly'), 0);
    // The spec's RETURNS integer: Postgres's, 32 bits.
    const [ranges] = (await asAdmin.query(`select snouttime.refresh_rollup('metrics_hourly')`)).schema.fields;
    assert.equal(String(ranges.type), 'Int32');
    assert.equal(ranges.metadata.get('ARROW:FLIGHT:SQL:TYPE_NAME'), 'INTEGER');
  });

  it("set_job_schedule puts a job's next run one new schedule after its last run, later or sooner than before", async () => {
    await asAdmin.updateCount(`CREATE TABLE scheduled (ts TIMESTAMPTZ, v DOUBLE) WITH (time_column = 'ts')`);
    await asAdmin.query(
      `SELECT create_rollup('scheduled_hourly', 'scheduled', INTERVAL '1 hour', select_list => 'count(*) AS n')`,
    );
    // The seconds from its last run to its next, and whether it is due within the hour.
    const job = (): Promise<Array<Record<string, unknown>>> =>
      plainRows(
        asAdmin,
        `SELECT schedule, date_diff('second', last_run, next_run) AS gap, next_run <= now() + INTERVAL 1 HOUR AS soon
           FROM snouttime.jobs WHERE target = 'scheduled_hourly'`,
      );
    // Its first run, at once, on the minute's schedule it was made with.
    await pollUntil('the first run of scheduled_hourly', job, (rows) => rows[0]?.gap === 60, {
      timeoutMs: 120_000,
      intervalMs: 200,
    });
    // A day from that run, not the minute it had (the sooner of the two was kept: the job ran again a minute on).
    assert.equal(await scheduleDaily(asAdmin, 'scheduled_hourly'), 'scheduled_hourly refreshes every 1 day');
    assert.deepEqual(await job(), [{ schedule: '1 day', gap: 86_400, soon: false }]);
    await asAdmin.updateCount(
      `UPDATE snouttime.jobs SET schedule = INTERVAL '2 days' WHERE kind = 'refresh' AND target = 'scheduled_hourly'`,
    );
    assert.deepEqual(await job(), [{ schedule: '2 days', gap: 172_800, soon: false }]);
    // Sooner: a minute from the last run, due now or within the minute.
    await scalar(asAdmin, `SELECT set_job_schedule('scheduled_hourly', INTERVAL '1 minute')`);
    assert.deepEqual(await job(), [{ schedule: '00:01:00', gap: 60, soon: true }]);
    await scalar(asAdmin, `SELECT drop_rollup('scheduled_hourly')`);
    await asAdmin.updateCount('DROP TABLE scheduled');
  });

  it('a late insert, an update (old and new time), a delete and a truncate are in the next read; refresh recomputes only those buckets', async () => {
    await asAdmin.updateCount(`INSERT INTO metrics VALUES ('2024-01-01 00:40:00+00', 'b', 5.0)`);
    await same(asAdmin, 'metrics_hourly', hourlyOfSource);
    assert.equal(await scalar(asAdmin, `SELECT pending_buckets FROM list_rollups() WHERE name = 'metrics_hourly'`), 1);
    assert.equal(await refreshPendingRanges(asAdmin, 'metrics_hourly'), 1);
    await same(asAdmin, 'metrics_hourly', hourlyOfSource);

    await asAdmin.updateCount(`UPDATE metrics SET ts = '2024-01-03 05:00:00+00' WHERE cpu = 3.0`);
    await same(asAdmin, 'metrics_hourly', hourlyOfSource);
    assert.equal(await refreshPendingRanges(asAdmin, 'metrics_hourly'), 2);
    await same(asAdmin, 'metrics_hourly', hourlyOfSource);

    await asAdmin.updateCount(`DELETE FROM metrics WHERE host = 'b'`);
    await same(asAdmin, 'metrics_hourly', hourlyOfSource);
    assert.equal(await refreshPendingRanges(asAdmin, 'metrics_hourly'), 1);
    await same(asAdmin, 'metrics_hourly', hourlyOfSource);

    await asAdmin.updateCount(
      `INSERT INTO metrics VALUES ('2024-01-02 10:00:00+00', 'c', 7.0), ('2024-01-02 11:00:00+00', 'c', 8.0)`,
    );
    assert.equal(await refreshPendingRanges(asAdmin, 'metrics_hourly'), 1);
    await asAdmin.updateCount(`TRUNCATE metrics`);
    await same(asAdmin, 'metrics_hourly', hourlyOfSource);
    assert.equal(await scalar(asAdmin, 'SELECT count(*) FROM metrics_hourly'), 0);
    await scalar(asAdmin, `select snouttime.refresh_rollup('metrics_hourly')`);
    await same(asAdmin, 'metrics_hourly', hourlyOfSource);
    assert.equal(await scalar(asAdmin, 'SELECT count(*) FROM metrics_hourly_materialized'), 0);
  });

  it("a key that is not an admin reads only its audiences' rows, materialized and raw alike", async () => {
    await asTeamA.updateCount(
      `INSERT INTO metrics VALUES ('2024-02-01 00:10:00+00', 'a', 1.0), ('2024-02-01 00:20:00+00', 'a', 2.0)`,
    );
    await asTeamB.updateCount(`INSERT INTO metrics VALUES ('2024-02-01 00:30:00+00', 'a', 10.0)`);
    await asAdmin.updateCount(`INSERT INTO metrics VALUES ('2024-02-01 00:40:00+00', 'a', 100.0)`);
    const check = async (): Promise<void> => {
      for (const client of [asAdmin, asTeamA, asTeamB]) await same(client, 'metrics_hourly', hourlyOfSource);
      assert.deepEqual(await plainRows(asTeamA, `SELECT n, cpu_sum, audience FROM metrics_hourly ORDER BY audience`), [
        { n: 1, cpu_sum: 100, audience: 'public' },
        { n: 2, cpu_sum: 3, audience: 'team-a' },
      ]);
      for (const row of await plainRows(asTeamB, `SELECT DISTINCT audience FROM metrics_hourly_materialized`))
        assert.ok(['public', 'team-b'].includes(row.audience as string), `team-b read ${String(row.audience)}`);
    };
    await check();
    await scalar(asAdmin, `select snouttime.refresh_rollup('metrics_hourly')`);
    await check();
  });

  const quote = (text: string): string => `'${text.replaceAll("'", "''")}'`;
  /** A rollup casting the notes team keys insert (`[key, ts, note]`), and its refresh job as a key sees it. */
  const notesRollup = async (notes: ReadonlyArray<[TestFlightClient, string, string]>) => {
    await asAdmin.updateCount(`CREATE TABLE notes (ts TIMESTAMPTZ, note VARCHAR) WITH (time_column = 'ts')`);
    for (const [client, ts, note] of notes)
      await client.updateCount(`INSERT INTO notes VALUES (${quote(ts)}, ${quote(note)})`);
    await scalar(
      asAdmin,
      `select snouttime.create_rollup('notes_hourly', 'notes', interval '1 hour', select_list => 'sum(CAST(note AS INTEGER)) AS total')`,
    );
    return (client: TestFlightClient) =>
      plainRows(client, `SELECT last_status, last_error FROM snouttime.jobs WHERE target = 'notes_hourly'`);
  };

  it("a refresh's error, which may quote another audience's row, is told to admins and that audience alone; the failure too, even when it is the only audience (#13)", async () => {
    const job = await notesRollup([[asTeamB, '2024-01-01 00:20:00+00', 'team-b secret']]);
    // The refresh job reads every audience's rows: team-b's note (its only audience) fails its cast, and the error
    // quotes it. Its bucket is held, as when another audience's rows succeed: the refresh does not fail whole.
    const [failed] = await pollUntil(
      'the refresh',
      () => job(asAdmin),
      (rows) => rows[0]?.last_status === 'partial',
      {
        timeoutMs: 120_000,
        intervalMs: 200,
      },
    );
    assert.match(String(failed.last_error), /team-b secret/);
    // team-a's rows are all fine: that the refresh held a bucket is a fact of team-b's rows, not told to team-a.
    assert.deepEqual(await job(asTeamA), [{ last_status: 'ok', last_error: null }]);
    // Nor by the job's times: the run is due again a schedule after it ran, as a run holding nothing is (a refresh
    // failing whole is retried within 10 s).
    assert.deepEqual(
      await plainRows(
        asTeamA,
        `SELECT next_run - last_run = schedule AS on_schedule FROM snouttime.jobs WHERE target = 'notes_hourly'`,
      ),
      [{ on_schedule: true }],
    );
    const [own] = await job(asTeamB);
    assert.equal(own.last_status, 'partial');
    assert.match(String(own.last_error), /^audience team-b: .*team-b secret/);
    // team-a's read of the rollup (team-b's bucket held) casts its own rows alone: none.
    assert.deepEqual(await plainRows(asTeamA, 'SELECT total::INTEGER AS total, audience FROM notes_hourly'), []);
    await scalar(asAdmin, `select snouttime.drop_rollup('notes_hourly')`);
    await asAdmin.updateCount('DROP TABLE notes');
  });

  it("one audience's row that fails a refresh holds that audience's buckets pending: the others' are stored, and each key is told its own audience's error alone (#13)", async () => {
    const job = await notesRollup([
      [asTeamA, '2024-01-01 00:10:00+00', '7'],
      [asTeamA, '2024-01-01 01:10:00+00', '3'],
      [asTeamB, '2024-01-01 00:20:00+00', 'team-b secret'],
    ]);
    // Its refresh job runs at once: team-b's note fails its cast, team-a's buckets are stored all the same.
    const [done] = await pollUntil(
      'the first refresh',
      () => job(asAdmin),
      (rows) => rows[0]?.last_status !== null && rows[0]?.last_status !== undefined,
      { timeoutMs: 120_000, intervalMs: 200 },
    );
    assert.equal(done.last_status, 'partial');
    assert.match(String(done.last_error), /^audience team-b: .*team-b secret/);
    // team-a's two buckets are stored; the bucket of team-b's row stays pending (read from the rows, exactly).
    assert.deepEqual(
      await plainRows(
        asAdmin,
        `SELECT materialized_rows::INTEGER AS stored, pending_buckets::INTEGER AS pending FROM list_rollups() WHERE name = 'notes_hourly'`,
      ),
      [{ stored: 2, pending: 1 }],
    );
    // The bucket is held for team-b alone: team-a's rows of it are stored whole, so team-a's read aggregates no
    // raw row (its view has no aggregate of the source; each key's first read sets its view up), where team-b's and an admin's read it raw.
    const rawReads = (client: TestFlightClient): Promise<number> =>
      countedCalls(
        DuckDBConnection.prototype,
        'run',
        async () => void (await plainRows(client, 'SELECT total FROM notes_hourly').catch(() => [])),
        (text) => /TEMP VIEW "?notes_hourly"? AS/.test(String(text)) && String(text).includes('__aggregate'),
      );
    assert.equal(await rawReads(asTeamA), 0);
    assert.equal(await rawReads(asTeamB), 1);
    assert.equal(await rawReads(asAdmin), 1);
    assert.deepEqual(
      await plainRows(
        asTeamA,
        'SELECT bucket::VARCHAR AS bucket, total::INTEGER AS total, audience FROM notes_hourly ORDER BY bucket',
      ),
      [
        { bucket: '2024-01-01 00:00:00', total: 7, audience: 'team-a' },
        { bucket: '2024-01-01 01:00:00', total: 3, audience: 'team-a' },
      ],
    );
    // Each key is told its own audience's error: team-a none, team-b its own.
    assert.deepEqual(await job(asTeamA), [{ last_status: 'ok', last_error: null }]);
    const [own] = await job(asTeamB);
    assert.equal(own.last_status, 'partial');
    assert.match(String(own.last_error), /^audience team-b: .*team-b secret/);
    // A refresh after team-b's row is deleted aggregates the held bucket for every audience.
    await asAdmin.updateCount(`DELETE FROM notes WHERE note = 'team-b secret'`);
    await scalar(asAdmin, `select snouttime.refresh_rollup('notes_hourly')`);
    assert.deepEqual(
      await plainRows(
        asAdmin,
        `SELECT materialized_rows::INTEGER AS stored, pending_buckets::INTEGER AS pending FROM list_rollups() WHERE name = 'notes_hourly'`,
      ),
      [{ stored: 2, pending: 0 }],
    );
    assert.deepEqual(await job(asTeamB), [{ last_status: 'ok', last_error: null }]);
    await scalar(asAdmin, `select snouttime.drop_rollup('notes_hourly')`);
    await asAdmin.updateCount('DROP TABLE notes');
  });

  it("the source's retention keeps every other audience's buckets when one audience's row fails the rollup's aggregate, and records what it could not keep (#13)", async () => {
    const job = await notesRollup([
      [asTeamA, '2024-01-01 00:10:00+00', '7'],
      [asTeamA, '2024-01-01 01:10:00+00', '3'],
      [asTeamB, '2024-01-01 00:20:00+00', 'team-b secret'],
    ]);
    await pollUntil(
      'the first refresh',
      () => job(asAdmin),
      (rows) => rows[0]?.last_status !== null && rows[0]?.last_status !== undefined,
      { timeoutMs: 120_000, intervalMs: 200 },
    );
    await asTeamA.updateCount(`INSERT INTO notes VALUES (now(), '5')`);
    // The table keeps 30 days: its retention deletes the 2024 rows, every audience's, and keeps team-a's buckets.
    await asAdmin.query(`SELECT * FROM set_retention('notes', '30 days')`);
    await orrery.daemon!.housekeeping();
    assert.equal(await scalar(asAdmin, 'SELECT count(*) FROM notes'), 1);
    const old = `SELECT bucket::VARCHAR AS bucket, total::INTEGER AS total, audience FROM notes_hourly
      WHERE bucket < TIMESTAMP '2025-01-01' ORDER BY bucket, audience`;
    const teamAs = [
      { bucket: '2024-01-01 00:00:00', total: 7, audience: 'team-a' },
      { bucket: '2024-01-01 01:00:00', total: 3, audience: 'team-a' },
    ];
    assert.deepEqual(await plainRows(asTeamA, old), teamAs);
    // team-b's bucket held no value the aggregate could make: nothing is kept of it, for any key.
    assert.deepEqual(await plainRows(asTeamB, old), []);
    assert.deepEqual(await plainRows(asAdmin, old), teamAs);
    // The kept buckets are no longer pending, team-b's held one included (its raw rows are gone).
    assert.equal(
      await scalar(asAdmin, `SELECT pending_buckets::INTEGER FROM list_rollups() WHERE name = 'notes_hourly'`),
      0,
    );
    // What retention could not keep is told to admins and to team-b, not to team-a.
    const lost =
      /^audience team-b: retention of notes kept bucket 2024-01-01 00:00:00 without this audience's rows: .*team-b secret/m;
    assert.match(String((await job(asAdmin))[0].last_error), lost);
    assert.match(String((await job(asTeamB))[0].last_error), lost);
    assert.doesNotMatch(String((await job(asTeamA))[0].last_error), /team-b/);
    await scalar(asAdmin, `select snouttime.drop_rollup('notes_hourly')`);
    await asAdmin.updateCount('DROP TABLE notes');
  });

  it("a rollup of a rollup reads its source's buckets, follows every write to the base, and refuses what does not merge", async () => {
    const daily = `select snouttime.create_rollup('metrics_daily', 'metrics_hourly', interval '1 day',
      select_list => 'host, sum(n) as n, sum(cpu_sum) as cpu_sum, max(cpu_max) as cpu_max',
      group_by    => 'host')`;
    assert.equal((await plainRows(asAdmin, daily))[0].create_rollup, 'metrics_daily');
    await scheduleDaily(asAdmin, 'metrics_daily');
    const dailyOfSource = `SELECT time_bucket(INTERVAL 1 DAY, ts::TIMESTAMP) AS bucket, host, CAST(count(*) AS HUGEINT) AS n, sum(cpu) AS cpu_sum,
      max(cpu) AS cpu_max, audience FROM metrics GROUP BY ALL`;
    await same(asAdmin, 'metrics_daily', dailyOfSource);
    // Its refresh job runs once at once; from then on the test refreshes by itself.
    assert.equal((await jobRunOnSchedule(asAdmin, 'metrics_daily')).last_status, 'ok');
    await scalar(asAdmin, `select snouttime.refresh_rollup('metrics_daily')`);
    await asAdmin.updateCount(`INSERT INTO metrics VALUES ('2024-02-01 05:00:00+00', 'a', 1000.0)`);
    await same(asAdmin, 'metrics_daily', dailyOfSource);
    await same(asTeamA, 'metrics_daily', dailyOfSource);
    await scalar(asAdmin, `select snouttime.refresh_rollup('metrics_hourly')`);
    await same(asAdmin, 'metrics_daily', dailyOfSource);
    assert.equal(await refreshPendingRanges(asAdmin, 'metrics_daily'), 1);
    await same(asAdmin, 'metrics_daily', dailyOfSource);

    const refused = async (selectList: string): Promise<string> =>
      (
        await refusal(
          asAdmin.query(
            `select create_rollup('metrics_weekly', 'metrics_hourly', interval '1 week', select_list => '${selectList}', group_by => 'host')`,
          ),
        )
      ).details;
    assert.match(await refused('host, avg(cpu_sum) as a'), /avg does not merge.*sum\(x\) as total, count\(\*\) as n/);
    assert.match(await refused('host, median(cpu_max) as m'), /median does not merge.*percentile_sketch/);
    assert.match(
      await refused('host, count(distinct cpu_max) as d'),
      /count\(distinct \.\.\.\) does not merge.*distinct_sketch/,
    );
    assert.match(await refused('host, stddev(cpu_max) as s'), /stddev does not merge.*sum\(x \* x\)/);
    assert.match(
      (
        await refusal(
          asAdmin.query(
            `select create_rollup('metrics_90m', 'metrics_hourly', interval '90 minutes', select_list => 'sum(n) as n')`,
          ),
        )
      ).details,
      /must be a whole number of 'metrics_hourly''s buckets/,
    );
  });

  it('drop_rollup goes from the top of a chain; a table with rollups cannot be dropped', async () => {
    assert.deepEqual(await refusal(asAdmin.query(`select snouttime.drop_rollup('metrics_hourly')`)), {
      code: 9,
      details: "drop_rollup: rollup 'metrics_daily' is built on 'metrics_hourly'; drop it first",
    });
    assert.deepEqual(await refusal(asAdmin.updateCount(`DROP TABLE metrics`)), {
      code: 9,
      details: "cannot drop series table 'metrics': rollup 'metrics_hourly' depends on it; drop it first",
    });
    assert.equal((await refusal(asTeamA.query(`select snouttime.drop_rollup('metrics_daily')`))).code, 7);
  });

  it('the stored rows are sorted by bucket in each file a refresh writes (the spec\'s "indexed on bucket")', async () => {
    await asAdmin.updateCount(`CREATE TABLE sorted_src (ts TIMESTAMPTZ, v BIGINT) WITH (time_column = 'ts')`);
    // 500 hours written latest first: the order of the rows written is not the stored one.
    await asAdmin.updateCount(
      `INSERT INTO sorted_src SELECT TIMESTAMPTZ '2024-03-01 00:30:00+00' - i * INTERVAL '1 hour', i FROM range(500) t(i)`,
    );
    await asAdmin.query(
      `select create_rollup('sorted_hourly', 'sorted_src', interval '1 hour', select_list => 'count(*) as n, sum(v) as v')`,
    );
    // The refresh job create_rollup starts may have run first (refresh_rollup then finds nothing: 0); either way,
    // once refresh_rollup returns, the one refresh of these 500 hours has written the stored rows read below.
    await scalar(asAdmin, `select refresh_rollup('sorted_hourly')`);
    const { rows: files } = await orrery.metadata.query<{ path: string }>(
      `SELECT f.path FROM ducklake.ducklake_data_file f JOIN ducklake.ducklake_table t ON t.table_id = f.table_id
        WHERE t.table_name = 'sorted_hourly_materialized' AND t.end_snapshot IS NULL AND f.end_snapshot IS NULL`,
    );
    const onDisk = readdirSync(lakeDir, { recursive: true }).map(String);
    assert.ok(files.length > 0, 'the refresh wrote a file');
    const duckdb = await (await DuckDBInstance.create(':memory:')).connect();
    try {
      for (const { path } of files) {
        const file = onDisk.filter((f) => f.endsWith(basename(path)));
        assert.equal(file.length, 1, path);
        // Each row's bucket against the one before it in the file: none is earlier, and every hour is there.
        const reader = await duckdb.runAndReadAll(
          `SELECT count(*) FILTER (WHERE bucket < before), count(*) FROM (
             SELECT bucket, lag(bucket) OVER (ORDER BY file_row_number) AS before
               FROM read_parquet('${join(lakeDir, file[0])}', file_row_number = true))`,
        );
        assert.deepEqual(reader.getRows(), [[0n, 500n]]);
      }
    } finally {
      duckdb.closeSync();
    }
    assert.deepEqual(
      await plainRows(asAdmin, 'SELECT * FROM sorted_hourly ORDER BY bucket'),
      await plainRows(
        asAdmin,
        `SELECT time_bucket(INTERVAL 1 HOUR, ts::TIMESTAMP) AS bucket, count(*) AS n, sum(v) AS v, audience
           FROM sorted_src GROUP BY ALL ORDER BY bucket`,
      ),
    );
    await asAdmin.query(`select drop_rollup('sorted_hourly')`);
  });

  it('create_rollup refuses what it cannot build, saying why', async () => {
    const create = (args: string): Promise<{ code: number; details: string }> =>
      refusal(asAdmin.query(`select snouttime.create_rollup(${args})`));
    const cases: Array<[string, number, string | RegExp]> = [
      [
        `'r1', 'metrics', interval '1 hour', select_list => 'count(*) as n', group_by => 'host'`,
        3,
        /group column host is not in select_list/,
      ],
      [
        `'r1', 'metrics', interval '1 hour', select_list => 'host, count(*)', group_by => 'host'`,
        3,
        /name every aggregate with as: count_star\(\)/,
      ],
      [
        `'r1', 'metrics', select_list => 'count(*) as n'`,
        3,
        'create_rollup: give either bucket (an interval, for a time column) or bucket_width (for an integer time column), not both or neither',
      ],
      [
        `'r1', 'metrics', interval '1 hour', select_list => 'count(*) as n', bucket_width => 10`,
        3,
        /not both or neither/,
      ],
      [
        `'r1', 'metrics', bucket_width => 10, select_list => 'count(*) as n'`,
        3,
        "create_rollup: 'metrics' keeps time in a timestamp column (ts): give bucket (an interval), not bucket_width",
      ],
      [
        `'metrics_hourly', 'metrics', interval '1 hour', select_list => 'count(*) as n'`,
        6,
        "create_rollup: the name 'metrics_hourly' is already in use",
      ],
      [
        `'metrics', 'metrics', interval '1 hour', select_list => 'count(*) as n'`,
        6,
        "create_rollup: the name 'metrics' is already in use",
      ],
      [
        `'r1', 'nope', interval '1 hour', select_list => 'count(*) as n'`,
        5,
        "create_rollup: source 'nope' is neither a series table, a view set nor a rollup",
      ],
      [
        `'r1', 'metrics', interval '1 hour', select_list => 'count(* as n'`,
        3,
        /select_list or group_by does not parse/,
      ],
      [
        `'r1', 'metrics', interval '1 hour', select_list => 'host', group_by => 'host'`,
        3,
        'create_rollup: select_list does not aggregate: give at least one aggregate, such as count(*) as n',
      ],
      [
        `'r1', 'metrics', interval '1 hour', select_list => 'cpu, count(*) as n'`,
        3,
        /cpu in select_list is neither a group column \(in group_by\) nor an aggregate/,
      ],
      [
        `'r1', 'metrics', interval '1 hour', select_list => 'count(*) as n, (SELECT count(*) FROM secrets) as s'`,
        3,
        'create_rollup: select_list and group_by may not hold subqueries',
      ],
      [
        `'r1', 'metrics', interval '1 hour', select_list => 'sum(nope) as n'`,
        3,
        /select_list does not bind on 'metrics'/,
      ],
      [`'r1', 'metrics', interval '1 hour'`, 3, /select_list is required/],
      [
        `'r1', 'metrics', interval '-1 hour', select_list => 'count(*) as n'`,
        3,
        "create_rollup: '-1 hour' is not a positive interval",
      ],
    ];
    for (const [args, code, message] of cases) {
      const got = await create(args);
      assert.equal(got.code, code, `${args}: ${got.details}`);
      if (typeof message === 'string') assert.equal(got.details, message, args);
      else assert.match(got.details, message, args);
    }
    const denied = await refusal(
      asTeamA.query(
        `select snouttime.create_rollup('r2', 'metrics', interval '1 hour', select_list => 'count(*) as n')`,
      ),
    );
    assert.equal(denied.code, 7);
    assert.equal((await refusal(asTeamA.query(`select snouttime.refresh_rollup('metrics_hourly')`))).code, 7);
  });

  it("set_rollup_retention deletes old buckets at refresh; buckets past the source's retention keep their stored values", async () => {
    await asAdmin.updateCount(`CREATE TABLE events (ts TIMESTAMP, v BIGINT) WITH (time_column = 'ts')`);
    // Days counted from the UTC day the test starts, once: a day that turns during the test moves no row.
    const today = new Date(Math.floor(Date.now() / 86_400_000) * 86_400_000).toISOString().slice(0, 10);
    const day = (daysAgo: number): string => `TIMESTAMP '${today}' - INTERVAL ${daysAgo} DAY + INTERVAL 1 HOUR`;
    await asAdmin.updateCount(
      `INSERT INTO events SELECT ${day(40)}, 1 UNION ALL SELECT ${day(35)}, 2 UNION ALL SELECT ${day(1)}, 3`,
    );
    await asAdmin.query(
      `select create_rollup('events_daily', 'events', interval '1 day', select_list => 'count(*) as n, CAST(sum(v) AS BIGINT) as s')`,
    );
    await scalar(asAdmin, `select refresh_rollup('events_daily')`);
    const stored = `SELECT n, s FROM events_daily ORDER BY bucket`;
    assert.deepEqual(await plainRows(asAdmin, stored), [
      { n: 1, s: 1 },
      { n: 1, s: 2 },
      { n: 1, s: 3 },
    ]);
    // The source keeps 30 days: its retention deletes the old rows, the rollup keeps their buckets.
    await asAdmin.query(`SELECT * FROM set_retention('events', '30 days')`);
    await orrery.daemon!.housekeeping();
    assert.equal(await scalar(asAdmin, `SELECT count(*) FROM events`), 1);
    assert.deepEqual(await plainRows(asAdmin, stored), [
      { n: 1, s: 1 },
      { n: 1, s: 2 },
      { n: 1, s: 3 },
    ]);
    // A late row for a day whose raw rows are gone does not replace that day with a fragment.
    await asAdmin.updateCount(`INSERT INTO events SELECT ${day(40)} + INTERVAL 1 HOUR, 100`);
    assert.deepEqual(await plainRows(asAdmin, stored), [
      { n: 1, s: 1 },
      { n: 1, s: 2 },
      { n: 1, s: 3 },
    ]);
    await scalar(asAdmin, `select refresh_rollup('events_daily')`);
    assert.deepEqual(await plainRows(asAdmin, stored), [
      { n: 1, s: 1 },
      { n: 1, s: 2 },
      { n: 1, s: 3 },
    ]);
    // The rollup's own retention: buckets older than 37 days go at the next refresh.
    // The spec's RETURNS void: one row, a null of Arrow's Null type, whose Flight SQL type name is void.
    const kept = await asAdmin.query(`select snouttime.set_rollup_retention('events_daily', interval '37 days') AS r`);
    assert.deepEqual(
      kept.toArray().map((r) => ({ ...r })),
      [{ r: null }],
    );
    const [field] = kept.schema.fields;
    assert.equal(String(field.type), 'Null');
    assert.equal(field.metadata.get('ARROW:FLIGHT:SQL:TYPE_NAME'), 'void');
    await scalar(asAdmin, `select refresh_rollup('events_daily')`);
    assert.deepEqual(await plainRows(asAdmin, stored), [
      { n: 1, s: 2 },
      { n: 1, s: 3 },
    ]);
    assert.equal(
      await scalar(asAdmin, `SELECT retention = '37 days' FROM list_rollups() WHERE name = 'events_daily'`),
      1,
    );
    // Its job would refresh, and commit a snapshot, every minute under the tests after this one.
    await asAdmin.query(`select drop_rollup('events_daily')`);
  });

  it("the source's retention keeps each bucket as raw gave it just before: a pending correction included, a bucket it cut in two whole", async () => {
    await asAdmin.updateCount(`CREATE TABLE chain (height BIGINT, v BIGINT) WITH (time_column = 'height')`);
    await asAdmin.updateCount(`INSERT INTO chain SELECT i, 1 FROM range(0, 30) t(i)`);
    await asAdmin.query(
      `select create_rollup('chain_10', 'chain', bucket_width => 10, select_list => 'count(*) as n, CAST(sum(v) AS BIGINT) as s')`,
    );
    await scalar(asAdmin, `select refresh_rollup('chain_10')`);
    const read = `SELECT bucket, n, s FROM chain_10 ORDER BY bucket`;
    // A correction to bucket 0 after the refresh: pending, read from raw.
    await asAdmin.updateCount(`INSERT INTO chain VALUES (5, 100)`);
    const before = [
      { bucket: 0, n: 11, s: 110 },
      { bucket: 10, n: 10, s: 10 },
      { bucket: 20, n: 10, s: 10 },
    ];
    assert.deepEqual(await plainRows(asAdmin, read), before);
    // Keep the last 15 heights (29 - 15 = 14): bucket 0 goes whole, bucket 10 loses heights 10 to 13.
    await asAdmin.query(`SELECT * FROM set_retention('chain', 15)`);
    await orrery.daemon!.housekeeping();
    assert.equal(await scalar(asAdmin, `SELECT count(*) FROM chain`), 16);
    assert.deepEqual(await plainRows(asAdmin, read), before);
    // A late row into a kept bucket changes nothing, before or after a refresh; a current one counts.
    await asAdmin.updateCount(`INSERT INTO chain VALUES (3, 1000), (12, 1000), (25, 1)`);
    const after = [before[0], before[1], { bucket: 20, n: 11, s: 11 }];
    assert.deepEqual(await plainRows(asAdmin, read), after);
    await scalar(asAdmin, `select refresh_rollup('chain_10')`);
    assert.deepEqual(await plainRows(asAdmin, read), after);
    assert.equal(await scalar(asAdmin, `SELECT pending_buckets FROM list_rollups() WHERE name = 'chain_10'`), 0);
    // A client's transaction that writes the table reads its other buckets raw, its own rows included (bucket 20, now
    // stored), but not the kept ones.
    await asAdmin.updateCount(`INSERT INTO chain VALUES (30, 1)`);
    await scalar(asAdmin, `select refresh_rollup('chain_10')`);
    const inTransaction = (await readAfterWrite(asAdmin, `INSERT INTO chain VALUES (4, 1000), (26, 1)`, read))
      .toArray()
      .map((r) => plain(r.toJSON()));
    assert.deepEqual(inTransaction, [before[0], before[1], { bucket: 20, n: 12, s: 12 }, { bucket: 30, n: 1, s: 1 }]);
    // Its job would refresh, and commit a snapshot, every minute under the tests after this one.
    await asAdmin.query(`select drop_rollup('chain_10')`);
  });

  it("a rollup of a rollup reads its source's view whatever the table's retention took: a late row below the table's horizon counts up the chain", async () => {
    // Heights 0 to 299 without 50 to 59: retention takes no row of bucket 50, so the hundreds' bucket 0
    // holds a bucket of tens the late row below makes pending (not kept).
    await asAdmin.updateCount(`CREATE TABLE ledger (height BIGINT, v BIGINT) WITH (time_column = 'height')`);
    await asAdmin.updateCount(`INSERT INTO ledger SELECT i, 1 FROM range(0, 300) t(i) WHERE i NOT BETWEEN 50 AND 59`);
    await asAdmin.query(
      `select create_rollup('ledger_10', 'ledger', bucket_width => 10, select_list => 'count(*) as n, CAST(sum(v) AS BIGINT) as s')`,
    );
    await asAdmin.query(
      `select create_rollup('ledger_100', 'ledger_10', bucket_width => 100, select_list => 'CAST(sum(n) AS BIGINT) as n, CAST(sum(s) AS BIGINT) as s')`,
    );
    for (const rollup of ['ledger_10', 'ledger_100']) {
      await asAdmin.query(`SELECT set_job_schedule('${rollup}', interval '1 day')`);
      await scalar(asAdmin, `select refresh_rollup('${rollup}')`);
    }
    const read = `SELECT bucket, n, s FROM ledger_100 ORDER BY bucket`;
    // The contract: the hundreds are the sum of the tens as the same moment reads them.
    const ofSource = `SELECT bucket - bucket % 100 AS bucket, CAST(sum(n) AS BIGINT) AS n, CAST(sum(s) AS BIGINT) AS s
      FROM ledger_10 GROUP BY 1 ORDER BY 1`;
    const check = async (want: Array<{ bucket: number; n: number; s: number }>): Promise<void> => {
      assert.deepEqual(await plainRows(asAdmin, read), want);
      assert.deepEqual(await plainRows(asAdmin, ofSource), want);
    };
    const hundreds = (first: { n: number; s: number }): Array<{ bucket: number; n: number; s: number }> => [
      { bucket: 0, ...first },
      { bucket: 100, n: 100, s: 100 },
      { bucket: 200, n: 100, s: 100 },
    ];
    await check(hundreds({ n: 90, s: 90 }));
    // Keep the last 150 heights (299 - 150 = 149): the tens keep every bucket it takes rows of.
    await asAdmin.query(`SELECT * FROM set_retention('ledger', 150)`);
    await orrery.daemon!.housekeeping();
    assert.equal(await scalar(asAdmin, `SELECT count(*) FROM ledger`), 151);
    await check(hundreds({ n: 90, s: 90 }));
    // A late row at height 55, below the table's horizon, in a bucket of tens retention took nothing of:
    // the tens read it, and so do the hundreds (before, they kept bucket 0 as stored: 90, 90).
    await asAdmin.updateCount(`INSERT INTO ledger VALUES (55, 1000)`);
    await check(hundreds({ n: 91, s: 1090 }));
    for (const rollup of ['ledger_100', 'ledger_10', 'ledger_100']) {
      await scalar(asAdmin, `select refresh_rollup('${rollup}')`);
      await check(hundreds({ n: 91, s: 1090 }));
    }
    // Retention takes the late row: the tens keep its bucket as it read, the hundreds with it.
    await orrery.daemon!.housekeeping();
    assert.equal(await scalar(asAdmin, `SELECT count(*) FROM ledger`), 151);
    await check(hundreds({ n: 91, s: 1090 }));
    // The source's own retention: the tens keep their buckets from height 99 on (299 - 200), so the
    // hundreds' bucket 0 (tens 0 to 90 deleted) keeps its stored value, a late row there or not.
    await asAdmin.query(`select set_rollup_retention('ledger_10', 200)`);
    await scalar(asAdmin, `select refresh_rollup('ledger_10')`);
    await asAdmin.updateCount(`INSERT INTO ledger VALUES (57, 5)`);
    assert.deepEqual(await plainRows(asAdmin, read), hundreds({ n: 91, s: 1090 }));
    await scalar(asAdmin, `select refresh_rollup('ledger_100')`);
    assert.deepEqual(await plainRows(asAdmin, read), hundreds({ n: 91, s: 1090 }));
  });

  it('a statement joining a rollup with its raw table reads both at one snapshot, whatever is written meanwhile', async () => {
    await asAdmin.updateCount(`CREATE TABLE joined (ts TIMESTAMPTZ, v DOUBLE) WITH (time_column = 'ts')`);
    await asAdmin.updateCount(`INSERT INTO joined VALUES ('2024-01-01 00:10:00+00', 1), ('2024-01-01 02:10:00+00', 2)`);
    await plainRows(
      asAdmin,
      `select create_rollup('joined_hourly', 'joined', interval '1 hour', select_list => 'count(*) as n, sum(v) as s')`,
    );
    await scalar(asAdmin, `select refresh_rollup('joined_hourly')`);
    const sql = `SELECT (SELECT sum(n) FROM joined_hourly) AS rolled, (SELECT count(*) FROM joined) AS raw,
      (SELECT count(*) FROM joined_hourly r JOIN (SELECT time_bucket(INTERVAL 1 HOUR, ts::TIMESTAMP) AS bucket, count(*) AS n
         FROM joined GROUP BY 1) j ON r.bucket = j.bucket AND r.n = j.n) AS matching, (SELECT count(*) FROM joined_hourly) AS buckets`;
    for (const late of ['2024-01-01 00:30:00+00', '2024-01-01 05:00:00+00']) {
      // Planned (its read set up) before the insert, run after it.
      const info = await asAdmin.getFlightInfo(packAny('CommandStatementQuery', { query: sql }));
      await asAdmin.updateCount(`INSERT INTO joined VALUES ('${late}', 10)`);
      const [row] = (await asAdmin.doGet(info.endpoints[0].ticket)).table.toArray();
      assert.equal(Number(row.rolled), Number(row.raw));
      assert.equal(Number(row.matching), Number(row.buckets));
    }
    assert.equal(await scalar(asAdmin, 'SELECT count(*) FROM joined'), 4);
    // Its job would refresh the late rows' buckets under the tests after this one, reading the change feed they count.
    await asAdmin.query(`select drop_rollup('joined_hourly')`);
  });
  it('inserts, current and late, while refreshes run: every read in between is exact, and none is lost to a refresh', async () => {
    await asAdmin.updateCount(`CREATE TABLE racing (ts TIMESTAMPTZ, v BIGINT) WITH (time_column = 'ts')`);
    await asAdmin.updateCount(`INSERT INTO racing VALUES ('2024-01-01 00:10:00+00', 1)`);
    await asAdmin.updateCount(`INSERT INTO racing VALUES (now(), 2)`);
    await asAdmin.query(
      `select create_rollup('racing_hourly', 'racing', interval '1 hour', select_list => 'count(*) as n, sum(v) as s')`,
    );
    await scalar(asAdmin, `select refresh_rollup('racing_hourly')`);
    const raw = `SELECT time_bucket(INTERVAL 1 HOUR, ts::TIMESTAMP) AS bucket, count(*) AS n, sum(v) AS s, audience
      FROM racing GROUP BY ALL`;
    // One statement, one snapshot: the rollup against its source's aggregate, bucket by bucket.
    const differing = `SELECT count(*) FROM racing_hourly r FULL JOIN (${raw}) j
      ON r.bucket = j.bucket AND r.audience = j.audience AND r.n = j.n AND r.s = j.s WHERE r.n IS NULL OR j.n IS NULL`;
    const [writer, refresher, reader] = [0, 1, 2].map(() => clientFor(orrery.flightPort, admin));
    let writing = true;
    let refreshes = 0;
    let reads = 0;
    try {
      await Promise.all([
        (async () => {
          // Late rows into six hours of 2024 (closed and materialized) and rows at now(), by turns.
          for (let i = 0; i < 40; i++)
            await writer.updateCount(
              i % 2 === 0
                ? `INSERT INTO racing VALUES (TIMESTAMPTZ '2024-01-01 00:05:00+00' + INTERVAL ${(i * 7) % 6} HOUR, ${i + 10})`
                : `INSERT INTO racing VALUES (now(), ${i + 10})`,
            );
          writing = false;
        })(),
        (async () => {
          while (writing) {
            await scalar(refresher, `select refresh_rollup('racing_hourly')`);
            refreshes++;
          }
        })(),
        (async () => {
          while (writing) {
            assert.equal(await scalar(reader, differing), 0);
            reads++;
          }
        })(),
      ]);
    } finally {
      writing = false;
      for (const client of [writer, refresher, reader]) client.close();
    }
    assert.ok(refreshes >= 2 && reads >= 2, `${refreshes} refreshes, ${reads} reads while writing`);
    // Whatever a refresh missed of the writes that raced it is pending for the next one, which stores it.
    await scalar(asAdmin, `select refresh_rollup('racing_hourly')`);
    assert.equal(await scalar(asAdmin, differing), 0);
    const [{ watermark }] = await plainRows(
      asAdmin,
      `SELECT watermark FROM list_rollups() WHERE name = 'racing_hourly'`,
    );
    const before = ` WHERE bucket < TIMESTAMP '${String(watermark)}' ORDER BY bucket, audience`;
    assert.deepEqual(
      await plainRows(asAdmin, `SELECT * FROM racing_hourly_materialized${before}`),
      await plainRows(asAdmin, `SELECT * FROM (${raw})${before}`),
    );
    // Its job would commit a snapshot every minute under the tests after this one.
    await asAdmin.query(`select drop_rollup('racing_hourly')`);
  });
  // The never-stale read's tail: a rollup of a series table reads the rows after its watermark from
  // the Parquet files DuckLake lists for them, not through DuckLake's scan, when those files alone hold
  // them exactly. Each case starts from a tail in files only (read without a DuckLake scan of the
  // source), then writes what the files alone do not show (a row inlined in the catalog, deletes inlined
  // or in a delete file, updates, a column added or renamed) and checks the contract for an admin and a
  // reader of one audience.
  describe('the tail read from its files', () => {
    /** An admin's plan of `sql`, as EXPLAIN ANALYZE draws it. */
    const planOf = async (sql: string): Promise<string> =>
      (await asAdmin.query(`EXPLAIN ANALYZE ${sql}`))
        .toArray()
        .map((row) => Object.values(row.toJSON() as Record<string, unknown>).join('\n'))
        .join('\n');
    /** The setups of the reads of rollups `work` makes, in order (Rollups.readSetup's answers). */
    const setupsDuring = async (
      work: () => Promise<unknown>,
    ): Promise<Array<Awaited<ReturnType<Rollups['readSetup']>>>> => {
      const readSetup = Object.getOwnPropertyDescriptor(Rollups.prototype, 'readSetup')!.value as Rollups['readSetup'];
      const setups: Array<Awaited<ReturnType<Rollups['readSetup']>>> = [];
      const recorded = async function (this: Rollups, ...args: Parameters<Rollups['readSetup']>) {
        const setup = await readSetup.apply(this, args);
        setups.push(setup);
        return setup;
      };
      Object.defineProperty(Rollups.prototype, 'readSetup', { configurable: true, writable: true, value: recorded });
      try {
        await work();
      } finally {
        Object.defineProperty(Rollups.prototype, 'readSetup', { configurable: true, writable: true, value: readSetup });
      }
      return setups;
    };
    /** The DuckLake scans of `table` in an admin's plan of `sql`. */
    const scansOf = async (table: string, sql: string): Promise<number> =>
      (await planOf(sql)).match(new RegExp(`Table: ${table}\\b`, 'g'))?.length ?? 0;
    /**
     * Reads `rollup` until its tail's aggregate and its stored rows, each kept in a table after a second read of the
     * same files, are read instead of them.
     */
    const tailKept = (rollup: string): Promise<number> =>
      pollUntil(
        `${rollup}'s tail read from its kept table`,
        async () => (await planOf(`SELECT * FROM ${rollup}`)).match(/READ_PARQUET/g)?.length ?? 0,
        (parquetScans) => parquetScans === 0,
        { timeoutMs: 120_000 },
      );
    /**
     * Every DuckLake scan in an admin's plan of `sql` (a table's long name is drawn on a line of its own),
     * not the scan of a kept in-memory table (a tail's, stored rows') nor of the temporary table choosing a tail's row.
     */
    const lakeScans = async (sql: string): Promise<number> => {
      const plan = await planOf(sql);
      return (plan.match(/Table:/g)?.length ?? 0) - (plan.match(/\.__orrery_tail_(?:s?\d+|reads)\b/g)?.length ?? 0);
    };

    /**
     * Bulk-ingests `rows` rows (ts, host, v) of row i given by `row` into `table` as `client`'s audience, in a client's
     * transaction committed then: a write the server makes no kept tail for (Rollups.prime follows writes that commit
     * on their own), as another process's write; `primed`: on its own.
     */
    const ingested = async (
      client: TestFlightClient,
      table: string,
      rows: number,
      row: (i: number) => readonly [ts: number, host: string, v: number],
      primed = false,
    ): Promise<void> => {
      const made = Array.from({ length: rows }, (_, i) => row(i));
      const [began] = primed
        ? []
        : await client.doAction('BeginTransaction', packAny('ActionBeginTransactionRequest', {}));
      const transactionId =
        began &&
        (
          FlightSql.ActionBeginTransactionResult.decode(unpackAny(began)!.value) as unknown as {
            transactionId: Uint8Array;
          }
        ).transactionId;
      await client.doPut(
        packAny('CommandStatementIngest', {
          table,
          tableDefinitionOptions: { ifNotExist: 2, ifExists: 2 },
          ...(transactionId ? { transactionId } : {}),
        }),
        new Table({
          ts: makeVector({
            type: new TimestampMicrosecond(),
            data: BigInt64Array.from(made, ([ts]) => BigInt(ts) * 1000n),
          } as never),
          host: vectorFromArray(
            made.map(([, host]) => host),
            new Utf8(),
          ),
          v: makeVector(BigInt64Array.from(made, ([, , v]) => BigInt(v))),
        }),
      );
      if (transactionId)
        await client.doAction('EndTransaction', packAny('ActionEndTransactionRequest', { transactionId, action: 1 }));
    };

    /** The contract, for an admin and a reader of team-a: the hourly rollup of `name` is its GROUP BY. */
    const contract = (name: string, aggregates: string) => async (): Promise<void> => {
      const source = `SELECT time_bucket(INTERVAL 1 HOUR, ts) AS bucket, host, ${aggregates}, audience FROM ${name} GROUP BY ALL`;
      for (const client of [asAdmin, asTeamA]) await same(client, `${name}_hourly`, source);
    };

    /**
     * A table with a day of 2024 materialized and a tail in 2100 (after any watermark, at any hour):
     * two files of 300 rows each, one per audience; its hourly rollup refreshed, its job left for a day.
     */
    const withTail = async (name: string): Promise<{ check: () => Promise<void> }> => {
      await asAdmin.updateCount(
        `CREATE TABLE ${name} (ts TIMESTAMP, host VARCHAR, v BIGINT) WITH (time_column = 'ts')`,
      );
      await asAdmin.updateCount(
        `INSERT INTO ${name} SELECT TIMESTAMP '2024-01-01 00:00:00' + to_minutes(i), 'h' || (i % 3), i FROM range(1440) t(i)`,
      );
      await asAdmin.query(
        `SELECT create_rollup('${name}_hourly', '${name}', INTERVAL '1 hour',
           select_list => 'host, count(*) AS n, sum(v) AS s, max(v) AS mx', group_by => 'host')`,
      );
      // No refresh of the job lands among the writes below (a loaded machine may run it late).
      await jobLeftForADay(asAdmin, `${name}_hourly`);
      await scalar(asAdmin, `SELECT refresh_rollup('${name}_hourly')`);
      for (const [client, offset] of [
        [asTeamA, 0],
        [asTeamB, 1000],
      ] as const)
        await client.updateCount(
          `INSERT INTO ${name} SELECT TIMESTAMP '2100-01-01 00:00:00' + to_seconds(i * 37), 'h' || (i % 3), i + ${offset} FROM range(300) t(i)`,
        );
      const check = contract(name, 'count(*) AS n, sum(v) AS s, max(v) AS mx');
      await check();
      // The tail came from its two files alone and the stored rows from theirs: no DuckLake scan.
      assert.equal(await lakeScans(`SELECT * FROM ${name}_hourly`), 0);
      assert.ok(
        (await scalar(asTeamA, `SELECT count(*) FROM ${name}_hourly WHERE bucket >= TIMESTAMP '2100-01-01'`)) > 0,
      );
      return { check };
    };

    it('stored sketches (a STRUCT holding a MAP) are read from their files too', async () => {
      // The 24 h panels of bench/rollup-rewrite read an hourly rollup with a percentile sketch: through
      // DuckLake's scan of the stored table, set up at every statement, they cost as much as a raw read.
      await asAdmin.updateCount(
        `CREATE TABLE sketched (ts TIMESTAMP, host VARCHAR, v BIGINT) WITH (time_column = 'ts')`,
      );
      await asAdmin.updateCount(
        `INSERT INTO sketched SELECT TIMESTAMP '2024-01-01 00:00:00' + to_minutes(i), 'h' || (i % 3), i FROM range(1440) t(i)`,
      );
      await asAdmin.query(
        `SELECT create_rollup('sketched_hourly', 'sketched', INTERVAL '1 hour',
           select_list => 'host, count(*) AS n, percentile_sketch(v) AS p', group_by => 'host')`,
      );
      await scalar(asAdmin, `SELECT refresh_rollup('sketched_hourly')`);
      for (const client of [asAdmin, asTeamA])
        await same(client, 'sketched_hourly_materialized', 'SELECT * FROM sketched_hourly');
      assert.equal(await lakeScans('SELECT * FROM sketched_hourly_materialized'), 0);
      // Its job would refresh, and commit a snapshot, every minute under the tests after this one.
      await asAdmin.query(`SELECT drop_rollup('sketched_hourly')`);
    });

    it('a row inlined in the catalog after the watermark is read', async () => {
      const { check } = await withTail('inlined');
      await asTeamA.updateCount(`INSERT INTO inlined VALUES (TIMESTAMP '2100-01-01 00:00:05', 'h0', 100000)`);
      await check();
      // An inlined row before the watermark (a pending bucket) leaves the tail to its files.
      const { check: checkEarly } = await withTail('inlined_early');
      await asTeamA.updateCount(`INSERT INTO inlined_early VALUES (TIMESTAMP '2024-01-01 05:30:00', 'h0', 100000)`);
      await checkEarly();
      assert.equal(await scansOf('inlined_early', 'SELECT * FROM inlined_early_hourly'), 1);
      // A window without that pending bucket scans none of its rows, written with literals or with now().
      for (const window of [
        `bucket >= TIMESTAMP '2024-01-01 06:00:00'`,
        `bucket >= now()::TIMESTAMP - INTERVAL 1 DAY`,
      ]) {
        const source = `SELECT * FROM (SELECT time_bucket(INTERVAL 1 HOUR, ts) AS bucket, host, count(*) AS n, sum(v) AS s,
          max(v) AS mx, audience FROM inlined_early GROUP BY ALL) WHERE ${window}`;
        for (const client of [asAdmin, asTeamA]) await same(client, `inlined_early_hourly WHERE ${window}`, source);
        assert.equal(await lakeScans(`SELECT * FROM inlined_early_hourly WHERE ${window}`), 0);
      }
    });

    it('the stored rows are read from their files, less a delete file, and through DuckLake once a refresh inlines a correction', async () => {
      const { check } = await withTail('stored');
      const stored = 'SELECT * FROM stored_hourly_materialized';
      // Every bucket before the tail's (2100) is stored, none pending after a refresh.
      const materialized = async (): Promise<void> => {
        for (const client of [asAdmin, asTeamA])
          await same(
            client,
            'stored_hourly_materialized',
            `SELECT * FROM stored_hourly WHERE bucket < TIMESTAMP '2100-01-01'`,
          );
      };
      await materialized();
      assert.equal(await lakeScans(stored), 0);
      // Late rows in half the stored buckets: the refresh deletes their rows (a delete file: deleting
      // a file's every row ends the file instead) and writes them again (a file), which the read
      // applies by position, still from the files alone.
      const { check: checkMany } = await withTail('stored_many');
      await asTeamA.updateCount(
        `INSERT INTO stored_many SELECT TIMESTAMP '2024-01-01 00:00:00' + to_minutes(i * 20), 'h' || (i % 3), 7 FROM range(36) t(i)`,
      );
      await scalar(asAdmin, `SELECT refresh_rollup('stored_many_hourly')`);
      await checkMany();
      for (const client of [asAdmin, asTeamA])
        await same(
          client,
          'stored_many_hourly_materialized',
          `SELECT * FROM stored_many_hourly WHERE bucket < TIMESTAMP '2100-01-01'`,
        );
      assert.equal(await lakeScans('SELECT * FROM stored_many_hourly_materialized'), 0);
      // A late row corrects a stored bucket (a delete and an insert of the stored table): the files
      // alone no longer hold the stored rows.
      await asTeamA.updateCount(`INSERT INTO stored VALUES (TIMESTAMP '2024-01-01 05:30:00', 'h0', 100000)`);
      await scalar(asAdmin, `SELECT refresh_rollup('stored_hourly')`);
      await check();
      await materialized();
      assert.equal(await lakeScans(stored), 1);
    });

    it("the tail's aggregate is made once for its files and read from a kept table, each reader its audiences' rows", async () => {
      const { check } = await withTail('constant');
      const keptTail = (): Promise<number> => tailKept('constant_hourly');
      // The stored rows' file is scanned; the tail, aggregated once, is not.
      await keptTail();
      const source = `SELECT time_bucket(INTERVAL 1 HOUR, ts) AS bucket, host, count(*) AS n, sum(v) AS s, max(v) AS mx,
        audience FROM constant GROUP BY ALL`;
      await same(asTeamB, 'constant_hourly', source);
      // Rows written into the tail (a file of their own): aggregated again, once, with them.
      await asTeamB.updateCount(
        `INSERT INTO constant SELECT TIMESTAMP '2100-01-01 03:00:00' + to_seconds(i), 'h2', i FROM range(300) t(i)`,
      );
      await check();
      await same(asTeamB, 'constant_hourly', source);
      await keptTail();
      await check();
      await same(asTeamB, 'constant_hourly', source);
    });

    it("a rollup's stored rows are read from a kept table once their files were read: by a panel the rewrite answers, the rollup's view and its stored rows' name, each reader its audiences' rows; a client's transaction reads the files", async () => {
      await asAdmin.updateCount(
        `CREATE TABLE kept_stored (ts TIMESTAMP, host VARCHAR, v BIGINT) WITH (time_column = 'ts')`,
      );
      for (const [client, offset] of [
        [asTeamA, 0],
        [asTeamB, 1000],
      ] as const)
        await client.updateCount(
          `INSERT INTO kept_stored SELECT TIMESTAMP '2024-01-01 00:00:00' + to_minutes(i), 'h' || (i % 3), i + ${offset} FROM range(1440) t(i)`,
        );
      await asAdmin.query(
        `SELECT create_rollup('kept_stored_hourly', 'kept_stored', INTERVAL '1 hour',
           select_list => 'host, count(*) AS n, sum(v) AS s', group_by => 'host')`,
      );
      await scalar(asAdmin, `SELECT refresh_rollup('kept_stored_hourly')`);
      const panel = `SELECT host, count(*) AS n, sum(v) AS s FROM kept_stored
        WHERE ts >= TIMESTAMP '2024-01-01 02:00:00' AND ts < TIMESTAMP '2024-01-01 20:00:00' GROUP BY host ORDER BY host`;
      const raw = panel.replace(' FROM kept_stored\n', ' FROM (SELECT * FROM kept_stored) AS kept_stored\n');
      assert.notEqual(raw, panel);
      // Read from the stored rows' file first: what each key must read from the kept table too.
      const clients = [asAdmin, asTeamA, asTeamB];
      const fromFile = await Promise.all(clients.map((client) => plainRows(client, panel)));
      assert.notDeepEqual(fromFile[1], fromFile[2]);
      await pollUntil(
        'the panel read from the stored rows kept in a table',
        async () => (await planOf(panel)).match(/READ_PARQUET/g)?.length ?? 0,
        (parquetScans) => parquetScans === 0,
        { timeoutMs: 120_000 },
      );
      assert.match(await planOf(panel), /__orrery_tail_s\d+/);
      for (const [i, client] of clients.entries()) {
        assert.deepEqual(await plainRows(client, panel), fromFile[i]);
        assert.deepEqual(await plainRows(client, raw), fromFile[i]);
      }
      // The rollup's view (the stored rows alone: no row after the watermark, none pending) and its stored rows' name
      // read the same kept table, each key its own audiences' rows.
      const source = `SELECT time_bucket(INTERVAL 1 HOUR, ts) AS bucket, host, count(*) AS n, sum(v) AS s, audience
        FROM kept_stored GROUP BY ALL`;
      for (const read of ['SELECT * FROM kept_stored_hourly', 'SELECT * FROM kept_stored_hourly_materialized']) {
        const plan = await planOf(read);
        assert.doesNotMatch(plan, /READ_PARQUET/, read);
        assert.match(plan, /__orrery_tail_s\d+/, read);
      }
      for (const client of clients) {
        await same(client, 'kept_stored_hourly', source);
        await same(client, 'kept_stored_hourly_materialized', source);
      }
      // A client's transaction may have begun before the kept table was made: it reads the files.
      const transactionId = await beginTransaction(asAdmin);
      const inTransaction = (
        await queryInTransaction(asAdmin, transactionId, 'EXPLAIN ANALYZE SELECT * FROM kept_stored_hourly')
      )
        .toArray()
        .map((row) => Object.values(row.toJSON() as Record<string, unknown>).join('\n'))
        .join('\n');
      await endTransaction(asAdmin, transactionId, false);
      assert.match(inTransaction, /READ_PARQUET/);
      assert.doesNotMatch(inTransaction, /__orrery_tail_s\d+/);
      // Its job would refresh, and commit a snapshot, every minute under the tests after this one.
      await asAdmin.query(`SELECT drop_rollup('kept_stored_hourly')`);
    });

    it("a rollup's stored rows are kept in a table from their files' first read: the next read reads the table", async () => {
      await asAdmin.updateCount(
        `CREATE TABLE first_read (ts TIMESTAMP, host VARCHAR, v BIGINT) WITH (time_column = 'ts')`,
      );
      await asTeamA.updateCount(
        `INSERT INTO first_read SELECT TIMESTAMP '2024-01-01 00:00:00' + to_minutes(i), 'h' || (i % 3), i FROM range(1440) t(i)`,
      );
      await asAdmin.query(
        `SELECT create_rollup('first_read_hourly', 'first_read', INTERVAL '1 hour',
           select_list => 'host, count(*) AS n, sum(v) AS s', group_by => 'host')`,
      );
      await scalar(asAdmin, `SELECT refresh_rollup('first_read_hourly')`);
      const read = 'SELECT * FROM first_read_hourly';
      let first: unknown[] = [];
      const makings = await storedMakingsDuring(async () => (first = await plainRows(asTeamA, `${read}${order}`)));
      assert.equal(makings.length, 1, 'the first read makes the kept table');
      await Promise.all(makings);
      const plan = await planOf(read);
      assert.match(plan, /__orrery_tail_s\d+/);
      assert.doesNotMatch(plan, /READ_PARQUET/);
      assert.deepEqual(await plainRows(asTeamA, `${read}${order}`), first);
      await same(
        asTeamA,
        'first_read_hourly',
        `SELECT time_bucket(INTERVAL 1 HOUR, ts) AS bucket, host, count(*) AS n,
        sum(v) AS s, audience FROM first_read GROUP BY ALL`,
      );
      // Its job would refresh, and commit a snapshot, every minute under the tests after this one.
      await asAdmin.query(`SELECT drop_rollup('first_read_hourly')`);
    });

    it("a rollup's stored rows more than maxKeptRows are not kept in a table: reads read every one from their files", async () => {
      await asAdmin.updateCount(
        `CREATE TABLE many_stored (ts TIMESTAMP, host VARCHAR, v BIGINT) WITH (time_column = 'ts')`,
      );
      // 120,000 hosts in one hour: 120,000 stored rows, more than maxKeptRows.
      await asTeamA.updateCount(
        `INSERT INTO many_stored SELECT TIMESTAMP '2024-01-01 00:00:00', 'h' || i, i FROM range(120000) t(i)`,
      );
      await asAdmin.query(
        `SELECT create_rollup('many_stored_hourly', 'many_stored', INTERVAL '1 hour',
           select_list => 'host, count(*) AS n, sum(v) AS s', group_by => 'host')`,
      );
      await scalar(asAdmin, `SELECT refresh_rollup('many_stored_hourly')`);
      const read = 'SELECT count(*) AS rows, sum(n) AS n, sum(s) AS s, max(host) AS last FROM many_stored_hourly';
      const source = `SELECT count(*) AS rows, sum(n) AS n, sum(s) AS s, max(host) AS last
        FROM (SELECT host, count(*) AS n, sum(v) AS s FROM many_stored GROUP BY ALL)`;
      let first: unknown[] = [];
      const makings = await storedMakingsDuring(async () => (first = await plainRows(asTeamA, read)));
      assert.equal(makings.length, 1, "the first read starts the kept table's making");
      assert.equal(await makings[0], null, 'more rows than kept');
      assert.doesNotMatch(await planOf(read), /__orrery_tail_s\d+/, 'the files are read');
      const expected = await plainRows(asTeamA, source);
      assert.deepEqual(first, expected);
      for (const name of [read, read.replace('many_stored_hourly', 'many_stored_hourly_materialized')])
        assert.deepEqual(await plainRows(asTeamA, name), expected, name);
      assert.equal(await scalar(asTeamA, 'SELECT count(*) FROM many_stored_hourly'), 120_000);
      await asAdmin.query(`SELECT drop_rollup('many_stored_hourly')`);
    });

    it("a rollup's stored rows too large to keep are not copied again at each refresh of the same watermark", async () => {
      await asAdmin.updateCount(
        `CREATE TABLE large_stored (t BIGINT, host VARCHAR, v BIGINT) WITH (time_column = 't')`,
      );
      // 120,000 hosts in bucket 0 (more than maxKeptRows) and a row at 100: the watermark is 100 until a row passes it.
      await asTeamA.updateCount(
        `INSERT INTO large_stored SELECT i % 10, 'h' || i, i FROM range(120000) t(i) UNION ALL SELECT 100, 'h0', 0`,
      );
      await asAdmin.query(
        `SELECT create_rollup('large_stored_10', 'large_stored', bucket_width => 10,
           select_list => 'host, count(*) AS n, sum(v) AS s', group_by => 'host')`,
      );
      // No refresh of the job lands among the counted writes and refreshes below.
      await jobLeftForADay(asAdmin, 'large_stored_10');
      const read = 'SELECT count(*) AS rows, sum(n) AS n, sum(s) AS s FROM large_stored_10';
      const source = `SELECT count(*) AS rows, sum(n) AS n, sum(s) AS s
        FROM (SELECT t // 10 AS bucket, host, count(*) AS n, sum(v) AS s FROM large_stored GROUP BY ALL)`;
      /** The kept tables `write` (a write, a refresh) and a read after it start, each settled: none is kept. */
      const makingsAfter = async (write: string): Promise<number> => {
        const makings = await storedMakingsDuring(async () => {
          await asTeamA.updateCount(write);
          await scalar(asAdmin, `SELECT refresh_rollup('large_stored_10')`);
          assert.deepEqual(await plainRows(asTeamA, read), await plainRows(asTeamA, source));
        });
        assert.deepEqual(await Promise.all(makings), Array<null>(makings.length).fill(null), 'too large to keep');
        return makings.length;
      };
      assert.ok((await makingsAfter(`INSERT INTO large_stored VALUES (1, 'h1', 1)`)) >= 1, 'the first stored rows');
      const watermark = `SELECT watermark FROM list_rollups() WHERE name = 'large_stored_10'`;
      assert.equal(await scalar(asAdmin, watermark), 100);
      // A late row: its bucket stored again (other files), at the same watermark.
      assert.equal(await makingsAfter(`INSERT INTO large_stored VALUES (5, 'late', 7)`), 0, 'not copied again');
      assert.equal(await scalar(asAdmin, watermark), 100);
      // Rows past the watermark (5,000 to store, in a file): the next one's stored rows are tried.
      assert.ok(
        (await makingsAfter(
          `INSERT INTO large_stored SELECT 100 + i % 100, 'h' || i, i FROM range(5000) t(i) UNION ALL SELECT 200, 'h1', 1`,
        )) >= 1,
        'the next watermark',
      );
      assert.equal(await scalar(asAdmin, watermark), 200);
      await asAdmin.query(`SELECT drop_rollup('large_stored_10')`);
    });

    it("a rollup's stored rows wider than maxKeptBytes are not kept in a table: reads read their files", async () => {
      await asAdmin.updateCount(
        `CREATE TABLE wide_stored (ts TIMESTAMP, host VARCHAR, v BIGINT) WITH (time_column = 'ts')`,
      );
      // 200 hosts of 400 KB names: 200 stored rows (far fewer than maxKeptRows), 80 MB (more than maxKeptBytes).
      await asTeamA.updateCount(
        `INSERT INTO wide_stored SELECT TIMESTAMP '2024-01-01 00:00:00', 'h' || i || repeat('x', 400000), i FROM range(200) t(i)`,
      );
      await asAdmin.query(
        `SELECT create_rollup('wide_stored_hourly', 'wide_stored', INTERVAL '1 hour',
           select_list => 'host, count(*) AS n, sum(v) AS s', group_by => 'host')`,
      );
      await scalar(asAdmin, `SELECT refresh_rollup('wide_stored_hourly')`);
      const read =
        'SELECT count(*) AS rows, sum(length(host)) AS bytes, sum(n) AS n, sum(s) AS s FROM wide_stored_hourly';
      let first: unknown[] = [];
      const makings = await storedMakingsDuring(async () => (first = await plainRows(asTeamA, read)));
      assert.equal(makings.length, 1, "the first read starts the kept table's making");
      assert.equal(await makings[0], null, 'too wide to keep');
      const plan = await planOf(read);
      assert.doesNotMatch(plan, /__orrery_tail_s\d+/, 'too wide to keep: the files are read');
      assert.deepEqual(await plainRows(asTeamA, read), first);
      assert.deepEqual(
        first,
        await plainRows(
          asTeamA,
          `SELECT count(*) AS rows, sum(length(host)) AS bytes, sum(n) AS n, sum(s) AS s FROM (SELECT host, count(*) AS n, sum(v) AS s FROM wide_stored GROUP BY ALL)`,
        ),
      );
      await asAdmin.query(`SELECT drop_rollup('wide_stored_hourly')`);
    });

    it("a kept tail's table is named by no statement, and a client's transaction reads the tail from its files", async () => {
      const { check } = await withTail('hidden');
      await tailKept('hidden_hourly');
      const plan = await planOf('SELECT * FROM hidden_hourly');
      const [tail] = /__orrery_tail_\d+/.exec(plan) ?? [];
      assert.ok(tail, "the tail's aggregate is read from a table");
      const [stored] = /__orrery_tail_s\d+/.exec(plan) ?? [];
      assert.ok(stored, 'the stored rows are read from a table');
      // Every audience's rows are in them: no key reaches them but through the rollup's view (its own rows).
      for (const table of [tail, stored]) {
        for (const name of [
          `${table}.main.${table}`,
          `"${table}"."main"."${table}"`,
          `${table}.${table}`,
          table,
          `memory.main.${table}`,
        ])
          for (const client of [asTeamA, asAdmin])
            await assert.rejects(client.query(`SELECT * FROM ${name}`), /permission denied/, name);
        for (const ddl of [`DROP TABLE ${table}.main.${table}`, `DETACH ${table}`])
          await assert.rejects(asAdmin.updateCount(ddl), /permission denied/, ddl);
      }
      await check();
      // A client's transaction may have begun before a kept table was made: it reads the tail's files.
      const transactionId = await beginTransaction(asAdmin);
      const sql = `SELECT sum(n) AS n FROM hidden_hourly`;
      const inTransaction = async (): Promise<unknown> =>
        (await queryInTransaction(asAdmin, transactionId, sql)).toArray()[0].toJSON().n;
      assert.equal(Number(await inTransaction()), 2040);
      await asTeamA.updateCount(
        `INSERT INTO hidden SELECT TIMESTAMP '2100-01-01 04:00:00' + to_seconds(i), 'h1', i FROM range(300) t(i)`,
      );
      await tailKept('hidden_hourly');
      // It reads as of its snapshot (its first read's): the rows written since are not in it.
      assert.equal(Number(await inTransaction()), 2040);
      await endTransaction(asAdmin, transactionId, false);
      assert.equal(await scalar(asAdmin, sql), 2340);
      await check();
    });

    it("no admin statement drops or shadows what other readers' statements read: kept tails, Orrery's macros, DuckDB's functions", async () => {
      const { check } = await withTail('guarded');
      await tailKept('guarded_hourly');
      const [table] = /__orrery_tail_\d+/.exec(await planOf('SELECT * FROM guarded_hourly')) ?? [];
      const clock = `SELECT typeof(now()) AS now, CAST(sum(i) AS INTEGER) AS s, count(*) AS n, abs(-2) AS a, 1 + 1 AS two FROM range(4) t(i)`;
      const expected = [{ now: 'TIMESTAMP_NS', s: 6, n: 4, a: 2, two: 2 }];
      const family = [
        // The kept tails' catalog, and the engine's own.
        'DROP SCHEMA memory.main CASCADE',
        'DROP SCHEMA IF EXISTS "memory"."main" CASCADE',
        'DROP SCHEMA orrery.main CASCADE',
        'DROP SCHEMA main',
        'DETACH memory',
        'DETACH DATABASE IF EXISTS memory',
        `DROP TABLE "${table}"."main"."${table}"`,
        `ALTER TABLE ${table}.main.${table} RENAME TO t`,
        `DETACH DATABASE IF EXISTS "${table}"`,
        // Orrery's macros, read by every statement (now() is a TIMESTAMP_NS; the sketches).
        'DROP MACRO now',
        'DROP MACRO IF EXISTS orrery.main."NOW"',
        'DROP FUNCTION get_current_timestamp',
        "CREATE OR REPLACE MACRO now() AS TIMESTAMP_NS '2000-01-01'",
        'CREATE OR REPLACE FUNCTION orrery.now() AS 1',
        'DROP MACRO snouttime.main.percentile',
        'CREATE OR REPLACE MACRO snouttime.merge(x) AS 42',
        'DROP MACRO date_bin',
        // A macro of the default schema stands for DuckDB's function of its name in every statement.
        'CREATE MACRO sum(x) AS 42',
        'CREATE PERSISTENT MACRO orrery.main.count_star() AS 42',
        'CREATE MACRO abs(x) AS 42',
        'CREATE MACRO "+"(a, b) AS 42',
        'CREATE MACRO read_parquet(x) AS TABLE SELECT 42 AS bucket',
        'CREATE OR REPLACE MACRO typeof(x) AS 42',
      ];
      for (const sql of family) {
        const { code, details } = await refusal(asAdmin.updateCount(sql));
        // Orrery's refusals (permission denied), or DuckDB's own (a catalog's main schema is internal).
        assert.ok(
          code === 7 || /internal system entry|Cannot drop internal/.test(details),
          `${sql}: ${code} ${details}`,
        );
        for (const client of [asAdmin, asTeamA]) assert.deepEqual(await plainRows(client, clock), expected, sql);
        await check();
      }
      assert.match(
        (await refusal(asAdmin.updateCount('CREATE MACRO sum(x) AS 42'))).details,
        /^permission denied: a macro named sum would stand for the function sum in every statement; it cannot be changed$/,
      );
      // Macros of other names, and TEMP ones (the statement's connection's alone), are the admin's to make.
      await asAdmin.updateCount('CREATE MACRO guarded_double(x) AS x * 2');
      assert.deepEqual(await plainRows(asAdmin, 'SELECT guarded_double(21) AS v'), [{ v: 42 }]);
      await asAdmin.updateCount('DROP MACRO guarded_double');
      await asAdmin.updateCount('CREATE TEMP MACRO sum(x) AS 42');
      for (const client of [asAdmin, asTeamA]) assert.deepEqual(await plainRows(client, clock), expected);
      await check();
    });

    it("reads after writes into the tail read no change feed nor the stored rows' listing again; a late row does", async () => {
      const { check } = await withTail('steady');
      /** The DuckDB queries of steady's change feed while `work` runs: another rollup's job may read its own. */
      const feedReads = (work: () => Promise<void>): Promise<number> => changeFeedReads('steady', work);
      const write = (ts: string): Promise<number> =>
        asTeamA.updateCount(
          `INSERT INTO steady SELECT TIMESTAMP '${ts}' + to_seconds(i), 'h1', i FROM range(300) t(i)`,
        );
      /** Listings of a table's files (table-files.ts) while `work` runs. */
      const listings = (work: () => Promise<void>): Promise<number> =>
        countedCalls(MetadataStore.prototype, 'query', work, (text) =>
          String(text).includes('f.begin_snapshot >= $4 AND (f.partial_max IS NULL OR f.partial_max <= $2)'),
        );
      /** Lookups of a table's paths and columns before listing its files while `work` runs. */
      const tableLookups = (work: () => Promise<void>): Promise<number> =>
        countedCalls(MetadataStore.prototype, 'query', work, (text) =>
          String(text).includes(`'ducklake_inlined_delete_' || t.table_id`),
        );
      /** A write and the contract's reads after it (the write lists and reads what they need: Rollups.prime). */
      const writeAndCheck = (ts: string) => async (): Promise<void> => {
        await write(ts);
        await check();
      };
      for (const hour of ['05', '06', '07']) {
        assert.equal(await feedReads(writeAndCheck(`2100-01-01 ${hour}:00:00`)), 0, `a write at ${hour}:00 of 2100`);
        // The tail's files are listed again, the new one alone, from the last listing; the stored rows', unchanged, are not.
        let lookups = 0;
        const written = writeAndCheck(`2100-01-01 ${hour}:30:00`);
        assert.equal(await listings(async () => void (lookups = await tableLookups(written))), 1, `${hour}:30`);
        assert.equal(lookups, 0, `a write at ${hour}:30 of 2100`);
      }
      // A late row (before the watermark) is a pending bucket: the feed of the snapshots since is read (once, unless
      // another test's refresh job makes a snapshot between two reads).
      assert.ok((await feedReads(writeAndCheck('2024-01-01 03:00:00'))) >= 1);
    });

    it('a read from the files alone, repeated, is prepared once (no DuckLake transaction) and stays exact', async () => {
      const { check } = await withTail('repeated');
      await tailKept('repeated_hourly');
      const sql = `SELECT * FROM repeated_hourly WHERE n > 0${order}`;
      /** DuckDB's prepares of the statement while `work` runs. */
      const prepares = (work: () => Promise<void>): Promise<number> =>
        countedCalls(DuckDBConnection.prototype, 'prepare', work, (text) => String(text).includes('repeated_hourly'));
      let want: unknown[] = [];
      assert.equal(await prepares(async () => void (want = await plainRows(asTeamA, sql))), 1);
      for (let i = 0; i < 2; i++)
        assert.equal(await prepares(async () => assert.deepEqual(await plainRows(asTeamA, sql), want)), 0);
      // A write makes another snapshot, whose files the next read is set up with: prepared again, exact.
      await asTeamA.updateCount(
        `INSERT INTO repeated SELECT TIMESTAMP '2100-01-01 02:00:00' + to_seconds(i), 'h1', i FROM range(300) t(i)`,
      );
      await check();
      assert.equal(await lakeScans('SELECT * FROM repeated_hourly'), 0);
    });

    it("a kept tail's table made leaves the statements kept for other texts kept, another rollup's kept tail's read too: they are not prepared again", async () => {
      const { check } = await withTail('untouched');
      await tailKept('untouched_hourly');
      // Another rollup's read of its kept tail's table alone (its setup names that table): kept once run.
      const bystander = await withTail('bystander');
      await tailKept('bystander_hourly');
      const bystanderSql = `SELECT * FROM bystander_hourly WHERE n > 0${order}`;
      const bystanderPrepares = (work: () => Promise<void>): Promise<number> =>
        countedCalls(DuckDBConnection.prototype, 'prepare', work, (text) => String(text).includes('bystander_hourly'));
      const bystanderWant = await plainRows(asTeamA, bystanderSql);
      // Another statement, read from the stored rows' files alone: kept once run, prepared once.
      const other = `SELECT host, sum(n) AS n FROM untouched_hourly_materialized GROUP BY host ORDER BY host`;
      const prepares = (work: () => Promise<void>): Promise<number> =>
        countedCalls(DuckDBConnection.prototype, 'prepare', work, (text) =>
          String(text).includes('untouched_hourly_materialized'),
        );
      const want = await plainRows(asTeamA, other);
      assert.equal(await prepares(async () => assert.deepEqual(await plainRows(asTeamA, other), want)), 0);
      assert.equal(
        await bystanderPrepares(async () => assert.deepEqual(await plainRows(asTeamA, bystanderSql), bystanderWant)),
        0,
      );
      // A write into the tail: its snapshot's tail is kept (the kept one merged with the new file's), a row of a table.
      const prepare = Object.getOwnPropertyDescriptor(DuckDBConnection.prototype, 'prepare')!.value as (
        this: DuckDBConnection,
        sql: string,
      ) => ReturnType<DuckDBConnection['prepare']>;
      let made = 0;
      DuckDBConnection.prototype.prepare = async function (this: DuckDBConnection, sql: string) {
        const prepared = await prepare.call(this, sql);
        if (sql.startsWith('INSERT INTO __orrery_tail_')) {
          const run = prepared.run.bind(prepared);
          prepared.run = async () => {
            const result = await run();
            made++;
            return result;
          };
        }
        return prepared;
      };
      try {
        await asTeamA.updateCount(
          `INSERT INTO untouched SELECT TIMESTAMP '2100-01-01 05:00:00' + to_seconds(i), 'h1', i FROM range(300) t(i)`,
        );
      } finally {
        DuckDBConnection.prototype.prepare = prepare;
      }
      assert.equal(made, 1);
      assert.equal(await prepares(async () => assert.deepEqual(await plainRows(asTeamA, other), want)), 0);
      // DuckDB would bind it again at every run, had a table of a database it read been made.
      assert.equal(
        await bystanderPrepares(async () => assert.deepEqual(await plainRows(asTeamA, bystanderSql), bystanderWant)),
        0,
      );
      await check();
      await bystander.check();
    });

    it('a statement planned on a kept tail dropped before its DoGet is planned again: it reads the tail kept now, exact', async () => {
      const { check } = await withTail('late');
      await tailKept('late_hourly');
      const sql = `SELECT * FROM late_hourly${order}`;
      let info: Awaited<ReturnType<TestFlightClient['getFlightInfo']>> | undefined;
      const [{ fill, tailReads }] = await setupsDuring(async () => {
        info = await asTeamA.getFlightInfo(packAny('CommandStatementQuery', { query: sql }));
      });
      // Told natively (the addon's __orrery_tail_row), or by the fill without the addon.
      const [ring, id] = tailReads ? [...tailReads][0] : /SET (__orrery_tail_\d+) = (\d+)/.exec(fill!)!.slice(1);
      // A write: another kept tail replaces the one the plan reads, whose row is deleted soon after.
      const prepare = Object.getOwnPropertyDescriptor(DuckDBConnection.prototype, 'prepare')!.value as (
        this: DuckDBConnection,
        sql: string,
      ) => ReturnType<DuckDBConnection['prepare']>;
      let deleted = false;
      DuckDBConnection.prototype.prepare = async function (this: DuckDBConnection, text: string) {
        const prepared = await prepare.call(this, text);
        if (text === `DELETE FROM ${ring}.main.${ring} WHERE __id = ${id}`) {
          const run = prepared.run.bind(prepared);
          prepared.run = async () => {
            const result = await run();
            deleted = true;
            return result;
          };
        }
        return prepared;
      };
      try {
        await asTeamA.updateCount(
          `INSERT INTO late SELECT TIMESTAMP '2100-01-01 06:00:00' + to_seconds(i), 'h1', i FROM range(300) t(i)`,
        );
        await pollUntil(`row ${id} of ${ring} deleted`, async () => deleted, Boolean, {
          timeoutMs: 60_000,
          intervalMs: 500,
        });
      } finally {
        DuckDBConnection.prototype.prepare = prepare;
      }
      const rows = (await asTeamA.doGet(info!.endpoints[0].ticket)).table.toArray().map((r) => plain(r.toJSON()));
      assert.deepEqual(rows, await plainRows(asTeamA, sql));
      await check();
    });

    it('a ring of kept tails that was given ringRows rows is replaced by a new one at the next write: reads stay exact', async () => {
      const { check } = await withTail('rotated');
      const sql = `SELECT * FROM rotated_hourly${order}`;
      const source = `SELECT time_bucket(INTERVAL 1 HOUR, ts) AS bucket, host, count(*) AS n, sum(v) AS s, max(v) AS mx,
        audience FROM rotated GROUP BY ALL${order}`;
      /** The ring a read of team-a's is told (or filled) to read a row of, and its answer. */
      const ringRead = async (): Promise<{ ring: string; rows: unknown[] }> => {
        let rows: unknown[] = [];
        const [{ fill, tailReads }] = await setupsDuring(async () => (rows = await plainRows(asTeamA, sql)));
        const ring = tailReads ? [...tailReads.keys()][0] : /SET (__orrery_tail_\d+) =/.exec(fill!)![1];
        return { ring, rows };
      };
      const write = (i: number): Promise<unknown> =>
        asTeamA.updateCount(
          `INSERT INTO rotated SELECT TIMESTAMP '2100-01-01 02:00:00' + to_seconds(i + ${i * 300}), 'h' || (i % 3), i FROM range(300) t(i)`,
        );
      await write(0);
      const first = await ringRead();
      assert.deepEqual(first.rows, await plainRows(asTeamA, source));
      // Each write through the server keeps its tail as a row of the ring (Rollups.prime) before it answers: the ring
      // read first held a row before these ringRows writes, so the last one's row is in another.
      for (let i = 1; i <= ringRows; i++) await write(i);
      const read = await ringRead();
      assert.notEqual(read.ring, first.ring);
      assert.deepEqual(read.rows, await plainRows(asTeamA, source));
      await write(ringRows + 1);
      assert.deepEqual((await ringRead()).rows, await plainRows(asTeamA, source));
      await check();
    });

    // A failed making of a ring marked its tail too large to keep, and no write kept it again until the watermark
    // moved (s21-review2's G3).
    it('a ring of kept tails that could not be made at a rotation is made at the next write', async () => {
      const { check } = await withTail('unrotated');
      const sql = `SELECT * FROM unrotated_hourly${order}`;
      const source = `SELECT time_bucket(INTERVAL 1 HOUR, ts) AS bucket, host, count(*) AS n, sum(v) AS s, max(v) AS mx,
        audience FROM unrotated GROUP BY ALL${order}`;
      const write = (i: number): Promise<unknown> =>
        asTeamA.updateCount(
          `INSERT INTO unrotated SELECT TIMESTAMP '2100-01-01 02:00:00' + to_seconds(i + ${i * 300}), 'h' || (i % 3), i FROM range(300) t(i)`,
        );
      /** The rings a read of team-a's reads a kept tail's row of (told natively or filled), and its answer. */
      const ringsRead = async (): Promise<{ rings: string[]; rows: unknown[] }> => {
        let rows: unknown[] = [];
        const [{ fill, tailReads }] = await setupsDuring(async () => (rows = await plainRows(asTeamA, sql)));
        return {
          rings: tailReads
            ? [...tailReads.keys()]
            : [...(fill ?? '').matchAll(/(__orrery_tail_\d+) =/g)].map((m) => m[1]),
          rows,
        };
      };
      await write(0);
      const [ring] = (await ringsRead()).rings;
      // The rollups' engine (the query engine): its next rings' databases attached first, their making fails.
      const readSetup = Object.getOwnPropertyDescriptor(Rollups.prototype, 'readSetup')!.value as Rollups['readSetup'];
      let engine: { execute(sql: string): Promise<number> } | undefined;
      const seen = function (this: Rollups, ...args: Parameters<Rollups['readSetup']>) {
        ({ engine } = this as unknown as { engine: NonNullable<typeof engine> });
        return readSetup.apply(this, args);
      };
      Object.defineProperty(Rollups.prototype, 'readSetup', { configurable: true, writable: true, value: seen });
      try {
        await plainRows(asTeamA, sql);
      } finally {
        Object.defineProperty(Rollups.prototype, 'readSetup', { configurable: true, writable: true, value: readSetup });
      }
      const first = Number(/__orrery_tail_(\d+)/.exec(ring)![1]);
      const taken = Array.from({ length: 200 }, (_, i) => `__orrery_tail_${first + 1 + i}`);
      for (const name of taken) await engine!.execute(`ATTACH ':memory:' AS ${name}`);
      try {
        // The ring is given its last rows, and the write after it fails to make the next.
        for (let i = 1; i <= ringRows + 1; i++) await write(i);
      } finally {
        for (const name of taken) await engine!.execute(`DETACH DATABASE IF EXISTS ${name}`);
      }
      await write(ringRows + 2);
      const read = await ringsRead();
      assert.equal(read.rings.length, 1, 'the tail read from a kept row');
      assert.notEqual(read.rings[0], ring);
      assert.deepEqual(read.rows, await plainRows(asTeamA, source));
      await check();
    });

    it("reads after writes through the server are set up and prepared once: each run reads its snapshot's kept tail, exact for every reader, rows DuckDB's plan had no statistics of included", async () => {
      const { check } = await withTail('rereads');
      const source = `SELECT time_bucket(INTERVAL 1 HOUR, ts) AS bucket, host, count(*) AS n, sum(v) AS s, max(v) AS mx,
        audience FROM rereads GROUP BY ALL`;
      // Buckets, values and an audience the kept tail holds no row of when the reads are first prepared: a plan
      // made with its statistics then would leave them out for good.
      const window = `bucket >= TIMESTAMP '2100-01-01 03:00:00' AND mx > 5000`;
      const sql = `SELECT * FROM rereads_hourly WHERE ${window}${order}`;
      const want = `SELECT * FROM (${source}) WHERE ${window}${order}`;
      const readers = [asAdmin, asTeamA, asTeamB];
      const prepares = (work: () => Promise<void>): Promise<number> =>
        countedCalls(DuckDBConnection.prototype, 'prepare', work, (text) => String(text).includes('rereads_hourly'));
      const reads = async (): Promise<void> => {
        for (const client of readers) assert.deepEqual(await plainRows(client, sql), await plainRows(client, want));
      };
      // Files each (a row or a few would be inlined in the catalog, read through DuckLake).
      await asAdmin.updateCount(
        `INSERT INTO rereads SELECT TIMESTAMP '2100-01-01 01:00:00' + to_seconds(i), 'h0', i FROM range(300) t(i)`,
      );
      assert.equal(await prepares(reads), readers.length, 'the first reads');
      assert.equal((await plainRows(asTeamB, sql)).length, 0);
      for (const [i, client] of [asTeamA, asTeamB, asTeamA, asTeamB].entries()) {
        await client.updateCount(
          `INSERT INTO rereads SELECT TIMESTAMP '2100-01-01 0${3 + i}:00:00' + to_seconds(i), 'h' || (i % 3), 5000 + i FROM range(300) t(i)`,
        );
        assert.equal(await prepares(reads), 0, `the reads after write ${i + 1}`);
      }
      assert.ok((await plainRows(asTeamB, sql)).length > 0);
      await check();
    });

    it("a read at a snapshot taken before a refresh leaves what was kept for the new watermark kept: no tail nor stored rows' table made again", async () => {
      await asAdmin.updateCount(
        `CREATE TABLE behind (height BIGINT, host VARCHAR, v BIGINT) WITH (time_column = 'height')`,
      );
      // Files of 300 rows each (a few rows would be inlined in the catalog, read through DuckLake).
      const add = (from: number): Promise<unknown> =>
        asAdmin.updateCount(`INSERT INTO behind SELECT ${from} + i, 'h' || (i % 3), i FROM range(300) t(i)`);
      await add(0);
      await asAdmin.query(
        `SELECT create_rollup('behind_100', 'behind', bucket_width => 100,
           select_list => 'host, count(*) AS n, sum(v) AS s', group_by => 'host')`,
      );
      await jobLeftForADay(asAdmin, 'behind_100');
      await add(300);
      // The server's rollups, and where they read before the refresh below (the watermark at 200, then at 500).
      const readSetup = Object.getOwnPropertyDescriptor(Rollups.prototype, 'readSetup')!.value as Rollups['readSetup'];
      const instances: Rollups[] = [];
      Object.defineProperty(Rollups.prototype, 'readSetup', {
        configurable: true,
        writable: true,
        value: function (this: Rollups, ...args: Parameters<Rollups['readSetup']>) {
          instances.push(this);
          return readSetup.apply(this, args);
        },
      });
      try {
        await plainRows(asAdmin, 'SELECT * FROM behind_100');
      } finally {
        Object.defineProperty(Rollups.prototype, 'readSetup', { configurable: true, writable: true, value: readSetup });
      }
      const [rollups] = instances;
      const before = await rollups.readPoint();
      await scalar(asAdmin, `SELECT refresh_rollup('behind_100')`);
      await add(600);
      await tailKept('behind_100');
      const sql = `SELECT * FROM behind_100 ORDER BY bucket, host, audience`;
      const want = await plainRows(
        asAdmin,
        `SELECT height // 100 * 100 AS bucket, host, count(*) AS n, sum(v) AS s, audience FROM behind GROUP BY ALL ORDER BY bucket, host, audience`,
      );
      assert.deepEqual(await plainRows(asAdmin, sql), want);
      // A read set up at the snapshot before the refresh (its statement began before it committed) reads its own
      // tail's files, then the reads at the latest snapshot read what was kept for them: no table nor ring row made.
      const made = await countedCalls(
        DuckDBConnection.prototype,
        'prepare',
        async () => {
          const old = await rollups.readSetup(['behind_100'], { kind: 'all' }, before);
          assert.equal(old.fill ?? old.tailReads, undefined, 'the earlier read reads no kept tail');
          await tailKept('behind_100');
          assert.deepEqual(await plainRows(asAdmin, sql), want);
        },
        (text) => /^(?:CREATE TABLE|INSERT INTO) __orrery_tail_s?\d+/.test(String(text)),
      );
      assert.equal(made, 0);
      await asAdmin.query(`SELECT drop_rollup('behind_100')`);
    });

    /**
     * withTail's table, its tail kept, and a late row that leaves its rollup's bucket of 2024-01-01 05:00 pending (its
     * rows aggregated from the table's, which binds the DuckLake table): the table's hourly aggregation.
     */
    const withPendingBucket = async (name: string): Promise<string> => {
      const { check } = await withTail(name);
      await tailKept(`${name}_hourly`);
      await asTeamA.updateCount(`INSERT INTO ${name} VALUES (TIMESTAMP '2024-01-01 05:30:00', 'h0', 100000)`);
      await check();
      return `SELECT time_bucket(INTERVAL 1 HOUR, ts) AS bucket, host, count(*) AS n, sum(v) AS s, max(v) AS mx,
        audience FROM ${name} GROUP BY ALL`;
    };

    it("a read of a window without the rollup's pending buckets binds no DuckLake table: prepared once, exact", async () => {
      const raw = await withPendingBucket('windowed');
      const prepares = (work: () => Promise<void>): Promise<number> =>
        countedCalls(DuckDBConnection.prototype, 'prepare', work, (text) => String(text).includes('windowed_hourly'));
      for (const window of [
        `bucket >= TIMESTAMP '2024-01-01 06:00:00'`,
        `w.bucket > now()::TIMESTAMP - INTERVAL 1 DAY AND w.host <> 'none'`,
        `bucket BETWEEN '2024-01-01 07:00:00' AND '2100-01-02' AND n > 0`,
        `bucket IN (TIMESTAMP '2024-01-01 04:00:00', TIMESTAMP '2100-01-01 00:00:00')`,
      ]) {
        const sql = `SELECT * FROM windowed_hourly w WHERE ${window}${order}`;
        for (const client of [asAdmin, asTeamA]) {
          const want = await plainRows(client, `SELECT * FROM (${raw}) w WHERE ${window}${order}`);
          assert.ok(want.length > 0, window);
          assert.equal(await prepares(async () => assert.deepEqual(await plainRows(client, sql), want)), 1, window);
          // No DuckLake transaction: the next read of the same text runs DuckDB's prepared statement again.
          assert.equal(await prepares(async () => assert.deepEqual(await plainRows(client, sql), want)), 0, window);
        }
      }
      // A window holding the pending bucket, and a statement naming the rollup twice, read it.
      for (const sql of [
        `SELECT * FROM windowed_hourly WHERE bucket >= TIMESTAMP '2024-01-01 05:00:00'`,
        `SELECT * FROM windowed_hourly WHERE bucket >= TIMESTAMP '2024-01-01 06:00:00'
         UNION ALL SELECT * FROM windowed_hourly WHERE bucket < TIMESTAMP '2024-01-01 06:00:00'`,
      ]) {
        const want = await plainRows(
          asTeamA,
          `SELECT * FROM (${raw}) WHERE bucket >= TIMESTAMP '2024-01-01 05:00:00'${order}`,
        );
        const whole = await plainRows(asTeamA, `${raw}${order}`);
        const got = await plainRows(asTeamA, `SELECT * FROM (${sql})${order}`);
        assert.deepEqual(got, sql.includes('UNION') ? whole : want);
        assert.ok(got.some((r) => String(r.bucket).length > 0 && r.mx === 100000));
      }
    });

    /** For each plan of a rollup read while `work` runs, in order: whether its set-up reads a DuckLake table. */
    const setupsReadLake = async (work: () => Promise<unknown>): Promise<boolean[]> =>
      (await setupsDuring(work)).map((setup) => setup.lake);

    it('a window bound by parameters ($1) leaves out the pending buckets outside it, as its literal does', async () => {
      const raw = await withPendingBucket('bound_window');
      const read = `SELECT * FROM bound_window_hourly w WHERE w.bucket >= ? AND bucket < $2${order}`;
      /** `read` bound to [from, to) as a client binds it: a timestamp and a text. */
      const bound = (from: string, to: string): Table =>
        new Table({
          from: makeVector(
            makeData({
              type: new TimestampNanosecond('UTC'),
              length: 1,
              nullCount: 0,
              data: BigInt64Array.from([BigInt(Date.parse(from)) * 1_000_000n]),
            }),
          ),
          to: makeVector(vectorFromArray([to], new Utf8()).data[0]),
        });
      for (const [from, to, readsPending] of [
        ['2024-01-01T06:00:00Z', '2100-01-02 00:00:00', false],
        ['2024-01-01T00:00:00Z', '2024-01-01 05:00:00', false],
        ['2024-01-01T05:00:00Z', '2100-01-02 00:00:00', true],
      ] as const) {
        // The run's set-up (the last: CreatePreparedStatement's, without the parameters, comes first).
        const lake = await setupsReadLake(() => asAdmin.queryPrepared(read, bound(from, to)));
        assert.equal(lake.at(-1), readsPending, `[${from}, ${to})`);
        for (const client of [asAdmin, asTeamA]) {
          const want = await plainRows(
            client,
            `SELECT * FROM (${raw}) WHERE bucket >= TIMESTAMP '${from}' AND bucket < TIMESTAMP '${to}'${order}`,
          );
          assert.ok(want.length > 0);
          const got = (await client.queryPrepared(read, bound(from, to)))
            .toArray()
            .map((row) => plain(row.toJSON() as Record<string, unknown>));
          assert.deepEqual(got, want, `[${from}, ${to})`);
        }
      }
    });

    it("a window written with the clock leaves out pending buckets: BETWEEN's lower bound, an upper bound with the statement's clock fixed or in a client's transaction", async () => {
      const { check } = await withTail('clock_window');
      await tailKept('clock_window_hourly');
      // A late row two hours ago: its bucket, before the watermark, is pending (a DuckLake scan of its rows).
      await asTeamA.updateCount(`INSERT INTO clock_window VALUES (now()::TIMESTAMP - INTERVAL 2 HOUR, 'h0', 100000)`);
      await check();
      const raw = `SELECT time_bucket(INTERVAL 1 HOUR, ts) AS bucket, host, count(*) AS n, sum(v) AS s, max(v) AS mx,
        audience FROM clock_window GROUP BY ALL`;
      // Outside a transaction the statement's now() is no earlier than the set-up's: BETWEEN's rising lower bound.
      const between = `bucket BETWEEN now()::TIMESTAMP - INTERVAL 1 HOUR AND TIMESTAMP '2100-01-02 00:00:00'`;
      for (const client of [asAdmin, asTeamA]) {
        const want = await plainRows(client, `SELECT * FROM (${raw}) WHERE ${between}${order}`);
        assert.ok(want.length > 0);
        const read = `SELECT * FROM clock_window_hourly WHERE ${between}${order}`;
        assert.deepEqual(await setupsReadLake(async () => assert.deepEqual(await plainRows(client, read), want)), [
          false,
        ]);
      }
      // Outside one, an upper bound with the clock holds with the value the set-up read it with: the statement then
      // runs with that value. A window keeping the bucket reads it, the clock left as it is.
      for (const [upper, readsPending] of [
        ['bucket < now()::TIMESTAMP - INTERVAL 1 DAY', false],
        ['bucket <= now()::TIMESTAMP + INTERVAL 1 DAY', true],
      ] as const)
        for (const client of [asAdmin, asTeamA]) {
          const want = await plainRows(client, `SELECT * FROM (${raw}) WHERE ${upper}${order}`);
          assert.ok(want.length > 0);
          const read = `SELECT * FROM clock_window_hourly WHERE ${upper}${order}`;
          const lake = await setupsReadLake(async () => assert.deepEqual(await plainRows(client, read), want));
          assert.deepEqual(lake, [readsPending], upper);
        }
      // In a client's transaction now() is its BEGIN's, no later than the set-up's: an upper bound with the clock.
      const transactionId = await beginTransaction(asAdmin);
      const inTransaction = async (sql: string): Promise<Array<Record<string, unknown>>> =>
        (await queryInTransaction(asAdmin, transactionId, sql))
          .toArray()
          .map((row) => plain(row.toJSON() as Record<string, unknown>));
      try {
        const upper = `bucket < now()::TIMESTAMP - INTERVAL 1 DAY`;
        const want = await inTransaction(`SELECT * FROM (${raw}) WHERE ${upper}${order}`);
        assert.ok(want.length > 0);
        const read = `SELECT * FROM clock_window_hourly WHERE ${upper}${order}`;
        const lake = await setupsReadLake(async () => assert.deepEqual(await inTransaction(read), want));
        assert.deepEqual([...new Set(lake)], [false]);
        // The bucket is read where the bound keeps it.
        const all = `SELECT * FROM clock_window_hourly WHERE bucket < now()::TIMESTAMP + INTERVAL 1 DAY${order}`;
        assert.deepEqual([...new Set(await setupsReadLake(() => inTransaction(all)))], [true]);
      } finally {
        await endTransaction(asAdmin, transactionId, false);
      }
    });

    it('a window on each reference narrows the pending buckets: joins, a rollup named twice, several parameter rows', async () => {
      const raw = await withPendingBucket('each_window');
      const of = (sql: string): string => sql.replaceAll('each_window_hourly', `(${raw})`);
      // The pending bucket is 05:00. [statement, whether its set-up reads it (a DuckLake table)].
      const cases: Array<[string, boolean]> = [
        // A join of the rollup with itself: each side's window leaves it out.
        [
          `SELECT w.bucket, w.host, w.n, v.n AS before FROM each_window_hourly w
             JOIN each_window_hourly v ON v.host = w.host AND v.audience = w.audience AND v.bucket = w.bucket - INTERVAL 1 HOUR
            WHERE w.bucket >= TIMESTAMP '2024-01-01 07:00:00' AND v.bucket >= '2024-01-01 06:00:00'`,
          false,
        ],
        // The rollup on either side of an outer join, its bucket qualified.
        [
          `SELECT w.*, x.label FROM each_window_hourly w LEFT JOIN (VALUES ('h0', 'zero')) x(host, label) ON x.host = w.host
            WHERE w.bucket >= TIMESTAMP '2024-01-01 06:00:00'`,
          false,
        ],
        [
          `SELECT x.host AS wanted, w.* FROM (VALUES ('h0'), ('nobody')) x(host) LEFT JOIN each_window_hourly w ON w.host = x.host
            WHERE w.bucket < TIMESTAMP '2024-01-01 05:00:00'`,
          false,
        ],
        // Named twice, each window leaving it out; then one keeping it.
        [
          `SELECT * FROM each_window_hourly WHERE bucket >= TIMESTAMP '2024-01-01 06:00:00'
           UNION ALL SELECT * FROM each_window_hourly WHERE bucket < TIMESTAMP '2024-01-01 05:00:00'`,
          false,
        ],
        [
          `SELECT * FROM each_window_hourly WHERE bucket >= TIMESTAMP '2024-01-01 06:00:00'
           UNION ALL SELECT * FROM each_window_hourly WHERE bucket < TIMESTAMP '2024-01-01 06:00:00'`,
          true,
        ],
        // Beside a join an unqualified bucket may be the other relation's; an ASOF join's nearest row would change.
        [
          `SELECT w.* FROM each_window_hourly w CROSS JOIN (VALUES (1)) x(k) WHERE bucket >= TIMESTAMP '2024-01-01 06:00:00'`,
          true,
        ],
        [
          `SELECT x.t, w.bucket, w.n FROM (VALUES ('h0', TIMESTAMP '2024-01-01 06:30:00')) x(host, t)
             ASOF JOIN each_window_hourly w ON w.host = x.host AND w.bucket <= x.t WHERE w.bucket >= TIMESTAMP '2024-01-01 06:00:00'`,
          true,
        ],
      ];
      for (const [sql, readsPending] of cases) {
        for (const client of [asAdmin, asTeamA]) {
          const want = await plainRows(client, `SELECT * FROM (${of(sql)}) ORDER BY ALL`);
          assert.ok(want.length > 0, sql);
          const lake = await setupsReadLake(async () =>
            assert.deepEqual(await plainRows(client, `SELECT * FROM (${sql}) ORDER BY ALL`), want, sql),
          );
          assert.deepEqual(lake, [readsPending], sql);
        }
      }
      // Several parameter rows are runs of one set-up: it leaves out what every run's window does.
      const read = `SELECT * FROM each_window_hourly w WHERE w.bucket >= ? AND bucket < $2${order}`;
      const runs = (...windows: Array<[string, string]>): Table =>
        new Table({
          from: vectorFromArray(windows.map(([from]) => from)),
          to: vectorFromArray(windows.map(([, to]) => to)),
        });
      for (const [windows, readsPending] of [
        [
          [
            ['2024-01-01 06:00:00', '2100-01-02 00:00:00'],
            ['2024-01-01 00:00:00', '2024-01-01 05:00:00'],
          ],
          false,
        ],
        [
          [
            ['2024-01-01 06:00:00', '2100-01-02 00:00:00'],
            ['2024-01-01 05:00:00', '2024-01-01 06:00:00'],
          ],
          true,
        ],
      ] as Array<[Array<[string, string]>, boolean]>) {
        const rows = async (client: TestFlightClient, sql: string) =>
          (await client.queryPrepared(sql, runs(...windows)))
            .toArray()
            .map((r) => plain(r.toJSON() as Record<string, unknown>));
        for (const client of [asAdmin, asTeamA]) {
          const want = await rows(client, of(read));
          assert.ok(want.length > 0);
          const lake = await setupsReadLake(async () => assert.deepEqual(await rows(client, read), want));
          assert.equal(lake.at(-1), readsPending, JSON.stringify(windows));
        }
      }
    });

    /** The files DuckDB's Parquet reads of an admin's plan of `sql` read, all together. */
    const filesRead = async (sql: string): Promise<number> =>
      [...(await planOf(sql)).matchAll(/Total Files Read: (\d+)/g)].reduce((n, [, files]) => n + Number(files), 0);

    it("a write through the server (SQL, a bulk ingest) makes its rollup's tail at its snapshot: the read after it scans the kept table alone; a write it made none for is merged, exact", async () => {
      const { check } = await withTail('primed');
      const read = 'SELECT * FROM primed_hourly';
      const stored = await filesRead('SELECT * FROM primed_hourly_materialized');
      const source = `SELECT time_bucket(INTERVAL 1 HOUR, ts) AS bucket, host, count(*) AS n, sum(v) AS s, max(v) AS mx,
        audience FROM primed GROUP BY ALL`;
      /** The tail's files the read reads (the stored rows' aside), and the contract for every reader. */
      const tailFilesRead = async (): Promise<number> => {
        // The first read after the write (a second read of the same files makes their kept tail: keptTail).
        const files = (await filesRead(read)) - stored;
        await check();
        await same(asTeamB, 'primed_hourly', source);
        assert.match(await planOf(read), /__orrery_tail_\d+/);
        return files;
      };
      // Each write through the server (a file, a delete file), read at once: its snapshot's tail is kept already.
      assert.equal(await tailFilesRead(), 0, 'after the tail was written');
      await asTeamB.updateCount(
        `INSERT INTO primed SELECT TIMESTAMP '2100-01-01 02:30:00' + to_seconds(i * 7), 'h' || (i % 2), i FROM range(400) t(i)`,
      );
      assert.equal(await tailFilesRead(), 0, 'after an insert');
      await asAdmin.updateCount(`DELETE FROM primed WHERE ts >= TIMESTAMP '2100-01-01' AND v % 5 = 0`);
      assert.equal(await tailFilesRead(), 0, 'after a delete');
      await ingested(asTeamB, 'primed', 400, (i) => [Date.UTC(2100, 0, 1, 3, 0, i), `h${i % 2}`, i * 5], true);
      assert.equal(await tailFilesRead(), 0, 'after a bulk ingest');
      // Rows the server made no tail for (a bulk ingest in a client's transaction): the kept tail of the snapshot
      // before is merged with their file.
      await ingested(asTeamA, 'primed', 400, (i) => [Date.UTC(2100, 0, 1, 1, 0, i), `h${i % 3}`, i * 3]);
      assert.equal(await tailFilesRead(), 1, 'after a bulk ingest in a transaction');
    });

    it("writes into a kept tail read the kept aggregate and the new files alone, merged, each reader its audiences' rows", async () => {
      const { check } = await withTail('merged');
      const read = 'SELECT * FROM merged_hourly';
      const stored = await filesRead('SELECT * FROM merged_hourly_materialized');
      const source = `SELECT time_bucket(INTERVAL 1 HOUR, ts) AS bucket, host, count(*) AS n, sum(v) AS s, max(v) AS mx,
        audience FROM merged GROUP BY ALL`;
      /** Arrow's types of a reader's columns. */
      const types = async (sql: string): Promise<string[]> =>
        (await asTeamA.query(sql)).schema.fields.map((f) => `${f.name} ${String(f.type)}`);
      await tailKept('merged_hourly');
      for (const [i, client] of [asTeamA, asTeamB, asTeamA].entries()) {
        // A file of rows in hours the tail has (h1) and a new one: the tail holds 3 + i files, the read reads 1 of them.
        // Ingested in bulk, as another process's write: a write through SQL has its snapshot's tail made (prime).
        await ingested(client, 'merged', 400, (r) => [
          Date.UTC(2100, 0, 1, 2, 30, r * 7),
          `h${(r % 2) + 1}`,
          r * (i + 2),
        ]);
        const [setup] = await setupsDuring(async () =>
          assert.equal((await filesRead(read)) - stored, 1, `after write ${i + 1}`),
        );
        // The new file's rows merge with the kept aggregate row by row: one GROUP BY, not one of their own too.
        assert.equal(setup.statements.join('\n').match(/\bGROUP BY\b/g)?.length, 1, `after write ${i + 1}`);
        assert.match(await planOf(read), /__orrery_tail_\d+/);
        await check();
        await same(asTeamB, 'merged_hourly', source);
        assert.deepEqual(await types(`${read}${order}`), await types(`${source}${order}`));
        // Read again (the same files), the merge is kept in turn: the next write's read merges one file again.
        await tailKept('merged_hourly');
      }
    });

    /**
     * A table with a day of 2024 stored by rollup `<table>_hourly` (`selectList`, by `groupBy`) and three writes of 400
     * rows into its tail in 2100, each of a reader's audience, (host, v) of row i given by `written`: the first's
     * aggregate is kept, and a read after the others merges it with theirs.
     */
    const tailMergedAfterWrites = async (
      table: string,
      rollup: { selectList: string; groupBy?: string },
      written: (offset: number) => string,
    ): Promise<void> => {
      await asAdmin.updateCount(
        `CREATE TABLE ${table} (ts TIMESTAMP, host VARCHAR, v BIGINT) WITH (time_column = 'ts')`,
      );
      await asAdmin.updateCount(
        `INSERT INTO ${table} SELECT TIMESTAMP '2024-01-01 00:00:00' + to_minutes(i), 'h' || (i % 3), i FROM range(1440) t(i)`,
      );
      const groupBy = rollup.groupBy ? `, group_by => '${rollup.groupBy}'` : '';
      await asAdmin.query(
        `SELECT create_rollup('${table}_hourly', '${table}', INTERVAL '1 hour', select_list => '${rollup.selectList}'${groupBy})`,
      );
      await jobLeftForADay(asAdmin, `${table}_hourly`);
      await scalar(asAdmin, `SELECT refresh_rollup('${table}_hourly')`);
      const write = (client: TestFlightClient, offset: number): Promise<number> =>
        client.updateCount(
          `INSERT INTO ${table} SELECT TIMESTAMP '2100-01-01 00:00:00' + to_seconds(i * 13), ${written(offset)} FROM range(400) t(i)`,
        );
      await write(asTeamA, 0);
      await tailKept(`${table}_hourly`);
      await write(asTeamB, 17);
      await write(asTeamA, 29);
    };

    it("sketches in a kept tail merge with the new files' sketches", async () => {
      await tailMergedAfterWrites(
        'sk',
        { selectList: 'host, count(*) AS n, percentile_sketch(v) AS p, distinct_sketch(v) AS d', groupBy: 'host' },
        (offset) => `'h' || (i % 3), (i * 7919 + ${offset}) % 5000`,
      );
      const read = `SELECT bucket, host, n, percentile(p, 0.5) AS median, distinct_count(d) AS distinct_v, audience FROM sk_hourly`;
      assert.ok(/__orrery_tail_\d+/.test(await planOf(read)));
      const source = `SELECT time_bucket(INTERVAL 1 HOUR, ts) AS bucket, host, count(*) AS n, percentile(percentile_sketch(v), 0.5) AS median,
        distinct_count(distinct_sketch(v)) AS distinct_v, audience FROM sk GROUP BY ALL`;
      for (const client of [asAdmin, asTeamA, asTeamB])
        assert.deepEqual(await plainRows(client, `${read}${order}`), await plainRows(client, `${source}${order}`));
    });

    it("arg_max and arg_min in a kept tail merge with the new files' by the extremes stored beside them (#14)", async () => {
      // The extremes as a resources entry stores them: over the rows whose arg is not NULL (arg_max leaves the others
      // out). Each write's values are distinct (which row arg_max picks among ties is arbitrary); every 7th row has no
      // host and the extreme of its write, which a merge by max(v) over all rows would pick.
      await tailMergedAfterWrites(
        'am',
        {
          selectList: `count(*) AS n, arg_max(host, v) AS top, max(v) FILTER (WHERE host IS NOT NULL) AS top__order,
             min_by(host, v) AS bottom, min(v) FILTER (WHERE host IS NOT NULL) AS bottom__order`,
        },
        (offset) =>
          `CASE WHEN i % 7 = 0 THEN NULL ELSE 'h' || (i % 5) END, CASE WHEN i % 7 = 0 THEN CASE WHEN i % 2 = 0 THEN 100000 + i + ${offset}
             ELSE -100000 - i - ${offset} END ELSE (i * 7919 + ${offset}) % 5003 + ${offset} * 10 END`,
      );
      const read = `SELECT bucket, n, top, bottom, audience FROM am_hourly`;
      assert.ok(/__orrery_tail_\d+/.test(await planOf(read)));
      const source = `SELECT time_bucket(INTERVAL 1 HOUR, ts) AS bucket, count(*) AS n, arg_max(host, v) AS top,
        arg_min(host, v) AS bottom, audience FROM am GROUP BY ALL`;
      const byBucket = ' ORDER BY bucket, audience';
      for (const client of [asAdmin, asTeamA, asTeamB])
        assert.deepEqual(
          await plainRows(client, `${read}${byBucket}`),
          await plainRows(client, `${source}${byBucket}`),
        );
    });

    it('reads between appends, a late row, deletes and an update stay exact, merged or not, for every reader', async () => {
      const { check } = await withTail('mixed');
      // A rollup of the same table whose aggregates do not merge (avg, count(distinct)): its tail is read from every file.
      await asAdmin.query(
        `SELECT create_rollup('mixed_avg', 'mixed', INTERVAL '1 hour',
           select_list => 'host, avg(v) AS a, count(DISTINCT v) AS d', group_by => 'host')`,
      );
      await jobLeftForADay(asAdmin, 'mixed_avg');
      await scalar(asAdmin, `SELECT refresh_rollup('mixed_avg')`);
      const avgSource = `SELECT time_bucket(INTERVAL 1 HOUR, ts) AS bucket, host, avg(v) AS a, count(DISTINCT v) AS d,
        audience FROM mixed GROUP BY ALL`;
      const checkAll = async (): Promise<void> => {
        await check();
        for (const client of [asAdmin, asTeamA, asTeamB]) await same(client, 'mixed_avg', avgSource);
      };
      await tailKept('mixed_hourly');
      // Bulk ingests: the server makes no tail for them (Rollups.prime), so the reads after them merge their files.
      const append = (client: TestFlightClient, at: string, offset: number): Promise<unknown> =>
        ingested(client, 'mixed', 200, (i) => [
          Date.parse(`${at.replace(' ', 'T')}Z`) + i * 11_000,
          `h${i % 3}`,
          i + offset,
        ]);
      let merged = 0;
      const steps: Array<[string, () => Promise<unknown>]> = [
        ['append', () => append(asTeamA, '2100-01-01 01:00:00', 5000)],
        ['append', () => append(asTeamB, '2100-01-01 03:00:00', 6000)],
        ['late row', () => asTeamA.updateCount(`INSERT INTO mixed VALUES (TIMESTAMP '2024-01-01 04:10:00', 'h2', 77)`)],
        ['append', () => append(asTeamA, '2100-01-01 00:30:00', 7000)],
        ['delete (inlined)', () => asAdmin.updateCount(`DELETE FROM mixed WHERE v IN (5003, 6004)`)],
        ['append', () => append(asTeamB, '2100-01-01 05:00:00', 8000)],
        ['delete (a delete file)', () => asAdmin.updateCount(`DELETE FROM mixed WHERE v BETWEEN 7000 AND 7150`)],
        ['append', () => append(asTeamA, '2100-01-01 06:00:00', 9000)],
        ['update', () => asAdmin.updateCount(`UPDATE mixed SET v = v + 1 WHERE v BETWEEN 9000 AND 9010`)],
        [
          'insert',
          () =>
            asTeamA.updateCount(
              `INSERT INTO mixed SELECT TIMESTAMP '2100-01-01 02:00:00' + to_seconds(i * 11), 'h' || (i % 3), i + 9500 FROM range(200) t(i)`,
            ),
        ],
        ['refresh', () => scalar(asAdmin, `SELECT refresh_rollup('mixed_hourly')`)],
        ['append', () => append(asTeamB, '2100-01-01 06:30:00', 10000)],
      ];
      for (const [what, step] of steps) {
        await step();
        // The kept aggregate and a Parquet read besides the stored rows' when they are read from their file (no delete
        // file on them before the refresh), not from their kept table.
        const plan = await planOf('SELECT * FROM mixed_hourly');
        const storedScans = /__orrery_tail_s\d+/.test(plan) ? 0 : 1;
        if (
          what === 'append' &&
          /__orrery_tail_\d+/.test(plan) &&
          (plan.match(/READ_PARQUET/g)?.length ?? 0) > storedScans
        )
          merged++;
        await checkAll();
        assert.deepEqual(
          await plainRows(asTeamA, `SELECT * FROM mixed_hourly WHERE audience NOT IN ('team-a', 'public')`),
          [],
          `team-a reads no other audience's rows after ${what}`,
        );
      }
      // The reads after appends merged the kept aggregate with the new files (not after the deletes, nor the update).
      assert.ok(merged >= 2, `${merged} merged reads`);
    });

    it("a statement reading a kept tail stays in the small lane: the heavy lane's engine has no such table", async () => {
      const { check } = await withTail('laned');
      // A second server on the same lake whose every statement runs past the small lane's time (1 ms).
      const demoting = await startRole('serve', {
        ...sharedEnv({
          keys: [admin, teamA, teamB],
          admins: [admin.name],
          connectionString: postgres.connectionString,
          lakeDir,
        }),
        ORRERY_SMALL_QUERY_MS: '1',
      });
      const [demotedAdmin, demotedTeamA] = [admin, teamA].map((key) => clientFor(demoting.flightPort, key));
      try {
        const source = `SELECT time_bucket(INTERVAL 1 HOUR, ts) AS bucket, host, count(*) AS n, sum(v) AS s, max(v) AS mx,
          audience FROM laned GROUP BY ALL`;
        await pollUntil(
          "laned_hourly's tail read from its kept table on the demoting server",
          async () =>
            (await demotedAdmin.query('EXPLAIN ANALYZE SELECT * FROM laned_hourly'))
              .toArray()
              .map((row) => Object.values(row.toJSON() as Record<string, unknown>).join('\n'))
              .join('\n'),
          (plan) => /__orrery_tail_\d+/.test(plan),
          { timeoutMs: 120_000 },
        );
        for (const client of [demotedAdmin, demotedTeamA]) await same(client, 'laned_hourly', source);
        // A file written since: the kept aggregate merged with the new file's, in the same lane.
        await asTeamB.updateCount(
          `INSERT INTO laned SELECT TIMESTAMP '2100-01-01 01:00:00' + to_seconds(i), 'h2', i FROM range(300) t(i)`,
        );
        for (const client of [demotedAdmin, demotedTeamA]) await same(client, 'laned_hourly', source);
        assert.ok(/__orrery_tail_\d+/.test(await planOf('SELECT * FROM laned_hourly')));
        await check();
      } finally {
        for (const client of [demotedAdmin, demotedTeamA]) client.close();
        await demoting.close();
      }
    });

    it('a rollup another server drops and creates again, at an earlier watermark, has its tail kept here', async () => {
      await withTail('recreated');
      // Kept here at the hourly rollup's watermark (this hour's start).
      await tailKept('recreated_hourly');
      const other = await startRole('serve', {
        ...sharedEnv({
          keys: [admin, teamA, teamB],
          admins: [admin.name],
          connectionString: postgres.connectionString,
          lakeDir,
        }),
        ORRERY_ROLLUP_REFRESH_JOBS: 'off',
      });
      const otherAdmin = clientFor(other.flightPort, admin);
      try {
        // Dropped there and created again under its name, daily: its watermark is today's start, before this hour's.
        await otherAdmin.query(`SELECT drop_rollup('recreated_hourly')`);
        await otherAdmin.query(
          `SELECT create_rollup('recreated_hourly', 'recreated', INTERVAL '1 day',
             select_list => 'host, count(*) AS n, sum(v) AS s, max(v) AS mx', group_by => 'host')`,
        );
        await otherAdmin.query(`SELECT set_job_schedule('recreated_hourly', INTERVAL '1 day')`);
        await scalar(otherAdmin, `SELECT refresh_rollup('recreated_hourly')`);
      } finally {
        otherAdmin.close();
        await other.close();
      }
      await tailKept('recreated_hourly');
      for (const client of [asAdmin, asTeamA, asTeamB])
        await same(
          client,
          'recreated_hourly',
          `SELECT time_bucket(INTERVAL 1 DAY, ts) AS bucket, host, count(*) AS n, sum(v) AS s, max(v) AS mx, audience
            FROM recreated GROUP BY ALL`,
        );
    });

    it('deletes of tail rows, a few (inlined) and many (a delete file, from the files), are read', async () => {
      const few = await withTail('few_deleted');
      await asAdmin.updateCount(`DELETE FROM few_deleted WHERE ts >= TIMESTAMP '2100-01-01' AND v IN (3, 1004)`);
      await few.check();
      const many = await withTail('many_deleted');
      await asAdmin.updateCount(`DELETE FROM many_deleted WHERE ts >= TIMESTAMP '2100-01-01' AND v % 2 = 0`);
      await many.check();
      // A delete file is applied by the rows' positions: the tail still comes from the files alone.
      assert.equal(await lakeScans('SELECT * FROM many_deleted_hourly'), 0);
    });

    it('updates of tail rows, and of an older row into the tail, are read', async () => {
      const { check } = await withTail('updated');
      await asAdmin.updateCount(`UPDATE updated SET v = v + 100000 WHERE ts >= TIMESTAMP '2100-01-01' AND v % 5 = 0`);
      await check();
      await asAdmin.updateCount(`UPDATE updated SET ts = TIMESTAMP '2100-01-01 00:30:00' WHERE v = 7`);
      await check();
    });

    it("a column added after the tail's files were written is read", async () => {
      const { check } = await withTail('altered');
      await asAdmin.updateCount(`ALTER TABLE altered ADD COLUMN note VARCHAR`);
      await check();
      await asTeamA.updateCount(
        `INSERT INTO altered SELECT TIMESTAMP '2100-01-01 01:00:00' + to_seconds(i), 'h1', i, 'x' FROM range(300) t(i)`,
      );
      await check();
    });

    it("a column renamed after the tail's files were written is read by its new name", async () => {
      // A rename is refused while a rollup reads the table: here it comes before the rollup.
      await asAdmin.updateCount(
        `CREATE TABLE renamed (ts TIMESTAMP, host VARCHAR, v BIGINT, note VARCHAR) WITH (time_column = 'ts')`,
      );
      await asTeamA.updateCount(
        `INSERT INTO renamed SELECT TIMESTAMP '2100-01-01 00:00:00' + to_seconds(i * 37), 'h' || (i % 3), i, 'n' || i FROM range(300) t(i)`,
      );
      await asAdmin.updateCount(`ALTER TABLE renamed RENAME COLUMN note TO remark`);
      await asAdmin.query(
        `SELECT create_rollup('renamed_hourly', 'renamed', INTERVAL '1 hour',
           select_list => 'host, count(*) AS n, max(remark) AS r', group_by => 'host')`,
      );
      await jobLeftForADay(asAdmin, 'renamed_hourly');
      await scalar(asAdmin, `SELECT refresh_rollup('renamed_hourly')`);
      await contract('renamed', 'count(*) AS n, max(remark) AS r')();
    });
  });
});
