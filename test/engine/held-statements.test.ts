// Issue 10: a statement GetFlightInfo prepared is kept, with its connection, for the DoGet that
// follows (describeAndHold, then query with `held`), so the DoGet neither leases a connection nor
// prepares again. What it answers is what a statement prepared at run time answers.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DuckDBConnection } from '@duckdb/node-api';
import { DuckDBEngine } from '../../src/engine/index.js';

async function rows(batches: AsyncIterable<{ toArray(): unknown[] }>): Promise<string[]> {
  const out: string[] = [];
  for await (const batch of batches) for (const row of batch.toArray()) out.push(JSON.stringify(row));
  return out;
}

describe('held statements (issue 10)', () => {
  it('runs the statement it holds once, on the connection with its setup, seeing data as of the run', async () => {
    await using engine = await DuckDBEngine.create({ threads: 1 });
    await engine.execute('CREATE TABLE t (x INTEGER)');
    await engine.execute('INSERT INTO t VALUES (1)');
    const setup = ['CREATE OR REPLACE TEMP VIEW doubled AS SELECT x * 2 AS y FROM t'];
    const sql = 'SELECT y FROM doubled ORDER BY y';
    const { description, held } = await engine.describeAndHold(sql, { setup });
    assert.ok(held, 'a SELECT is held');
    assert.deepEqual(
      description.schema.fields.map((f) => f.name),
      ['y'],
    );
    // Prepared before this insert, run after it: the run reads the table as it is then.
    await engine.execute('INSERT INTO t VALUES (2)');
    const first = await engine.query(sql, { setup, held }, description);
    assert.deepEqual(await rows(first.batches), ['{"y":2}', '{"y":4}']);
    assert.equal(held.take(), undefined, 'a held statement serves one run');
    // Run again with the spent handle: prepared anew, the same answer.
    const again = await engine.query(sql, { setup, held }, description);
    assert.deepEqual(await rows(again.batches), ['{"y":2}', '{"y":4}']);
  });

  it('a closed held statement is not run; the run prepares the statement itself', async () => {
    await using engine = await DuckDBEngine.create({ threads: 1 });
    const sql = 'SELECT 42 AS answer';
    const { description, held } = await engine.describeAndHold(sql);
    held!.close();
    held!.close();
    assert.equal(held!.take(), undefined);
    const result = await engine.query(sql, { held }, description);
    assert.deepEqual(await rows(result.batches), ['{"answer":42}']);
  });

  it('holds only SELECTs without parameters', async () => {
    await using engine = await DuckDBEngine.create({ threads: 1 });
    assert.equal((await engine.describeAndHold('CREATE TABLE u (x INTEGER)')).held, undefined);
    await assert.rejects(engine.query('SELECT * FROM u'), /u/);
  });

  it('refuses a statement that does not prepare, holding nothing', async () => {
    await using engine = await DuckDBEngine.create({ threads: 1 });
    await assert.rejects(engine.describeAndHold('SELECT * FROM missing_table'), { code: 'QUERY_INVALID' });
    const { held } = await engine.describeAndHold('SELECT 1');
    held!.close();
  });

  it('closing the engine lets held statements go instead of waiting for them', async () => {
    const engine = await DuckDBEngine.create({ threads: 1 });
    const held = await Promise.all(
      Array.from({ length: 3 }, () => engine.describeAndHold('SELECT * FROM range(10)').then((d) => d.held!)),
    );
    // A grace period longer than the test runner's timeout: close() returns only if nothing waits for it.
    await engine.close(3_600_000);
    for (const h of held) assert.equal(h.take(), undefined);
    await assert.rejects(engine.describeAndHold('SELECT 1'), { code: 'ENGINE_CLOSED' });
  });
  it('a held statement whose table changed type before its run fails clearly instead of sending other columns', async () => {
    // DuckDB plans the statement again at its run; the batches must not then carry columns of
    // another type under the schema GetFlightInfo announced (they did: a VARCHAR as Int32).
    await using engine = await DuckDBEngine.create({ threads: 1 });
    await engine.execute('CREATE TABLE t (x INTEGER)');
    await engine.execute('INSERT INTO t VALUES (1), (2)');
    const sql = 'SELECT x FROM t ORDER BY x';
    const { description, held } = await engine.describeAndHold(sql);
    await engine.execute('DROP TABLE t');
    await engine.execute('CREATE TABLE t (x VARCHAR)');
    await engine.execute("INSERT INTO t VALUES ('a')");
    const run = await engine.query(sql, { held }, description);
    await assert.rejects(rows(run.batches), {
      code: 'QUERY_INVALID',
      message: "Invalid Input Error: the statement's columns changed between its planning and its run; run it again",
    });
    // Planned anew, the statement answers with the table as it is now.
    const fresh = await engine.query(sql);
    assert.deepEqual(await rows(fresh.batches), ['{"x":"a"}']);
  });

  it("a read transaction's stream ends before its COMMIT, whose connection goes to the next statement of its setup", async () => {
    // describeAndHold's transaction (a statement reading the lake) commits after the run: the client
    // is not made to wait for DuckLake's COMMIT, and a statement with the same setup that comes while it
    // runs waits for that connection rather than opening and setting up another.
    await using engine = await DuckDBEngine.create({ threads: 1 });
    await engine.execute('CREATE TABLE t (x INTEGER)');
    await engine.execute('INSERT INTO t VALUES (1), (2)');
    await engine.execute('CREATE TABLE setups (n INTEGER)');
    const setup = ['INSERT INTO setups VALUES (1)', 'CREATE OR REPLACE TEMP VIEW doubled AS SELECT x * 2 AS y FROM t'];
    const sql = 'SELECT y FROM doubled ORDER BY y';
    // COMMITs wait for `open` (counted as they start), so what happens while one runs can be seen.
    const original = Object.getOwnPropertyDescriptor(DuckDBConnection.prototype, 'run')!.value as (
      this: DuckDBConnection,
      ...args: unknown[]
    ) => Promise<unknown>;
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let commitStarted!: () => void;
    const started = new Promise<void>((resolve) => (commitStarted = resolve));
    let commits = 0;
    Object.defineProperty(DuckDBConnection.prototype, 'run', {
      configurable: true,
      writable: true,
      value: async function (this: DuckDBConnection, ...args: unknown[]) {
        if (args[0] === 'COMMIT') {
          commits++;
          commitStarted();
          await gate;
        }
        return original.apply(this, args);
      },
    });
    /** Whether `promise` has settled once everything already queued has run. */
    const settled = (promise: Promise<unknown>): Promise<boolean> =>
      Promise.race([promise.then(() => true), new Promise<boolean>((resolve) => setImmediate(() => resolve(false)))]);
    try {
      const first = await engine.describeAndHold(sql, { setup }, true);
      const run = await engine.query(sql, { setup, held: first.held }, first.description);
      const read = rows(run.batches);
      await started;
      assert.equal(await settled(read), true, 'the stream has ended while its COMMIT runs');
      assert.deepEqual(await read, ['{"y":2}', '{"y":4}']);
      const next = engine.describeAndHold(sql, { setup }, true);
      assert.equal(await settled(next), false, 'the next statement of the setup waits for the committing connection');
      open();
      const second = await next;
      const again = await engine.query(sql, { setup, held: second.held }, second.description);
      assert.deepEqual(await rows(again.batches), ['{"y":2}', '{"y":4}']);
      assert.equal(commits, 2);
    } finally {
      open();
      Object.defineProperty(DuckDBConnection.prototype, 'run', { configurable: true, writable: true, value: original });
    }
    assert.deepEqual(await engine.values('SELECT count(*)::INTEGER FROM setups'), [[1]], 'one connection set up');
  });

  for (const nativeExport of [true, false])
    it(`a statement's fill runs with its held run, not when it is described and held (${nativeExport ? 'native exporter' : 'JavaScript'})`, async () => {
      // RunOptions.fill: which rows of a rollup's kept tails the statement reads. A prepare reads no rows: the fill
      // waits for the run (the native exporter runs both in one trip to DuckDB's thread), and a failed fill runs nothing.
      await using engine = await DuckDBEngine.create({ threads: 1, nativeExport });
      await engine.execute('CREATE TABLE fills (n INTEGER)');
      await engine.execute('INSERT INTO fills VALUES (0)');
      const setup = ['CREATE TEMP TABLE IF NOT EXISTS chosen AS SELECT 1 AS v'];
      const sql = 'SELECT v FROM chosen';
      const fill = 'UPDATE chosen SET v = (SELECT n FROM fills) + 10; UPDATE fills SET n = n + 1';
      const { description, held } = await engine.describeAndHold(sql, { setup, fill }, false, true);
      assert.deepEqual(await engine.values('SELECT n FROM fills'), [[0]], 'not filled when held');
      const run = await engine.query(sql, { setup, fill, held }, description);
      assert.deepEqual(await rows(run.batches), ['{"v":10}']);
      assert.deepEqual(await engine.values('SELECT n FROM fills'), [[1]]);
      // The statement kept on the connection: the next read is described without DuckDB, filled at its run.
      const next = await engine.describeAndHold(sql, { setup, fill }, false, true);
      assert.deepEqual(await engine.values('SELECT n FROM fills'), [[1]]);
      assert.deepEqual(
        await rows((await engine.query(sql, { setup, fill, held: next.held }, next.description)).batches),
        ['{"v":11}'],
      );
      const failing = "UPDATE chosen SET v = error('no such row')";
      const third = await engine.describeAndHold(sql, { setup, fill: failing }, false, true);
      await assert.rejects(
        async () =>
          rows((await engine.query(sql, { setup, fill: failing, held: third.held }, third.description)).batches),
        /no such row/,
      );
    });
});
