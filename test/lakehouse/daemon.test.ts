// The daemon's own passes: automatic materialization, housekeeping of retired files, retention,
// and of the objects a killed writer left behind.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { logsRequest, postOtlp } from '../support/otlp.js';
import { adminKey, useOrrery } from '../support/orrery-process.js';
import type { TestFlightClient } from '../support/flight-client.js';
import type { ObjectStore } from '../../src/lakehouse/index.js';
import { MaintenanceDaemon, type DaemonOptions } from '../../src/maintenance/index.js';

const count = async (c: TestFlightClient, sql: string, headers?: Record<string, string>): Promise<number> =>
  Number((await c.query(sql, headers)).getChildAt(0)!.get(0) ?? 0);

/** Waits for what the daemon's passes (every second) do: a loaded machine (CI, 2 cores) may run them minutes late. */
async function eventually(what: string, check: () => Promise<boolean>, timeoutMs = 180_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The objects under blobs/ that hold bytes (the one reserved for the next group's payloads is empty until then). */
async function written(store: ObjectStore): Promise<string[]> {
  const keys: string[] = [];
  for (const key of await store.list('blobs/')) if ((await store.size(key)) !== 0) keys.push(key);
  return keys;
}

describe('maintenance daemon', () => {
  const fixture = useOrrery({ ORRERY_RETIRE_DELAY_SECONDS: '0', MICROMEGAS_RETENTION_DAYS: '30' }, 'all');
  let admin: TestFlightClient;
  const times = [1704164645000000000n, 1704164705000000000n, 1704168245000000000n]; // 03:04:05, 03:05:05, 04:04:05 UTC

  before(async () => {
    admin = fixture.admin;
    const logs = times.map((time, i) => ({ time, severity: 9, body: `m${i}` }));
    assert.equal(
      (await postOtlp(fixture.orrery.httpPort, 'logs', adminKey.key, logsRequest({ 'service.name': 'd' }, logs)))
        .status,
      200,
    );
  });

  it('materializes new data within seconds, without being asked', async () => {
    await eventually(
      'log_entries to hold 3 rows',
      async () => (await count(admin, 'SELECT count(*) FROM log_entries')) === 3,
    );
    await eventually(
      'log_stats to count 3 rows',
      async () => (await count(admin, 'SELECT sum(count) FROM log_stats')) === 3,
    );
  });

  it('materializes a view set created by DDL while running, for data that arrives after it', async () => {
    const ddl = `CREATE MATERIALIZED VIEW per_level WITH (
      extract_query = $$SELECT date_bin('1 minute', time) AS time_bin, level, count(*) AS count, audience FROM log_entries
                        WHERE insert_time >= '{begin}' AND insert_time < '{end}' GROUP BY ALL$$,
      count_src_query = $$SELECT sum(nb_objects) AS count FROM blocks WHERE insert_time >= '{begin}' AND insert_time < '{end}'$$,
      merge_partitions_query = $$SELECT time_bin, level, sum(count) AS count, audience FROM {source} GROUP BY ALL$$,
      update_group = 4000, time_column = 'time_bin')`;
    await admin.query(ddl);
    const logs = [1, 2, 3, 4].map((i) => ({ time: 1704164645000000000n + BigInt(i), severity: 17, body: `late ${i}` }));
    assert.equal(
      (await postOtlp(fixture.orrery.httpPort, 'logs', adminKey.key, logsRequest({ 'service.name': 'd2' }, logs)))
        .status,
      200,
    );
    await eventually(
      'per_level to count the 4 new errors',
      async () => (await count(admin, 'SELECT sum(count) FROM per_level WHERE level = 2')) === 4,
    );
    await admin.query('DROP MATERIALIZED VIEW per_level');
  });

  it('prunes by the query_range headers', async () => {
    const headers = { query_range_begin: '2024-01-02T03:04:00Z', query_range_end: '2024-01-02T03:06:00Z' };
    assert.equal(await count(admin, "SELECT count(*) FROM log_entries WHERE exe = 'd'", headers), 2);
    const later = { query_range_begin: '2024-01-02T04:00:00Z', query_range_end: '2024-01-02T05:00:00Z' };
    assert.equal(await count(admin, "SELECT count(*) FROM log_entries WHERE exe = 'd'", later), 1);
  });

  it('housekeeping deletes objects no row names once older than the orphan grace, and nothing else', async () => {
    const { metadata: db, store, daemon } = fixture.orrery;
    const [registered] = (
      await db.query<{ file_path: string }>(
        'SELECT file_path FROM lakehouse_partitions WHERE file_path IS NOT NULL ORDER BY file_path LIMIT 1',
      )
    ).rows.map((r) => r.file_path);
    assert.ok(registered, 'a partition file to keep');
    const [payloads] = (
      await db.query<{ payload_file: string }>('SELECT payload_file FROM blocks ORDER BY payload_file LIMIT 1')
    ).rows.map((r) => r.payload_file);
    // What writers killed at each step would leave: a partition file never registered, a group's payloads
    // whose block rows never committed (and one of its own, as blocks were stored before), a scratch file,
    // a temporary file of an interrupted write.
    const orphans = [
      `views/log_entries/global/2024-01-02/03-04-05_${randomUUID()}.parquet`,
      `blobs/groups/2024-01-02/03-04-05_${randomUUID()}.payloads`,
      `blobs/${randomUUID()}/${randomUUID()}/${randomUUID()}.jsonl`,
      `tmp/${randomUUID()}.parquet`,
      `blobs/${randomUUID()}/.tmp-${randomUUID()}`,
    ];
    for (const key of orphans) await store.put(key, Buffer.from('left behind'));

    // Younger than the grace (6 h by default), they may be a writer's work under way: kept.
    assert.equal((await daemon!.housekeeping())?.orphanObjects, 0);
    for (const key of orphans) assert.notEqual(await store.size(key), null, `${key} is kept while young`);
    // Seven hours on, they go; the registered file stays, however old.
    const report = await daemon!.housekeeping(Date.now() + 7 * 3600_000);
    // (At least these: writes the running daemon has under way count too, at seven hours on.)
    assert.ok((report?.orphanObjects ?? 0) >= orphans.length, `${report?.orphanObjects} deleted`);
    for (const key of orphans) assert.equal(await store.size(key), null, `${key} is deleted`);
    assert.notEqual(await store.size(registered), null, 'a registered file is kept');
    assert.notEqual(await store.size(payloads), null, 'a payload object a block names is kept');
  });

  it('retention deletes an object of several blocks once none of them stays', async () => {
    const { metadata: db, store, daemon } = fixture.orrery;
    // One request of two resources: two blocks, their payloads in one object.
    const resourceLogs = ['shared1', 'shared2'].flatMap(
      (name) =>
        (
          JSON.parse(logsRequest({ 'service.name': name }, [{ time: times[0], severity: 9, body: name }])) as {
            resourceLogs: unknown[];
          }
        ).resourceLogs,
    );
    const posted = await postOtlp(fixture.orrery.httpPort, 'logs', adminKey.key, JSON.stringify({ resourceLogs }));
    assert.equal(posted.status, 200);
    const blocks = async () =>
      (
        await db.query<{ block_id: string; payload_file: string }>(
          `SELECT b.block_id::text, b.payload_file FROM blocks b JOIN processes p USING (process_id)
            WHERE p.exe IN ('shared1', 'shared2') ORDER BY p.exe`,
        )
      ).rows;
    const [first, second] = await blocks();
    assert.equal(first.payload_file, second.payload_file);
    const age = (block: string) =>
      db.query(`UPDATE blocks SET insert_time = now() - interval '40 days' WHERE block_id = $1`, [block]);

    await age(first.block_id);
    await daemon!.housekeeping();
    assert.deepEqual(await blocks(), [second]);
    assert.notEqual(await store.size(second.payload_file), null, 'the object a block still names is kept');
    const parsed = await admin.query(`SELECT value->>'msg' AS msg FROM parse_block('${second.block_id}')`);
    assert.equal(parsed.getChild('msg')!.get(0), 'shared2');

    await age(second.block_id);
    await daemon!.housekeeping();
    assert.deepEqual(await blocks(), []);
    assert.equal(await store.size(second.payload_file), null, 'the object goes with its last block');
  });

  it('retention keeps the stream and process a block being inserted names, when they are past it', async () => {
    const { metadata: db, store, daemon } = fixture.orrery;
    const posted = await postOtlp(
      fixture.orrery.httpPort,
      'logs',
      adminKey.key,
      logsRequest({ 'service.name': 'revived' }, [{ time: times[0], severity: 9, body: 'before' }]),
    );
    assert.equal(posted.status, 200);
    const ids = `SELECT b.block_id::text, b.stream_id::text, b.process_id::text, b.payload_file, b.object_offset, b.payload_size
                   FROM blocks b JOIN processes p USING (process_id) WHERE p.exe = 'revived'`;
    const [old] = (
      await db.query<{
        block_id: string;
        stream_id: string;
        process_id: string;
        payload_file: string;
        object_offset: string;
        payload_size: string;
      }>(ids)
    ).rows;
    // A service silent for longer than the retention period: its block, stream and process all past it.
    await db.transaction(async (tx) => {
      for (const [table, id] of [
        ['blocks', 'block_id'],
        ['streams', 'stream_id'],
        ['processes', 'process_id'],
      ])
        await tx.query(`UPDATE ${table} SET insert_time = now() - interval '40 days' WHERE ${id} = $1`, [
          old[id as keyof typeof old],
        ]);
    });
    // It sends again while housekeeping runs: its new block's insert (which found the stream and process there, as
    // ingestion's ON CONFLICT DO NOTHING does) commits a second after housekeeping began. Its payload is a copy of
    // the old one's, in an object of its own, as a new group's would be.
    const bytes = await store.readRange(old.payload_file, Number(old.object_offset), Number(old.payload_size));
    const file = `blobs/groups/2024-01-02/03-04-05_${randomUUID()}.payloads`;
    await store.put(file, bytes!);
    const { cleaned } = await db.transaction(async (tx) => {
      await tx.query(
        `INSERT INTO blocks (block_id, stream_id, process_id, begin_time, begin_ticks, end_time, end_ticks, nb_objects,
                             payload_file, object_offset, payload_size, audience)
         SELECT gen_random_uuid(), stream_id, process_id, begin_time, 0, end_time, 0, nb_objects, $2, 0, payload_size, audience
           FROM blocks WHERE block_id = $1`,
        [old.block_id, file],
      );
      const cleaned = daemon!.housekeeping();
      await new Promise((r) => setTimeout(r, 1000));
      return { cleaned }; // the insert commits as this transaction ends
    });
    await cleaned;
    const after = (await db.query<{ block_id: string; stream_id: string; process_id: string }>(ids)).rows;
    // Materialization joins a block to its stream and process: a block naming rows gone is never read.
    assert.equal(after.length, 1, 'the new block is there, named by its stream and process (the old one expired)');
    assert.notEqual(after[0].block_id, old.block_id);
    assert.deepEqual([after[0].stream_id, after[0].process_id], [old.stream_id, old.process_id]);
    // The suite's later cases count the objects the first request wrote.
    await db.query('DELETE FROM blocks WHERE block_id = $1', [after[0].block_id]);
    await store.delete(file);
  });

  it('housekeeping deletes retired files and everything older than the retention period', async () => {
    const { metadata: db, store, daemon } = fixture.orrery;
    const files = (
      await db.query<{ file_path: string }>('SELECT file_path FROM lakehouse_partitions WHERE file_path IS NOT NULL')
    ).rows;
    const payloads = await written(store);
    assert.ok(files.length > 0 && payloads.length === 2);
    // In one transaction, as time ages them all: a daemon pass between the updates would see recent
    // partitions without their blocks and rebuild them empty.
    await db.transaction(async (tx) => {
      for (const table of ['blocks', 'streams', 'processes'])
        await tx.query(`UPDATE ${table} SET insert_time = now() - interval '40 days'`);
      await tx.query(
        `UPDATE lakehouse_partitions SET begin_insert_time = begin_insert_time - interval '40 days', end_insert_time = end_insert_time - interval '40 days'`,
      );
      // An audience left out of a range 40 days old and of one of today: the first's rows are gone with its sources.
      // Of a set no pass builds, which would forget today's record too (an empty build holds every audience).
      await tx.query(
        `INSERT INTO failed_audiences (view_set_name, begin_ns, end_ns, audience, error, orrery_version)
           SELECT 'unbuilt', b, b + 60000000000, 'team_' || days, 'Out of Memory Error', 'test'
             FROM unnest(ARRAY[40, 0]) AS days,
                  LATERAL (SELECT (extract(epoch FROM now() - make_interval(days => days)) * 1e9)::bigint - 120000000000 AS b)`,
      );
    });
    await daemon!.housekeeping();
    assert.deepEqual((await db.query('SELECT audience FROM failed_audiences')).rows, [{ audience: 'team_0' }]);
    assert.equal(Number((await db.query('SELECT count(*) AS n FROM blocks')).rows[0].n), 0);
    assert.equal(Number((await db.query('SELECT count(*) AS n FROM processes')).rows[0].n), 0);
    // The running daemon keeps adding partitions for new (empty) ranges: only the aged ones must go.
    const aged = await db.query(
      `SELECT count(*) AS n FROM lakehouse_partitions WHERE end_insert_time < now() - interval '30 days'`,
    );
    assert.equal(Number(aged.rows[0].n), 0);
    assert.deepEqual(await written(store), []);
    for (const { file_path } of files) assert.equal(await store.size(file_path), null, file_path);
    assert.equal(await count(admin, 'SELECT count(*) FROM log_entries'), 0);
  });

  it('a block committed seconds after its insert time is materialized by the second pass, not left to the minute pass', async () => {
    // The blocks table locked while a request is stored: its insert runs (its insert time, the transaction's start,
    // fixed) and commits 3 s later, after the second passes over that second have begun.
    const logs = [1, 2].map((i) => ({ time: 1704164645000000000n + BigInt(i), severity: 9, body: `slow commit ${i}` }));
    const { post } = await fixture.orrery.metadata.transaction(async (tx) => {
      await tx.query('LOCK TABLE blocks IN EXCLUSIVE MODE');
      const post = postOtlp(
        fixture.orrery.httpPort,
        'logs',
        adminKey.key,
        logsRequest({ 'service.name': 'slow' }, logs),
      );
      await new Promise((r) => setTimeout(r, 3000));
      return { post }; // answered once the lock goes, at this transaction's end
    });
    assert.equal((await post).status, 200);
    // Before its commit was awaited, only the minute pass (65-125 s later) picked such a block up.
    await eventually(
      'the slowly committed records to be materialized',
      async () => (await count(admin, "SELECT count(*) FROM log_entries WHERE exe = 'slow'")) === 2,
      150_000,
    );
    const { rows } = await fixture.orrery.metadata.query<{ seconds: number }>(
      `SELECT extract(epoch FROM p.end_insert_time - p.begin_insert_time)::int AS seconds
         FROM lakehouse_partitions p, blocks b JOIN processes USING (process_id)
        WHERE p.view_set_name = 'log_entries' AND exe = 'slow'
          AND b.insert_time >= p.begin_insert_time AND b.insert_time < p.end_insert_time`,
    );
    assert.deepEqual(rows, [{ seconds: 1 }], 'the partition holding them is one of the second pass');
  });

  it('a request stored while retention deletes its stream and process inserts them again', async () => {
    const { metadata: db } = fixture.orrery;
    const send = async (body: string): Promise<number> =>
      (
        await postOtlp(
          fixture.orrery.httpPort,
          'logs',
          adminKey.key,
          logsRequest({ 'service.name': 'returning' }, [{ time: times[0], severity: 9, body }]),
        )
      ).status;
    assert.equal(await send('first'), 200);
    const named = `SELECT b.block_id::text, b.stream_id::text, b.process_id::text FROM blocks b
                     JOIN streams s USING (stream_id) JOIN processes p ON p.process_id = b.process_id
                    WHERE p.exe = 'returning'`;
    const [old] = (await db.query<{ block_id: string; stream_id: string; process_id: string }>(named)).rows;
    // What retention's transactions do to a service silent past the retention period, in one: behind a lock on
    // blocks, its block, then its stream and process, deleted. The service sends again meanwhile: its insert waits
    // for the lock, and then finds the stream and process gone (ingestion inserts them only when missing).
    const { post } = await db.transaction(async (tx) => {
      await tx.query('LOCK TABLE blocks IN SHARE MODE');
      await tx.query('DELETE FROM blocks WHERE block_id = $1', [old.block_id]);
      await tx.query('DELETE FROM streams WHERE stream_id = $1', [old.stream_id]);
      await tx.query('DELETE FROM processes WHERE process_id = $1', [old.process_id]);
      const post = send('again');
      await new Promise((r) => setTimeout(r, 1000));
      return { post };
    });
    assert.equal(await post, 200);
    // Materialization joins a block to its stream and process: a block naming rows gone would never be read.
    const after = (await db.query<{ block_id: string; stream_id: string; process_id: string }>(named)).rows;
    assert.equal(after.length, 1, 'the new block, its stream and its process');
    assert.notEqual(after[0].block_id, old.block_id);
    assert.deepEqual([after[0].stream_id, after[0].process_id], [old.stream_id, old.process_id]);
  });

  /**
   * Housekeeping by a daemon of this lake given `steps` for its series tables, never started (its housekeeping alone,
   * which materializes nothing), with a retired file and an orphan to delete: what it logged (`level message: error`).
   * It fails with `fails` when given (after deleting them), else it succeeds.
   */
  async function housekeepingWith(
    steps: Pick<
      DaemonOptions,
      'seriesRetention' | 'seriesFlush' | 'seriesBuckets' | 'seriesTextIndexes' | 'onPartitionsExpired'
    >,
    fails?: (error: unknown) => boolean,
  ): Promise<string[]> {
    const { metadata: db, store } = fixture.orrery;
    const logged: string[] = [];
    const daemon = new MaintenanceDaemon({
      db,
      store,
      materializer: undefined as never,
      viewSets: () => [],
      retentionDays: 30,
      housekeepingSeconds: 3600,
      orphanGraceSeconds: 6 * 3600,
      ...steps,
      log: (level, message, error) =>
        logged.push(`${level} ${message}${error instanceof Error ? `: ${error.message}` : ''}`),
    });
    const retired = `views/log_entries/global/2024-01-02/03-04-05_${randomUUID()}.parquet`;
    const orphan = `tmp/${randomUUID()}.parquet`;
    for (const key of [retired, orphan]) await store.put(key, Buffer.from('to delete'));
    await db.query(
      `INSERT INTO temporary_files (file_path, file_size, expiration) VALUES ($1, 9, now() - interval '1 second')`,
      [retired],
    );
    // Seven hours on: the orphan is past its grace.
    const run = daemon.housekeeping(Date.now() + 7 * 3600_000);
    if (fails) await assert.rejects(run, fails);
    else assert.ok(await run, 'housekeeping ran');
    assert.equal(await store.size(retired), null, 'the retired file is deleted');
    assert.equal(await store.size(orphan), null, 'the orphan is deleted');
    const left = await db.query('SELECT 1 FROM temporary_files WHERE file_path = $1', [retired]);
    assert.equal(left.rows.length, 0);
    return logged;
  }

  // As a catalog read failing, a DuckLake commit refused or a rollup's refresh holding its lock past the wait would.
  const failing = () => Promise.reject(new Error('the catalog went away'));

  it('housekeeping deletes retired files and orphans when re-bucketing series tables fails, and warns', async () => {
    const logged = await housekeepingWith({ seriesRetention: async () => [], seriesBuckets: failing });
    assert.deepEqual(
      logged.filter((line) => !line.startsWith('warn housekeeping: deleted')),
      ['warn index entries: re-bucketing failed; tried again at the next housekeeping: the catalog went away'],
    );
  });

  it("housekeeping flushes series tables' inlined rows before their text upkeep, and goes on when that fails, warning", async () => {
    const steps: string[] = [];
    const logged = await housekeepingWith({
      seriesRetention: async () => [],
      // One table's flush refused (a client deleting its inlined rows meanwhile), another's done.
      seriesFlush: async () => {
        steps.push('flush');
        return [
          { table: 'logs', error: new Error('another transaction has deleted from it') },
          { table: 'metrics', rows: 3 },
        ];
      },
      seriesTextIndexes: async () => {
        steps.push('text upkeep');
        return ['metrics: the text index statistics of 1 data file(s) written'];
      },
    });
    assert.deepEqual(steps, ['flush', 'text upkeep']);
    assert.deepEqual(
      logged.filter((line) => !line.startsWith('warn housekeeping: deleted')),
      [
        'warn lake table logs: its inlined rows were not written to files; tried again at the next housekeeping: another transaction has deleted from it',
        'info lake table metrics: 3 inlined row(s) written to files',
        'info index entries: metrics: the text index statistics of 1 data file(s) written',
      ],
    );
    // The whole step failing (the catalog's read of the tables): a warning too.
    const failed = await housekeepingWith({ seriesRetention: async () => [], seriesFlush: failing });
    assert.deepEqual(
      failed.filter((line) => !line.startsWith('warn housekeeping: deleted')),
      [
        'warn lake tables: inlined rows were not written to files; tried again at the next housekeeping: the catalog went away',
      ],
    );
  });

  it("housekeeping goes on when the rollups' hook refuses to retire partitions and series retention fails, then fails", async () => {
    const { metadata: db } = fixture.orrery;
    // A partition with a file (the hook is told of those), aged past the retention period.
    const partition = async (): Promise<string | undefined> =>
      (
        await db.query<{ file_path: string }>(
          'SELECT file_path FROM lakehouse_partitions WHERE file_path IS NOT NULL ORDER BY file_path LIMIT 1',
        )
      ).rows[0]?.file_path;
    await eventually('a partition with a file', async () => (await partition()) !== undefined, 150_000);
    const file = (await partition())!;
    await db.query(
      `UPDATE lakehouse_partitions SET begin_insert_time = begin_insert_time - interval '40 days',
              end_insert_time = end_insert_time - interval '40 days' WHERE file_path = $1`,
      [file],
    );
    const logged = await housekeepingWith(
      {
        // As a refresh of a rollup of the view set running then makes it (ROLLUP_REFRESH_BUSY).
        onPartitionsExpired: failing,
        seriesRetention: () => Promise.reject(new Error('a commit refused')),
        seriesBuckets: async () => ['metrics sorted by (1 day bucket)'],
      },
      // Each step that failed named.
      (error) => error instanceof AggregateError && error.message === 'the catalog went away; a commit refused',
    );
    assert.deepEqual(
      logged.filter((line) => !line.startsWith('warn housekeeping: deleted')),
      ['info index entries: metrics sorted by (1 day bucket)'],
    );
    const kept = await db.query('SELECT 1 FROM lakehouse_partitions WHERE file_path = $1', [file]);
    assert.equal(kept.rows.length, 1, 'the partition waits for the next housekeeping');
    assert.equal(
      await db.query('SELECT 1 FROM temporary_files WHERE file_path = $1', [file]).then((r) => r.rows.length),
      0,
    );
  });

  it("housekeeping deletes retired files and orphans, and re-buckets, when series tables' retention fails, then fails", async () => {
    const logged = await housekeepingWith(
      { seriesRetention: failing, seriesBuckets: async () => ['metrics sorted by (1 day bucket)'] },
      (error) => error instanceof Error && error.message === 'the catalog went away',
    );
    assert.deepEqual(
      logged.filter((line) => !line.startsWith('warn housekeeping: deleted')),
      ['info index entries: metrics sorted by (1 day bucket)'],
    );
  });
});
