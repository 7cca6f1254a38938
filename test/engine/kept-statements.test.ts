// Issue 10: a SELECT's prepared statement, once run to its end, stays on its connection for the next
// GetFlightInfo of the same text with the same setup (describeAndHold with `keep`), so a dashboard's
// repeated statement is described without preparing it again. What it answers is what a statement
// prepared anew answers: data as of the run, and after anything that may change the catalog (DDL, a
// transaction's end) the statement is prepared again.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DuckDBConnection, DuckDBPreparedStatement } from '@duckdb/node-api';
import { DuckDBEngine } from '../../src/engine/index.js';
import { compatibilityMacros } from '../../src/views/index.js';

async function rows(batches: AsyncIterable<{ toArray(): unknown[] }>): Promise<string[]> {
  const out: string[] = [];
  for await (const batch of batches) for (const row of batch.toArray()) out.push(JSON.stringify(row));
  return out;
}

/** How many times the bindings' own `method` of `proto` was called while `work` ran (counted as it passes). */
async function calls<T, P extends object>(
  proto: P,
  method: keyof P & string,
  work: () => Promise<T>,
): Promise<{ result: T; count: number }> {
  const original = Object.getOwnPropertyDescriptor(proto, method)!.value as (...args: unknown[]) => unknown;
  let count = 0;
  Object.defineProperty(proto, method, {
    configurable: true,
    writable: true,
    value: function (this: unknown, ...args: unknown[]) {
      count++;
      return original.apply(this, args);
    },
  });
  try {
    return { result: await work(), count };
  } finally {
    Object.defineProperty(proto, method, { configurable: true, writable: true, value: original });
  }
}

/** How many statements DuckDB prepared while `work` ran. */
async function prepares<T>(work: () => Promise<T>): Promise<{ result: T; prepared: number }> {
  const { result, count } = await calls(DuckDBConnection.prototype, 'prepare', work);
  return { result, prepared: count };
}

/** How many times the prepared statements' column types were read from DuckDB while `work` ran. */
const typeReads = <T>(work: () => Promise<T>) => calls(DuckDBPreparedStatement.prototype, 'columnType', work);

/** GetFlightInfo then DoGet, as the statement service runs them: describe and hold, then run the held statement. */
async function run(engine: DuckDBEngine, sql: string, setup: string[] = [], keep = true, clock?: string) {
  const { result: described, prepared } = await prepares(() =>
    engine.describeAndHold(sql, { setup, clock }, false, keep),
  );
  const { description, held } = described;
  const result = await engine.query(sql, { setup, held, clock }, description);
  return { types: description.schema.fields.map((f) => String(f.type)), rows: await rows(result.batches), prepared };
}

describe('kept statements (issue 10)', () => {
  it('a SELECT run to its end is described again without preparing, and reads the data as of each run', async () => {
    await using engine = await DuckDBEngine.create({ threads: 1 });
    await engine.execute('CREATE TABLE t (x INTEGER)');
    await engine.execute('INSERT INTO t VALUES (1)');
    const setup = ['CREATE OR REPLACE TEMP VIEW doubled AS SELECT x * 2 AS y FROM t'];
    const sql = 'SELECT y FROM doubled ORDER BY y';
    const first = await run(engine, sql, setup);
    assert.deepEqual([first.rows, first.prepared], [['{"y":2}'], 1]);
    await engine.execute('INSERT INTO t VALUES (2)');
    const second = await run(engine, sql, setup);
    assert.deepEqual([second.rows, second.prepared], [['{"y":2}', '{"y":4}'], 0], 'kept, and the new row is read');
    const third = await run(engine, sql, setup);
    assert.deepEqual([third.rows, third.prepared], [['{"y":2}', '{"y":4}'], 0]);
    // The clock is read by each run, not fixed when the kept statement was prepared.
    const clock = 'SELECT CAST(epoch_us(now()) AS VARCHAR) AS us';
    const before = await run(engine, clock);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const later = await run(engine, clock);
    assert.equal(later.prepared, 0);
    const us = (r: { rows: string[] }) => BigInt((JSON.parse(r.rows[0]) as { us: string }).us);
    assert.ok(us(later) > us(before), `${us(later)} after ${us(before)}`);
  });

  it("a kept statement reads each run's fixed clock, and a run without one DuckDB's clock", async () => {
    await using engine = await DuckDBEngine.create({ threads: 1, startupSql: compatibilityMacros });
    // No clock read but Orrery's: they alone make DuckDB bind the kept statement again at each run.
    const sql = `SELECT CAST(now() AS VARCHAR) AS now, current_date = CAST(current_timestamp AS DATE) AS date,
                        now() > TIMESTAMP_NS '2020-01-01' AS live`;
    const setup = ['CREATE OR REPLACE TEMP VIEW w AS SELECT 1 AS one'];
    const at = (clock?: string) => run(engine, sql, setup, true, clock);
    const row = (r: { rows: string[] }) => JSON.parse(r.rows[0]) as { now: string; date: boolean; live: boolean };
    const first = await at('2001-02-03 04:05:06.007');
    assert.deepEqual([row(first), first.prepared], [{ now: '2001-02-03 04:05:06.007', date: true, live: false }, 1]);
    const second = await at('2002-03-04 05:06:07.008');
    assert.deepEqual([row(second), second.prepared], [{ now: '2002-03-04 05:06:07.008', date: true, live: false }, 0]);
    // The connection kept the statement and the variable: a run without a clock unsets it.
    const third = await at();
    assert.deepEqual([row(third).live, third.prepared], [true, 0]);
    // Not a fixed clock's text: refused, never part of a statement.
    await assert.rejects(at("2001-02-03 04:05:06' AS x"), /not a fixed clock/);
  });

  it("a kept statement's description and column types are not read from DuckDB again", async () => {
    await using engine = await DuckDBEngine.create({ threads: 1 });
    await engine.execute('CREATE TABLE t (x INTEGER, s VARCHAR)');
    await engine.execute("INSERT INTO t VALUES (1, 'a')");
    const sql = 'SELECT x, s FROM t ORDER BY x';
    const first = await typeReads(() => run(engine, sql));
    assert.ok(first.count > 0, 'read when the statement is prepared');
    for (let i = 0; i < 2; i++) {
      const again = await typeReads(() => run(engine, sql));
      assert.deepEqual([again.result.prepared, again.count], [0, 0], 'kept, and described from what was kept');
      assert.deepEqual(again.result.types, first.result.types);
      assert.deepEqual(again.result.rows, ['{"x":1,"s":"a"}']);
    }
  });

  it('a table changed by DDL is read as it is now: the kept statement is let go', async () => {
    await using engine = await DuckDBEngine.create({ threads: 1 });
    await engine.execute('CREATE TABLE t (x INTEGER)');
    await engine.execute('INSERT INTO t VALUES (1)');
    // The view's connection (setup) is not the one the DDL runs on, which is closed after it.
    const setup = ['CREATE OR REPLACE TEMP VIEW w AS SELECT 1 AS one'];
    const sql = 'SELECT x FROM t, w';
    assert.deepEqual((await run(engine, sql, setup)).rows, ['{"x":1}']);
    await engine.execute('CREATE OR REPLACE TABLE t (x VARCHAR)');
    await engine.execute("INSERT INTO t VALUES ('a')");
    // Kept across the DDL, the statement would be described as INTEGER and its run refused.
    const after = await run(engine, sql, setup);
    assert.deepEqual(after, { types: ['Utf8'], rows: ['{"x":"a"}'], prepared: 1 });
  });

  it('a database of its own attached, filled or detached lets go of no statement kept, not even those reading another such database', async () => {
    await using engine = await DuckDBEngine.create({ threads: 1 });
    await engine.execute('CREATE TABLE t (x INTEGER)');
    await engine.execute('INSERT INTO t VALUES (1)');
    await engine.execute('CREATE TABLE kept_1.main.kept_1 AS SELECT 2 AS x', {
      setup: ["ATTACH ':memory:' AS kept_1"],
      ownTable: true,
    });
    const plain = { sql: 'SELECT x FROM t', setup: ['CREATE OR REPLACE TEMP VIEW w AS SELECT 1 AS one'] };
    const kept = {
      sql: 'SELECT x FROM k',
      setup: ['CREATE OR REPLACE TEMP VIEW k AS SELECT * FROM kept_1.main.kept_1'],
    };
    for (const { sql, setup } of [plain, kept]) {
      assert.equal((await run(engine, sql, setup)).prepared, 1);
      assert.equal((await run(engine, sql, setup)).prepared, 0);
    }
    // Another such database: DuckDB binds a statement again only after a database it read changed.
    for (const ddl of [
      { sql: 'CREATE TABLE kept_2.main.kept_2 AS SELECT 3 AS x', setup: ["ATTACH ':memory:' AS kept_2"] },
      { sql: 'DETACH DATABASE kept_2', setup: [] },
    ]) {
      await engine.execute(ddl.sql, { setup: ddl.setup, ownTable: true });
      assert.deepEqual(await run(engine, plain.sql, plain.setup), { types: ['Int32'], rows: ['{"x":1}'], prepared: 0 });
      assert.deepEqual(await run(engine, kept.sql, kept.setup), { types: ['Int32'], rows: ['{"x":2}'], prepared: 0 });
    }
  });

  it("a transaction's DDL, once committed, is read as it is then", async () => {
    await using engine = await DuckDBEngine.create({ threads: 1 });
    await engine.execute('CREATE TABLE t (x INTEGER)');
    await engine.execute('INSERT INTO t VALUES (1)');
    const sql = 'SELECT * FROM t';
    assert.deepEqual((await run(engine, sql)).rows, ['{"x":1}']);
    const session = await engine.openSession();
    try {
      await engine.execute('BEGIN TRANSACTION', { session });
      await engine.execute('ALTER TABLE t ADD COLUMN y VARCHAR', { session });
      await engine.execute("UPDATE t SET y = 'b'", { session });
      await engine.execute('COMMIT', { session });
    } finally {
      session.close();
    }
    const after = await run(engine, sql);
    assert.deepEqual([after.rows, after.prepared], [['{"x":1,"y":"b"}'], 1]);
  });

  it('another setup, a statement not to keep, or a run stopped early: prepared anew', async () => {
    await using engine = await DuckDBEngine.create({ threads: 1 });
    const view = (n: number) => [`CREATE OR REPLACE TEMP VIEW v AS SELECT ${n} AS n`];
    const sql = 'SELECT n FROM v';
    assert.deepEqual((await run(engine, sql, view(1))).rows, ['{"n":1}']);
    // The pool has an idle connection with view(1) and the statement kept on it; view(2) is another setup.
    const other = await run(engine, sql, view(2));
    assert.deepEqual([other.rows, other.prepared], [['{"n":2}'], 1]);
    assert.equal((await run(engine, sql, view(2))).prepared, 0);
    assert.equal((await run(engine, 'SELECT 7 AS seven', [], false)).prepared, 1);
    assert.equal((await run(engine, 'SELECT 7 AS seven', [], false)).prepared, 1, 'not kept');
    // A result left after its first batch: its statement is not kept.
    const many = 'SELECT * FROM range(300000)';
    const { description, held } = await engine.describeAndHold(many, {}, false, true);
    for await (const batch of (await engine.query(many, { held }, description)).batches) {
      assert.ok(batch.numRows > 0);
      break;
    }
    assert.equal((await prepares(() => engine.describeAndHold(many, {}, false, true))).prepared, 1);
  });
});
