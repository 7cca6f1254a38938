// Prepared statements: schemas at creation, parameter binding with DoPut, execution.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { tableFromArrays } from 'apache-arrow';
import { FlightSql, decodeSchema, packAny, type TestFlightClient } from '../support/flight-client.js';
import { useOrrery } from '../support/orrery-process.js';

describe('prepared statements', () => {
  const fixture = useOrrery();
  let c: TestFlightClient;
  before(async () => {
    c = fixture.admin;
    await c.updateCount(
      "CREATE TABLE people AS SELECT * FROM (VALUES (1::BIGINT, 'ada'), (2, 'bob'), (3, 'cy')) t(id, name)",
    );
  });

  it('a query: dataset schema, one parameter field per ?, is_update false', async () => {
    const prepared = await c.prepare('SELECT name FROM people WHERE id = ? OR name = ?');
    assert.equal(prepared.isUpdate, false);
    assert.deepEqual(
      decodeSchema(prepared.datasetSchema).fields.map((f) => `${f.name}:${f.type}`),
      ['name:Utf8'],
    );
    assert.deepEqual(
      decodeSchema(prepared.parameterSchema).fields.map((f) => String(f.type)),
      ['Int64', 'Utf8'],
    );
  });

  it('an update: is_update true and no dataset schema', async () => {
    const prepared = await c.prepare('INSERT INTO people VALUES (?, ?)');
    assert.equal(prepared.isUpdate, true);
    assert.equal(prepared.datasetSchema.byteLength, 0);
    assert.equal(decodeSchema(prepared.parameterSchema).fields.length, 2);
  });

  it('binds parameters with DoPut, gets a new handle, and executes it', async () => {
    const prepared = await c.prepare('SELECT name FROM people WHERE id = ?');
    const [meta] = await c.doPut(
      packAny('CommandPreparedStatementQuery', { preparedStatementHandle: prepared.handle }),
      tableFromArrays({ id: BigInt64Array.from([2n]) }),
    );
    const { preparedStatementHandle } = FlightSql.DoPutPreparedStatementResult.decode(meta) as unknown as {
      preparedStatementHandle: Uint8Array;
    };
    const info = await c.getFlightInfo(packAny('CommandPreparedStatementQuery', { preparedStatementHandle }));
    const { table } = await c.doGet(info.endpoints[0].ticket);
    assert.deepEqual([...table.getChild('name')!], ['bob']);
    assert.deepEqual(
      await c.doAction(
        'ClosePreparedStatement',
        packAny('ActionClosePreparedStatementRequest', { preparedStatementHandle }),
      ),
      [],
    );
  });

  it('executes a prepared update once per parameter row', async () => {
    const prepared = await c.prepare('INSERT INTO people VALUES (?, ?)');
    const [meta] = await c.doPut(
      packAny('CommandPreparedStatementUpdate', { preparedStatementHandle: prepared.handle }),
      tableFromArrays({ id: BigInt64Array.from([10n, 11n]), name: ['x', 'y'] }),
    );
    const result = FlightSql.DoPutUpdateResult.toObject(FlightSql.DoPutUpdateResult.decode(meta), { longs: Number });
    assert.equal(result.recordCount, 2);
    const table = await c.query('SELECT name FROM people WHERE id >= 10 ORDER BY id');
    assert.deepEqual([...table.getChild('name')!], ['x', 'y']);
  });

  it('runs a statement through the query path when DB-API clients send DML that way', async () => {
    const prepared = await c.prepare("INSERT INTO people VALUES (20, 'z')");
    const info = await c.getFlightInfo(
      packAny('CommandPreparedStatementQuery', { preparedStatementHandle: prepared.handle }),
    );
    const { table } = await c.doGet(info.endpoints[0].ticket);
    assert.deepEqual([...table.getChild('Count')!], [1n]);
  });
});
