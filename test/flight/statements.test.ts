// Statement execution through Flight SQL: types, framing, tickets, headers, errors.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { FlightClientError } from '../../src/client/index.js';
import { packAny, type TestFlightClient } from '../support/flight-client.js';
import { useOrrery } from '../support/orrery-process.js';

describe('statements', () => {
  const fixture = useOrrery();
  let c: TestFlightClient;
  before(() => {
    c = fixture.admin;
  });

  it('returns each DuckDB type as its Arrow type with exact values', async () => {
    const table = await c.query(
      "SELECT 42::BIGINT AS i, 2.5::DOUBLE AS d, 'héllo wörld, longer than twelve bytes' AS s, 'short' AS s2, " +
        "TIMESTAMPTZ '2024-01-02 03:04:05.123456+00' AS ts, TIMESTAMP_NS '2024-01-02 03:04:05.123456789' AS tns, " +
        "true AS b, NULL::VARCHAR AS n, [1, 2, NULL] AS l, {'a': 'x', 'b': 7} AS st, 1.25::DECIMAL(10,2) AS dc, " +
        "DATE '2024-01-02' AS dt, 7::TINYINT AS t8, 3000000000::UBIGINT AS u64, 'a'::ENUM('a', 'b') AS e",
    );
    const types = Object.fromEntries(table.schema.fields.map((f) => [f.name, String(f.type)]));
    assert.deepEqual(types, {
      i: 'Int64',
      d: 'Float64',
      s: 'Utf8',
      s2: 'Utf8',
      ts: 'Timestamp<NANOSECOND, UTC>',
      tns: 'Timestamp<NANOSECOND, UTC>',
      b: 'Bool',
      n: 'Utf8',
      l: 'List<Int32>',
      st: 'Struct<{a:Utf8, b:Int32}>',
      dc: 'Decimal[10e+2]',
      dt: 'Date32<DAY>',
      t8: 'Int8',
      u64: 'Uint64',
      e: 'Utf8',
    });
    const row = table.get(0)!;
    assert.equal(row.i, 42n);
    assert.equal(row.d, 2.5);
    assert.equal(row.s, 'héllo wörld, longer than twelve bytes');
    assert.equal(row.s2, 'short');
    assert.equal((table.getChild('ts')!.data[0].values as BigInt64Array)[0], 1704164645123456000n);
    assert.equal((table.getChild('tns')!.data[0].values as BigInt64Array)[0], 1704164645123456789n);
    assert.equal(row.b, true);
    assert.equal(row.n, null);
    assert.deepEqual([...row.l], [1, 2, null]);
    assert.deepEqual(row.st.toJSON(), { a: 'x', b: 7 });
    assert.equal((table.getChild('dc')!.data[0].values as Uint32Array)[0], 125);
    assert.equal(row.dt, Date.UTC(2024, 0, 2));
    assert.equal(row.t8, 7);
    assert.equal(row.u64, 3000000000n);
    assert.equal(row.e, 'a');
  });

  it('sends one endpoint without locations and the schema it streams', async () => {
    const info = await c.getFlightInfo(packAny('CommandStatementQuery', { query: 'SELECT range AS x FROM range(3)' }));
    assert.equal(info.endpoints.length, 1);
    assert.deepEqual(info.endpoints[0].locations, []);
    assert.equal(info.totalRecords, -1);
    const { table } = await c.doGet(info.endpoints[0].ticket);
    assert.deepEqual(
      table.schema.fields.map((f) => [f.name, String(f.type)]),
      info.schema.fields.map((f) => [f.name, String(f.type)]),
    );
    assert.deepEqual([...table.getChild('x')!], [0n, 1n, 2n]);
  });

  it('sends the schema message first even when there are no rows', async () => {
    const info = await c.getFlightInfo(
      packAny('CommandStatementQuery', { query: 'SELECT 1::BIGINT AS x WHERE false' }),
    );
    const { table, messages } = await c.doGet(info.endpoints[0].ticket);
    assert.equal(messages, 1);
    assert.equal(table.numRows, 0);
    assert.equal(String(table.schema.fields[0].type), 'Int64');
  });

  it('redeems a ticket that is plain SQL text, and a TicketStatementQuery whose handle is SQL text', async () => {
    const plain = await c.doGet(new TextEncoder().encode('SELECT 5 AS five'));
    assert.equal(plain.table.getChild('five')!.get(0), 5);
    const micromegas = await c.doGet(
      packAny('TicketStatementQuery', { statementHandle: new TextEncoder().encode('SELECT 6 AS six') }),
    );
    assert.equal(micromegas.table.getChild('six')!.get(0), 6);
  });

  it('answers GetSchema with the query schema', async () => {
    const schema = await c.getSchema(
      packAny('CommandStatementQuery', { query: 'SELECT 1::BIGINT AS a, 2::DOUBLE AS b' }),
    );
    assert.deepEqual(
      schema.fields.map((f) => `${f.name}:${f.type}`),
      ['a:Int64', 'b:Float64'],
    );
  });

  it('answers PollFlightInfo as complete, with the schema and a ticket that streams the rows', async () => {
    const poll = await c.client.pollFlightInfo(
      packAny('CommandStatementQuery', { query: 'SELECT range::BIGINT AS a FROM range(3)' }),
    );
    assert.equal(poll.complete, true);
    assert.equal(poll.progress, 1);
    assert.deepEqual(
      poll.info!.schema!.fields.map((f) => `${f.name}:${f.type}`),
      ['a:Int64'],
    );
    const { table } = await c.doGet(poll.info!.endpoints[0].ticket);
    assert.deepEqual([...table.getChild('a')!], [0n, 1n, 2n]);
    await assert.rejects(
      c.client.pollFlightInfo(packAny('CommandStatementQuery', { query: 'SELECT * FROM nowhere' })),
      { code: 3 },
    );
  });

  it('classifies DuckDB errors by their type, not by the words in them (issue 8)', async () => {
    const refusal = (sql: string) =>
      c.query(sql).then(
        () => assert.fail(`${sql} succeeded`),
        (error: FlightClientError) => ({
          code: error.code,
          errorCode: error.errorCode,
          details: error.details.split('\n')[0],
        }),
      );
    // The statement says "interrupt": still a conversion error, not a cancellation.
    assert.deepEqual(await refusal("SELECT 'x'::INTEGER AS interrupt_flag"), {
      code: 3,
      errorCode: 'QUERY_INVALID',
      details: "Conversion Error: Could not convert string 'x' to INT32",
    });
    assert.deepEqual(await refusal("SELECT error('INTERRUPT Error: query cancelled') AS x"), {
      code: 3,
      errorCode: 'QUERY_INVALID',
      details: 'Invalid Input Error: INTERRUPT Error: query cancelled',
    });
  });

  it('streams large results in batches of about 2 MiB, each FlightData under 4 MiB', async () => {
    const info = await c.getFlightInfo(
      packAny('CommandStatementQuery', {
        query: "SELECT range AS i, range * 0.5 AS d, repeat('x', 100) || range AS s FROM range(300000)",
      }),
    );
    const { table, sizes } = await c.doGet(info.endpoints[0].ticket);
    assert.equal(table.numRows, 300000);
    assert.equal(table.getChild('i')!.get(299999), 299999n);
    assert.ok(sizes.length > 10, `expected many messages, got ${sizes.length}`);
    assert.ok(Math.max(...sizes) < 4 * 1024 * 1024);
    // The default batch size: ADBC's Go driver pays per batch (bench/latency/PROFILE.md, twelfth pass).
    assert.ok(Math.max(...sizes) > 1.5 * 1024 * 1024, `largest FlightData ${Math.max(...sizes)} bytes`);
    let sum = 0n;
    for (const v of table.getChild('i')!) sum += v as bigint;
    assert.equal(sum, (299999n * 300000n) / 2n);
  });

  it('sends a batch over the message limit in a few slices, not a row per message', async () => {
    // The native exporter cuts its batches at the byte target; the JavaScript converter (lists, structs) cuts
    // after whole chunks: here 2,048 rows of 8186-byte strings in lists, a 16 MiB batch. Slices share the
    // batch's buffers: measured as batches, each seemed over the limit too, down to a row per message.
    const info = await c.getFlightInfo(
      packAny('CommandStatementQuery', { query: "SELECT [repeat('x', 8186)] AS s FROM range(2048)" }),
    );
    const { table, sizes } = await c.doGet(info.endpoints[0].ticket);
    assert.equal(table.numRows, 2048);
    assert.ok(sizes.length < 50, `${sizes.length} messages`);
    assert.ok(Math.max(...sizes) < 4 * 1024 * 1024, `largest FlightData ${Math.max(...sizes)} bytes`);
  });

  it('applies the limit header and rejects bad per-query headers', async () => {
    const table = await c.query('SELECT range AS i FROM range(100000)', { limit: '10' });
    assert.equal(table.numRows, 10);
    await assert.rejects(c.query('SELECT 1', { limit: 'ten' }), { code: 3, details: /header limit/ });
    await assert.rejects(c.query('SELECT 1', { query_range_begin: 'yesterday' }), {
      code: 3,
      details: /query_range_begin/,
    });
  });

  it('runs updates through DoPut and reports the row count', async () => {
    await c.updateCount('CREATE OR REPLACE TABLE counts (id BIGINT)');
    assert.equal(await c.updateCount('INSERT INTO counts SELECT range FROM range(7)'), 7);
    const table = await c.query('SELECT count(*) AS n FROM counts');
    assert.equal(table.getChild('n')!.get(0), 7n);
  });
});

describe('dictionaries', () => {
  const fixture = useOrrery();
  let c: TestFlightClient;
  before(async () => {
    c = fixture.admin;
    await c.updateCount("CREATE TYPE level AS ENUM ('debug', 'info', 'warn')");
    await c.updateCount(
      "CREATE TABLE events AS SELECT (['debug', 'info', 'warn'])[1 + range % 3]::level AS level FROM range(600000)",
    );
  });

  it('decodes dictionary columns unless the client sends preserve_dictionary: true', async () => {
    const decoded = await c.query('SELECT level FROM events');
    assert.equal(String(decoded.schema.fields[0].type), 'Utf8');
    assert.deepEqual([...decoded.getChild('level')!].slice(0, 4), ['debug', 'info', 'warn', 'debug']);
  });

  it('keeps ENUM columns as one dictionary sent once when asked to', async () => {
    const headers = { preserve_dictionary: 'true' };
    const info = await c.getFlightInfo(
      packAny('CommandStatementQuery', { query: 'SELECT level FROM events' }),
      headers,
    );
    assert.equal(String(info.schema.fields[0].type), 'Dictionary<Int32, Utf8>');
    const { table, messages } = await c.doGet(info.endpoints[0].ticket, headers);
    assert.equal(String(table.schema.fields[0].type), 'Dictionary<Int32, Utf8>');
    assert.equal(table.numRows, 600000);
    assert.ok(table.batches.length > 1);
    assert.equal(messages, 1 + 1 + table.batches.length, 'schema, the dictionary once, then the batches');
    assert.deepEqual([...table.getChild('level')!].slice(0, 4), ['debug', 'info', 'warn', 'debug']);
    assert.equal(table.getChild('level')!.get(599999), 'warn');
  });
});
