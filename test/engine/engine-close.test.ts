// Issue 8 item 7: closing the engine interrupts the statements running, waits for them to let go of
// DuckDB, and from then on refuses work with ENGINE_CLOSED; `await using` closes it too.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DuckDBEngine } from '../../src/engine/index.js';

const closed = {
  name: 'OrreryError',
  code: 'ENGINE_CLOSED',
  status: 'UNAVAILABLE',
  message: 'the query engine has been shut down',
};

describe('engine close (issue 8)', () => {
  for (const nativeExport of [true, false]) {
    it(`interrupts a streaming query, which fails with ENGINE_CLOSED, then refuses work (native export ${nativeExport})`, async () => {
      const engine = await DuckDBEngine.create({ threads: 1, nativeExport });
      // Ten billion rows: it runs until interrupted.
      const { batches } = await engine.query('SELECT range, hash(range) AS h FROM range(10000000000)');
      const iterator = batches[Symbol.asyncIterator]();
      assert.ok((await iterator.next()).value.numRows > 0);
      const closing = engine.close();
      assert.equal(engine.close(), closing, 'close is idempotent');
      await assert.rejects(
        (async () => {
          for (;;) if ((await iterator.next()).done) return;
        })(),
        closed,
      );
      await closing;
      await assert.rejects(engine.query('SELECT 1'), closed);
      await assert.rejects(engine.execute('CREATE TABLE t (x INTEGER)'), closed);
    });
  }

  it('closes at the end of an `await using` block', async () => {
    let engine: DuckDBEngine;
    {
      await using scoped = await DuckDBEngine.create({ threads: 1 });
      engine = scoped;
      await engine.execute('CREATE TABLE t (x INTEGER)');
      assert.equal(await engine.execute('INSERT INTO t VALUES (1), (2)'), 2);
    }
    await assert.rejects(engine.query('SELECT 1'), closed);
  });
});
