// Issue 17: a rollup read inside a client's transaction (Flight SQL BeginTransaction) answers the
// source as that transaction sees it: its DuckLake snapshot, however far other connections' writes
// and refreshes have moved the lake since, and its own uncommitted writes. Each case is one
// statement with its exact rows, through a real Flight SQL client over a socket.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Table, TimestampMicrosecond, Utf8, makeVector, vectorFromArray } from 'apache-arrow';
import { plain, plainRows } from '../lakehouse/lakehouse-fixtures.js';
import type { FlightClientError } from '../../src/client/index.js';
import { FlightSql, packAny, unpackAny } from '../support/flight-client.js';
import { useOrrery } from '../support/orrery-process.js';

/** Sums as BIGINT: DuckDB's sum of integers is a HUGEINT. */
const hourly = `SELECT CAST(bucket AS VARCHAR) AS bucket, host, s::BIGINT AS s, n FROM m_hourly ORDER BY bucket, host`;
const daily = `SELECT CAST(bucket AS VARCHAR) AS bucket, host, s::BIGINT AS s, n::BIGINT AS n FROM m_daily ORDER BY bucket, host`;
/** A dashboard's statement over the table, which the rewrite answers from a rollup (#14). */
const perDay = `SELECT CAST(date_trunc('day', ts) AS VARCHAR) AS bucket, host, sum(v)::BIGINT AS s, count(*) AS n FROM m
  WHERE ts >= '2024-01-01' AND ts < '2024-01-03' GROUP BY ALL ORDER BY bucket, host`;
const row = (bucket: string, host: string, s: number, n: number): Record<string, unknown> => ({
  bucket,
  host,
  s,
  n,
});

describe('rollup reads in a client transaction (issue 17)', () => {
  const fixture = useOrrery();

  const begin = async (): Promise<Uint8Array> => {
    const [body] = await fixture.admin.doAction('BeginTransaction', packAny('ActionBeginTransactionRequest', {}));
    const result = FlightSql.ActionBeginTransactionResult.decode(unpackAny(body)!.value) as unknown as {
      transactionId: Uint8Array;
    };
    return result.transactionId;
  };
  const end = (transactionId: Uint8Array, commit: boolean): Promise<unknown> =>
    fixture.admin.doAction(
      'EndTransaction',
      packAny('ActionEndTransactionRequest', { transactionId, action: commit ? 1 : 2 }),
    );
  const inTransaction = async (transactionId: Uint8Array, query: string): Promise<Table> => {
    const info = await fixture.admin.getFlightInfo(packAny('CommandStatementQuery', { query, transactionId }));
    return (await fixture.admin.doGet(info.endpoints[0].ticket)).table;
  };
  const rows = async (transactionId: Uint8Array, query: string): Promise<Array<Record<string, unknown>>> =>
    (await inTransaction(transactionId, query)).toArray().map((r) => plain(r.toJSON()));
  const write = (transactionId: Uint8Array, query: string): Promise<unknown> =>
    fixture.admin.doPut(packAny('CommandStatementUpdate', { query, transactionId }));
  const outside = (query: string): Promise<Array<Record<string, unknown>>> => plainRows(fixture.admin, query);
  /** The daily rollup, and the dashboard's statement the rewrite answers from it, read in the transaction: `days`. */
  const dailyReads = async (transaction: Uint8Array, days: Array<Record<string, unknown>>): Promise<void> => {
    assert.deepEqual(await rows(transaction, daily), days);
    const rewritten = await inTransaction(transaction, perDay);
    assert.deepEqual(
      rewritten.toArray().map((r) => plain(r.toJSON())),
      days,
    );
    assert.match(rewritten.schema.metadata.get('orrery.provenance') ?? '', /"name":"m_daily"/);
  };
  const refresh = async (): Promise<void> => {
    await fixture.admin.query(`select refresh_rollup('m_hourly')`);
    await fixture.admin.query(`select refresh_rollup('m_daily')`);
  };

  it('sets up a table, an hourly rollup of it and a daily rollup of that, refreshed', async () => {
    await fixture.admin.updateCount(`CREATE TABLE m (ts TIMESTAMP, host VARCHAR, v BIGINT) WITH (time_column = 'ts')`);
    await fixture.admin.updateCount(
      `INSERT INTO m VALUES ('2024-01-01 00:10:00', 'a', 1), ('2024-01-01 00:20:00', 'b', 2),
         ('2024-01-01 01:10:00', 'a', 4), ('2024-01-02 03:00:00', 'a', 8)`,
    );
    await fixture.admin.query(
      `select create_rollup('m_hourly', 'm', interval '1 hour', select_list => 'host, sum(v) as s, count(*) as n', group_by => 'host')`,
    );
    await fixture.admin.query(
      `select create_rollup('m_daily', 'm_hourly', interval '1 day', select_list => 'host, sum(s) as s, sum(n) as n', group_by => 'host')`,
    );
    await refresh();
  });

  it("reads at the transaction's snapshot after another connection's late write and refresh", async () => {
    const transaction = await begin();
    // The transaction's first read of the lake fixes its snapshot.
    assert.deepEqual(await rows(transaction, `SELECT count(*) AS n FROM m`), [{ n: 4 }]);
    await fixture.admin.updateCount(`INSERT INTO m VALUES ('2024-01-01 00:30:00', 'a', 16)`);
    await refresh();
    const before = [
      row('2024-01-01 00:00:00', 'a', 1, 1),
      row('2024-01-01 00:00:00', 'b', 2, 1),
      row('2024-01-01 01:00:00', 'a', 4, 1),
      row('2024-01-02 03:00:00', 'a', 8, 1),
    ];
    assert.deepEqual(await rows(transaction, hourly), before);
    const days = [
      row('2024-01-01 00:00:00', 'a', 5, 2),
      row('2024-01-01 00:00:00', 'b', 2, 1),
      row('2024-01-02 00:00:00', 'a', 8, 1),
    ];
    await dailyReads(transaction, days);
    // Outside it, the write is read; the transaction was not aborted and commits.
    assert.deepEqual((await outside(hourly))[0], row('2024-01-01 00:00:00', 'a', 17, 2));
    await end(transaction, true);
  });

  it("reads the transaction's own uncommitted writes, in the rollup, the rollup of it and the statement the rewrite answers", async () => {
    const committed = await outside(hourly);
    const transaction = await begin();
    // A late row in a materialized bucket, and a delete emptying another.
    await write(transaction, `INSERT INTO m VALUES ('2024-01-01 00:40:00', 'b', 32)`);
    await write(transaction, `DELETE FROM m WHERE v = 4`);
    assert.deepEqual(await rows(transaction, hourly), [
      row('2024-01-01 00:00:00', 'a', 17, 2),
      row('2024-01-01 00:00:00', 'b', 34, 2),
      row('2024-01-02 03:00:00', 'a', 8, 1),
    ]);
    const days = [
      row('2024-01-01 00:00:00', 'a', 17, 2),
      row('2024-01-01 00:00:00', 'b', 34, 2),
      row('2024-01-02 00:00:00', 'a', 8, 1),
    ];
    await dailyReads(transaction, days);
    // Other connections see none of it, and after the rollback neither does anyone, refreshed or not.
    assert.deepEqual(await outside(hourly), committed);
    await end(transaction, false);
    assert.deepEqual(await outside(hourly), committed);
    await refresh();
    assert.deepEqual(await outside(hourly), committed);
  });

  it('a committed write is in the next read of its rollups, before any refresh', async () => {
    const transaction = await begin();
    await write(transaction, `INSERT INTO m VALUES ('2024-01-02 03:30:00', 'a', 64)`);
    await end(transaction, true);
    assert.deepEqual(await outside(`${hourly.replace(' ORDER BY', " WHERE bucket >= '2024-01-02' ORDER BY")}`), [
      row('2024-01-02 03:00:00', 'a', 72, 2),
    ]);
    assert.deepEqual(await outside(`${daily.replace(' ORDER BY', " WHERE bucket >= '2024-01-02' ORDER BY")}`), [
      row('2024-01-02 00:00:00', 'a', 72, 2),
    ]);
  });

  it('a refresh moving the watermark during the transaction neither drops nor doubles a bucket read in it', async () => {
    await fixture.admin.updateCount(`CREATE TABLE chain (height BIGINT, gas BIGINT) WITH (time_column = 'height')`);
    await fixture.admin.updateCount(`INSERT INTO chain SELECT i, 1 FROM range(1, 26) t(i)`);
    await fixture.admin.query(
      `select create_rollup('chain_10', 'chain', bucket_width => 10, select_list => 'count(*) as n, sum(gas)::BIGINT as gas')`,
    );
    await fixture.admin.query(`select refresh_rollup('chain_10')`);
    const read = `SELECT bucket, n, gas FROM chain_10 ORDER BY bucket`;
    const transaction = await begin();
    assert.deepEqual(await rows(transaction, `SELECT count(*) AS n FROM chain`), [{ n: 25 }]);
    // Bucket 20 closes: the watermark moves from 20 to 30 and the refresh stores it.
    await fixture.admin.updateCount(`INSERT INTO chain SELECT i, 1 FROM range(26, 36) t(i)`);
    await fixture.admin.query(`select refresh_rollup('chain_10')`);
    assert.deepEqual(await rows(transaction, read), [
      { bucket: 0, n: 9, gas: 9 },
      { bucket: 10, n: 10, gas: 10 },
      { bucket: 20, n: 6, gas: 6 },
    ]);
    await end(transaction, false);
    assert.deepEqual(await outside(read), [
      { bucket: 0, n: 9, gas: 9 },
      { bucket: 10, n: 10, gas: 10 },
      { bucket: 20, n: 10, gas: 10 },
      { bucket: 30, n: 6, gas: 6 },
    ]);
  });

  it('bulk ingest in the transaction is in its rollup reads', async () => {
    const transaction = await begin();
    const data = new Table({
      ts: makeVector({
        type: new TimestampMicrosecond(),
        data: BigInt64Array.from([BigInt(Date.UTC(2024, 0, 1, 1, 20)) * 1000n]),
      } as never),
      host: vectorFromArray(['a'], new Utf8()),
      v: makeVector(BigInt64Array.from([128n])),
    });
    await fixture.admin.doPut(
      packAny('CommandStatementIngest', {
        table: 'm',
        tableDefinitionOptions: { ifNotExist: 2, ifExists: 2 },
        transactionId: transaction,
      }),
      data,
    );
    assert.deepEqual(
      await rows(transaction, hourly.replace(' ORDER BY', " WHERE bucket = '2024-01-01 01:00:00' ORDER BY")),
      [row('2024-01-01 01:00:00', 'a', 132, 2)],
    );
    await end(transaction, false);
  });

  it("list_rollups and explain_resources answer as of the transaction's snapshot; a rollup made since is not in it", async () => {
    const transaction = await begin();
    assert.deepEqual(await rows(transaction, `SELECT count(*) AS n FROM m`), [{ n: 6 }]);
    await fixture.admin.updateCount(`INSERT INTO m VALUES ('2024-01-01 00:50:00', 'a', 256)`);
    await fixture.admin.query(
      `select create_rollup('m_late', 'm', interval '6 hours', select_list => 'host, sum(v) as s, count(*) as n', group_by => 'host')`,
    );
    const listing = `SELECT name, pending_buckets FROM list_rollups() ORDER BY name`;
    // The committed write of 2024-01-02 is pending in it; the late row of 2024-01-01 written since is not.
    assert.deepEqual(await rows(transaction, listing), [
      { name: 'chain_10', pending_buckets: 0 },
      { name: 'm_daily', pending_buckets: 1 },
      { name: 'm_hourly', pending_buckets: 1 },
    ]);
    assert.deepEqual(await outside(listing), [
      { name: 'chain_10', pending_buckets: 0 },
      { name: 'm_daily', pending_buckets: 2 },
      { name: 'm_hourly', pending_buckets: 2 },
      { name: 'm_late', pending_buckets: 0 },
    ]);
    const explained = `SELECT rollup, decision FROM explain_resources('select date_trunc(''day'', ts) as d, count(*) as n from m where ts >= ''2024-01-01'' and ts < ''2024-01-03'' group by 1') ORDER BY rollup`;
    assert.deepEqual(await rows(transaction, explained), [
      { rollup: 'm_daily', decision: 'read' },
      { rollup: 'm_hourly', decision: 'skipped' },
    ]);
    assert.deepEqual(await outside(explained), [
      { rollup: 'm_daily', decision: 'read' },
      { rollup: 'm_hourly', decision: 'skipped' },
      { rollup: 'm_late', decision: 'skipped' },
    ]);
    await assert.rejects(rows(transaction, `SELECT * FROM m_late`), /m_late/);
    await end(transaction, false);
  });

  it('a rollup made or dropped after the transaction began is refused in it with a coded error naming it', async () => {
    const transaction = await begin();
    assert.deepEqual(await rows(transaction, `SELECT count(*) AS n FROM m`), [{ n: 7 }]);
    await fixture.admin.query(`select drop_rollup('m_late')`);
    await fixture.admin.query(`select create_rollup('m_since', 'm', interval '1 day', select_list => 'count(*) as n')`);
    const refusal = (query: string): Promise<Record<string, unknown>> =>
      rows(transaction, query).then(
        () => assert.fail(`${query} succeeded`),
        (error: FlightClientError) => ({ status: error.status, code: error.errorCode, details: error.details }),
      );
    const changed = (name: string, how: string): Record<string, unknown> => ({
      status: 'FAILED_PRECONDITION',
      code: 'ROLLUP_CHANGED_IN_TRANSACTION',
      details: `rollup '${name}' was ${how} after this transaction began: it cannot be read in it; read it in a new transaction`,
    });
    assert.deepEqual(await refusal(`SELECT * FROM m_late`), changed('m_late', 'dropped'));
    assert.deepEqual(await refusal(`SELECT n FROM m_late_materialized`), changed('m_late', 'dropped'));
    assert.deepEqual(await refusal(`SELECT * FROM m_since`), changed('m_since', 'created'));
    assert.deepEqual(await refusal(`SELECT n FROM main.m_since_materialized`), changed('m_since', 'created'));
    // The transaction goes on: its other rollups read as before.
    const perHour = `SELECT CAST(date_trunc('hour', ts) AS VARCHAR) AS bucket, host, sum(v)::BIGINT AS s, count(*) AS n
      FROM m GROUP BY ALL ORDER BY bucket, host`;
    assert.deepEqual(await rows(transaction, hourly), await rows(transaction, perHour));
    await end(transaction, false);
    assert.deepEqual(
      await outside(`SELECT n FROM m_since ORDER BY bucket`),
      await outside(`SELECT count(*) AS n FROM m GROUP BY date_trunc('day', ts) ORDER BY date_trunc('day', ts)`),
    );
  });

  it('a key a deny rule closes a rollup to is told of the rule, not that the rollup changed in its transaction', async () => {
    await fixture.admin.query(
      `select create_rollup('m_closed', 'm', interval '1 day', select_list => 'count(*) as n')`,
    );
    await fixture.admin.query(
      `SELECT msg FROM deny_queries('user_id = ''reader'' AND list_contains(tables, ''m_closed'')', 'm_closed is closed to the reader')`,
    );
    const [body] = await fixture.reader.doAction('BeginTransaction', packAny('ActionBeginTransactionRequest', {}));
    const { transactionId } = FlightSql.ActionBeginTransactionResult.decode(unpackAny(body)!.value) as unknown as {
      transactionId: Uint8Array;
    };
    const readerRows = async (query: string): Promise<unknown> => {
      const info = await fixture.reader.getFlightInfo(packAny('CommandStatementQuery', { query, transactionId }));
      return (await fixture.reader.doGet(info.endpoints[0].ticket)).table.numRows;
    };
    assert.equal(await readerRows(`SELECT count(*) AS n FROM m`), 1);
    await fixture.admin.query(`select drop_rollup('m_closed')`);
    const refusal = (query: string): Promise<unknown> =>
      readerRows(query).then(
        () => assert.fail(`${query}: a closed rollup was read`),
        (error: FlightClientError) => ({ status: error.status, code: error.errorCode }),
      );
    // The rule matches the rollup's name; its materialized table is closed with it (relation-sources).
    assert.deepEqual(await refusal(`SELECT * FROM m_closed`), { status: 'RESOURCE_EXHAUSTED', code: 'QUERY_DENIED' });
    assert.deepEqual(await refusal(`SELECT n FROM m_closed_materialized`), {
      status: 'PERMISSION_DENIED',
      code: 'RELATION_DENIED',
    });
    await fixture.reader.doAction(
      'EndTransaction',
      packAny('ActionEndTransactionRequest', { transactionId, action: 2 }),
    );
  });
});
