// Issue 14: a window off bucket boundaries read as whole rollup buckets plus raw edges reads its edges'
// rows from the table's Parquet files (less their delete files), as the never-stale tail does, not
// through DuckLake's scan (a DuckLake transaction, catalog reads and a prepare at every statement).
// Through a real Flight SQL client against a real Orrery: each answer equal to its raw twin for an
// admin and for a reader of public rows alone, after deletes, updates and late rows in the edges.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Table } from 'apache-arrow';
import { plain, plainRows } from '../lakehouse/lakehouse-fixtures.js';
import { packAny } from '../support/flight-client.js';
import { beginTransaction, endTransaction, queryInTransaction } from '../support/flight-transactions.js';
import { useOrrery } from '../support/orrery-process.js';

/** Two days of 2024 a minute apart; the window is off the hour at both ends. */
const window = `ts >= '2024-01-01 05:30' and ts < '2024-01-02 07:45'`;
/** The rows of the window's lower edge ([05:00, 06:00) of the first day) and of its upper edge's hour. */
const edgeHours = `(ts >= '2024-01-01 05:00' and ts < '2024-01-01 06:00' or ts >= '2024-01-02 07:00' and ts < '2024-01-02 08:00')`;

const panel = (from: string): string =>
  `select host, count(*) as n, sum(v) as s, max(v) as mx from ${from} where ${window} group by host order by host`;

/**
 * A table of 2,880 rows a minute apart from 2024-01-01, every other one public (the rest team_x's), and its hourly
 * rollup, refreshed, through an admin's `run`.
 */
async function tableWithRollup(run: (sql: string) => Promise<Table>, name: string): Promise<void> {
  await run(`CREATE TABLE ${name} (ts TIMESTAMP, host VARCHAR, v BIGINT) WITH (time_column = 'ts')`);
  await run(`INSERT INTO ${name} (ts, host, v, audience)
               SELECT TIMESTAMP '2024-01-01 00:00:00' + to_minutes(i), 'h' || (i % 3), i,
                      CASE WHEN i % 2 = 0 THEN 'public' ELSE 'team_x' END FROM range(2880) t(i)`);
  await run(`select snouttime.create_rollup('${name}_hourly', '${name}', interval '1 hour',
               select_list => 'host, count(*) as n, sum(v) as s, max(v) as mx', group_by => 'host')`);
  await run(`select snouttime.refresh_rollup('${name}_hourly')`);
}

/** The rollup a result's provenance says its one level read, and its buckets; [null, undefined] for raw. */
const readOf = (table: Table): [string | undefined, unknown] => {
  const provenance = JSON.parse(table.schema.metadata.get('orrery.provenance')!) as {
    resources: Array<{ rollup: { name: string; buckets?: unknown } | null }>;
  };
  const [level] = provenance.resources;
  return [level.rollup?.name, level.rollup?.buckets];
};

describe('raw edges read from the files (issue 14)', () => {
  // Every window off the hour reads raw edges, however few rows its whole buckets replace.
  const fixture = useOrrery({ ORRERY_ROLLUP_RAW_EDGES_MIN_ROWS: '0' });

  /** The DuckLake scans of `table` in an admin's plan of `sql` (EXPLAIN ANALYZE draws each as `Table: <name>`). */
  const lakeScans = async (table: string, sql: string): Promise<number> => {
    const plan = (await fixture.admin.query(`EXPLAIN ANALYZE ${sql}`))
      .toArray()
      .map((row) => Object.values(row.toJSON() as Record<string, unknown>).join('\n'))
      .join('\n');
    return plan.match(new RegExp(`Table: ${table}\\b`, 'g'))?.length ?? 0;
  };

  const withRollup = (name: string): Promise<void> => tableWithRollup((sql) => fixture.admin.query(sql), name);

  /**
   * The panel over `name` reads its hourly rollup's whole hours plus raw edges, and answers as its raw twin does,
   * for an admin and for a reader of public rows alone; answers the DuckLake scans of the table in its plan.
   */
  const checked = async (name: string): Promise<number> => {
    for (const client of [fixture.admin, fixture.reader]) {
      const table = await client.query(panel(name));
      assert.deepEqual(readOf(table), [`${name}_hourly`, { from: '2024-01-01T06:00:00Z', to: '2024-01-02T07:00:00Z' }]);
      assert.deepEqual(
        table.toArray().map((r) => plain({ ...r })),
        await plainRows(client, panel(`(select * from ${name}) as ${name}`)),
      );
    }
    return lakeScans(name, panel(name));
  };

  it('reads the edges from the files, with no DuckLake scan, exact for an admin and a reader', async () => {
    await withRollup('plain');
    // The reader's edges are its public rows alone.
    assert.notDeepEqual(
      await plainRows(fixture.reader, panel('plain')),
      await plainRows(fixture.admin, panel('plain')),
    );
    assert.equal(await checked('plain'), 0);
  });

  it('leaves out rows of the edges deleted since their file was written (a delete file)', async () => {
    await withRollup('deleted');
    await fixture.admin.updateCount(`DELETE FROM deleted WHERE ${edgeHours} AND v % 2 = 0`);
    assert.equal(await checked('deleted'), 0);
  });

  it('reads rows of the edges updated since their file was written (a delete file and a new file)', async () => {
    await withRollup('updated');
    await fixture.admin.updateCount(`UPDATE updated SET v = v + 100000 WHERE ${edgeHours} AND v % 3 = 0`);
    assert.equal(await checked('updated'), 0);
    // A row moved out of an edge into a whole hour, and one moved into an edge from one.
    await fixture.admin.updateCount(`UPDATE updated SET ts = TIMESTAMP '2024-01-01 12:00:30' WHERE v = 331`);
    await fixture.admin.updateCount(`UPDATE updated SET ts = TIMESTAMP '2024-01-02 07:10:30' WHERE v = 600`);
    await checked('updated');
  });

  it('reads late rows of the edges: a file of them, and rows inlined in the catalog (read through DuckLake)', async () => {
    await withRollup('late');
    await fixture.admin.updateCount(
      `INSERT INTO late (ts, host, v, audience) SELECT TIMESTAMP '2024-01-01 05:45:00' + to_seconds(i), 'h9', 10000 + i,
         CASE WHEN i % 2 = 0 THEN 'public' ELSE 'team_x' END FROM range(40) t(i)`,
    );
    assert.equal(await checked('late'), 0);
    // Fewer than 10 rows are inlined in DuckLake's catalog, in no file: the edges are then read through DuckLake.
    await fixture.admin.updateCount(
      `INSERT INTO late (ts, host, v, audience) VALUES (TIMESTAMP '2024-01-02 07:30:00', 'h8', 20000, 'public')`,
    );
    assert.ok((await checked('late')) > 0);
  });
  // Guards (they pass without the edges read from files: DuckLake's scan saw the same): a client's transaction reads
  // the edges as it sees the table, at its snapshot.
  it("reads the edges in a client's transaction at its snapshot, and with its own writes", async () => {
    await withRollup('pinned');
    const transactionId = await beginTransaction(fixture.admin);
    const inTransaction = async (query: string): Promise<Array<Record<string, unknown>>> =>
      (await queryInTransaction(fixture.admin, transactionId, query)).toArray().map((r) => plain(r.toJSON()));
    const twin = panel('(select * from pinned) as pinned');
    // The transaction's first read fixes its snapshot: another connection's rows in the edges come after it.
    const before = await inTransaction(panel('pinned'));
    assert.deepEqual(before, await inTransaction(twin));
    const late = `INSERT INTO pinned (ts, host, v, audience) SELECT TIMESTAMP '2024-01-01 05:50:00' + to_seconds(i), 'h7',
                    30000 + i, 'public' FROM range(40) t(i)`;
    await fixture.admin.updateCount(late);
    assert.deepEqual(await inTransaction(panel('pinned')), before);
    // Its own rows in the edges, in no file the catalog lists, are read.
    await fixture.admin.doPut(
      packAny('CommandStatementUpdate', { query: late.replace("'h7'", "'h6'"), transactionId }),
    );
    const own = await inTransaction(panel('pinned'));
    assert.deepEqual(own, await inTransaction(twin));
    assert.ok(own.some((r) => r.host === 'h6'));
    await endTransaction(fixture.admin, transactionId, false);
    await checked('pinned');
  });
});

// ORRERY_ROLLUP_RAW_EDGES_MIN_ROWS' default (1,000,000) weighs edges read through DuckLake's scan alone: an admin's
// window whose edges are in the table's files reads whole buckets plus edges however few rows they replace (here
// about 1,500), as they cost less than a raw read at every size bench/rollup-rewrite/edges-threshold.mjs measured.
describe('raw edges from files whatever the rows replaced (issue 14)', () => {
  const fixture = useOrrery();
  const twin = (name: string): string => panel(`(select * from ${name}) as ${name}`);

  it("reads an admin's window with edges from files, raw once a row is inlined after its start; a reader's always", async () => {
    await tableWithRollup((sql) => fixture.admin.query(sql), 'few');
    const buckets = { from: '2024-01-01T06:00:00Z', to: '2024-01-02T07:00:00Z' };
    const read = await fixture.admin.query(panel('few'));
    assert.deepEqual(readOf(read), ['few_hourly', buckets]);
    assert.deepEqual(
      read.toArray().map((r) => plain({ ...r })),
      await plainRows(fixture.admin, twin('few')),
    );
    // A reader's window too, its edges its public rows alone.
    const reader = await fixture.reader.query(panel('few'));
    assert.deepEqual(readOf(reader), ['few_hourly', buckets]);
    assert.deepEqual(
      reader.toArray().map((r) => plain({ ...r })),
      await plainRows(fixture.reader, twin('few')),
    );
    // A row inlined in the catalog after the window's start: the edges would be read through DuckLake's scan,
    // which costs more than raw below the threshold.
    await fixture.admin.updateCount(`INSERT INTO few (ts, host, v) VALUES (TIMESTAMP '2024-01-02 10:00:00', 'h1', 1)`);
    const raw = await fixture.admin.query(panel('few'));
    assert.deepEqual(readOf(raw), [undefined, undefined]);
    assert.deepEqual(
      raw.toArray().map((r) => plain({ ...r })),
      await plainRows(fixture.admin, twin('few')),
    );
    // Not for a reader, whose choice is made on no rows (whether one is inlined hangs on every audience's rows):
    // here one of team_x's, inlined too, leaves the reader's read and answer as they were.
    await fixture.admin.updateCount(
      `INSERT INTO few (ts, host, v, audience) VALUES (TIMESTAMP '2024-01-02 11:00:00', 'h2', 2, 'team_x')`,
    );
    const still = await fixture.reader.query(panel('few'));
    assert.deepEqual(readOf(still), ['few_hourly', buckets]);
    assert.deepEqual(
      still.toArray().map((r) => plain({ ...r })),
      await plainRows(fixture.reader, twin('few')),
    );
  });

  it("weighs an admin's window again in a client's transaction that wrote the table, not as kept from outside it", async () => {
    await tableWithRollup((sql) => fixture.admin.query(sql), 'kept');
    const buckets = { from: '2024-01-01T06:00:00Z', to: '2024-01-02T07:00:00Z' };
    // Outside a transaction the edges are in files: whole hours plus edges, that rewrite kept at this snapshot.
    assert.deepEqual(readOf(await fixture.admin.query(panel('kept'))), ['kept_hourly', buckets]);
    const transactionId = await beginTransaction(fixture.admin);
    const inTransaction = (query: string): Promise<Table> => queryInTransaction(fixture.admin, transactionId, query);
    assert.deepEqual(readOf(await inTransaction(panel('kept'))), ['kept_hourly', buckets]);
    // Its own rows, far from the window, are in no file: its edges would be read through DuckLake's scan.
    await fixture.admin.doPut(
      packAny('CommandStatementUpdate', {
        query: `INSERT INTO kept (ts, host, v) VALUES (TIMESTAMP '2024-03-01 00:00:00', 'h1', 1)`,
        transactionId,
      }),
    );
    const raw = await inTransaction(panel('kept'));
    assert.deepEqual(readOf(raw), [undefined, undefined]);
    assert.deepEqual(
      raw.toArray().map((r) => plain({ ...r })),
      (await inTransaction(twin('kept'))).toArray().map((r) => plain({ ...r })),
    );
    await endTransaction(fixture.admin, transactionId, false);
  });
});
