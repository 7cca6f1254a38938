// A publication backfills within the lake's retention (issue 13: "newest day first, within retention"): a
// partition whose insert range ended past MICROMEGAS_RETENTION_DAYS, not yet removed by housekeeping (none runs
// here), is left as it is by every kind (not rewritten with the stored column or Parquet bloom filters, no index
// statistics, no projection copy), each entry says so in its progress and keeps it in its ledger detail once
// ready, and every key's answers are the same as before the publication.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { plainRows } from '../lakehouse/lakehouse-fixtures.js';
import { adminKey } from '../support/orrery-process.js';
import { publishFolder, teamKey, useAudiencesOrrery } from '../support/publish.js';

const ms = 1_000_000n;
const first = 1704164645000000000n;
const records = (prefix: string, at: bigint) =>
  Array.from({ length: 6 }, (_, i) => ({
    time: at + BigInt(i) * ms,
    severity: 9 + (i % 3) * 4,
    body: `${prefix} timeout ${i}`,
    attributes: { pod: `pod-${i % 3}` },
  }));

const queries = [
  "SELECT msg FROM log_entries WHERE properties->>'pod' = 'pod-1' ORDER BY msg",
  'SELECT level, count(*) AS n FROM log_entries WHERE level >= 13 GROUP BY level ORDER BY level',
  "SELECT msg FROM log_entries WHERE msg ILIKE '%old timeout%' ORDER BY msg",
  "SELECT msg FROM log_entries WHERE msg = 'new timeout 2'",
];

const entries = ['by_level', 'level_minmax', 'msg_bloom', 'msg_text', 'pod'];

describe("a publication's backfill leaves out the partitions past the lake's retention (issue 13)", () => {
  const suite = useAudiencesOrrery('orrery-backfill-retention-', { MICROMEGAS_RETENTION_DAYS: '30' });
  const { fixture, dir } = suite;
  let answers = new Map<string, unknown>();
  let old = '';

  before(async () => {
    await suite.ingestPartitions([
      { key: adminKey.key, records: records('old', first) },
      { key: teamKey.key, records: records('new', first + 1000n * ms) },
    ]);
    const db = fixture.orrery.metadata;
    const { rows } = await db.query<{ file_path: string }>(
      "SELECT file_path FROM lakehouse_partitions WHERE view_set_name = 'log_entries' AND file_path IS NOT NULL ORDER BY begin_insert_time",
    );
    old = rows[0].file_path;
    // The older partition's insert range ended 40 days ago: past the 30 days' retention, still listed.
    await db.query(
      `UPDATE lakehouse_partitions SET begin_insert_time = now() - interval '41 days', end_insert_time = now() - interval '40 days'
        WHERE file_path = $1`,
      [old],
    );
    answers = await suite.everyAnswer(queries);
    mkdirSync(join(dir, 'resources'), { recursive: true });
    const resources = {
      pod: { column: { table: 'log_entries', expression: "properties->>'pod'" } },
      level_minmax: { index: { table: 'log_entries', column: 'level', kind: 'minmax' } },
      msg_bloom: { index: { table: 'log_entries', column: 'msg', kind: 'bloom_filter' } },
      msg_text: { index: { table: 'log_entries', column: 'msg', kind: 'text' } },
      by_level: { projection: { table: 'log_entries', order_by: ['level'] } },
    };
    writeFileSync(join(dir, 'resources', 'logs.resources.json'), JSON.stringify({ resources }));
  });

  it('backfills the retained partition alone, says so, and answers as before', async () => {
    const run = await publishFolder(fixture.orrery.address, dir);
    assert.equal(run.status, 0, run.err.join('\n'));
    for (const key of entries)
      assert.match(
        run.text,
        new RegExp(
          `^ {2}${key}: 1 partition file\\(s\\) past the lake's retention \\(ended before \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z\\) not backfilled: housekeeping removes them$`,
          'm',
        ),
        key,
      );
    const db = fixture.orrery.metadata;
    const { rows: files } = await db.query<{ file_path: string }>(
      "SELECT file_path FROM lakehouse_partitions WHERE view_set_name = 'log_entries' AND file_path IS NOT NULL ORDER BY begin_insert_time",
    );
    // The old file is the same (neither rewritten with the column nor with bloom filters); the retained one was.
    assert.equal(files.length, 2);
    assert.equal(files[0].file_path, old);
    const live = files[1].file_path;
    const recorded = async (file: string) =>
      (
        await db.query<{ what: string }>(
          `SELECT 'column' AS what FROM resource_column_files WHERE file_path = $1
           UNION ALL SELECT i.entry_key FROM resource_partition_stats s JOIN resource_indexes i USING (index_hash) WHERE s.file_path = $1
           UNION ALL SELECT 'copy' FROM resource_projection_files WHERE file_path = $1 ORDER BY 1`,
          [file],
        )
      ).rows.map((r) => r.what);
    assert.deepEqual(await recorded(old), []);
    assert.deepEqual(await recorded(live), ['column', 'copy', 'level_minmax', 'msg_bloom', 'msg_text']);
    const ledger = await plainRows(
      fixture.admin,
      'SELECT entry_key, state, detail FROM resource_ledger() ORDER BY entry_key',
    );
    assert.deepEqual(
      ledger.map((r) => [r.entry_key, r.state]),
      entries.map((key) => [key, 'ready']),
    );
    for (const row of ledger) assert.match(String(row.detail), /^1 partition file\(s\) past the lake's retention/);
    const now = await suite.everyAnswer(queries);
    for (const [sql, rows] of answers) assert.deepEqual(now.get(sql), rows, sql);
  });
});
