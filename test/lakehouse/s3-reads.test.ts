// Issue 15: on an s3:// lake, a statement over view-set partitions DuckDB has read before asks the store
// nothing (DuckDB keeps what it read of a file and, on S3, does not check it again: a partition file is
// written once under a key of its own). Every request is seen through a counting proxy in front of the
// real S3 server the suites use. Partitions retired, their files deleted, and their rows in a new
// partition at a new key: the next statements answer exactly, and ask for the new file only. A view set
// defined in SQL (log_stats) records a range without rows without writing anything to the store.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { logsRequest, postOtlp } from '../support/otlp.js';
import { adminKey, useOrrery } from '../support/orrery-process.js';
import { countingProxy, s3LakeEnv, testS3, type CountingProxy } from '../support/s3-server.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

describe('S3 lake: hot statements and empty ranges send no request, retired files are never read (issue 15)', () => {
  let proxy: CountingProxy;
  const fixture = useOrrery(async () => {
    const s3 = await testS3();
    proxy = await countingProxy(s3);
    return {
      ...s3LakeEnv({ ...s3, env: { ...s3.env, AWS_ENDPOINT_URL: proxy.url } }),
      ORRERY_RETIRE_DELAY_SECONDS: '0',
    };
  }, 'serve');
  after(() => proxy.close());
  let start: number;
  let end: number;

  const post = async (messages: string[]) => {
    const time = BigInt(Date.now()) * 1_000_000n;
    const logs = messages.map((body, i) => ({ time: time + BigInt(i), severity: 9, body }));
    const sent = await postOtlp(
      fixture.orrery.httpPort,
      'logs',
      adminKey.key,
      logsRequest({ 'service.name': 's3' }, logs),
    );
    assert.equal(sent.status, 200, sent.text);
  };
  const messages = async (): Promise<string[]> =>
    (await fixture.admin.query('SELECT msg FROM log_entries ORDER BY msg')).toArray().map((r) => String(r.msg));
  const files = async (): Promise<string[]> =>
    (
      await fixture.admin.query(
        "SELECT file_path FROM list_partitions() WHERE view_set_name = 'log_entries' AND file_path IS NOT NULL ORDER BY 1",
      )
    )
      .toArray()
      .map((r) => String(r.file_path));
  /** The partition files (object keys under views/) the requests since the last reset named. */
  const filesAsked = (): string[] => [
    ...new Set(
      proxy
        .requests()
        .flatMap(({ path }) => (path.includes('/views/') ? [path.slice(path.indexOf('/views/') + 1)] : [])),
    ),
  ];

  before(async () => {
    // Three ingests a second and more apart, materialized by the second: three partition files.
    start = Math.floor(Date.now() / 1000);
    for (const batch of [['a1', 'a2'], ['b1'], ['c1', 'c2']]) {
      await post(batch);
      await sleep(1100);
    }
    await fixture.admin.query(
      `SELECT * FROM materialize_partitions('log_entries', '${iso(start - 2)}', '${iso(Math.ceil(Date.now() / 1000))}', 1)`,
    );
    assert.equal((await files()).length, 3);
  });

  it('reads the partitions once; the same statement again sends the store no request', async () => {
    proxy.reset();
    assert.deepEqual(await messages(), ['a1', 'a2', 'b1', 'c1', 'c2']);
    assert.deepEqual(filesAsked().sort(), await files(), 'the first statement reads each partition file');
    for (let i = 0; i < 3; i++) {
      proxy.reset();
      assert.deepEqual(await messages(), ['a1', 'a2', 'b1', 'c1', 'c2']);
      assert.deepEqual(proxy.requests(), [], 'a statement over files already read asked the store');
    }
  });

  it('answers exactly once the partitions are retired, their files deleted, their rows in a new file at a new key', async () => {
    const retired = await files();
    await post(['d1']);
    await sleep(1100);
    end = Math.ceil(Date.now() / 1000);
    // One partition over the whole range: it replaces the three (retired at once, ORRERY_RETIRE_DELAY_SECONDS=0).
    await fixture.admin.query(
      `SELECT * FROM materialize_partitions('log_entries', '${iso(start - 2)}', '${iso(end)}', ${end - start + 2})`,
    );
    const [fresh, ...others] = await files();
    assert.deepEqual(others, []);
    assert.ok(!retired.includes(fresh), `the new partition reuses a retired file's key: ${fresh}`);
    // What housekeeping does past the retire delay.
    for (const key of retired) await fixture.orrery.store.delete(key);

    proxy.reset();
    assert.deepEqual(await messages(), ['a1', 'a2', 'b1', 'c1', 'd1', 'c2'].sort());
    assert.deepEqual(filesAsked(), [fresh], 'only the new partition file is read');
    proxy.reset();
    assert.deepEqual(await messages(), ['a1', 'a2', 'b1', 'c1', 'c2', 'd1']);
    assert.deepEqual(proxy.requests(), []);
  });

  it("reads a rollup's stored rows and its raw tail from their files on the store, exactly (issue 17)", async () => {
    const { admin } = fixture;
    const rows = async (sql: string): Promise<string[]> =>
      (await admin.query(sql))
        .toArray()
        .map((r) => JSON.stringify(r.toJSON(), (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v)));
    await admin.query(`CREATE TABLE s3_metrics (ts TIMESTAMP, host VARCHAR, v BIGINT) WITH (time_column = 'ts')`);
    await admin.query(
      `INSERT INTO s3_metrics SELECT TIMESTAMP '2024-01-01 00:00:00' + to_minutes(i), 'h' || (i % 3), i FROM range(1440) t(i)`,
    );
    await admin.query(`SELECT create_rollup('s3_hourly', 's3_metrics', INTERVAL '1 hour',
      select_list => 'host, count(*) AS n, sum(v) AS s', group_by => 'host')`);
    await admin.query(`SELECT refresh_rollup('s3_hourly')`);
    // A tail after any watermark, in a file of its own.
    await admin.query(
      `INSERT INTO s3_metrics SELECT TIMESTAMP '2100-01-01 00:00:00' + to_seconds(i * 37), 'h' || (i % 3), i FROM range(300) t(i)`,
    );
    const raw = `SELECT time_bucket(INTERVAL 1 HOUR, ts) AS bucket, host, count(*) AS n, sum(v) AS s, audience FROM s3_metrics
      GROUP BY ALL ORDER BY ALL`;
    assert.deepEqual(await rows('SELECT * FROM s3_hourly ORDER BY ALL'), await rows(raw));
    assert.deepEqual(
      await rows('SELECT * FROM s3_hourly_materialized ORDER BY ALL'),
      await rows(`SELECT * FROM (${raw}) WHERE bucket < TIMESTAMP '2100-01-01'`),
    );
    // Neither through DuckLake's scan: both from the files DuckLake's catalog lists, on the store.
    const plan = async (): Promise<string> =>
      (await admin.query('EXPLAIN ANALYZE SELECT * FROM s3_hourly'))
        .toArray()
        .map((r) => Object.values(r.toJSON() as Record<string, unknown>).join('\n'))
        .join('\n');
    // (The tail's aggregate and the stored rows may already be read from their kept tables: made from their files
    // after the first read; without the native addon, the connection's own __orrery_tail_reads says which of the
    // tail's rows.)
    const read = await plan();
    const kept = read.match(/\.__orrery_tail_s?\d+/g)?.length ?? 0;
    const chosen = read.match(/\.__orrery_tail_reads/g)?.length ?? 0;
    assert.equal((read.match(/Table:/g)?.length ?? 0) - kept - chosen, 0, read);
    assert.equal((read.match(/READ_PARQUET/g)?.length ?? 0) + kept, 2, read);
    // Read again, the tail is aggregated once from its files on the store and the stored rows read from theirs, then
    // both are read from their kept tables.
    for (let reads = 0; ((await plan()).match(/READ_PARQUET/g)?.length ?? 0) !== 0; reads++) assert.ok(reads < 50);
    assert.deepEqual(await rows('SELECT * FROM s3_hourly ORDER BY ALL'), await rows(raw));
  });

  it('records an empty range of a view set defined in SQL without writing a file; a range with rows gets its file', async () => {
    // log_stats (SQL-defined, over log_entries) over ten seconds nothing was sent in: an idle daemon's passes.
    proxy.reset();
    const empty = await fixture.admin.query(
      `SELECT * FROM materialize_partitions('log_stats', '${iso(start - 60)}', '${iso(start - 50)}', 1)`,
    );
    assert.deepEqual(
      empty.toArray().map((r) => String(r.msg).split(': ')[1]),
      Array.from({ length: 10 }, () => 'created'),
    );
    assert.deepEqual(
      proxy.requests().filter(({ kind }) => kind !== 'GET' && kind !== 'HEAD'),
      [],
      'an empty range wrote to the store',
    );
    const recorded = await fixture.admin.query(
      `SELECT count(*) AS n, count(file_path) AS files FROM list_partitions()
        WHERE view_set_name = 'log_stats' AND begin_insert_time >= '${iso(start - 60)}' AND end_insert_time <= '${iso(start - 50)}'`,
    );
    assert.deepEqual(
      recorded.toArray().map((r) => [Number(r.n), Number(r.files)]),
      [[10, 0]],
    );
    // Over the seconds the logs came in: one file, every record counted.
    await fixture.admin.query(
      `SELECT * FROM materialize_partitions('log_stats', '${iso(start - 2)}', '${iso(end)}', ${end - start + 2})`,
    );
    const stats = await fixture.admin.query('SELECT sum(count) AS n FROM log_stats');
    assert.equal(Number(stats.getChildAt(0)!.get(0)), 6);
    const files = await fixture.admin.query(
      "SELECT count(file_path) AS n FROM list_partitions() WHERE view_set_name = 'log_stats'",
    );
    assert.equal(Number(files.getChildAt(0)!.get(0)), 1);
  });
});
