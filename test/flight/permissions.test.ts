// Who may run what, and what the server refuses as unsupported.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { packAny, type TestFlightClient } from '../support/flight-client.js';
import { useOrrery } from '../support/orrery-process.js';

describe('permissions and unsupported features', () => {
  const fixture = useOrrery();
  let admin: TestFlightClient;
  let reader: TestFlightClient;
  before(async () => {
    ({ admin, reader } = fixture);
    await admin.updateCount('CREATE TABLE shared AS SELECT 1 AS x');
  });

  it('a reader queries tables an admin created', async () => {
    assert.deepEqual([...(await reader.query('SELECT x FROM shared')).getChild('x')!], [1]);
  });

  it('a reader may not change anything, through any statement path', async () => {
    const denied = { code: 7, details: /permission denied: key 'reader' may only run SELECT statements \(this is (CREATE|INSERT|DROP)\)/ };
    await assert.rejects(reader.updateCount('CREATE TABLE t2 (a INT)'), denied);
    await assert.rejects(reader.query('INSERT INTO shared VALUES (2)'), denied);
    await assert.rejects(reader.prepare('DROP TABLE shared'), denied);
    assert.deepEqual([...(await reader.query('SELECT count(*) AS n FROM shared')).getChild('n')!], [1n]);
  });

  it('nobody reads files or changes settings: DuckDB runs sandboxed', async () => {
    await assert.rejects(admin.query("SELECT * FROM read_csv('/etc/passwd')"), { code: 3, details: /Permission Error/ });
    await assert.rejects(admin.updateCount("COPY shared TO '/tmp/orrery-escape.csv'"), { code: 3, details: /Permission Error/ });
    await assert.rejects(admin.updateCount('SET threads = 1'), { code: 3, details: /configuration has been locked/ });
    await assert.rejects(admin.updateCount("ATTACH '/tmp/orrery-escape.db' AS x"), { code: 3, details: /Permission Error/ });
    await assert.rejects(admin.updateCount('INSTALL httpfs'), { code: 3 });
  });

  it('transactions, Substrait and ingest are UNIMPLEMENTED, not UNKNOWN', async () => {
    await assert.rejects(admin.doAction('BeginTransaction', packAny('ActionBeginTransactionRequest', {})), { code: 12 });
    await assert.rejects(
      admin.getFlightInfo(packAny('CommandStatementSubstraitPlan', { plan: { plan: new Uint8Array([1]), version: '1' } })),
      { code: 12 },
    );
    await assert.rejects(admin.doPut(packAny('CommandStatementIngest', { table: 'x' })), { code: 12 });
    await assert.rejects(admin.doAction('NoSuchAction', new Uint8Array(0)), { code: 12, details: /action 'NoSuchAction'/ });
  });
});
