// Indexes installed on a view set with no partition yet (issue 13): the index is recorded all the same, so
// the partitions that land afterwards get statistics (the daemon indexes each) and, for a bloom_filter
// index, Parquet bloom filters; queries then skip partitions by them, answering exactly as the same WHERE
// with `OR false` (which no index decides) does for every key. Before, an install that found no partition
// recorded nothing: later partitions had neither statistics nor bloom filters.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { plainRows } from '../lakehouse/lakehouse-fixtures.js';
import { adminKey } from '../support/orrery-process.js';
import { pastInsertTimes } from '../support/otlp.js';
import { assertMsgBloomFilters, publishFolder, teamKey, useAudiencesOrrery } from '../support/publish.js';

/** Each query, and how many of the 3 partitions an admin's skips. */
const queries: Array<[string, number]> = [
  ['SELECT msg, level FROM log_entries WHERE level = 3 ORDER BY msg', 2],
  ["SELECT msg FROM log_entries WHERE msg = 'entry 1.1'", 2],
  ["SELECT count(*) AS n FROM log_entries WHERE msg = 'entry 0.05'", 3],
  ['SELECT msg FROM log_entries WHERE level >= 3 ORDER BY msg', 1],
];

describe('an index installed on a view set with no partition yet (issue 13)', () => {
  const suite = useAudiencesOrrery('orrery-empty-index-');
  const { fixture, dir } = suite;

  before(async () => {
    mkdirSync(join(dir, 'resources'), { recursive: true });
    const resources = {
      level_minmax: { index: { table: 'log_entries', column: 'level', kind: 'minmax' } },
      msg_bloom: { index: { table: 'log_entries', column: 'msg', kind: 'bloom_filter' } },
    };
    writeFileSync(join(dir, 'resources', 'logs.resources.json'), JSON.stringify({ resources }));
    const run = await publishFolder(fixture.orrery.address, dir);
    assert.equal(run.status, 0, run.err.join('\n'));
    assert.match(run.text, /^backfill minmax index level_minmax on log_entries: 0 of 0 partition/m);
    // Then three partitions land: levels 4, 3 (team_x's) and 2, two entries each.
    const start = Math.floor(Date.now() / 1000);
    for (const [i, severity] of [9, 13, 17].entries())
      await suite.ingest(i, i === 1 ? teamKey.key : adminKey.key, [
        { severity, body: `entry ${i}.0` },
        { severity, body: `entry ${i}.1` },
      ]);
    await suite.materialize(start - 2, pastInsertTimes());
  });

  it('records the index at install; its type comes from the first partition that lands', async () => {
    const { rows } = await fixture.orrery.metadata.query<{ entry_key: string; value_type: string | null }>(
      "SELECT entry_key, value_type FROM resource_indexes WHERE view_set_name = 'log_entries' ORDER BY entry_key",
    );
    assert.deepEqual(rows, [
      { entry_key: 'level_minmax', value_type: 'INTEGER' },
      { entry_key: 'msg_bloom', value_type: 'VARCHAR' },
    ]);
  });

  it('skips the partitions later statistics exclude, answering as the same WHERE OR false, for every key', async () => {
    await suite.answersAsOrFalse(queries);
    assert.deepEqual(await plainRows(fixture.admin, queries[0][0]), [
      { msg: 'entry 1.0', level: 3 },
      { msg: 'entry 1.1', level: 3 },
    ]);
  });

  it('writes a Parquet bloom filter in every msg chunk of the partitions that land after it', async () => {
    assert.equal(await assertMsgBloomFilters(fixture), 3);
  });
});
