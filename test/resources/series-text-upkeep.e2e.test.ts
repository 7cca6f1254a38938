// A text index entry on a series table kept up to date as files land (issue 13): a data file written after the
// publication has no statistics and is read whole (its rows found); the daemon's housekeeping indexes it, after
// which a search for a word it lacks skips it too; neither writes copies of the posted rows, which nothing reads
// there. A client's transaction reads its own uncommitted rows (through DuckLake, as before).
// test/sql/series-text-index.test covers the publication and the reads.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { lakeMetadataSchema } from '../../src/tables/lake-catalog.js';
import { plainRows } from '../lakehouse/lakehouse-fixtures.js';
import { readAfterWrite } from '../support/flight-transactions.js';
import { housekeepingTurn } from '../support/housekeeping-turn.js';
import { useOrrery } from '../support/orrery-process.js';
import { publishFolder } from '../support/publish.js';

describe('a text index on a series table, kept up to date by the daemon (issue 13)', () => {
  // Housekeeping runs when the test asks (its own schedule an hour away).
  const logged: string[] = [];
  const fixture = useOrrery({ ORRERY_HOUSEKEEPING_SECONDS: '3600' }, 'all', (level, message) =>
    logged.push(`${level} ${message}`),
  );
  const dir = mkdtempSync(join(tmpdir(), 'orrery-series-text-upkeep-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const insert = (word: string) =>
    fixture.admin.query(
      `INSERT INTO notes SELECT TIMESTAMP '2024-01-02' + to_seconds(i), '${word} line ' || i FROM range(100) t(i)`,
    );
  const count = async (word: string) =>
    (await plainRows(fixture.admin, `SELECT count(*) AS n FROM notes WHERE msg ILIKE '%${word}%'`))[0].n;
  /** How many of the table's files explain_resources says a search for a word no row holds skips. */
  const skipped = async (table = 'notes') =>
    (
      await plainRows(
        fixture.admin,
        `SELECT count(*) AS n FROM explain_resources('SELECT count(*) FROM ${table} WHERE msg ILIKE ''%nowhere%''') WHERE decision = 'pruned'`,
      )
    )[0].n;
  /** The text index copies written (objects under text-index/, and the statistics rows naming one). */
  const copies = async () => ({
    objects: (await fixture.orrery.store.list('text-index/')).length,
    named: (
      await fixture.orrery.metadata.query(
        `SELECT copy_path FROM resource_partition_stats WHERE copy_path IS NOT NULL
         UNION ALL SELECT copy_path FROM resource_audience_stats WHERE copy_path IS NOT NULL`,
      )
    ).rows.length,
  });
  const housekeeping = () => housekeepingTurn(fixture.orrery.daemon!);

  before(async () => {
    await fixture.admin.query(`CREATE TABLE notes (ts TIMESTAMP, msg VARCHAR) WITH (time_column = 'ts')`);
    await insert('alpha');
    // A second indexed table, after notes in the daemon's order (by name): see the last test.
    await fixture.admin.query(`CREATE TABLE pages (ts TIMESTAMP, msg VARCHAR) WITH (time_column = 'ts')`);
    await fixture.admin.query(
      `INSERT INTO pages SELECT TIMESTAMP '2024-01-02' + to_seconds(i), 'alpha page ' || i FROM range(100) t(i)`,
    );
    mkdirSync(join(dir, 'resources'), { recursive: true });
    const resources = {
      msg_text: { index: { table: 'notes', column: 'msg', kind: 'text' } },
      page_text: { index: { table: 'pages', column: 'msg', kind: 'text' } },
    };
    writeFileSync(join(dir, 'resources', 'notes.resources.json'), JSON.stringify({ resources }));
    const run = await publishFolder(fixture.orrery.address, dir);
    assert.equal(run.status, 0, run.err.join('\n'));
    assert.match(run.text, /^backfill text index msg_text on notes: 1 of 1 partition\(s\) to read/m);
  });

  it('reads a file written since whole, finds its rows, then skips it once housekeeping indexed it', async () => {
    await insert('beta');
    assert.equal(await count('beta'), 100);
    assert.equal(await skipped(), 1);
    await housekeeping();
    assert.equal(await skipped(), 2);
    // A search reads a series table's files whole or skips them: no copy of their posted rows is written (a
    // publication's nor housekeeping's), where a view set's text index keeps them.
    assert.deepEqual(await copies(), { objects: 0, named: 0 });
    assert.equal(await count('beta'), 100);
    assert.equal(await count('alpha'), 100);
    assert.deepEqual(await plainRows(fixture.reader, "SELECT count(*) AS n FROM notes WHERE contains(msg, 'beta')"), [
      { n: 100 },
    ]);
  });

  it("a client's transaction that wrote the table reads its own rows holding the word", async () => {
    const table = await readAfterWrite(
      fixture.admin,
      `INSERT INTO notes VALUES (TIMESTAMP '2024-01-03', 'omega line'), (TIMESTAMP '2024-01-03', 'alpha again')`,
      "SELECT count(*) AS n FROM notes WHERE msg ILIKE '%omega%' OR msg ILIKE '%again%'",
    );
    assert.equal(Number(table.getChild('n')!.get(0)), 2);
    assert.equal(await count('omega'), 0);
  });

  it('forgets the statistics of the files the table no longer has (dropped and made again)', async () => {
    const statistics = async () =>
      (
        await fixture.orrery.metadata.query<{ file_path: string }>(
          `SELECT s.file_path FROM resource_partition_stats s JOIN resource_indexes i USING (index_hash)
            WHERE i.entry_key = 'msg_text' ORDER BY 1`,
        )
      ).rows.map((r) => r.file_path);
    const before = await statistics();
    assert.equal(before.length, 2);
    await fixture.admin.query('DROP TABLE notes');
    await fixture.admin.query(`CREATE TABLE notes (ts TIMESTAMP, msg VARCHAR) WITH (time_column = 'ts')`);
    await insert('gamma');
    await housekeeping();
    const kept = await statistics();
    assert.equal(kept.length, 1);
    assert.ok(!before.includes(kept[0]), `${kept[0]} is one of the dropped table's files`);
    assert.deepEqual([await count('gamma'), await count('alpha'), await skipped()], [100, 0, 1]);
  });

  it('housekeeping goes on when the table was dropped and made again without the indexed column', async () => {
    await fixture.admin.query('DROP TABLE notes');
    await fixture.admin.query(`CREATE TABLE notes (ts TIMESTAMP, n INTEGER) WITH (time_column = 'ts')`);
    await fixture.admin.query(
      `INSERT INTO notes SELECT TIMESTAMP '2024-01-02' + to_seconds(i), i FROM range(100) t(i)`,
    );
    // A file of the indexed table after it, written since: indexed all the same, not left to be read whole.
    await fixture.admin.query(
      `INSERT INTO pages SELECT TIMESTAMP '2024-01-03' + to_seconds(i), 'beta page ' || i FROM range(100) t(i)`,
    );
    assert.equal(await skipped('pages'), 1);
    logged.length = 0;
    await housekeeping();
    assert.deepEqual(await plainRows(fixture.admin, 'SELECT count(*) AS n FROM notes WHERE n >= 50'), [{ n: 50 }]);
    assert.equal(await skipped('pages'), 2);
    // The index on the column notes no longer has is told by the ledger's drift, not logged failing at every run.
    assert.deepEqual(
      logged.filter((line) => line.includes('notes')),
      [],
    );
    const drift = await plainRows(fixture.admin, 'SELECT entry_key, problem FROM resource_drift()');
    assert.deepEqual(
      drift.map((d) => d.entry_key),
      ['msg_text'],
    );
    assert.match(String(drift[0].problem), /^notes has no column msg /);
    // The column added back: the file written since is indexed (the one before, without it, is not: a search reads
    // the table through DuckLake while a file older than a column is live), the drift gone, the answers exact.
    await fixture.admin.query('ALTER TABLE notes ADD COLUMN msg VARCHAR');
    await fixture.admin.query(
      `INSERT INTO notes SELECT TIMESTAMP '2024-01-05' + to_seconds(i), i, 'delta line ' || i FROM range(100) t(i)`,
    );
    await housekeeping();
    assert.deepEqual(await plainRows(fixture.admin, 'SELECT entry_key, problem FROM resource_drift()'), []);
    assert.deepEqual([await count('delta'), await count('line'), await skipped()], [100, 100, 0]);
    assert.deepEqual(
      logged.filter((line) => line.includes('notes')),
      ['info index entries: notes: the text index statistics of 1 data file(s) written'],
    );
  });

  it('indexes the files written since when re-bucketing series tables fails (a catalog read failing)', async () => {
    await fixture.admin.query(
      `INSERT INTO pages SELECT TIMESTAMP '2024-01-04' + to_seconds(i), 'gamma page ' || i FROM range(100) t(i)`,
    );
    assert.equal(await skipped('pages'), 2);
    // Re-bucketing reads each table's sort order from DuckLake's catalog table, which text index upkeep does not read.
    const { metadata } = fixture.orrery;
    await metadata.query(`ALTER TABLE ${lakeMetadataSchema}.ducklake_sort_info RENAME TO ducklake_sort_info_away`);
    try {
      await housekeeping();
    } finally {
      await metadata.query(`ALTER TABLE ${lakeMetadataSchema}.ducklake_sort_info_away RENAME TO ducklake_sort_info`);
    }
    assert.equal(await skipped('pages'), 3);
  });
});
