// Issue 16: a partition several times larger than what a small maintenance memory limit
// (ORRERY_MAINTENANCE_MEMORY_LIMIT, one thread: ORRERY_MAINTENANCE_THREADS) let materialize before. The join of the
// decoded payloads with their blocks' metadata was built on the payloads' side (DuckDB took the decoder's table
// function for one row), so its hash table held (and spilled) every row of the partition while the sort needed the
// same memory: these 1.5 M records ran out of 128 MiB (and of 112 MiB, where 0.5 M fit). Built on the blocks' side,
// the limit is shared by the sort and the Parquet writer alone.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { useOrrery } from '../support/orrery-process.js';
import { interleavedLogsRequest, partitionFiles, postLogRequests, recentRange } from './lakehouse-fixtures.js';

const requests = 1500;
const perRequest = 1000;
const records = requests * perRequest;
const limitMiB = 128;
const t0 = BigInt(Date.now() - 60_000) * 1_000_000n;

const request = (i: number): Uint8Array => interleavedLogsRequest(i, { requests, perRequest, t0, service: 'large' });

describe('materializing a partition several times larger than a small maintenance memory limit held (issue 16)', () => {
  const fixture = useOrrery({ ORRERY_MAINTENANCE_MEMORY_LIMIT: `${limitMiB}MiB`, ORRERY_MAINTENANCE_THREADS: '1' });

  it('writes one partition whose rows are each queryable exactly once, in time order', async () => {
    await postLogRequests(fixture.orrery.httpPort, requests, request);
    const range = recentRange();
    await fixture.admin.query(`SELECT * FROM materialize_partitions('blocks', ${range})`);
    await fixture.admin.query(`SELECT * FROM materialize_partitions('log_entries', ${range})`);

    // The partition's record: its rows, and its event times (microseconds, the first rounded down, the last up).
    const { rows: partitions } = await fixture.orrery.metadata.query<{ num_rows: string; lo: string; hi: string }>(
      `SELECT num_rows::text, ((extract(epoch from min_event_time) * 1000000)::bigint)::text AS lo,
              ((extract(epoch from max_event_time) * 1000000)::bigint)::text AS hi
         FROM lakehouse_partitions WHERE view_set_name = 'log_entries' AND file_path IS NOT NULL`,
    );
    const last = t0 + BigInt(records) - 1n;
    assert.deepEqual(partitions, [
      { num_rows: String(records), lo: String(t0 / 1000n), hi: String((last + 999n) / 1000n) },
    ]);

    // Through Flight SQL: every record once (distinct messages, the sum of their indexes and of their times).
    const n = BigInt(records);
    const whole = await fixture.admin.query(
      `SELECT count(*)::BIGINT AS n, count(DISTINCT msg)::BIGINT AS distinct_msgs,
              sum(CAST(split_part(msg, '-', 2) AS BIGINT) * ${perRequest} + CAST(split_part(msg, '-', 3) AS BIGINT))::BIGINT AS indexes,
              sum(epoch_ns(time) - ${t0})::BIGINT AS times, epoch_ns(min(time)) - ${t0} AS lo, epoch_ns(max(time)) - ${t0} AS hi
         FROM log_entries`,
    );
    const row = (table: typeof whole): unknown[] => table.schema.fields.map((f) => table.getChild(f.name)!.get(0));
    assert.deepEqual(row(whole), [n, n, (n * (n - 1n)) / 2n, (n * (n - 1n)) / 2n, 0n, n - 1n]);
    // A time window inside the partition: exactly the records whose times fall in it.
    const [from, to] = [n / 3n, (2n * n) / 3n];
    const window = await fixture.admin.query(
      `SELECT count(*)::BIGINT AS n FROM log_entries
        WHERE time >= make_timestamp_ns(${t0 + from}) AND time < make_timestamp_ns(${t0 + to})`,
    );
    assert.deepEqual(row(window), [to - from]);

    // The file's rows in time order (the row groups' narrow time bounds are what queries prune by).
    const [file] = await partitionFiles(fixture.orrery, 'log_entries');
    const duckdb = await DuckDBInstance.create(':memory:');
    const connection = await duckdb.connect();
    try {
      const path = fixture.orrery.store.location(file).replaceAll("'", "''");
      const reader = await connection.runAndReadAll(
        `SELECT count(*) FILTER (WHERE time < previous)::BIGINT
           FROM (SELECT time, lag(time) OVER () AS previous FROM read_parquet('${path}'))`,
      );
      assert.deepEqual(reader.getRows()[0], [0n]);
    } finally {
      connection.closeSync();
      duckdb.closeSync();
    }
  });
});
