// Issues 10, 14 and 17: what a series-table read costs DuckLake, counted on a real Postgres
// (pg_stat_statements), and that the read stays exact: it sees every committed write, of its own
// process and of another on the same Postgres, also after statements whose DoGet never came.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { EmbeddedPostgres } from '../../src/metadata/index.js';
import {
  clientFor,
  pollUntil,
  refusal,
  scalar,
  sharedEnv,
  startRole,
  type InProcessOrrery,
  type TestKey,
} from '../lakehouse/lakehouse-fixtures.js';
import { packAny, type TestFlightClient } from '../support/flight-client.js';

const admin: TestKey = { name: 'admin', key: 'admin-key-read-cost-0001', audiences: ['ops'] };
const team: TestKey = { name: 'team', key: 'team-key-read-cost-0001', audiences: ['team'] };

describe('series-table reads: DuckLake transactions per statement, never stale (issues 10, 14, 17)', () => {
  let dir: string;
  let postgres: EmbeddedPostgres;
  let pool: pg.Pool;
  let first: InProcessOrrery;
  let second: InProcessOrrery;
  let asFirst: TestFlightClient;
  let asSecond: TestFlightClient;
  let asTeam: TestFlightClient;

  /** How many Postgres statements matching `pattern` (LIKE) ran since the last reset, in every session. */
  const calls = async (pattern: string): Promise<number> => {
    const { rows } = await pool.query<{ n: string }>(
      `SELECT coalesce(sum(calls), 0)::text AS n FROM pg_stat_statements WHERE query LIKE $1`,
      [pattern],
    );
    return Number(rows[0].n);
  };
  const reset = async (): Promise<void> => void (await pool.query('SELECT pg_stat_statements_reset()'));

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'orrery-read-cost-'));
    // Started once to preload pg_stat_statements, which counts what every session runs.
    const plain = await EmbeddedPostgres.start({ dataDir: join(dir, 'pg') });
    const setup = new pg.Client({ connectionString: plain.connectionString });
    await setup.connect();
    await setup.query(`ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'`);
    await setup.end();
    await plain.close();
    postgres = await EmbeddedPostgres.start({ dataDir: join(dir, 'pg') });
    pool = new pg.Pool({ connectionString: postgres.connectionString, max: 2 });
    pool.on('error', () => {});
    await pool.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    const env = sharedEnv({
      keys: [admin, team],
      admins: [admin.name],
      connectionString: postgres.connectionString,
      lakeDir: join(dir, 'lake'),
    });
    first = await startRole('serve', env);
    second = await startRole('serve', env);
    asFirst = clientFor(first.flightPort, admin);
    asSecond = clientFor(second.flightPort, admin);
    asTeam = clientFor(first.flightPort, team);
    await asFirst.updateCount(`CREATE TABLE readings (ts TIMESTAMP, host VARCHAR, v DOUBLE) WITH (time_column = 'ts')`);
    await asFirst.updateCount(
      `INSERT INTO readings VALUES (TIMESTAMP '2026-01-01 00:00:00', 'a', 1), (TIMESTAMP '2026-01-01 00:01:00', 'b', 2)`,
    );
  });
  after(async () => {
    asFirst?.close();
    asSecond?.close();
    asTeam?.close();
    await first?.close();
    await second?.close();
    await pool?.end();
    await postgres?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a read (GetFlightInfo, then DoGet) is one DuckLake transaction: one Postgres transaction, one snapshot read', async () => {
    assert.equal(await scalar(asFirst, 'SELECT count(*) FROM readings'), 2); // lists the tables at this snapshot
    await reset();
    const reads = 5;
    for (let i = 0; i < reads; i++) assert.equal(await scalar(asFirst, 'SELECT count(*) FROM readings'), 2);
    // DuckLake begins each of its Postgres transactions so, and reads the latest snapshot once in each.
    assert.equal(await calls('BEGIN TRANSACTION ISOLATION LEVEL REPEATABLE READ%'), reads);
    assert.equal(await calls('COPY (SELECT "snapshot_id", "schema_version"%ducklake_snapshot%'), reads);
  });

  it("Orrery's own Postgres work per read is one statement: the lake's snapshot id and the rollup catalog's version", async () => {
    for (const client of [asFirst, asTeam]) await scalar(client, 'SELECT count(*) FROM readings');
    await reset();
    const reads = 4;
    for (let i = 0; i < reads; i++) {
      await scalar(asFirst, 'SELECT count(*) FROM readings');
      await scalar(asTeam, 'SELECT count(*) FROM readings');
    }
    assert.equal(await calls('%FROM rollup_catalog_version%'), 2 * reads);
    // Neither the catalog itself nor the snapshot alone is read again while neither changes.
    assert.equal(await calls('%FROM rollup_definitions d%'), 0);
    assert.equal(await calls('%ducklake_snapshot ORDER BY snapshot_id DESC LIMIT%'), 2 * reads);
  });

  it('a rollup created or dropped by another process is seen by the next statement', async () => {
    await scalar(asFirst, 'SELECT count(*) FROM readings'); // the catalog kept as it is now
    await asSecond.query(
      `SELECT create_rollup('readings_hourly', 'readings', interval '1 hour', select_list => 'count(*) AS n')`,
    );
    const total = await scalar(asFirst, 'SELECT count(*) FROM readings');
    assert.equal(await scalar(asFirst, 'SELECT sum(n) FROM readings_hourly'), total);
    assert.equal(
      await scalar(asTeam, 'SELECT sum(n) FROM readings_hourly'),
      await scalar(asTeam, 'SELECT count(*) FROM readings'),
    );
    await asSecond.query(`SELECT drop_rollup('readings_hourly')`);
    const { details } = await refusal(asFirst.query('SELECT sum(n) FROM readings_hourly'));
    assert.match(details, /readings_hourly/);
  });

  it('a read sees every write committed before it, from its own process and from another', async () => {
    let rows = await scalar(asFirst, 'SELECT count(*) FROM readings');
    for (let i = 0; i < 3; i++) {
      await asSecond.updateCount(
        `INSERT INTO readings VALUES (TIMESTAMP '2026-01-02 00:00:00' + INTERVAL ${i} MINUTE, 'c', ${i})`,
      );
      rows++;
      assert.equal(await scalar(asFirst, 'SELECT count(*) FROM readings'), rows);
      await asFirst.updateCount(
        `INSERT INTO readings VALUES (TIMESTAMP '2026-01-03 00:00:00' + INTERVAL ${i} MINUTE, 'd', ${i})`,
      );
      rows++;
      assert.equal(await scalar(asFirst, 'SELECT count(*) FROM readings'), rows);
      assert.equal(await scalar(asSecond, 'SELECT count(*) FROM readings'), rows);
    }
  });

  it('statements whose DoGet never comes leave no connection behind in an old transaction', async () => {
    const before = await scalar(asFirst, 'SELECT count(*) FROM readings');
    // More GetFlightInfos than the engine keeps waiting in a transaction: the oldest are let go.
    for (let i = 0; i < 40; i++)
      await asFirst.getFlightInfo(packAny('CommandStatementQuery', { query: 'SELECT count(*) FROM readings' }));
    await asSecond.updateCount(`INSERT INTO readings VALUES (TIMESTAMP '2026-01-04 00:00:00', 'e', 0)`);
    // Reads with the same setup get the pooled connections those statements gave back.
    const counts = await Promise.all(
      Array.from({ length: 12 }, () => scalar(asFirst, 'SELECT count(*) FROM readings')),
    );
    assert.deepEqual(
      counts,
      Array.from({ length: 12 }, () => before + 1),
    );
  });

  it("a rollup's never-stale read scans the files of the rows after the watermark and of each pending bucket, not the whole source; the refresh stores the same", async () => {
    await asFirst.updateCount(`CREATE TABLE heights (height BIGINT, v BIGINT) WITH (time_column = 'height')`);
    // Five files of 1,000 heights each.
    for (let f = 0; f < 5; f++)
      await asFirst.updateCount(`INSERT INTO heights SELECT i, 1 FROM range(${f * 1000}, ${(f + 1) * 1000}) t(i)`);
    await asFirst.query(
      `SELECT create_rollup('heights_100', 'heights', bucket_width => 100, select_list => 'count(*) AS n, CAST(sum(v) AS BIGINT) AS s')`,
    );
    await scalar(asFirst, `SELECT refresh_rollup('heights_100')`);
    // Late rows in buckets 100 and 2,300 (files 1 and 3), pending until the next refresh; the watermark is 4,900.
    await asFirst.updateCount(`INSERT INTO heights VALUES (150, 10), (160, 10), (2350, 10)`);
    const rows = async (sql: string): Promise<unknown[]> =>
      (await asFirst.query(sql))
        .toArray()
        .map((r) => JSON.stringify(r.toJSON(), (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v)));
    const ofSource = `SELECT height - height % 100 AS bucket, count(*) AS n, CAST(sum(v) AS BIGINT) AS s FROM heights GROUP BY 1 ORDER BY 1`;
    const read = 'SELECT bucket, n, s FROM heights_100 ORDER BY bucket';
    assert.deepEqual(await rows(read), await rows(ofSource));
    assert.deepEqual((await rows('SELECT n, s FROM heights_100 WHERE bucket = 100'))[0], '{"n":"102","s":"120"}');
    /** Parquet files the scans of a statement read (EXPLAIN ANALYZE, an admin's). */
    const filesRead = async (sql: string): Promise<number> => {
      const plan = (await asFirst.query(`EXPLAIN ANALYZE ${sql}`))
        .toArray()
        .map((row) => Object.values(row.toJSON() as Record<string, unknown>).join('\n'))
        .join('\n');
      return [...plan.matchAll(/Total Files Read: (\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
    };
    const stored = await filesRead('SELECT * FROM heights_100_materialized');
    // File 5 for the rows from 4,900 on, files 1 and 3 for the pending buckets: an OR of those ranges
    // reached the scan as a filter over every row, and all five files were read. Once the same tail's
    // files are read again, their aggregate is kept and read instead of file 5.
    await pollUntil(
      'the pending buckets read from their files, the tail from its kept aggregate',
      async () => (await filesRead(read)) - stored,
      (files) => files === 2,
      { timeoutMs: 120_000, failFast: (files) => (files > 3 ? `${files} files read` : undefined) },
    );
    // The refresh reads the same files: its answer is the source's.
    await scalar(asFirst, `SELECT refresh_rollup('heights_100')`);
    assert.deepEqual(
      await rows('SELECT bucket, n, s FROM heights_100_materialized ORDER BY bucket'),
      (await rows(ofSource)).slice(0, -1),
    );
    assert.deepEqual(await rows(read), await rows(ofSource));
  });

  it('a statement rewritten onto a rollup scans, for a closed window, only the pending buckets inside it', async () => {
    await asFirst.updateCount(`CREATE TABLE pulses (ts TIMESTAMP, v BIGINT) WITH (time_column = 'ts')`);
    // One file per day of 2024-03-01..03 (24 rows each), and one of a row far ahead, after any watermark.
    for (const day of ['01', '02', '03'])
      await asFirst.updateCount(
        `INSERT INTO pulses SELECT TIMESTAMP '2024-03-${day} 00:30:00' + to_hours(i), i FROM range(24) t(i)`,
      );
    await asFirst.updateCount(`INSERT INTO pulses VALUES (TIMESTAMP '2100-01-01 00:00:00', 1)`);
    await asFirst.query(
      `SELECT create_rollup('pulses_hourly', 'pulses', INTERVAL '1 hour', select_list => 'count(*) AS n, sum(v) AS s')`,
    );
    await scalar(asFirst, `SELECT refresh_rollup('pulses_hourly')`);
    // Late rows in one hour of 03-01 and one of 03-02, each a file of its own: pending until the next refresh.
    await asFirst.updateCount(`INSERT INTO pulses VALUES (TIMESTAMP '2024-03-01 05:10:00', 100)`);
    await asFirst.updateCount(`INSERT INTO pulses VALUES (TIMESTAMP '2024-03-02 07:10:00', 1000)`);
    const window = `ts >= TIMESTAMP '2024-03-02 00:00:00' AND ts < TIMESTAMP '2024-03-03 00:00:00'`;
    const perHour = (from: string): string =>
      `SELECT time_bucket(INTERVAL 1 HOUR, ts) AS h, count(*) AS n, sum(v) AS s FROM ${from} WHERE ${window} GROUP BY 1 ORDER BY 1`;
    const rewritten = perHour('pulses');
    const plain = perHour('(SELECT * FROM pulses) AS p');
    // Each row as text: its hour (UTC), count and sum.
    const rows = async (sql: string, client = asFirst): Promise<string[]> =>
      (await client.query(sql)).toArray().map((r) => {
        const { h, n, s } = r.toJSON() as { h: number; n: bigint; s: unknown };
        return `${new Date(h).toISOString()} ${n} ${String(s).replaceAll('"', '')}`;
      });
    const table = await asFirst.query(rewritten);
    const provenance = JSON.parse(table.schema.metadata.get('orrery.provenance') ?? '{}') as {
      resources: Array<{ rollup: { name: string } | null }>;
    };
    assert.deepEqual(
      provenance.resources.map((level) => level.rollup?.name ?? null),
      ['pulses_hourly'],
    );
    const answer = await rows(rewritten);
    assert.equal(answer.length, 24);
    assert.equal(answer[7], '2024-03-02T07:00:00.000Z 2 1007');
    assert.deepEqual(answer, await rows(plain));
    assert.deepEqual(await rows(rewritten, asTeam), await rows(plain, asTeam));
    /** A statement's scans of the source and the Parquet files its scans read (an admin's EXPLAIN ANALYZE). */
    const scans = async (sql: string): Promise<{ source: number; files: number }> => {
      const plan = (await asFirst.query(`EXPLAIN ANALYZE ${sql}`))
        .toArray()
        .map((row) => Object.values(row.toJSON() as Record<string, unknown>).join('\n'))
        .join('\n');
      return {
        source: plan.match(/Table: pulses\b/g)?.length ?? 0,
        files: [...plan.matchAll(/Total Files Read: (\d+)/g)].reduce((n, m) => n + Number(m[1]), 0),
      };
    };
    const stored = await scans('SELECT * FROM pulses_hourly_materialized');
    // One scan, of 03-02's hour 07 (its day's file; the late row is inlined in the catalog). Through
    // the rollup's whole view the read scanned the rows after the watermark and 03-01's pending hour
    // too (3 scans of the source, 03-01's file read). The rewrite reads the stored rows from their
    // file until it has read that file twice, then from a kept in-memory table (113d1ea).
    const read = await pollUntil(
      'the stored rows read from their kept table, the source only in the pending hour',
      () => scans(rewritten),
      (seen) => seen.source === 1 && seen.files === 1,
      {
        timeoutMs: 120_000,
        failFast: (seen) =>
          seen.source !== 1 || seen.files > 1 + stored.files ? `${seen.source} scans, ${seen.files} files` : undefined,
      },
    );
    assert.deepEqual(read, { source: 1, files: 1 });

    // A rollup of pulses_hourly by day: a late row in 03-02's hour 07 leaves that day pending in both.
    await asFirst.query(
      `SELECT create_rollup('pulses_daily', 'pulses_hourly', INTERVAL '1 day', select_list => 'sum(n) AS n, sum(s) AS s')`,
    );
    await scalar(asFirst, `SELECT refresh_rollup('pulses_daily')`);
    await asFirst.updateCount(`INSERT INTO pulses VALUES (TIMESTAMP '2024-03-02 07:20:00', 10000)`);
    const perDay = (from: string): string =>
      `SELECT time_bucket(INTERVAL 1 DAY, ts) AS h, count(*) AS n, sum(v) AS s FROM ${from}
        WHERE ts >= TIMESTAMP '2024-03-01 00:00:00' AND ts < TIMESTAMP '2024-03-03 00:00:00' GROUP BY 1 ORDER BY 1`;
    const daily = await asFirst.query(perDay('pulses'));
    assert.deepEqual(
      (
        JSON.parse(daily.schema.metadata.get('orrery.provenance') ?? '{}') as {
          resources: Array<{ rollup: { name: string } | null }>;
        }
      ).resources.map((level) => level.rollup?.name ?? null),
      ['pulses_daily'],
    );
    assert.deepEqual(await rows(perDay('pulses')), [
      '2024-03-01T00:00:00.000Z 25 376',
      '2024-03-02T00:00:00.000Z 26 11276',
    ]);
    assert.deepEqual(await rows(perDay('pulses')), await rows(perDay('(SELECT * FROM pulses) AS p')));
    assert.deepEqual(await rows(perDay('pulses'), asTeam), await rows(perDay('(SELECT * FROM pulses) AS p'), asTeam));
    // One scan of the source, of 03-02's hour 07 (pulses_hourly's stored rows and that hour give the
    // day): through pulses_daily's whole view the read scanned pulses for the rows after each
    // rollup's watermark and each pending bucket, once per part reading pulses_hourly's view.
    assert.equal((await scans(perDay('pulses'))).source, 1);
  });
});
