// Issue 9: a partition file that Postgres still names but the object store no longer holds (deleted by
// hand or by a tool) is contained exactly as a truncated one is: quarantined, its range rebuilt from its
// source, every row answered; several at once and under concurrent statements, under a query and under a
// merge. When the range's source is past retention the rows cannot come back: statements reading the
// partition fail with DATA_LOSS naming it (its rows are never silently left out), statements that skip
// it answer, and an admin retires it. A containment that fails is reported, logged and counted. Uses only
// the object store's own operations, so it runs on a folder and on s3:// (scripts/run-tests.mjs). Metrics
// count per process: each case that restarts the server counts from zero.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { version } from '../../src/app.js';
import { adminKey } from '../support/orrery-process.js';
import { runnerS3 } from '../support/s3-server.js';
import type { TestFlightClient } from '../support/flight-client.js';
import {
  adminAndTeams,
  clientFor,
  metricLines,
  partitionFiles,
  postLogRecord,
  rowValues,
  sharedEnv,
  sleep,
  startRole,
  startTestPostgres,
  type InProcessOrrery,
  type TestPostgres,
} from './lakehouse-fixtures.js';

const keyList = adminAndTeams('missing');
/** One row per second of arrival, so that one-second partitions hold one row each: [message, key index]. */
const rows: Array<[string, number]> = [
  ['a one', 1],
  ['b one', 2],
  ['a two', 1],
  ['b two', 2],
  ['a three', 1],
  ['b three', 2],
];

describe('issue 9: a missing partition file is contained; one whose source is past retention fails with DATA_LOSS', () => {
  let postgres: TestPostgres;
  let lakeDir: string | undefined;
  let env: Record<string, string>;
  let serve: InProcessOrrery;
  let admin: TestFlightClient;
  let a: TestFlightClient;
  let b: TestFlightClient;
  let range: string;
  /** Event time of each row, nanoseconds. */
  const times: bigint[] = [];
  /** The log_entries partition files at the start, one per row. */
  let files: string[];

  const values = rowValues;
  const messages = async (sql: string): Promise<string[]> => [...(await admin.query(sql)).getChild('msg')!] as string[];
  const msgs = (c: TestFlightClient, where = ''): Promise<unknown[][]> =>
    values(c, `SELECT msg FROM log_entries ${where} ORDER BY msg`);
  const expected = (keyIndex?: number, except: string[] = []): string[][] =>
    rows
      .filter(([msg, k]) => (keyIndex === undefined || k === keyIndex) && !except.includes(msg))
      .map(([msg]) => [msg])
      .sort();
  const logFiles = (): Promise<string[]> => partitionFiles(serve, 'log_entries');
  const quarantined = async (): Promise<unknown[][]> =>
    values(
      admin,
      'SELECT file_path, view_set_name, num_rows, error, orrery_version FROM list_quarantined_partitions() ORDER BY file_path',
    );
  const unreadableCounts = (): Promise<string[]> => metricLines(serve.httpPort, 'orrery_unreadable_partitions_total');
  /** log_entries' orrery_lost_partitions gauge (no line: none seen by this process). */
  const lostGauge = async (): Promise<number> => {
    const lines = await metricLines(serve.httpPort, 'orrery_lost_partitions');
    const line = lines.find((l) => l.includes('view_set="log_entries"'));
    return line === undefined ? 0 : Number(line.split(' ').at(-1));
  };
  const missing = (file: string): unknown[] => [
    file,
    'log_entries',
    1,
    'the file is missing from the object store',
    version,
  ];

  /**
   * Takes a partition's source past the 30-day retention as time would: its block ages 40 days and the
   * partition becomes a range that ends inside retention (as a day's partition does when the horizon
   * crosses it, and out of the daemon's recent windows), then a daemon's housekeeping deletes the block.
   */
  const ageOut = async (file: string): Promise<void> => {
    const { rows: aged } = await serve.metadata.query(
      `WITH p AS (SELECT begin_insert_time AS b, end_insert_time AS e FROM lakehouse_partitions WHERE file_path = $1)
       UPDATE blocks SET insert_time = insert_time - interval '40 days' FROM p
        WHERE insert_time >= p.b AND insert_time < p.e RETURNING block_id`,
      [file],
    );
    assert.equal(aged.length, 1);
    await serve.metadata.query(
      `UPDATE lakehouse_partitions SET begin_insert_time = begin_insert_time - interval '40 days',
              end_insert_time = end_insert_time - interval '20 days' WHERE file_path = $1`,
      [file],
    );
    const daemon = await startRole('maintain', env);
    try {
      assert.equal((await daemon.daemon!.housekeeping())?.expiredBlocks, 1);
    } finally {
      await daemon.close();
    }
  };

  const lostList = (): Promise<unknown[][]> =>
    values(
      admin,
      `SELECT file_path, view_set_name, num_rows, end_insert_time > begin_insert_time, lost_at IS NOT NULL, error
         FROM list_lost_partitions()`,
    );
  const lostRow = (file: string, error: string): unknown[] => [file, 'log_entries', 1, true, true, error];

  const counted = (outcome: string, n: number): string =>
    `orrery_unreadable_partitions_total{view_set="log_entries",outcome="${outcome}"} ${n}`;
  const lost = (file: string, error: string): { code: number; details: RegExp } => ({
    code: 15, // DATA_LOSS
    details: new RegExp(
      `^log_entries's partition file ${file} \\[.*\\) cannot be read \\(${error}.*\\) and cannot be rebuilt: its source counts 0 of the 1 it was built from \\(past retention\\), so its 1 row\\(s\\) are lost\\. An admin retires it with retire_partition_by_file\\('${file}'\\)`,
    ),
  });
  /**
   * A new serving process on the same Postgres and lake. On s3:// DuckDB keeps the files it read
   * (validate_external_file_cache = 'NO_VALIDATION'): a file it already holds is answered from memory
   * however it changes in the store, so each case that changes files starts with engines that read none.
   */
  const restart = async (): Promise<void> => {
    for (const client of [admin, a, b]) client.close();
    await serve.close();
    serve = await startRole('serve', env);
    [admin, a, b] = keyList.map((key) => clientFor(serve.flightPort, key));
  };

  before(async () => {
    postgres = await startTestPostgres();
    // The retention test starts a daemon on the same lake: a shared folder, or the runner's S3 prefix.
    lakeDir = runnerS3() ? undefined : mkdtempSync(join(tmpdir(), 'orrery-missing-lake-'));
    env = {
      ...sharedEnv({ keys: keyList, admins: [adminKey.name], connectionString: postgres.connectionString, lakeDir }),
      MICROMEGAS_RETENTION_DAYS: '30',
    };
    serve = await startRole('serve', env);
    [admin, a, b] = keyList.map((key) => clientFor(serve.flightPort, key));
    for (const [i, [msg, keyIndex]] of rows.entries()) {
      if (i > 0) await sleep(1100);
      const time = BigInt(Date.now()) * 1_000_000n;
      times.push(time);
      await postLogRecord(serve.httpPort, keyList[keyIndex].key, msg, time);
    }
    const minute = Math.floor(Date.now() / 60_000) * 60;
    const iso = (s: number): string => `'${new Date(s * 1000).toISOString()}'`;
    range = `${iso(minute - 120)}, ${iso(minute + 120)}`;
    for (const view of ['blocks', 'processes', 'streams']) {
      await messages(`SELECT * FROM materialize_partitions('${view}', ${range}, 240)`);
    }
    await messages(`SELECT * FROM materialize_partitions('log_entries', ${range}, 1)`);
    files = await logFiles();
    assert.equal(files.length, rows.length);
  });

  after(async () => {
    for (const client of [admin, a, b]) client?.close();
    await serve?.close();
    await postgres?.close();
    if (lakeDir) rmSync(lakeDir, { recursive: true, force: true });
  });

  it('a query over a deleted partition file answers every row: the file is quarantined and its range rebuilt', async () => {
    await serve.store.delete(files[0]);
    assert.deepEqual(await msgs(b), expected(2));
    assert.deepEqual(await msgs(admin), expected());
    assert.deepEqual(await quarantined(), [missing(files[0])]);
    assert.deepEqual(await unreadableCounts(), [counted('quarantined', 1)]);
    const now = await logFiles();
    assert.equal(now.length, rows.length);
    assert.equal(now.includes(files[0]), false);
  });

  it('several deleted files met by concurrent statements of three keys: each is contained once, every row answered', async () => {
    await restart();
    await serve.store.delete(files[1]);
    await serve.store.delete(files[2]);
    const answers = await Promise.all([msgs(a), msgs(b), msgs(admin), msgs(a)]);
    assert.deepEqual(answers, [expected(1), expected(2), expected(), expected(1)]);
    assert.deepEqual(await quarantined(), [files[0], files[1], files[2]].sort().map(missing));
    assert.deepEqual(await unreadableCounts(), [counted('quarantined', 2)]);
  });

  it('a containment that fails is reported to the query, logged and counted; the next statement contains the file', async () => {
    await restart();
    // Postgres refuses the quarantine record: the partition stays, nothing is rebuilt.
    await serve.metadata.query(
      'ALTER TABLE quarantined_partitions ADD CONSTRAINT refuse_in_test CHECK (file_path IS NULL) NOT VALID',
    );
    await serve.store.delete(files[3]);
    try {
      await assert.rejects(msgs(b), {
        code: 14, // UNAVAILABLE
        details: new RegExp(
          `^log_entries's partition file ${files[3]} \\[.*\\) cannot be read \\(the file is missing from the object store\\); containing it failed: .*refuse_in_test`,
        ),
      });
    } finally {
      await serve.metadata.query('ALTER TABLE quarantined_partitions DROP CONSTRAINT refuse_in_test');
    }
    assert.ok(serve.lines.some((l) => l.startsWith(`error log_entries's partition file ${files[3]} `)));
    assert.ok((await logFiles()).includes(files[3]), 'the partition is still registered');
    assert.deepEqual(await unreadableCounts(), [counted('failed', 1)]);
    assert.deepEqual(await msgs(b), expected(2));
    assert.equal((await quarantined()).length, 4);
    assert.deepEqual(await unreadableCounts(), [counted('failed', 1), counted('quarantined', 1)]);
  });

  it("a deleted file whose range's source is past retention: DATA_LOSS naming it, other partitions answer, an admin retires it", async () => {
    const deleted = files[4]; // 'a three'
    await ageOut(deleted);
    await restart();
    await serve.store.delete(deleted);
    for (const client of [a, b, admin]) await assert.rejects(msgs(client), lost(deleted, 'the file is missing'));
    assert.deepEqual(await unreadableCounts(), [counted('lost', 3)]);
    assert.ok(serve.lines.some((l) => l.startsWith(`error log_entries's partition file ${deleted} `)));
    // Nothing was quarantined or replaced: the loss stays visible until an admin acknowledges it.
    assert.equal((await quarantined()).length, 4);
    assert.ok((await logFiles()).includes(deleted));
    // Statements whose time range (the query_range_end header) skips the partition, and other view sets, answer.
    const end = new Date(Number(times[4] / 1_000_000n) - 500).toISOString();
    for (const [client, keyIndex] of [
      [a, 1],
      [b, 2],
    ] as const) {
      client.headers.query_range_end = end;
      try {
        assert.deepEqual(await msgs(client), expected(keyIndex, ['a three', 'b three']));
      } finally {
        delete client.headers.query_range_end;
      }
    }
    assert.deepEqual(await values(admin, 'SELECT count(*)::INT FROM streams'), [[2]]);
    // Admins see what PARTITION_LOST names, once however many statements met it, and so does the gauge.
    assert.deepEqual(await lostList(), [lostRow(deleted, 'the file is missing from the object store')]);
    assert.equal(await lostGauge(), 1);
    await messages(`SELECT * FROM retire_partition_by_file('${deleted}')`);
    assert.deepEqual(await msgs(a), expected(1, ['a three']));
    assert.deepEqual(await lostList(), []);
    assert.equal(await lostGauge(), 0);
  });

  it("an overwritten file whose range's source is past retention: DATA_LOSS naming it until an admin retires it", async () => {
    const garbage = files[5]; // 'b three'
    const original = await serve.store.get(garbage);
    await ageOut(garbage);
    await restart();
    await serve.store.put(garbage, randomBytes(original.length));
    await assert.rejects(msgs(b), lost(garbage, 'Invalid Input Error: No magic bytes found at end of file'));
    assert.deepEqual(await unreadableCounts(), [counted('lost', 1)]);
    const [listed] = await lostList();
    assert.deepEqual(listed.slice(0, -1), lostRow(garbage, '').slice(0, -1));
    assert.match(String(listed.at(-1)), /^Invalid Input Error: No magic bytes found at end of file/);
    assert.equal(await lostGauge(), 1);
    // The file put back reads whole: it leaves the list and the gauge, and its row is answered again.
    await serve.store.put(garbage, original);
    await restart(); // (on s3:// DuckDB would answer from the bytes it read before)
    assert.deepEqual(await lostList(), []);
    assert.equal(await lostGauge(), 0);
    assert.ok(
      serve.lines.some((l) => l === `info log_entries's partition file ${garbage} reads whole again: no longer lost`),
    );
    assert.deepEqual(await msgs(b), expected(2));
    // Lost again, until an admin retires it.
    await serve.store.put(garbage, randomBytes(original.length));
    await restart();
    await assert.rejects(msgs(b), lost(garbage, 'Invalid Input Error: No magic bytes found at end of file'));
    assert.equal((await lostList()).length, 1);
    await messages(`SELECT * FROM retire_partition_by_file('${garbage}')`);
    assert.deepEqual(await lostList(), []);
    assert.deepEqual(await msgs(b), expected(2, ['b three']));
    assert.deepEqual(await msgs(admin), expected(undefined, ['a three', 'b three']));
  });

  it('a merge over a deleted partition file rebuilds that range and merges', async () => {
    await restart();
    const [first] = await logFiles();
    await serve.store.delete(first);
    const out = await messages(`SELECT * FROM materialize_partitions('log_entries', ${range}, 240)`);
    assert.match(out.at(-1)!, /^log_entries \[.*\): merged$/);
    assert.equal((await logFiles()).length, 1);
    assert.deepEqual(await msgs(admin), expected(undefined, ['a three', 'b three']));
    assert.deepEqual((await quarantined()).length, 5);
    assert.deepEqual(await unreadableCounts(), [counted('quarantined', 1)]);
  });

  it('two servers meeting one deleted file at once: one contains it, the other waits and reads the rebuilt range', async () => {
    await restart();
    const other = await startRole('serve', env);
    const [otherAdmin, otherA] = [keyList[0], keyList[1]].map((key) => clientFor(other.flightPort, key));
    try {
      const [file] = await logFiles();
      await serve.store.delete(file);
      // The file's lock held elsewhere (as by a third server containing it): neither server contains it meanwhile.
      const holder = new pg.Client({ connectionString: postgres.connectionString });
      await holder.connect();
      let answering: Promise<unknown[][][]>;
      try {
        await holder.query('SELECT pg_advisory_lock(hashtext($1))', [`orrery_contain:${file}`]);
        answering = Promise.all([msgs(admin), msgs(otherAdmin), msgs(a), msgs(otherA)]);
        await sleep(1500);
        assert.equal((await quarantined()).length, 5);
        assert.ok((await logFiles()).includes(file), 'the partition is still registered');
      } finally {
        await holder.end();
      }
      const answers = await answering;
      const all = expected(undefined, ['a three', 'b three']);
      const ofA = expected(1, ['a three']);
      assert.deepEqual(answers, [all, all, ofA, ofA]);
      assert.equal((await quarantined()).length, 6);
      // Without the lock both servers rebuilt the range and the later one's files were deleted (it logged so).
      const lines = [...serve.lines, ...other.lines];
      assert.deepEqual(
        lines.filter((l) => l.includes(file)).map((l) => l.replace(/ of log_entries .*/, '')),
        [`warn quarantined partition file ${file}`],
      );
    } finally {
      for (const client of [otherAdmin, otherA]) client.close();
      await other.close();
    }
  });
});
