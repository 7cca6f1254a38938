// The time bucket a bloom_filter entry sorts a series table by (issue 13, series-indexes.ts): picked from the median
// rate of the table's files, so one file's stray row (a clock at 1970, a row at infinity) does not widen it, and
// picked again by the maintenance daemon once the rate moved more than 4x past the rates that pick it. Read from
// DuckLake's catalog in Postgres, as the server keeps it (`time_bucket(CAST('1 day' AS INTERVAL), ts)`).
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { scalar } from '../lakehouse/lakehouse-fixtures.js';
import { housekeepingTurn } from '../support/housekeeping-turn.js';
import { useOrrery } from '../support/orrery-process.js';
import { publishFolder } from '../support/publish.js';

/** Rows per INSERT (each its own data file). */
const rows = 2_000;

describe('the time bucket index entries sort a series table by (issue 13)', () => {
  // Housekeeping runs when the test asks (its own schedule an hour away).
  const fixture = useOrrery({ ORRERY_HOUSEKEEPING_SECONDS: '3600' }, 'all');
  const dir = mkdtempSync(join(tmpdir(), 'orrery-series-buckets-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  let day = 0;

  /** One INSERT into `evt`: `rows` rows `gapMs` apart on a day of their own, and `stray` rows. */
  const insert = (gapMs: number, stray = '') => {
    day += 1;
    return fixture.admin.query(
      `INSERT INTO evt SELECT TIMESTAMP '2026-10-01' + INTERVAL ${day} DAY + to_microseconds(i * ${gapMs * 1000}),
              md5(i::VARCHAR) FROM range(${rows}) t(i)${stray}`,
    );
  };
  /** The keys DuckLake sorts evt's new files by, as its catalog keeps them. */
  const sortKeys = async () =>
    (
      await fixture.orrery.metadata.query<{ expression: string }>(
        `SELECT e.expression FROM ducklake.ducklake_sort_info i
           JOIN ducklake.ducklake_sort_expression e ON e.sort_id = i.sort_id AND e.table_id = i.table_id
           JOIN ducklake.ducklake_table t ON t.table_id = i.table_id AND t.end_snapshot IS NULL
          WHERE t.table_name = 'evt' AND i.end_snapshot IS NULL ORDER BY e.sort_key_index`,
      )
    ).rows.map((r) => r.expression);
  const latestSnapshot = async () =>
    (
      await fixture.orrery.metadata.query<{ id: string }>(
        'SELECT max(snapshot_id)::text AS id FROM ducklake.ducklake_snapshot',
      )
    ).rows[0].id;
  const housekeeping = () => housekeepingTurn(fixture.orrery.daemon!);

  before(async () => {
    await fixture.admin.query(`CREATE TABLE evt (ts TIMESTAMP, id VARCHAR) WITH (time_column = 'ts')`);
    // A row a second (a day holds 86,400 rows, at most 153,600; seven days 604,800): three files, then one with a row
    // of a clock at 1970 (its span 57 years) and one with a row at infinity.
    for (let i = 0; i < 3; i++) await insert(1000);
    await insert(1000, ` UNION ALL SELECT TIMESTAMP '1970-01-01 00:00:07', 'stray'`);
    await insert(1000, ` UNION ALL SELECT 'infinity'::TIMESTAMP, 'stray'`);
    mkdirSync(join(dir, 'resources'), { recursive: true });
    writeFileSync(
      join(dir, 'resources', 'evt.resources.json'),
      JSON.stringify({ resources: { id_bloom: { index: { table: 'evt', column: 'id', kind: 'bloom_filter' } } } }),
    );
  });

  it("picks the bucket from the rate most files came at: a file's row of 1970 or at infinity does not widen it", async () => {
    const run = await publishFolder(fixture.orrery.address, dir);
    assert.equal(run.status, 0, run.err.join('\n'));
    assert.match(run.text, /^ {2}id_bloom: evt sorted by \(time_bucket\(INTERVAL '1 day', "ts"\), id\) in row groups/m);
    assert.deepEqual(await sortKeys(), ["time_bucket(CAST('1 day' AS INTERVAL), ts)", 'id']);
  });

  it('the daemon keeps the bucket while the rate stays within 4x of the rates that pick it, then picks it again', async () => {
    // Three rows a second in the newest files (their median): a day holds 259,200, 12 hours would be picked afresh,
    // but 3 is within 4x of the rates that pick a day (0.25 to 1.8 a second): no sort, no DuckLake snapshot.
    for (let i = 0; i < 5; i++) await insert(333);
    const before = await latestSnapshot();
    await housekeeping();
    assert.deepEqual(await sortKeys(), ["time_bucket(CAST('1 day' AS INTERVAL), ts)", 'id']);
    assert.equal(await latestSnapshot(), before);
    // A hundred a second (median of the newest files): 15 minutes hold 90,000 rows, an hour 360,000.
    for (let i = 0; i < 12; i++) await insert(10);
    await housekeeping();
    assert.deepEqual(await sortKeys(), ["time_bucket(CAST('15 minutes' AS INTERVAL), ts)", 'id']);
    // Kept: by the next look, by a publication, and INSERTs go on.
    await housekeeping();
    const again = await publishFolder(fixture.orrery.address, dir);
    assert.equal(again.status, 0, again.err.join('\n'));
    assert.match(
      again.text,
      /^ {2}id_bloom: evt already sorted by \(time_bucket\(cast\('15 minutes' as interval\), ts\), id\)/m,
    );
    assert.deepEqual(await sortKeys(), ["time_bucket(CAST('15 minutes' AS INTERVAL), ts)", 'id']);
    await insert(10);
    assert.equal(await scalar(fixture.admin, 'SELECT count(*) FROM evt'), 23 * rows + 2);
  });
});
