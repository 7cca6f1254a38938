// Which view set definitions let a read leave the merge out (mergeKeysOf, through buildViewSet on DuckDB's
// own parse trees), and which partitions are the merge's rows as they are (partitionsMerged). The reads
// themselves, skipped and merged, over a real server: merge-skip.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DuckDBEngine } from '../../src/engine/index.js';
import {
  builtinViewSets,
  buildViewSet,
  compatibilityMacros,
  partitionsMerged,
  type ViewSet,
} from '../../src/views/index.js';

const window = "insert_time >= '{begin}' AND insert_time < '{end}'";
const logStats = {
  extract: `SELECT date_bin('1 minute', time) AS time_bin, process_id, level, target, count(*) AS count, audience
    FROM log_entries WHERE ${window} GROUP BY time_bin, process_id, level, target, audience`,
  merge: `SELECT time_bin, process_id, level, target, sum(count) AS count, audience
    FROM {source} GROUP BY time_bin, process_id, level, target, audience`,
};

describe('merge keys of a view set definition', () => {
  let engine: DuckDBEngine;
  before(async () => {
    engine = await DuckDBEngine.create({ threads: 1, startupSql: [...compatibilityMacros] });
  });
  after(async () => engine.close());

  const keysOf = async (extract: string, merge: string, time = 'time_bin'): Promise<readonly string[] | undefined> => {
    const view = await buildViewSet(
      engine,
      {
        name: 'stats',
        definitionSql: '',
        extractQuery: extract,
        countQuery: `SELECT sum(nb_objects) AS count FROM blocks WHERE ${window}`,
        mergeQuery: merge,
        updateGroup: 5000,
        minTimeColumn: time,
        maxTimeColumn: time,
        sourcePartitionDelta: '1 day',
        mergePartitionDelta: '1 day',
      },
      (name) => builtinViewSets.find((v) => v.name === name.toLowerCase()),
    );
    return view.mergeKeys;
  };

  it("log_stats's: the extract groups by the merge's keys, the merge sums its count", async () => {
    assert.deepEqual(await keysOf(logStats.extract, logStats.merge), [
      'time_bin',
      'process_id',
      'level',
      'target',
      'audience',
    ]);
  });

  it('GROUP BY ALL on either side, min and max', async () => {
    assert.deepEqual(
      await keysOf(
        `SELECT date_bin('1 minute', time) AS time_bin, level, count(*) AS count, max(time) AS last, audience FROM log_entries WHERE ${window} GROUP BY ALL`,
        'SELECT time_bin, level, sum(count) AS count, max(last) AS last, audience FROM {source} GROUP BY ALL',
      ),
      ['time_bin', 'level', 'audience'],
    );
  });

  it('none when the extract groups by more than the keys or by a FROM column its alias hides', async () => {
    // Two rows of a partition may share (time_bin, audience): they differ by level.
    assert.equal(
      await keysOf(
        `SELECT date_bin('1 minute', time) AS time_bin, count(*) AS count, audience FROM log_entries WHERE ${window} GROUP BY time_bin, level, audience`,
        'SELECT time_bin, sum(count) AS count, audience FROM {source} GROUP BY time_bin, audience',
      ),
      undefined,
    );
    // GROUP BY time groups by log_entries.time, not by the alias: many rows share a minute.
    assert.equal(
      await keysOf(
        `SELECT date_trunc('minute', time)::TIMESTAMP_NS AS time, count(*) AS count, audience FROM log_entries WHERE ${window} GROUP BY time, audience`,
        'SELECT time, sum(count) AS count, audience FROM {source} GROUP BY time, audience',
        'time',
      ),
      undefined,
    );
    // unnest makes several rows of one group.
    assert.equal(
      await keysOf(
        `SELECT date_bin('1 minute', time) AS time_bin, unnest([1, 2]) AS count, audience FROM log_entries WHERE ${window} GROUP BY time_bin, audience`,
        'SELECT time_bin, sum(count) AS count, audience FROM {source} GROUP BY time_bin, audience',
      ),
      undefined,
    );
  });

  it("none when the merge changes a lone row: count, a float's sum, a filter, a column it doesn't group", async () => {
    const merges = [
      'SELECT time_bin, process_id, level, target, count(count) AS count, audience FROM {source} GROUP BY time_bin, process_id, level, target, audience',
      'SELECT time_bin, process_id, level, target, sum(count) AS count, audience FROM {source} WHERE count > 1 GROUP BY time_bin, process_id, level, target, audience',
      'SELECT time_bin, process_id, level, target, sum(count) FILTER (WHERE count > 1) AS count, audience FROM {source} GROUP BY time_bin, process_id, level, target, audience',
      'SELECT time_bin, process_id, level, target, sum(count) AS count, audience FROM {source} GROUP BY time_bin, process_id, level, target, audience HAVING sum(count) > 1',
      'SELECT time_bin, process_id, level, any_value(target) AS target, sum(count) AS count, audience FROM {source} GROUP BY time_bin, process_id, level, audience',
    ];
    for (const merge of merges) assert.equal(await keysOf(logStats.extract, merge), undefined, merge);
    assert.equal(
      await keysOf(
        `SELECT date_bin('1 minute', time) AS time_bin, avg(level) AS mean, audience FROM log_entries WHERE ${window} GROUP BY ALL`,
        'SELECT time_bin, sum(mean) AS mean, audience FROM {source} GROUP BY ALL',
      ),
      undefined,
    );
  });
});

describe('partitions that are their merge already', () => {
  const view = { minTimeColumn: 'time_bin', maxTimeColumn: 'time_bin', mergeKeys: ['time_bin', 'audience'] } as const;
  const range = (min: number, max: number) => ({ minEventTime: BigInt(min), maxEventTime: BigInt(max) });
  const merged = (
    v: Partial<ViewSet>,
    ranges: { minEventTime: bigint | null; maxEventTime: bigint | null }[],
  ): boolean => partitionsMerged(v as ViewSet, ranges);

  it('one partition, or ranges that do not meet', () => {
    assert.equal(merged(view, [range(0, 100)]), true);
    assert.equal(merged(view, [range(200, 300), range(0, 100), range(101, 150)]), true);
  });

  it('not when two ranges meet (a time_bin in both), or without merge keys on the time column', () => {
    assert.equal(merged(view, [range(0, 100), range(100, 200)]), false);
    assert.equal(merged(view, [range(0, 100), range(50, 60)]), false);
    assert.equal(merged({ ...view, mergeKeys: undefined }, [range(0, 100)]), false);
    assert.equal(merged({ ...view, mergeKeys: ['audience'] }, [range(0, 100), range(200, 300)]), false);
    assert.equal(merged({ ...view, maxTimeColumn: 'end' }, [range(0, 100), range(200, 300)]), false);
    assert.equal(merged(view, [range(0, 100), { minEventTime: null, maxEventTime: null }]), false);
  });
});
