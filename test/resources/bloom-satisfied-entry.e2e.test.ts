// A bloom_filter index on a column entry that an existing column satisfies (issue 13, database-resources.md
// "Entries": `line` with expression `msg` stores nothing, the column msg computes it). The index's Parquet side
// is that column's: installing it rewrites the partition files written before it with a bloom filter on msg.
// Before, it looked for the entry's stored column `__orr_<hash>`, which no file holds, found nothing lacking,
// and left every earlier file without a bloom filter on msg. Answers are those of the same WHERE `OR false`
// (which no index decides) for every key.
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
  ["SELECT msg, level FROM log_entries WHERE msg = 'entry 1.1'", 2],
  ["SELECT count(*) AS n FROM log_entries WHERE msg = 'entry 0.05'", 3],
  ["SELECT msg FROM log_entries WHERE msg IN ('entry 0.0', 'entry 2.1') ORDER BY msg", 1],
];

describe('a bloom_filter index on a column entry an existing column satisfies (issue 13)', () => {
  const suite = useAudiencesOrrery('orrery-bloom-satisfied-');
  const { fixture, dir } = suite;
  let publishText = '';

  before(async () => {
    // Three partitions, written before any index: levels 4, 3 (team_x's) and 2, two distinct log lines each,
    // so their msg chunks are written plain, without a bloom filter.
    const start = Math.floor(Date.now() / 1000);
    for (const [i, severity] of [9, 13, 17].entries())
      await suite.ingest(i, i === 1 ? teamKey.key : adminKey.key, [
        { severity, body: `entry ${i}.0` },
        { severity, body: `entry ${i}.1` },
      ]);
    await suite.materialize(start - 2, pastInsertTimes());
    mkdirSync(join(dir, 'resources'), { recursive: true });
    const resources = {
      line: { column: { table: 'log_entries', expression: 'msg' } },
      line_bloom: { index: { table: 'log_entries', column: 'line', kind: 'bloom_filter' } },
    };
    writeFileSync(join(dir, 'resources', 'logs.resources.json'), JSON.stringify({ resources }));
    const run = await publishFolder(fixture.orrery.address, dir);
    assert.equal(run.status, 0, run.err.join('\n'));
    publishText = run.text;
  });

  it("rewrites the earlier partition files with a bloom filter on msg, the satisfying column's", async () => {
    assert.match(publishText, /^satisfied column line on log_entries: the column msg computes it$/m);
    assert.match(publishText, /^ {2}line_bloom: 3 partition file\(s\) to rewrite with Parquet bloom filters on msg/m);
    assert.match(publishText, /^ {2}line_bloom: 3 file\(s\) rewritten with bloom filters \(3\/3\)$/m);
    assert.doesNotMatch(publishText, /__orr_/);
    assert.equal(await assertMsgBloomFilters(fixture, 'entry 0.05'), 3);
  });

  it('answers as the same WHERE OR false for every key, skipping the partitions the statistics exclude', async () => {
    await suite.answersAsOrFalse(queries);
    assert.deepEqual(await plainRows(fixture.admin, queries[0][0]), [{ msg: 'entry 1.1', level: 3 }]);
    assert.deepEqual(await plainRows(fixture.reader, queries[0][0]), []);
  });
});
