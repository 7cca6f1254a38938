// refresh_rollup's answer as the tests count it: the ranges of pending buckets it recomputed.
import { plainRows, scalar } from '../lakehouse/lakehouse-fixtures.js';
import type { TestFlightClient } from './flight-client.js';

/**
 * Refreshes `rollup` and returns the number of ranges of pending buckets it recomputed. refresh_rollup
 * also counts the range of buckets closed since the last refresh when the clock crossed a bucket of
 * the rollup's grain (an hour, a UTC day) in between, as the watermark moved from its bucket: the
 * time a suite runs at decides that, so it is taken off here. Exact while no pending bucket is the
 * one just before the old watermark (which would join that range): the tests' late rows are hours
 * or years older than the suite's start.
 */
export async function refreshPendingRanges(client: TestFlightClient, rollup: string): Promise<number> {
  const watermark = async (): Promise<unknown> =>
    (await plainRows(client, `SELECT watermark FROM list_rollups() WHERE name = '${rollup}'`))[0]?.watermark;
  const before = await watermark();
  const ranges = await scalar(client, `select snouttime.refresh_rollup('${rollup}')`);
  const moved = before !== null && before !== undefined && before !== (await watermark());
  return ranges - (moved ? 1 : 0);
}
