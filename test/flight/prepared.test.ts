// Prepared statements: schemas at creation, parameter binding with DoPut, execution.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { tableFromArrays, type Table } from 'apache-arrow';
import { FlightSql, decodeSchema, packAny, type TestFlightClient } from '../support/flight-client.js';
import { metricValue } from '../support/metric-value.js';
import { useOrrery } from '../support/orrery-process.js';

/** The server's count of statements planned (orrery_statement_plans_total). */
const plans = (httpPort: number): Promise<number> => metricValue(httpPort, 'orrery_statement_plans_total');

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

  // The JDBC driver prepares every statement it runs (CreatePreparedStatement, GetFlightInfo, DoGet): the same
  // text prepared again is answered as before, and only its GetFlightInfo plans it (#10).
  it('the same text prepared again is not planned again; its run is planned once', async () => {
    const sql = 'SELECT id, name FROM people WHERE id < 3 ORDER BY id';
    const runPrepared = async (handle: Uint8Array): Promise<Table> => {
      const info = await c.getFlightInfo(packAny('CommandPreparedStatementQuery', { preparedStatementHandle: handle }));
      return (await c.doGet(info.endpoints[0].ticket)).table;
    };
    const start = await plans(fixture.orrery.httpPort);
    const first = await c.prepare(sql);
    const second = await c.prepare(sql);
    assert.equal(await plans(fixture.orrery.httpPort), start + 1);
    assert.deepEqual(second, first);
    // The first one's plan, kept for its GetFlightInfo, runs it.
    assert.deepEqual([...(await runPrepared(first.handle)).getChild('name')!], ['ada', 'bob']);
    assert.equal(await plans(fixture.orrery.httpPort), start + 1);
    // Answered without a plan, its GetFlightInfo plans it.
    const third = await c.prepare(sql);
    assert.deepEqual([...(await runPrepared(third.handle)).getChild('name')!], ['ada', 'bob']);
    assert.equal(await plans(fixture.orrery.httpPort), start + 2);
  });

  it("another key's preparing of the same text is planned, and refused, as its own", async () => {
    const sql = "SELECT current_setting('threads') AS threads";
    assert.equal(decodeSchema((await c.prepare(sql)).datasetSchema).fields.length, 1);
    const start = await plans(fixture.orrery.httpPort);
    await assert.rejects(fixture.reader.prepare(sql), /current_setting/);
    assert.equal(await plans(fixture.orrery.httpPort), start + 1);
  });

  it('after a change of the catalog, the text is described again', async () => {
    const sql = 'SELECT * FROM people ORDER BY id';
    const before = await c.prepare(sql);
    await c.updateCount('ALTER TABLE people ADD COLUMN age INTEGER');
    try {
      const after = await c.prepare(sql);
      assert.deepEqual(
        [before, after].map((p) => decodeSchema(p.datasetSchema).fields.map((f) => f.name)),
        [
          ['id', 'name'],
          ['id', 'name', 'age'],
        ],
      );
    } finally {
      await c.updateCount('ALTER TABLE people DROP COLUMN age');
    }
  });

  // A remembered answer is checked against the deny rules as a planned one is (s21-review2's G7).
  const denied = /query denied by rule \d+: closed/;
  const denyReaderPeople = "user_id = ''reader'' AND list_contains(tables, ''people'')";
  const removeRule = async (added: Table): Promise<void> => {
    const rule = /^added rule (\d+)$/.exec(String(added.getChild('msg')!.get(0)))![1];
    await c.query(`SELECT msg FROM remove_query_denial(${rule})`);
  };

  it('a deny rule added after a text was prepared refuses its preparing again', async () => {
    const sql = 'SELECT name FROM people WHERE id = 1';
    assert.equal(decodeSchema((await fixture.reader.prepare(sql)).datasetSchema).fields.length, 1);
    const added = await c.query(`SELECT msg FROM deny_queries('${denyReaderPeople}', 'closed')`);
    try {
      await assert.rejects(fixture.reader.prepare(sql), denied);
    } finally {
      await removeRule(added);
    }
    assert.equal(decodeSchema((await fixture.reader.prepare(sql)).datasetSchema).fields.length, 1);
  });

  it("another server's new deny rule refuses the preparing again of a text remembered here", async () => {
    const sql = 'SELECT name FROM people WHERE id = 2';
    assert.equal(decodeSchema((await fixture.reader.prepare(sql)).datasetSchema).fields.length, 1);
    // As another server's deny_queries stores it: this one reads it when it next rereads the rules.
    const { rows } = await fixture.orrery.metadata.query<{ rule_id: string }>(
      `INSERT INTO query_deny_list (match_expr, reason, created_by) VALUES ($1, 'closed', 'admin') RETURNING rule_id`,
      [denyReaderPeople.replaceAll("''", "'")],
    );
    try {
      // Once a text never prepared is refused, the rule is read here (a loaded machine rereads them late).
      for (let n = 0, deadline = Date.now() + 120_000; ; n++) {
        const refused = await fixture.reader.prepare(`SELECT id FROM people WHERE id > ${n}`).then(
          () => false,
          (error: Error) => denied.test(error.message),
        );
        if (refused) break;
        assert.ok(Date.now() < deadline, 'the rule another server stored was not read here within 120 s');
        await sleep(50);
      }
      await assert.rejects(fixture.reader.prepare(sql), denied);
    } finally {
      await c.query(`SELECT msg FROM remove_query_denial(${rows[0].rule_id})`);
    }
  });

  it('ClosePreparedStatement lets go of the plan kept for its GetFlightInfo', async () => {
    const sql = 'SELECT name FROM people WHERE id = 3';
    const { handle } = await c.prepare(sql);
    await c.doAction(
      'ClosePreparedStatement',
      packAny('ActionClosePreparedStatementRequest', { preparedStatementHandle: handle }),
    );
    const start = await plans(fixture.orrery.httpPort);
    // Run all the same (handles carry their statement), it is planned again: nothing was kept for it.
    const info = await c.getFlightInfo(packAny('CommandPreparedStatementQuery', { preparedStatementHandle: handle }));
    assert.deepEqual([...(await c.doGet(info.endpoints[0].ticket)).table.getChild('name')!], ['cy']);
    assert.equal(await plans(fixture.orrery.httpPort), start + 1);
  });
});
