// Small writes to a series table (issues 13 and 17): DuckLake inlines an INSERT or DELETE of a few rows in its catalog
// in Postgres instead of writing a Parquet file, and while any are there the table's reads that read its files
// directly (a text index's pruning, a rollup's file reads) go through DuckLake's scan. The daemon's housekeeping
// writes them to files: the table's rows, a never-stale rollup's answers and its change feed stay as they were (the
// flush is no new or deleted row), and a text search skips files again. Through a real server, a Flight SQL client,
// DuckLake's catalog in Postgres and the daemon's housekeeping.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { plainRows } from '../lakehouse/lakehouse-fixtures.js';
import { changeFeedReads } from '../support/counted-calls.js';
import { useOrrery } from '../support/orrery-process.js';
import { publishFolder } from '../support/publish.js';

describe("a series table's inlined rows and deletes written to files by housekeeping (issues 13, 17)", () => {
  // Housekeeping and the rollup's refreshes run when the test asks.
  const fixture = useOrrery({ ORRERY_HOUSEKEEPING_SECONDS: '3600', ORRERY_ROLLUP_REFRESH_JOBS: 'off' }, 'all');
  const dir = mkdtempSync(join(tmpdir(), 'orrery-series-inlined-flush-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const housekeeping = async () => {
    // While the daemon's own run holds the lock, a run answers nothing: tried again, within a loaded machine's time.
    const deadline = Date.now() + 180_000;
    while (!(await fixture.orrery.daemon!.housekeeping())) {
      assert.ok(Date.now() < deadline, "housekeeping did not get its turn within 180 s (the daemon's own run)");
      await sleep(100);
    }
  };
  /** How many of notes' files explain_resources says a search for a word no row holds skips. */
  const skipped = async () =>
    (
      await plainRows(
        fixture.admin,
        `SELECT count(*) AS n FROM explain_resources('SELECT count(*) FROM notes WHERE msg ILIKE ''%nowhere%''') WHERE decision = 'pruned'`,
      )
    )[0].n;
  /** A lake table's rows and deletes DuckLake holds inlined in its catalog, and its live data files, read in Postgres. */
  const catalog = async (name = 'notes') => {
    const db = fixture.orrery.metadata;
    const { rows } = await db.query<{ id: string; inlined: string[]; deletes: string | null; files: number }>(
      `SELECT t.table_id::text AS id,
              ARRAY(SELECT i.table_name FROM ducklake.ducklake_inlined_data_tables i WHERE i.table_id = t.table_id) AS inlined,
              to_regclass('ducklake.ducklake_inlined_delete_' || t.table_id)::text AS deletes,
              (SELECT count(*) FROM ducklake.ducklake_data_file f WHERE f.table_id = t.table_id AND f.end_snapshot IS NULL)::int AS files
         FROM ducklake.ducklake_table t WHERE t.table_name = $1 AND t.end_snapshot IS NULL`,
      [name],
    );
    const [table] = rows;
    let inlined = 0;
    for (const from of [...table.inlined.map((name) => `ducklake.${name}`), ...(table.deletes ? [table.deletes] : [])])
      inlined += Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${from}`)).rows[0].n);
    return { inlined, files: table.files };
  };
  const tableRows = () => plainRows(fixture.admin, 'SELECT * FROM notes ORDER BY ALL');
  const rollupRows = () => plainRows(fixture.admin, 'SELECT * FROM notes_daily ORDER BY ALL');
  const rawRows = () =>
    plainRows(
      fixture.admin,
      `SELECT time_bucket(INTERVAL 1 DAY, ts) AS bucket, count(*) AS n, audience FROM notes GROUP BY ALL ORDER BY ALL`,
    );

  before(async () => {
    await fixture.admin.query(`CREATE TABLE notes (ts TIMESTAMP, msg VARCHAR) WITH (time_column = 'ts')`);
    await fixture.admin.query(
      `INSERT INTO notes SELECT TIMESTAMP '2024-01-02' + to_seconds(i), 'alpha line ' || i FROM range(100) t(i)`,
    );
    mkdirSync(join(dir, 'resources'), { recursive: true });
    const resources = { msg_text: { index: { table: 'notes', column: 'msg', kind: 'text' } } };
    writeFileSync(join(dir, 'resources', 'notes.resources.json'), JSON.stringify({ resources }));
    const run = await publishFolder(fixture.orrery.address, dir);
    assert.equal(run.status, 0, run.err.join('\n'));
    await fixture.admin.query(
      `SELECT snouttime.create_rollup('notes_daily', 'notes', INTERVAL '1 day', select_list => 'count(*) AS n')`,
    );
    await fixture.admin.query(`SELECT snouttime.refresh_rollup('notes_daily')`);
  });

  it('writes them to files: rows, a rollup and its change feed unchanged, a text search skips files again', async () => {
    assert.deepEqual(await catalog(), { inlined: 0, files: 1 });
    assert.equal(await skipped(), 1);
    // Small writes, each inlined: rows of two statements (a flush writes them to one file, each row keeping its own
    // snapshot), a late row in the rollup's stored days, a delete of a row of the data file and of an inlined one.
    await fixture.admin.query(
      `INSERT INTO notes VALUES (TIMESTAMP '2024-01-03 10:00', 'beta one'), (TIMESTAMP '2024-01-02 12:00', 'beta late')`,
    );
    await fixture.admin.query(`INSERT INTO notes VALUES (TIMESTAMP '2024-01-03 11:00', 'gamma two')`);
    await fixture.admin.query(`DELETE FROM notes WHERE msg IN ('alpha line 5', 'beta one')`);
    const inlined = await catalog();
    assert.equal(inlined.files, 1);
    assert.ok(inlined.inlined >= 4, `${inlined.inlined} rows and deletes inlined`);
    // Meanwhile the search reads the table through DuckLake's scan: no file skipped.
    assert.equal(await skipped(), 0);
    const rows = await tableRows();
    assert.equal(rows.length, 101);
    const rollup = await rollupRows();
    assert.deepEqual(rollup, await rawRows());

    await housekeeping();

    // The rows left the catalog for a data file (and delete files), the text index's upkeep indexed it.
    assert.deepEqual(await catalog(), { inlined: 0, files: 2 });
    assert.equal(await skipped(), 2);
    assert.deepEqual(await tableRows(), rows);
    assert.deepEqual(
      await plainRows(fixture.admin, `SELECT count(*) AS n FROM notes WHERE msg ILIKE '%beta%' OR msg ILIKE '%gamma%'`),
      [{ n: 2 }],
    );
    // The flush's snapshot is no change of the table's rows: the rollup's read reads no change feed for it.
    let after: unknown[] = [];
    assert.equal(await changeFeedReads('notes', async () => void (after = await rollupRows())), 0);
    assert.deepEqual(after, rollup);
    // A refresh recomputes the days the small writes changed, and the answers stay the same.
    await fixture.admin.query(`SELECT snouttime.refresh_rollup('notes_daily')`);
    assert.deepEqual(await rollupRows(), rollup);
    assert.deepEqual(await rawRows(), rollup);
  });

  it("writes a rollup's stored rows a refresh inlined to files, its answers unchanged", async () => {
    // The refresh above recomputed the days the small writes changed: a few rows, deleted and written again, inlined.
    const store = 'notes_daily_materialized';
    assert.ok((await catalog(store)).inlined > 0, 'the refresh inlined its rows');
    const rollup = await rollupRows();
    await housekeeping();
    assert.equal((await catalog(store)).inlined, 0);
    assert.deepEqual(await rollupRows(), rollup);
    assert.deepEqual(await rawRows(), rollup);
  });

  it("a table with a column entry's stored column is left inlined, and read", async () => {
    await fixture.admin.query(`CREATE TABLE pods (ts TIMESTAMP, attrs VARCHAR) WITH (time_column = 'ts')`);
    await fixture.admin.query(
      `INSERT INTO pods SELECT TIMESTAMP '2024-01-02' + to_seconds(i), '{"pod": "p' || (i % 3) || '"}' FROM range(90) t(i)`,
    );
    const resources = { pod: { column: { table: 'pods', expression: "json_extract_string(attrs, 'pod')" } } };
    writeFileSync(join(dir, 'resources', 'pods.resources.json'), JSON.stringify({ resources }));
    const run = await publishFolder(fixture.orrery.address, dir);
    assert.equal(run.status, 0, run.err.join('\n'));
    // Small writes since the fill, inlined: computed when read, the column read for the rows it filled.
    await fixture.admin.query(`INSERT INTO pods VALUES (TIMESTAMP '2024-01-03 10:00', '{"pod": "p1"}')`);
    await fixture.admin.query(`INSERT INTO pods VALUES (TIMESTAMP '2024-01-03 11:00', '{"pod": "p9"}')`);
    const statement = `SELECT json_extract_string(attrs, 'pod') AS pod, count(*) AS n FROM pods GROUP BY ALL ORDER BY pod`;
    const decisions = () =>
      plainRows(
        fixture.admin,
        `SELECT decision FROM explain_resources('${statement.replaceAll("'", "''")}') WHERE decision IN ('substituted', 'kept')`,
      );
    // The expression computed for every row: the table read beside another relation, not alone.
    const computed = () =>
      plainRows(
        fixture.admin,
        `SELECT json_extract_string(attrs, 'pod') AS pod, count(*) AS n FROM pods, (SELECT 1) GROUP BY ALL ORDER BY pod`,
      );
    const expected = [
      { pod: 'p0', n: 30 },
      { pod: 'p1', n: 31 },
      { pod: 'p2', n: 30 },
      { pod: 'p9', n: 1 },
    ];
    assert.ok((await catalog('pods')).inlined >= 2);
    assert.deepEqual(await decisions(), [{ decision: 'substituted' }]);
    assert.deepEqual(await plainRows(fixture.admin, statement), expected);

    await housekeeping();

    // Housekeeping leaves them inlined (read after a flush, the table failed every read): the column is still read,
    // the answers the same.
    assert.ok((await catalog('pods')).inlined >= 2);
    assert.deepEqual(await decisions(), [{ decision: 'substituted' }]);
    assert.deepEqual(await plainRows(fixture.admin, statement), expected);
    assert.deepEqual(await computed(), expected);
  });

  it('leaves the inlined rows of a table whose columns changed since it was made, which stays readable', async () => {
    await fixture.admin.query(`CREATE TABLE altered (ts TIMESTAMP, msg VARCHAR) WITH (time_column = 'ts')`);
    await fixture.admin.query(
      `INSERT INTO altered SELECT TIMESTAMP '2024-01-02' + to_seconds(i), 'line ' || i FROM range(90) t(i)`,
    );
    await fixture.admin.query('ALTER TABLE altered ADD COLUMN extra VARCHAR');
    await fixture.admin.query(`INSERT INTO altered VALUES (TIMESTAMP '2024-01-03', 'late', 'x')`);
    const rows = await plainRows(fixture.admin, 'SELECT * FROM altered ORDER BY ALL');
    assert.equal(rows.length, 91);

    await housekeeping();

    assert.deepEqual(await plainRows(fixture.admin, 'SELECT * FROM altered ORDER BY ALL'), rows);
    assert.equal((await catalog('altered')).inlined, 1);
  });
});
