// Issue 16: materializing more rows than the maintenance engine's memory limit holds
// (ORRERY_MAINTENANCE_MEMORY_LIMIT). The partition's rows are sorted by time with the sort spilling to disk, so
// the server's peak resident memory grows by the limit and a margin, not by the rows' size (here 426-432 MiB on a
// 256 MiB limit; 548-609 MiB without one), and the file holds the same rows, in order.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { useOrrery } from '../support/orrery-process.js';
import { interleavedLogsRequest, onlyPartitionRow, postLogRequests, recentRange } from './lakehouse-fixtures.js';

const requests = 480;
const perRequest = 1000;
const records = requests * perRequest;
/**
 * Each message's padding: small enough for a Parquet row group (131,072 rows, buffered whole by the writer) to
 * fit in the limit, while the 480,000 records take several times the limit to sort.
 */
const padding = 'x'.repeat(100);
const limitMiB = 256;
const t0 = BigInt(Date.now() - 60_000) * 1_000_000n;

const request = (i: number): Uint8Array =>
  interleavedLogsRequest(i, { requests, perRequest, t0, service: 'memory', suffix: `-${padding}` });

/** This process's resident memory now and at its peak since the last reset, in MiB (Linux). */
function residentMiB(): { now: number; peak: number } {
  const status = readFileSync('/proc/self/status', 'utf8');
  const kib = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)![1]);
  return { now: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
}

describe('materializing more rows than the maintenance memory limit (issue 16)', () => {
  // One maintenance thread, as on 2 cores: with two, the ordered read's row groups (each in time order) may reach the
  // file in either order, and two are buffered at once (test/ingestion/otlp-logs-ordered checks that read).
  const fixture = useOrrery({ ORRERY_MAINTENANCE_MEMORY_LIMIT: `${limitMiB}MiB`, ORRERY_MAINTENANCE_THREADS: '1' });

  it('writes them all, sorted by time, with the peak memory growing by less than their size', async (t) => {
    await postLogRequests(fixture.orrery.httpPort, requests, request);
    const range = recentRange();
    await fixture.admin.query(`SELECT * FROM materialize_partitions('blocks', ${range})`);

    global.gc?.();
    writeFileSync('/proc/self/clear_refs', '5'); // VmHWM from here on
    const before = residentMiB().now;
    await fixture.admin.query(`SELECT * FROM materialize_partitions('log_entries', ${range})`);
    const grown = residentMiB().peak - before;
    t.diagnostic(`peak resident memory grew by ${Math.round(grown)} MiB while materializing`);

    const row = await onlyPartitionRow(
      fixture.orrery,
      'log_entries',
      `SELECT count(*)::BIGINT, count(DISTINCT msg)::BIGINT,
              sum(CAST(split_part(msg, '-', 2) AS BIGINT) * ${perRequest} + CAST(split_part(msg, '-', 3) AS BIGINT))::BIGINT,
              sum(epoch_ns(time) - ${t0})::BIGINT,
              count(*) FILTER (WHERE msg NOT LIKE '%-${padding}')::BIGINT,
              count(*) FILTER (WHERE time < previous)::BIGINT
         FROM (SELECT msg, time, lag(time) OVER () AS previous FROM {file})`,
    );
    const n = BigInt(records);
    assert.deepEqual(row, [n, n, (n * (n - 1n)) / 2n, (n * (n - 1n)) / 2n, 0n, 0n]);
    assert.ok(grown < limitMiB + 256, `peak resident memory grew by ${Math.round(grown)} MiB while materializing`);
  });
});
