// A write whose client gave up (cancelled, or its deadline passed) while it ran keeps nothing, whatever
// the statement: executemany, INSERT ... SELECT, UPDATE, DELETE, CREATE and ALTER of a series table,
// create_rollup, CREATE MATERIALIZED VIEW, the admin procedures that are not maintenance and UPDATE snouttime.jobs;
// in a client's transaction the statement fails the transaction (TRANSACTION_ABORTED), as Postgres does. Each call
// goes over a real socket. The order is made, not raced: the server's write waits on a Postgres lock the test holds
// until the client's deadline has passed (its refusal seen).
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { Int32, Table, TimestampNanosecond, Utf8, makeVector, vectorFromArray } from 'apache-arrow';
import { pollUntil, refusal, scalar, sleep, useLakeOrrery, type TestKey } from '../lakehouse/lakehouse-fixtures.js';
import { metricValue } from '../support/metric-value.js';
import { FlightSql, packAny, tableToFlightData, unpackAny, type TestFlightClient } from '../support/flight-client.js';

const admin: TestKey = { name: 'admin', key: 'admin-key-cancel-0001', audiences: ['ops'] };

/** gRPC's DEADLINE_EXCEEDED and ABORTED. */
const deadlineExceeded = 4;
const aborted = 10;

describe('a write whose client gave up keeps nothing', () => {
  const lake = useLakeOrrery({ keys: [admin] });
  let asAdmin: TestFlightClient;

  before(async () => {
    asAdmin = lake.client(admin);
    await asAdmin.updateCount(`CREATE TABLE deploys (ts TIMESTAMPTZ, service VARCHAR, attempts INTEGER)`);
    await asAdmin.updateCount(
      `INSERT INTO deploys SELECT TIMESTAMPTZ '2024-05-01 00:00:00+00' + to_seconds(i), 'svc-' || (i % 3), i FROM range(30) t(i)`,
    );
  });

  /** Waits until the server has no statement running (the one whose client gave up has ended). */
  const noneRunning = (): Promise<number> =>
    pollUntil(
      'no statement running',
      () => metricValue(lake.orrery.httpPort, 'orrery_queries_running', admin.key),
      (n) => n === 0,
      {
        timeoutMs: 60_000,
        intervalMs: 100,
      },
    );

  /**
   * Sends `call` (with a deadline) while the test holds `lock` on a Postgres table the server's work needs, so that
   * the work cannot end before the client's deadline has passed; then lets the work go on and waits until the
   * server has no statement running. In SHARE `mode` the lock lets the statement read the table and holds back its
   * write alone.
   */
  async function givenUp(
    lock: string,
    call: (deadline: number) => Promise<unknown>,
    mode: 'SHARE' | 'ACCESS EXCLUSIVE' = 'ACCESS EXCLUSIVE',
  ): Promise<void> {
    const holder = await lake.postgres.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`LOCK TABLE ${lock} IN ${mode} MODE`);
      assert.equal((await refusal(call(Date.now() + 1000))).code, deadlineExceeded);
      await holder.query('COMMIT');
    } finally {
      holder.release();
    }
    await noneRunning();
  }

  const update = (query: string, deadline?: number, transactionId?: Uint8Array): Promise<Uint8Array[]> =>
    asAdmin.client.doPut(packAny('CommandStatementUpdate', { query, transactionId }), [], { deadline });
  const count = (where = 'TRUE'): Promise<number> => scalar(asAdmin, `SELECT count(*) FROM deploys WHERE ${where}`);
  const snapshot = 'ducklake.ducklake_snapshot';

  it('a prepared INSERT with many parameter rows (executemany) keeps none of them', async () => {
    const { handle } = await asAdmin.prepare('INSERT INTO deploys (ts, service, attempts) VALUES (?, ?, ?)');
    const rows = 1000;
    const parameters = new Table({
      ts: vectorFromArray(
        Array.from({ length: rows }, (_, i) => new Date(Date.UTC(2024, 6, 1, 0, 0, i)).toISOString()),
        new Utf8(),
      ),
      service: vectorFromArray(
        Array.from({ length: rows }, () => 'many'),
        new Utf8(),
      ),
      attempts: vectorFromArray(
        Array.from({ length: rows }, (_, i) => i),
        new Int32(),
      ),
    });
    const cmd = packAny('CommandPreparedStatementUpdate', { preparedStatementHandle: handle });
    await givenUp(snapshot, (deadline) => asAdmin.client.doPut(cmd, tableToFlightData(parameters), { deadline }));
    assert.equal(await count(`service = 'many'`), 0);
    // The same statement with a live client writes them all.
    await asAdmin.client.doPut(cmd, tableToFlightData(parameters));
    assert.equal(await count(`service = 'many'`), rows);
    await asAdmin.updateCount(`DELETE FROM deploys WHERE service = 'many'`);
  });

  it('an INSERT ... SELECT, an UPDATE, a DELETE and an INSERT of VALUES through CommandStatementUpdate keep nothing', async () => {
    await givenUp(snapshot, (deadline) =>
      update(`INSERT INTO deploys SELECT ts, 'copied', attempts FROM deploys`, deadline),
    );
    await givenUp(snapshot, (deadline) => update(`UPDATE deploys SET attempts = -1`, deadline));
    await givenUp(snapshot, (deadline) => update(`DELETE FROM deploys`, deadline));
    await givenUp(snapshot, (deadline) =>
      update(`INSERT INTO deploys (ts, service) VALUES ('2024-07-02 00:00:00+00', 'one')`, deadline),
    );
    assert.equal(await count(), 30);
    assert.equal(await count(`service IN ('copied', 'one') OR attempts = -1`), 0);
  });

  it('a write whose client gave up while DuckLake committed it is kept whole or not at all', async () => {
    // In SHARE mode the lock lets the statement run and holds back DuckLake's commit alone (its new snapshot's row):
    // the client gives up, and the call's interrupt reaches DuckDB, while the commit waits. That is too late, as a
    // cancel during any database's COMMIT is; what matters is that no part of the write is kept alone.
    await givenUp(
      snapshot,
      (deadline) =>
        update(
          `INSERT INTO deploys SELECT TIMESTAMPTZ '2024-08-01 00:00:00+00' + to_seconds(i), 'at-commit', i FROM range(1000) t(i)`,
          deadline,
        ),
      'SHARE',
    );
    assert.ok([0, 1000].includes(await count(`service = 'at-commit'`)));
    const before = await count();
    await givenUp(snapshot, (deadline) => update(`DELETE FROM deploys WHERE service = 'at-commit'`, deadline), 'SHARE');
    assert.ok([before, 30].includes(await count()));
    await asAdmin.updateCount(`DELETE FROM deploys WHERE service = 'at-commit'`);
    assert.equal(await count(), 30);
  });

  it('an INSERT of many generated rows is stopped midway by its deadline, and keeps none', async () => {
    // Far more rows than the deadline gives time to write, however fast the machine: the deadline passes mid-run.
    const insert = update(
      `INSERT INTO deploys SELECT TIMESTAMPTZ '2024-06-01 00:00:00+00' + to_seconds(i), md5(i::VARCHAR), i FROM range(20000000) t(i)`,
      Date.now() + 300,
    );
    assert.equal((await refusal(insert)).code, deadlineExceeded);
    await noneRunning();
    assert.equal(await count(), 30);
  });

  it('CREATE TABLE and ALTER TABLE of a series table are not committed', async () => {
    await givenUp(snapshot, (deadline) =>
      update(`CREATE TABLE later (ts TIMESTAMPTZ, v DOUBLE) WITH (time_column = 'ts')`, deadline),
    );
    await givenUp(snapshot, (deadline) => update(`ALTER TABLE deploys ADD COLUMN region VARCHAR`, deadline));
    assert.equal(
      await scalar(asAdmin, `SELECT count(*) FROM (DESCRIBE deploys) WHERE column_name = 'region'`),
      0,
      'the column was not added',
    );
    const later = await lake.postgres.pool.query(
      `SELECT count(*)::int AS n FROM ducklake.ducklake_table WHERE end_snapshot IS NULL AND table_name = 'later'`,
    );
    assert.equal(later.rows[0].n, 0, 'the table was not created');
    // Both run with a live client.
    await update(`CREATE TABLE later (ts TIMESTAMPTZ, v DOUBLE) WITH (time_column = 'ts')`);
    await update(`ALTER TABLE deploys ADD COLUMN region VARCHAR`);
    await update(`ALTER TABLE deploys DROP COLUMN region`);
  });

  it('create_rollup leaves no definition, job or table behind', async () => {
    const create = `SELECT create_rollup('per_service', 'deploys', interval '1 hour', 'service, count(*) as n', 'service')`;
    await givenUp('rollup_jobs', (deadline) => update(create, deadline));
    const left = await lake.postgres.pool.query(
      `SELECT (SELECT count(*) FROM rollup_definitions)::int AS definitions, (SELECT count(*) FROM rollup_jobs)::int AS jobs,
              (SELECT count(*) FROM ducklake.ducklake_table WHERE end_snapshot IS NULL AND table_name LIKE '%per_service%')::int AS tables`,
    );
    assert.deepEqual(left.rows[0], { definitions: 0, jobs: 0, tables: 0 });
    // The name is free: the same call with a live client creates it.
    await update(create);
    assert.equal(Number((await lake.postgres.pool.query(`SELECT count(*) AS n FROM rollup_definitions`)).rows[0].n), 1);
    await update(`SELECT drop_rollup('per_service')`);
  });

  it('CREATE MATERIALIZED VIEW stores no definition', async () => {
    const create = `CREATE MATERIALIZED VIEW per_target WITH (
      extract_query = $$SELECT date_bin('1 minute', time) AS time_bin, target, count(*) AS count, audience FROM log_entries WHERE insert_time >= '{begin}' AND insert_time < '{end}' GROUP BY ALL$$,
      count_src_query = $$SELECT sum(nb_objects) AS count FROM blocks WHERE insert_time >= '{begin}' AND insert_time < '{end}'$$,
      merge_partitions_query = $$SELECT time_bin, target, sum(count) AS count, audience FROM {source} GROUP BY ALL$$,
      update_group = 4000, time_column = 'time_bin')`;
    await givenUp('lakehouse_view_set_definitions', (deadline) => update(create, deadline));
    const stored = `SELECT count(*) AS n FROM lakehouse_view_set_definitions WHERE view_set_name = 'per_target'`;
    assert.equal(Number((await lake.postgres.pool.query(stored)).rows[0].n), 0);
    await update(create);
    assert.equal(Number((await lake.postgres.pool.query(stored)).rows[0].n), 1);
    await update(`DROP MATERIALIZED VIEW per_target`);
  });

  it('CREATE TABLE ... AS of a long query is stopped and leaves no table', async () => {
    // Billions of rows to sum: the deadline passes mid-run however fast the machine.
    const create = update(
      `CREATE TABLE summed AS SELECT sum(hash(i)) AS s FROM range(100000000000) t(i)`,
      Date.now() + 300,
    );
    assert.equal((await refusal(create)).code, deadlineExceeded);
    await noneRunning();
    assert.equal((await refusal(scalar(asAdmin, 'SELECT count(*) FROM summed'))).code, 3);
  });

  describe('an admin procedure, or UPDATE snouttime.jobs, keeps nothing', () => {
    /** GetFlightInfo, then DoGet with the deadline: the procedure runs as its rows are read. */
    const read = async (query: string, deadline: number): Promise<void> => {
      const info = await asAdmin.getFlightInfo(packAny('CommandStatementQuery', { query }));
      for await (const _ of asAdmin.client.doGet(info.endpoints[0].ticket, { deadline }));
    };
    const pg = async (sql: string): Promise<unknown> =>
      Object.values((await lake.postgres.pool.query(sql)).rows[0] ?? {})[0];
    const rules = (): Promise<unknown> => pg(`SELECT count(*)::int FROM query_deny_list`);

    it('deny_queries adds no rule and remove_query_denial removes none, read or updated', async () => {
      const deny = `SELECT * FROM deny_queries('user_id = ''nobody''', 'closed')`;
      await givenUp('query_deny_list', (deadline) => update(deny, deadline), 'SHARE');
      await givenUp('query_deny_list', (deadline) => read(deny, deadline), 'SHARE');
      assert.equal(await rules(), 0);
      await update(deny);
      assert.equal(await rules(), 1);
      const rule = await pg(`SELECT rule_id FROM query_deny_list`);
      const remove = `SELECT * FROM remove_query_denial(${String(rule)})`;
      await givenUp('query_deny_list', (deadline) => update(remove, deadline), 'SHARE');
      await givenUp('query_deny_list', (deadline) => read(remove, deadline), 'SHARE');
      assert.equal(await rules(), 1);
      await update(remove);
      assert.equal(await rules(), 0);
    });

    it('a procedure waiting on a Postgres lock stops waiting when its client gives up', async () => {
      const holder = await lake.postgres.pool.connect();
      try {
        await holder.query('BEGIN');
        await holder.query('LOCK TABLE query_deny_list IN SHARE MODE');
        const deny = `SELECT * FROM deny_queries('user_id = ''nobody''', 'closed')`;
        assert.equal((await refusal(update(deny, Date.now() + 1000))).code, deadlineExceeded);
        // The lock is still held: the statement ends because its wait was cancelled, not because the lock went.
        await noneRunning();
        await holder.query('COMMIT');
      } finally {
        holder.release();
      }
      assert.equal(await rules(), 0);
    });

    it("set_retention leaves the series table's retention as it was", async () => {
      const comment = () =>
        pg(`SELECT t.value FROM ducklake.ducklake_tag t JOIN ducklake.ducklake_table d ON d.table_id = t.object_id
              WHERE d.table_name = 'deploys' AND d.end_snapshot IS NULL AND t.end_snapshot IS NULL AND t.key = 'comment'`);
      const was = await comment();
      await givenUp(snapshot, (deadline) => update(`SELECT * FROM set_retention('deploys', '30 days')`, deadline));
      assert.equal(await comment(), was);
      await update(`SELECT * FROM set_retention('deploys', '30 days')`);
      assert.match(String(await comment()), /30 days/);
      await update(`SELECT * FROM set_retention('deploys', 'forever')`);
    });

    describe('of a rollup', () => {
      before(async () => {
        await update(
          `SELECT create_rollup('per_hour', 'deploys', interval '1 hour', 'service, count(*) as n', 'service')`,
        );
      });

      const schedule = (): Promise<unknown> => pg(`SELECT schedule::text FROM rollup_jobs WHERE target = 'per_hour'`);

      it('set_rollup_retention keeps every bucket', async () => {
        await givenUp(
          'rollup_definitions',
          (deadline) => update(`SELECT set_rollup_retention('per_hour', interval '30 days')`, deadline),
          'SHARE',
        );
        assert.equal(await pg(`SELECT retention FROM rollup_definitions WHERE name = 'per_hour'`), null);
        await update(`SELECT set_rollup_retention('per_hour', interval '30 days')`);
        assert.notEqual(await pg(`SELECT retention FROM rollup_definitions WHERE name = 'per_hour'`), null);
      });

      it('set_job_schedule and UPDATE snouttime.jobs leave the schedule as it was', async () => {
        const was = await schedule();
        await givenUp(
          'rollup_jobs',
          (deadline) => update(`SELECT set_job_schedule('per_hour', interval '7 hours')`, deadline),
          'SHARE',
        );
        await givenUp(
          'rollup_jobs',
          (deadline) =>
            update(`UPDATE snouttime.jobs SET schedule = interval '9 hours' WHERE target = 'per_hour'`, deadline),
          'SHARE',
        );
        assert.equal(await schedule(), was);
        await update(`SELECT set_job_schedule('per_hour', interval '7 hours')`);
        assert.equal(await schedule(), '07:00:00');
        await update(`UPDATE snouttime.jobs SET schedule = interval '9 hours' WHERE target = 'per_hour'`);
        assert.equal(await schedule(), '09:00:00');
      });

      it('drop_rollup leaves the rollup whole: its definition, its job and its rows', async () => {
        await givenUp('rollup_definitions', (deadline) => update(`SELECT drop_rollup('per_hour')`, deadline), 'SHARE');
        assert.equal(await pg(`SELECT count(*)::int FROM rollup_definitions WHERE name = 'per_hour'`), 1);
        assert.equal(await pg(`SELECT count(*)::int FROM rollup_jobs WHERE target = 'per_hour'`), 1);
        assert.equal(await scalar(asAdmin, `SELECT sum(n) FROM per_hour`), 30);
        await update(`SELECT drop_rollup('per_hour')`);
        assert.equal(await pg(`SELECT count(*)::int FROM rollup_definitions WHERE name = 'per_hour'`), 0);
      });
    });
  });

  describe("in a client's transaction", () => {
    async function begin(): Promise<Uint8Array> {
      const [body] = await asAdmin.doAction('BeginTransaction', packAny('ActionBeginTransactionRequest', {}));
      return (
        FlightSql.ActionBeginTransactionResult.decode(unpackAny(body)!.value) as unknown as {
          transactionId: Uint8Array;
        }
      ).transactionId;
    }
    const end = (transactionId: Uint8Array, commit: boolean): Promise<Uint8Array[]> =>
      asAdmin.doAction(
        'EndTransaction',
        packAny('ActionEndTransactionRequest', { transactionId, action: commit ? 1 : 2 }),
      );
    const inTx = (tx: Uint8Array, query: string): Promise<Uint8Array[]> => update(query, undefined, tx);

    it('a statement its client gave up on fails the transaction: every statement after it and its COMMIT are ABORTED', async () => {
      const tx = await begin();
      await inTx(tx, `INSERT INTO deploys (ts, service) VALUES ('2024-08-01 00:00:00+00', 'tx-before')`);
      // Far more rows than the deadline gives time to write, however fast the machine (the transaction holds DuckLake's
      // catalog tables in Postgres: no lock of the test's can hold the statement back).
      const insert = update(
        `INSERT INTO deploys SELECT TIMESTAMPTZ '2024-08-02 00:00:00+00' + to_seconds(i), 'tx-cancelled', i FROM range(20000000) t(i)`,
        Date.now() + 300,
        tx,
      );
      assert.equal((await refusal(insert)).code, deadlineExceeded);
      await noneRunning();
      const next = await refusal(
        inTx(tx, `INSERT INTO deploys (ts, service) VALUES ('2024-08-03 00:00:00+00', 'tx-after')`),
      );
      assert.equal(next.code, aborted);
      assert.match(next.details, /the transaction failed/);
      const commit = await refusal(end(tx, true));
      assert.equal(commit.code, aborted);
      assert.equal(await count(`service LIKE 'tx-%'`), 0);
      // It has ended: its id is unknown now.
      assert.equal((await refusal(end(tx, false))).code, 3);
    });

    it('a statement that failed in DuckDB fails the transaction: COMMIT says ABORTED instead of answering success with nothing committed', async () => {
      const tx = await begin();
      await inTx(tx, `INSERT INTO deploys (ts, service) VALUES ('2024-09-01 00:00:00+00', 'tx-kept?')`);
      assert.equal(
        (await refusal(inTx(tx, `INSERT INTO deploys (ts, attempts) VALUES ('2024-09-02 00:00:00+00', 'x')`))).code,
        3,
      );
      const next = await refusal(inTx(tx, `DELETE FROM deploys WHERE service = 'tx-kept?'`));
      assert.equal(next.code, aborted);
      assert.match(next.details, /Could not convert string 'x'/);
      assert.equal((await refusal(end(tx, true))).code, aborted);
      assert.equal(await count(`service = 'tx-kept?'`), 0);
      // ROLLBACK of a failed transaction succeeds.
      const rolled = await begin();
      await refusal(inTx(rolled, `INSERT INTO deploys (ts, attempts) VALUES ('2024-09-02 00:00:00+00', 'x')`));
      await end(rolled, false);
    });

    it('a read whose rows are not all read (a limit) leaves the transaction usable', async () => {
      const tx = await begin();
      await inTx(tx, `INSERT INTO deploys (ts, service) VALUES ('2024-11-01 00:00:00+00', 'tx-read')`);
      // Far more rows than one batch: the server stops reading DuckDB's result after the first.
      const headers = { limit: '1' };
      const cmd = packAny('CommandStatementQuery', { query: 'SELECT * FROM range(10000000)', transactionId: tx });
      const info = await asAdmin.getFlightInfo(cmd, headers);
      assert.equal((await asAdmin.doGet(info.endpoints[0].ticket, headers)).table.numRows, 1);
      await inTx(tx, `INSERT INTO deploys (ts, service) VALUES ('2024-11-02 00:00:00+00', 'tx-read')`);
      await end(tx, true);
      assert.equal(await count(`service = 'tx-read'`), 2);
    });

    it('a read its client gave up on mid-stream fails the transaction: COMMIT is ABORTED, not a success keeping nothing', async () => {
      const tx = await begin();
      await inTx(tx, `INSERT INTO deploys (ts, service) VALUES ('2024-12-01 00:00:00+00', 'tx-given-up')`);
      const cmd = packAny('CommandStatementQuery', { query: 'SELECT * FROM range(200000000)', transactionId: tx });
      const info = await asAdmin.getFlightInfo(cmd);
      let messages = 0;
      // The schema and the first batch, then the client stops reading: the call is cancelled.
      for await (const _ of asAdmin.client.doGet(info.endpoints[0].ticket)) if (++messages === 2) break;
      await noneRunning();
      // The stop interrupts DuckDB mid-statement, which fails its transaction: COMMIT must then say ABORTED (it
      // answered success and kept nothing). Should the interrupt find DuckDB between two steps, the transaction is
      // whole and COMMIT keeps the row: what COMMIT answers and what is kept must agree either way.
      const committed = await end(tx, true).then(
        () => true,
        (error: { code?: number }) => (assert.equal(error.code, aborted), false),
      );
      assert.equal(await count(`service = 'tx-given-up'`), committed ? 1 : 0);
    });

    it('a bulk ingest whose client stalled past its deadline fails the transaction', async () => {
      const tx = await begin();
      await inTx(tx, `INSERT INTO deploys (ts, service) VALUES ('2024-10-01 00:00:00+00', 'tx-ingest')`);
      const all = tableToFlightData(
        new Table({
          ts: makeVector({
            type: new TimestampNanosecond('UTC'),
            data: BigInt64Array.from([1_727_827_200_000_000_000n]),
          } as never),
          service: vectorFromArray(['tx-ingest'], new Utf8()),
        }),
      );
      // The schema and one batch, then the client stalls past its deadline.
      const messages = (async function* () {
        yield* all;
        await sleep(1500);
      })();
      const cmd = packAny('CommandStatementIngest', {
        table: 'deploys',
        tableDefinitionOptions: { ifNotExist: 2, ifExists: 2 },
        transactionId: tx,
      });
      assert.equal(
        (await refusal(asAdmin.client.doPut(cmd, messages, { deadline: Date.now() + 500 }))).code,
        deadlineExceeded,
      );
      await pollUntil(
        'the transaction failed',
        async () => (await refusal(inTx(tx, `DELETE FROM deploys WHERE FALSE`).then(() => 'ran'))).code,
        (code) => code === aborted,
        { timeoutMs: 60_000, intervalMs: 100 },
      );
      assert.equal((await refusal(end(tx, true))).code, aborted);
      assert.equal(await count(`service = 'tx-ingest'`), 0);
    });
  });
});
