// Issue 12, item 5: set_retention on series tables; the daemon deletes what is past it, as DELETEs.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { plainRows, refusal, useLakeOrrery, type TestKey } from '../lakehouse/lakehouse-fixtures.js';
import type { TestFlightClient } from '../support/flight-client.js';

const admin: TestKey = { name: 'admin', key: 'admin-key-retention-01', audiences: ['ops'] };
const reader: TestKey = { name: 'reader', key: 'reader-key-retention-01', audiences: ['public'] };

describe('series table retention (issue 12)', () => {
  const lake = useLakeOrrery({ keys: [admin, reader], role: 'all', ownLake: false });
  let asAdmin: TestFlightClient;
  let asReader: TestFlightClient;
  before(async () => {
    asAdmin = lake.client(admin);
    asReader = lake.client(reader);
  });

  it('an interval for a time column, a count for an integer one; the daemon deletes older rows', async () => {
    await asAdmin.updateCount('CREATE TABLE costs (ts TIMESTAMP, usd DOUBLE)');
    await asAdmin.updateCount(
      `INSERT INTO costs VALUES (now()::TIMESTAMP - INTERVAL 40 DAY, 1), (now()::TIMESTAMP - INTERVAL 1 DAY, 2)`,
    );
    await asAdmin.updateCount(`CREATE TABLE blocks_seen (height BIGINT, gas BIGINT) WITH (time_column = 'height')`);
    await asAdmin.updateCount('INSERT INTO blocks_seen SELECT range, range * 10 FROM range(1, 101)');
    assert.deepEqual(await plainRows(asAdmin, `SELECT msg FROM set_retention('costs', '30 days')`), [
      { msg: 'costs keeps 30 days' },
    ]);
    assert.deepEqual(await plainRows(asAdmin, `SELECT msg FROM set_retention('blocks_seen', 10)`), [
      { msg: 'blocks_seen keeps the last 10 of height' },
    ]);
    await lake.orrery.daemon!.housekeeping();
    assert.deepEqual(await plainRows(asReader, 'SELECT usd FROM costs'), [{ usd: 2 }]);
    assert.deepEqual(
      await plainRows(asReader, 'SELECT min(height) AS lo, max(height) AS hi, count(*) AS n FROM blocks_seen'),
      [{ lo: 90, hi: 100, n: 11 }],
    );
    assert.ok(
      lake.orrery.lines.some((l) => l.includes('retention: deleted 1 row(s) of series table costs')),
      lake.orrery.lines.join('\n'),
    );
    assert.deepEqual(await plainRows(asAdmin, `SELECT msg FROM set_retention('costs', 'forever')`), [
      { msg: 'costs keeps every row' },
    ]);
  });

  it('refuses a key that is not an admin, a missing table and a keep of the wrong kind', async () => {
    assert.equal((await refusal(asReader.query(`SELECT * FROM set_retention('costs', '1 day')`))).code, 7);
    assert.match(
      (await refusal(asAdmin.query(`SELECT * FROM set_retention('nope', '1 day')`))).details,
      /series table 'nope' does not exist/,
    );
    assert.match(
      (await refusal(asAdmin.query(`SELECT * FROM set_retention('costs', 10)`))).details,
      /give an interval/,
    );
    assert.match(
      (await refusal(asAdmin.query(`SELECT * FROM set_retention('costs', 'soon')`))).details,
      /'soon' is not a positive interval/,
    );
    assert.match(
      (await refusal(asAdmin.query(`SELECT * FROM set_retention('blocks_seen', '1 day')`))).details,
      /give a positive count/,
    );
  });

  it("a table whose retention fails leaves the others' to go on, and the run fails with its error", async () => {
    // Named to come first: tables are gone over by name.
    for (const name of ['aa_lost', 'zz_kept']) {
      await asAdmin.updateCount(`CREATE TABLE ${name} (ts TIMESTAMP, usd DOUBLE)`);
      await asAdmin.updateCount(
        `INSERT INTO ${name} SELECT now()::TIMESTAMP - INTERVAL (40 - (i % 2) * 39) DAY, i FROM range(2000) t(i)`,
      );
      await asAdmin.query(`SELECT msg FROM set_retention('${name}', '30 days')`);
    }
    // aa_lost's data files deleted outside Orrery: its DELETE cannot read them.
    const files = (await lake.orrery.store.list('tables/')).filter((key) => key.includes('aa_lost'));
    assert.ok(files.length > 0, 'aa_lost has data files');
    for (const key of files) await lake.orrery.store.delete(key);
    await assert.rejects(lake.orrery.daemon!.housekeeping(), /aa_lost/);
    assert.deepEqual(await plainRows(asAdmin, 'SELECT count(*)::INT AS n, min(usd % 2)::INT AS odd FROM zz_kept'), [
      { n: 1000, odd: 1 },
    ]);
  });
});
