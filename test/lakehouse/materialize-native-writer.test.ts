// Issue 16: with the native addon, log_entries' partitions of logs payloads read in time order are written by its
// Parquet writer straight from the payloads (writeOrderedLogsPartition), not by DuckDB's statement; without it
// (ORRERY_NATIVE=off) or on an S3 lake, by the statement as before. A payload the writer fails on is logged once and
// the statement writes the range, which quarantines that block as it does: the partition holds every other record,
// once, in time order, and nothing else is left in the lake.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { nativeExportProblem } from '../../src/engine/index.js';
import { payloadContent } from '../../src/ingestion/index.js';
import { payloadKey } from '../../src/lakehouse/index.js';
import { adminKey, startTestOrrery } from '../support/orrery-process.js';
import { TestFlightClient } from '../support/flight-client.js';
import { blockPayload, payloadColumns, type PayloadRow } from '../support/payloads.js';
import {
  interleavedLogsRequest,
  logEntriesInOrder,
  partitionFiles,
  postLogRequests,
  recentRange,
} from './lakehouse-fixtures.js';

const requests = 20;
const perRequest = 50;
const t0 = BigInt(Date.now() - 60_000) * 1_000_000n;

describe('log_entries partitions written by the native writer (issue 16)', () => {
  let orrery: Awaited<ReturnType<typeof startTestOrrery>>;
  let admin: TestFlightClient;
  const logged: string[] = [];

  before(async () => {
    orrery = await startTestOrrery({}, 'serve', (level, message) => logged.push(`${level}: ${message}`));
    admin = new TestFlightClient(orrery.address);
    admin.headers.authorization = `Bearer ${adminKey.key}`;
  });
  after(async () => {
    admin?.close();
    await orrery?.close();
  });

  /** The writer named in the footer of log_entries' only partition file, and its event-time bounds as registered. */
  async function written(): Promise<{ createdBy: string; bounds: unknown[]; times: unknown[] }> {
    const [key] = await partitionFiles(orrery, 'log_entries');
    const duckdb = await DuckDBInstance.create(':memory:');
    const connection = await duckdb.connect();
    try {
      const file = orrery.store.location(key).replaceAll("'", "''");
      const read = async (sql: string) => (await connection.runAndReadAll(sql)).getRows()[0];
      const [createdBy] = await read(`SELECT created_by FROM parquet_file_metadata('${file}')`);
      const times = await read(`SELECT epoch_ns(min(time)), epoch_ns(max(time)) FROM read_parquet('${file}')`);
      const { rows } = await orrery.metadata.query<{ min: string; max: string }>(
        `SELECT (extract(epoch FROM min_event_time) * 1000000)::bigint::text AS min,
                (extract(epoch FROM max_event_time) * 1000000)::bigint::text AS max
           FROM lakehouse_partitions WHERE view_set_name = 'log_entries' AND file_path IS NOT NULL`,
      );
      return {
        createdBy: String(createdBy),
        bounds: [rows[0].min, rows[0].max],
        times: times.map((t) => String(BigInt(t as bigint) / 1000n)),
      };
    } finally {
      connection.closeSync();
      duckdb.closeSync();
    }
  }

  it('writes the range natively when the addon is used, else by the statement; a failing payload logged once, quarantined, the rest written', async () => {
    const native = process.env.ORRERY_NATIVE !== 'off' && nativeExportProblem() === '' && !orrery.store.needsHttpfs;
    const { store, metadata } = orrery;
    await postLogRequests(orrery.httpPort, requests, (i) =>
      interleavedLogsRequest(i, { requests, perRequest, t0, service: 'native-writer' }),
    );
    // One block's payload damaged (its protobuf cut short, in an object of its own as an older server stored it).
    const { rows } = await metadata.query<PayloadRow>(`SELECT ${payloadColumns} FROM blocks b ORDER BY b.block_id`);
    assert.equal(rows.length, requests);
    const damaged = rows[7];
    const content = payloadContent(await blockPayload(store, damaged));
    const cut = content.subarray(0, content.length - 7);
    await store.put(payloadKey(damaged.process_id, damaged.stream_id, damaged.block_id), cut);
    await metadata.query(
      'UPDATE blocks SET payload_file = NULL, object_offset = 0, payload_size = $2 WHERE block_id = $1',
      [damaged.block_id, cut.length],
    );

    await admin.query(`SELECT * FROM materialize_partitions('log_entries', ${recentRange()})`);

    const n = BigInt((requests - 1) * perRequest);
    assert.deepEqual(await logEntriesInOrder(orrery), [n, n, 0n]);
    const { rows: quarantined } = await metadata.query<{ block_id: string }>(
      'SELECT block_id::text FROM quarantined_blocks',
    );
    assert.deepEqual(
      quarantined.map((q) => q.block_id),
      [damaged.block_id],
    );
    const failures = logged.filter((line) => line.includes('the native partition writer failed'));
    const { createdBy, bounds, times } = await written();
    // The registered event-time bounds are the file's first and last times (to Postgres' microsecond, rounded).
    assert.equal(bounds.length, 2);
    for (const [i, bound] of bounds.entries())
      assert.ok(
        Math.abs(Number(BigInt(bound as string) - BigInt(times[i] as string))) <= 1,
        `${String(bound)} against ${String(times[i])}`,
      );
    if (native) {
      assert.match(createdBy, /^Orrery version /);
      assert.equal(failures.length, 1, failures.join('\n'));
      assert.match(failures[0], /^warn: log_entries: .*is not a valid OTLP logs protobuf payload/);
    } else {
      assert.match(createdBy, /^DuckDB/);
      assert.deepEqual(failures, []);
    }
    // Nothing but the registered partition in the lake's log_entries folder.
    if (!orrery.store.needsHttpfs) {
      const [key] = await partitionFiles(orrery, 'log_entries');
      const folder = join(orrery.store.location(key), '..');
      assert.deepEqual(readdirSync(folder), [key.split('/').pop()]);
    }
  });
});
