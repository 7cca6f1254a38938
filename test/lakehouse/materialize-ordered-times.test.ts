// Issue 16: the ordered read of log_entries (__orrery_otlp_logs_ordered) takes each payload's first time from its
// block's begin_time, with no walk of the payloads before it. A block whose begin_time is after its records'
// earliest time (which ingestion does not write) would let rows leave time order, so that read fails; the range is
// then read through the join and sort, and the partition holds every row in time order.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { useOrrery } from '../support/orrery-process.js';
import { interleavedLogsRequest, logEntriesInOrder, postLogRequests, recentRange } from './lakehouse-fixtures.js';

const requests = 20;
const perRequest = 50;
const t0 = BigInt(Date.now() - 60_000) * 1_000_000n;

describe('log_entries from blocks whose begin_time is after their records (issue 16)', () => {
  const fixture = useOrrery();

  it('are written through the sort, every row in time order', async () => {
    await postLogRequests(fixture.orrery.httpPort, requests, (i) =>
      interleavedLogsRequest(i, { requests, perRequest, t0, service: 'late-begin' }),
    );
    const range = recentRange();
    await fixture.admin.query(`SELECT * FROM materialize_partitions('blocks', ${range})`);
    const { rowCount } = await fixture.orrery.metadata.query(
      `UPDATE blocks SET begin_time = begin_time + interval '1 millisecond'
        WHERE block_id = (SELECT block_id FROM blocks ORDER BY block_id LIMIT 1)`,
    );
    assert.equal(rowCount, 1);
    await fixture.admin.query(`SELECT * FROM materialize_partitions('log_entries', ${range})`);

    const n = BigInt(requests * perRequest);
    assert.deepEqual(await logEntriesInOrder(fixture.orrery), [n, n, 0n]);
  });
});
