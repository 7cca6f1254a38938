// Issue 9, item 8: parameter rows bound to one execution are capped (ORRERY_MAX_BIND_ROWS) with a
// clear INVALID_ARGUMENT, and the rows under the cap run on one connection and one prepared
// statement, their results in row order.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { tableFromArrays } from 'apache-arrow';
import { FlightSql, packAny, type TestFlightClient } from '../support/flight-client.js';
import { useOrrery } from '../support/orrery-process.js';
import { failure } from '../support/statement-calls.js';

const limit = 50;
const tooMany = `${limit + 1} parameter rows bound to one statement; at most ${limit} (ORRERY_MAX_BIND_ROWS): bind them in smaller batches`;

const ids = (n: number): BigInt64Array => BigInt64Array.from({ length: n }, (_, i) => BigInt(i));

describe(`issue 9: parameter rows per execution (ORRERY_MAX_BIND_ROWS=${limit})`, () => {
  const fixture = useOrrery({ ORRERY_MAX_BIND_ROWS: String(limit) });
  let c: TestFlightClient;
  before(async () => {
    c = fixture.admin;
    await c.updateCount('CREATE TABLE bound (id BIGINT)');
  });

  /** Binds the ids to a prepared query and runs it: GetFlightInfo, then DoGet. */
  async function runQuery(sql: string, n: number, headers?: Record<string, string>) {
    const prepared = await c.prepare(sql);
    const [meta] = await c.doPut(
      packAny('CommandPreparedStatementQuery', { preparedStatementHandle: prepared.handle }),
      tableFromArrays({ id: ids(n) }),
    );
    const { preparedStatementHandle } = FlightSql.DoPutPreparedStatementResult.decode(meta) as unknown as {
      preparedStatementHandle: Uint8Array;
    };
    const info = await c.getFlightInfo(packAny('CommandPreparedStatementQuery', { preparedStatementHandle }), headers);
    return (await c.doGet(info.endpoints[0].ticket, headers)).table;
  }

  async function runUpdate(sql: string, n: number): Promise<void> {
    const prepared = await c.prepare(sql);
    await c.doPut(
      packAny('CommandPreparedStatementUpdate', { preparedStatementHandle: prepared.handle }),
      tableFromArrays({ id: ids(n) }),
    );
  }

  const count = async (): Promise<number> =>
    Number((await c.query('SELECT count(*) AS n FROM bound')).getChild('n')?.get(0));

  it('a query with as many rows as allowed answers each row in turn', async () => {
    const table = await runQuery('SELECT ? * 10 AS tens', limit);
    assert.deepEqual(
      [...table.getChild('tens')!].map(Number),
      Array.from({ length: limit }, (_, i) => i * 10),
    );
  });

  it('the limit header counts rows across parameter rows', async () => {
    const table = await runQuery('SELECT ? AS id FROM range(3)', 10, { limit: '7' });
    assert.deepEqual([...table.getChild('id')!].map(Number), [0, 0, 0, 1, 1, 1, 2]);
  });

  it('a query with one row more is refused with INVALID_ARGUMENT', async () => {
    const error = await failure(runQuery('SELECT ? AS id', limit + 1));
    assert.equal(error.status, 'INVALID_ARGUMENT');
    assert.equal(error.details, tooMany);
  });

  it('an update with as many rows as allowed inserts them all; one more inserts nothing', async () => {
    await runUpdate('INSERT INTO bound VALUES (?)', limit);
    assert.equal(await count(), limit);
    const error = await failure(runUpdate('INSERT INTO bound VALUES (?)', limit + 1));
    assert.equal(error.status, 'INVALID_ARGUMENT');
    assert.equal(error.details, tooMany);
    assert.equal(await count(), limit);
  });
});
