// MetadataStore: migrations at open (once, under a lock), the schema's rules, external servers.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { whileLive } from '../../src/calls/index.js';
import { EmbeddedPostgres, MetadataStore, migrate, migrations, transaction } from '../../src/metadata/index.js';
import { freshDatabase, tempDataDir, withClient, withPool } from './fixtures.js';

/** A statement's call whose client gives up when `gaveUp` aborts, and `whileCallLive` runs work under it. */
const aCall = () => {
  const gaveUp = new AbortController();
  const gone = new Error('the client gave up');
  const call = { signal: gaveUp.signal, gone: () => (gaveUp.signal.aborted ? gone : undefined) };
  return { gaveUp, gone, whileCallLive: <T>(work: () => Promise<T>) => whileLive(call, work) };
};

describe('MetadataStore, embedded', () => {
  const data = tempDataDir();
  after(() => data.remove());

  it('applies the migrations on first open, none on the next, and keeps data across close/reopen', async () => {
    const first = await MetadataStore.open({ dataDir: data.dir });
    try {
      assert.deepEqual(first.appliedMigrations, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]);
      await first.query(
        `INSERT INTO processes (process_id, exe, audience) VALUES ('8d0f6c1e-5b0a-4d3c-9d7e-1f2a3b4c5d6e', 'svc', 'public')`,
      );
    } finally {
      await first.close();
      await first.close();
    }
    const second = await MetadataStore.open({ dataDir: data.dir });
    try {
      assert.deepEqual(second.appliedMigrations, []);
      const { rows } = await second.query('SELECT version, name FROM orrery_migrations');
      assert.deepEqual(rows, [
        { version: 1, name: 'telemetry and lakehouse tables' },
        { version: 2, name: 'log_stats as a stored view set definition' },
        { version: 3, name: 'quarantined blocks' },
        { version: 4, name: 'partition change notifications' },
        { version: 5, name: 'quarantined partitions' },
        { version: 6, name: 'payloads in commit-group files' },
        { version: 7, name: 'lost partitions' },
        { version: 8, name: 'ingest replay marks' },
        { version: 9, name: 'ingest replay mark windows' },
        { version: 10, name: 'failed audiences of view sets defined in SQL' },
        { version: 11, name: 'block inserts as one function call' },
        { version: 12, name: 'a count of process and stream deletes' },
        { version: 13, name: 'failed audiences of rows of no audience apart' },
      ]);
      const definitions = await second.query('SELECT view_set_name, update_group FROM lakehouse_view_set_definitions');
      assert.deepEqual(definitions.rows, [{ view_set_name: 'log_stats', update_group: 3000 }]);
      const processes = await second.query('SELECT exe, audience, insert_time IS NOT NULL AS stamped FROM processes');
      assert.deepEqual(processes.rows, [{ exe: 'svc', audience: 'public', stamped: true }]);
    } finally {
      await second.close();
    }
  });

  it('refuses work once closed', async () => {
    const store = await MetadataStore.open({ dataDir: data.dir });
    await store.close();
    await assert.rejects(store.query('SELECT 1'), {
      name: 'MetadataError',
      code: 'METADATA_CLOSED',
      message: 'the metadata store has been closed',
    });
    await assert.rejects(
      store.transaction(async () => 1),
      { code: 'METADATA_CLOSED' },
    );
  });
});

describe('MetadataStore, external server', () => {
  const data = tempDataDir();
  let server: EmbeddedPostgres;
  before(async () => {
    server = await EmbeddedPostgres.start({ dataDir: data.dir });
  });
  after(async () => {
    await server.close();
    data.remove();
  });

  it('uses an external server given by its connection string, and leaves it running on close', async () => {
    const url = await freshDatabase(server.connectionString, 'external_one');
    const store = await MetadataStore.open({ connectionString: url, dataDir: '/nonexistent/unused' });
    assert.deepEqual(store.appliedMigrations, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]);
    assert.equal(store.connectionString, url);
    await store.close();
    const tables = await withClient(
      url,
      async (c) => (await c.query(`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`)).rows[0].n,
    );
    assert.equal(tables, 13, 'the twelve tables and orrery_migrations');
  });

  it('runs its statements at READ COMMITTED on a database whose default is REPEATABLE READ', async () => {
    const url = await freshDatabase(server.connectionString, 'repeatable_default');
    await withClient(url, (c) =>
      c.query(`ALTER DATABASE repeatable_default SET default_transaction_isolation = 'repeatable read'`),
    );
    assert.equal(
      await withClient(url, async (c) => (await c.query('SHOW transaction_isolation')).rows[0].transaction_isolation),
      'repeatable read',
    );
    const store = await MetadataStore.open({ connectionString: url, dataDir: '/nonexistent/unused' });
    try {
      assert.equal((await store.query('SHOW transaction_isolation')).rows[0].transaction_isolation, 'read committed');
      const inTransaction = await store.transaction(
        async (tx) => (await tx.query('SHOW transaction_isolation')).rows[0].transaction_isolation,
      );
      assert.equal(inTransaction, 'read committed');
    } finally {
      await store.close();
    }
  });

  it('two stores opening one database at once both succeed, and the migrations run once', async () => {
    const url = await freshDatabase(server.connectionString, 'concurrent_open');
    const stores = await Promise.all([
      MetadataStore.open({ connectionString: url, dataDir: data.dir }),
      MetadataStore.open({ connectionString: url, dataDir: data.dir }),
    ]);
    try {
      assert.deepEqual(stores.map((s) => s.appliedMigrations).sort(), [
        [],
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13],
      ]);
      const { rows } = await stores[0].query('SELECT version FROM orrery_migrations ORDER BY version');
      assert.deepEqual(rows, [
        { version: 1 },
        { version: 2 },
        { version: 3 },
        { version: 4 },
        { version: 5 },
        { version: 6 },
        { version: 7 },
        { version: 8 },
        { version: 9 },
        { version: 10 },
        { version: 11 },
        { version: 12 },
        { version: 13 },
      ]);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it('reports a server it cannot reach without showing the password', async () => {
    const url = new URL(server.connectionString);
    url.password = 'wrong-password';
    await assert.rejects(
      MetadataStore.open({ connectionString: url.toString(), dataDir: data.dir }),
      (error: Error & { code?: string }) => {
        assert.equal(error.code, 'CONNECT_FAILED');
        assert.match(
          error.message,
          /^cannot connect to the metadata database 'postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/orrery': password authentication failed/,
        );
        assert.doesNotMatch(error.message, /wrong-password/);
        return true;
      },
    );
  });

  it('refuses a database migrated by a newer Orrery', async () => {
    const url = await freshDatabase(server.connectionString, 'too_new');
    await (await MetadataStore.open({ connectionString: url, dataDir: data.dir })).close();
    const future = migrations.length + 1;
    await withClient(url, (c) =>
      c.query(`INSERT INTO orrery_migrations (version, name) VALUES (${future}, 'from the future')`),
    );
    await assert.rejects(MetadataStore.open({ connectionString: url, dataDir: data.dir }), {
      code: 'SCHEMA_TOO_NEW',
      message: `the database has schema migration(s) ${future} that this version of Orrery does not know (it knows 1 to ${migrations.length}); run a newer Orrery`,
    });
  });

  it('applies all pending migrations or none', async () => {
    const url = await freshDatabase(server.connectionString, 'all_or_nothing');
    const version = migrations.length + 1;
    const broken = [
      ...migrations,
      { version, name: 'broken', sql: 'CREATE TABLE half_done (x int); SELECT no_such_column FROM half_done' },
    ];
    await withPool(url, async (c) => {
      await assert.rejects(
        migrate(c, () => {}, broken),
        {
          code: 'MIGRATION_FAILED',
          message: `schema migration ${version} (broken) failed: column "no_such_column" does not exist`,
        },
      );
      const { rows } = await c.query(
        `SELECT to_regclass('half_done') AS half, to_regclass('processes') AS processes, to_regclass('orrery_migrations') AS log`,
      );
      assert.deepEqual(rows, [{ half: null, processes: null, log: null }]);
    });
  });

  describe('a connection Postgres ends while it is checked out (pg_terminate_backend: a failover, an admin)', () => {
    let store: MetadataStore;
    let holder: pg.Client;
    before(async () => {
      store = await MetadataStore.open({
        connectionString: await freshDatabase(server.connectionString, 'terminated'),
        dataDir: data.dir,
      });
      holder = new pg.Client({ connectionString: store.connectionString });
      await holder.connect();
    });
    after(async () => {
      await holder.end();
      await store.close();
    });

    /** Runs `statement` once `holder` keeps an advisory lock it waits on, and ends its backend while it waits. */
    const terminatedWhileWaiting = async (statement: () => Promise<unknown>): Promise<void> => {
      const key = 7_202_612;
      await holder.query('SELECT pg_advisory_lock($1)', [key]);
      try {
        let settled = false;
        const outcome = statement().then(
          () => undefined,
          (error: unknown) => error,
        );
        void outcome.then(() => (settled = true));
        // Until it waits (a statement that failed first is then asserted on, not waited for).
        while (!settled) {
          const { rows } = await holder.query<{ pid: number }>(
            `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted`,
            [key],
          );
          if (rows.length > 0) {
            await holder.query('SELECT pg_terminate_backend($1)', [rows[0].pid]);
            break;
          }
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        const error = await outcome;
        assert.ok(error !== undefined, 'the statement in flight succeeded');
        assert.equal((error as { code?: unknown }).code, 'METADATA_UNAVAILABLE');
        assert.equal((error as { status?: unknown }).status, 'UNAVAILABLE');
        assert.match((error as Error).message, /metadata database cannot be reached/);
      } finally {
        await holder.query('SELECT pg_advisory_unlock($1)', [key]);
      }
      // Without an 'error' listener on the checked-out client, the connection's end was an uncaught error: the
      // process died before getting here.
      const { rows } = await store.query<{ one: number }>('SELECT 1 AS one');
      assert.deepEqual(rows, [{ one: 1 }]);
    };

    it("fails a transaction's statement with METADATA_UNAVAILABLE, and the store keeps serving", async () => {
      await terminatedWhileWaiting(() =>
        store.transaction((tx) => tx.query('SELECT pg_advisory_xact_lock($1)', [7_202_612])),
      );
      await store.transaction(async (tx) => assert.deepEqual((await tx.query('SELECT 2 AS two')).rows, [{ two: 2 }]));
    });

    it('fails a plain statement with METADATA_UNAVAILABLE, and the store keeps serving', async () => {
      await terminatedWhileWaiting(() => store.query('SELECT pg_advisory_xact_lock($1)', [7_202_612]));
    });
  });

  describe('schema rules', () => {
    let store: MetadataStore;
    before(async () => {
      store = await MetadataStore.open({
        connectionString: await freshDatabase(server.connectionString, 'rules'),
        dataDir: data.dir,
      });
    });
    after(() => store.close());

    const partition = (
      begin: string,
      end: string,
      opts: { instance?: string; hash?: string; path?: string } = {},
    ): Promise<unknown> =>
      store.query(
        `INSERT INTO lakehouse_partitions (view_set_name, view_instance_id, begin_insert_time, end_insert_time, file_path, file_schema_hash, source_data_hash, num_rows)
         VALUES ('log_entries', $1, $2, $3, $4, $5, '\\x0100000000000000', 1)`,
        [
          opts.instance ?? 'global',
          begin,
          end,
          opts.path ?? `views/log_entries/${opts.instance ?? 'global'}/${begin}.parquet`,
          Buffer.from(opts.hash ?? '06', 'hex'),
        ],
      );

    it('refuses a partition overlapping another of the same view, instance and schema hash', async () => {
      await partition('2026-01-01T00:00:00Z', '2026-01-01T01:00:00Z');
      await assert.rejects(partition('2026-01-01T00:30:00Z', '2026-01-01T01:30:00Z'), {
        code: '23P01',
        constraint: 'lakehouse_partitions_no_overlap',
      });
      await assert.rejects(partition('2026-01-01T00:10:00Z', '2026-01-01T00:20:00Z'), { code: '23P01' });
    });

    it('accepts an adjacent partition (ranges are half-open) and overlaps across hashes or instances', async () => {
      await partition('2026-01-01T01:00:00Z', '2026-01-01T02:00:00Z');
      await partition('2026-01-01T00:30:00Z', '2026-01-01T01:30:00Z', { hash: '07', path: 'other-hash.parquet' });
      await partition('2026-01-01T00:30:00Z', '2026-01-01T01:30:00Z', { instance: 'process-1' });
      const { rows } = await store.query('SELECT count(*)::int AS n FROM lakehouse_partitions');
      assert.deepEqual(rows, [{ n: 4 }]);
    });

    it('refuses an inverted insert range', async () => {
      await assert.rejects(partition('2026-01-02T01:00:00Z', '2026-01-02T00:00:00Z'), {
        code: '23514',
        constraint: 'lakehouse_partitions_insert_range',
      });
    });

    it('refuses a malformed audience and a duplicate block id', async () => {
      const block = (audience: string): Promise<unknown> =>
        store.query(
          `INSERT INTO blocks (block_id, stream_id, process_id, audience) VALUES ('00000000-0000-4000-8000-000000000001', gen_random_uuid(), gen_random_uuid(), $1)`,
          [audience],
        );
      await assert.rejects(block('not an audience'), { code: '23514', constraint: 'blocks_audience_name' });
      await block('team-a');
      await assert.rejects(block('team-a'), { code: '23505', constraint: 'blocks_block_id_unique' });
    });

    it('commits a transaction that resolves and rolls back one that throws', async () => {
      const rule = (reason: string) => (c: { query(text: string, values: unknown[]): Promise<unknown> }) =>
        c.query(`INSERT INTO query_deny_list (match_expr, reason, created_by) VALUES ('true', $1, 'admin')`, [reason]);
      await store.transaction(rule('kept'));
      await assert.rejects(
        store.transaction(async (c) => {
          await rule('dropped')(c);
          throw new Error('changed my mind');
        }),
        { message: 'changed my mind' },
      );
      const { rows } = await store.query('SELECT rule_id::int, reason FROM query_deny_list');
      assert.deepEqual(rows, [{ rule_id: 1, reason: 'kept' }]);
    });
  });

  describe('the transaction helper (issue 8)', () => {
    let url: string;
    before(async () => {
      url = await freshDatabase(server.connectionString, 'transactions');
    });

    const backendPid = async (db: { query(text: string): Promise<pg.QueryResult> }): Promise<number> =>
      (await db.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;

    it('destroys a connection whose ROLLBACK failed instead of handing it to the next caller', async () => {
      // query_timeout gives up on a statement without ending the connection, which stays busy
      // with it: the ROLLBACK queued behind the work's long statement times out as well.
      const pool = new pg.Pool({ connectionString: url, max: 1, query_timeout: 500 });
      pool.on('error', () => {});
      try {
        const before = await backendPid(pool);
        await assert.rejects(
          transaction(pool, (tx) => tx.query('SELECT pg_sleep(3)')),
          { message: 'Query read timeout' },
        );
        assert.equal(pool.totalCount, 0, 'the broken connection left the pool');
        assert.notEqual(await backendPid(pool), before, 'the next caller got a new connection');
      } finally {
        await pool.end();
      }
    });

    it("stops a transaction's wait on a lock when its client gives up, with every pooled connection taken", async () => {
      // One pooled connection, the transaction's own: the cancel of its wait cannot be one of the pool's (it waited
      // for the transaction's connection, which waited on the lock).
      const pool = new pg.Pool({ connectionString: url, max: 1 });
      pool.on('error', () => {});
      const holder = new pg.Client({ connectionString: url });
      const watcher = new pg.Client({ connectionString: url });
      await holder.connect();
      await watcher.connect();
      try {
        await holder.query('CREATE TABLE IF NOT EXISTS locked_for_cancel (x int)');
        await holder.query('BEGIN');
        await holder.query('LOCK TABLE locked_for_cancel IN ACCESS EXCLUSIVE MODE');
        const { gaveUp, gone, whileCallLive } = aCall();
        const waiting = whileCallLive(() =>
          transaction(pool, (tx) => tx.query('SELECT count(*) FROM locked_for_cancel')),
        );
        // Aborted once the transaction's statement waits on the lock (read by a connection outside a transaction:
        // one inside reads the activity as of its first read).
        while (
          Number(
            (
              await watcher.query(
                "SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FROM locked_for_cancel'",
              )
            ).rows[0].n,
          ) === 0
        );
        gaveUp.abort();
        // Settles while the lock is still held.
        await assert.rejects(waiting, gone);
      } finally {
        await holder.query('ROLLBACK').catch(() => {});
        await holder.end();
        await watcher.end();
        await pool.end();
      }
    });

    it("sends nothing more once its statement's client gave up: a cancel that finds the connection idle is dropped", async () => {
      await withPool(url, async (pool) => {
        await pool.query('CREATE SEQUENCE IF NOT EXISTS sent_after_giving_up');
        const { gaveUp, gone, whileCallLive } = aCall();
        const run = whileCallLive(() =>
          transaction(pool, async (tx) => {
            await tx.query('SELECT 1');
            // Between two statements: the connection is idle in its transaction, where Postgres drops a cancel.
            gaveUp.abort();
            // nextval is not rolled back: a statement sent now would be seen after the transaction.
            await tx.query("SELECT nextval('sent_after_giving_up')");
          }),
        );
        await assert.rejects(run, gone);
        const { rows } = await pool.query('SELECT is_called FROM sent_after_giving_up');
        assert.equal(rows[0].is_called, false, 'a statement was sent after the client gave up');
      });
    });

    it("cancels a given-up statement's wait again while it is out: a cancel that arrives before it is read is dropped", async () => {
      // The statement absorbs the first cancel (as Postgres drops one that reaches the backend before it has read the
      // statement sent just before), then waits on a lock: only a cancel sent again ends that wait.
      await withPool(url, async (pool) => {
        const holder = new pg.Client({ connectionString: url });
        const watcher = new pg.Client({ connectionString: url });
        await holder.connect();
        await watcher.connect();
        try {
          await holder.query('CREATE TABLE IF NOT EXISTS locked_after_a_cancel (x int)');
          await holder.query('BEGIN');
          await holder.query('LOCK TABLE locked_after_a_cancel IN ACCESS EXCLUSIVE MODE');
          const { gaveUp, gone, whileCallLive } = aCall();
          const waiting = whileCallLive(() =>
            transaction(pool, (tx) =>
              tx.query(`DO $$ BEGIN
                  BEGIN PERFORM pg_sleep(600); EXCEPTION WHEN query_canceled THEN NULL; END;
                  LOCK TABLE locked_after_a_cancel IN ACCESS SHARE MODE;
                END $$`),
            ),
          );
          // Aborted once the statement sleeps (read outside a transaction, which would read a frozen activity).
          const sleeping = async (): Promise<boolean> =>
            Number(
              (
                await watcher.query(
                  "SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND query LIKE '%locked_after_a_cancel%'",
                )
              ).rows[0].n,
            ) > 0;
          while (!(await sleeping()));
          gaveUp.abort();
          // Settles while the lock is still held.
          await assert.rejects(waiting, gone);
        } finally {
          await holder.query('ROLLBACK').catch(() => {});
          await holder.end();
          await watcher.end();
        }
      });
    });

    it("keeps serving when Postgres ends the connection a given-up statement's cancels are sent on", async () => {
      // The statement absorbs every cancel until told to stop, so the cancel loop goes on sending them on its own
      // connection, which an admin (or a failover) then ends: without an 'error' listener on that connection, its end
      // was an uncaught error.
      await withPool(url, async (pool) => {
        const watcher = new pg.Client({ connectionString: url });
        await watcher.connect();
        try {
          await watcher.query('CREATE TABLE IF NOT EXISTS cancels_absorbed_until (x int)');
          const { gaveUp, whileCallLive } = aCall();
          const waiting = whileCallLive(() =>
            transaction(pool, (tx) =>
              tx.query(`DO $$ BEGIN LOOP
                  BEGIN PERFORM pg_sleep(600); EXCEPTION WHEN query_canceled THEN NULL; END;
                  EXIT WHEN EXISTS (SELECT 1 FROM cancels_absorbed_until);
                END LOOP; END $$`),
            ),
          );
          const pids = async (sql: string): Promise<number[]> =>
            (await watcher.query<{ pid: number }>(sql)).rows.map((r) => r.pid);
          const statement = `SELECT pid FROM pg_stat_activity WHERE query LIKE 'DO $$ BEGIN LOOP%' AND state = 'active'`;
          while ((await pids(`${statement} AND wait_event = 'PgSleep'`)).length === 0);
          gaveUp.abort();
          const cancelling = `SELECT pid FROM pg_stat_activity WHERE query LIKE 'SELECT pg_cancel_backend%' AND pid <> pg_backend_pid()`;
          let cancels: number[] = [];
          while ((cancels = await pids(cancelling)).length === 0);
          await watcher.query('SELECT pg_terminate_backend($1)', [cancels[0]]);
          // The statement, no longer cancelled, is told to stop and cancelled once more: its transaction rolls back.
          await watcher.query('INSERT INTO cancels_absorbed_until VALUES (1)');
          for (const pid of await pids(statement)) await watcher.query('SELECT pg_cancel_backend($1)', [pid]);
          await assert.rejects(waiting);
          assert.deepEqual((await pool.query('SELECT 1 AS one')).rows, [{ one: 1 }]);
        } finally {
          await watcher.end();
        }
      });
    });

    it("is a statement's commit point only if it wrote: a read before the client gave up does not let a write through", async () => {
      await withPool(url, async (pool) => {
        await pool.query('CREATE TABLE IF NOT EXISTS written_after_a_read (x int)');
        const { gaveUp, gone, whileCallLive } = aCall();
        const run = whileCallLive(async () => {
          await transaction(pool, (tx) => tx.query('SELECT count(*) FROM written_after_a_read'));
          gaveUp.abort();
          await transaction(pool, (tx) => tx.query('INSERT INTO written_after_a_read VALUES (1)'));
        });
        await assert.rejects(run, gone);
        const { rows } = await pool.query('SELECT count(*)::int AS n FROM written_after_a_read');
        assert.deepEqual(rows, [{ n: 0 }], 'the write committed after its client gave up');
      });
    });

    it("is a statement's commit point when a SELECT wrote: what follows it is kept whatever the client does", async () => {
      await withPool(url, async (pool) => {
        await pool.query('CREATE TABLE IF NOT EXISTS written_by_a_select (x int)');
        const { gaveUp, whileCallLive } = aCall();
        await whileCallLive(async () => {
          // Its command tag is SELECT: only Postgres's transaction id tells it wrote.
          await transaction(pool, (tx) =>
            tx.query('WITH w AS (INSERT INTO written_by_a_select VALUES (1) RETURNING x) SELECT count(*) FROM w'),
          );
          gaveUp.abort();
          await transaction(pool, (tx) => tx.query('INSERT INTO written_by_a_select VALUES (2)'));
        });
        const { rows } = await pool.query('SELECT x FROM written_by_a_select ORDER BY x');
        assert.deepEqual(rows, [{ x: 1 }, { x: 2 }]);
      });
    });

    it('commits, as before, a transaction of reads whose work caught a failed statement', async () => {
      await withPool(url, async (pool) => {
        const call = { signal: new AbortController().signal, gone: () => undefined };
        const result = await whileLive(call, () =>
          transaction(pool, async (tx) => {
            await tx.query('SELECT 1');
            await tx.query('SELECT no_such_column').catch(() => {});
            return 'done';
          }),
        );
        assert.equal(result, 'done');
      });
    });

    it('returns a connection whose transaction rolled back cleanly to the pool', async () => {
      await withPool(url, async (pool) => {
        const before = await backendPid(pool);
        await assert.rejects(
          transaction(pool, (tx) => tx.query('SELECT no_such_column')),
          { code: '42703' },
        );
        assert.equal(await backendPid(pool), before);
      });
    });

    it('holds an advisory lock across work without keeping a pooled connection from it', async () => {
      const [store, other] = await Promise.all([
        MetadataStore.open({ connectionString: url, dataDir: data.dir, maxConnections: 1 }),
        MetadataStore.open({ connectionString: url, dataDir: data.dir, maxConnections: 1 }),
      ]);
      try {
        const inside = await store.locks.tryWhileHolding('range-1', async () => ({
          // With the lock on the pool's only connection, this statement would wait for it forever.
          pid: await backendPid(store),
          sameProcess: await store.locks.tryWhileHolding('range-1', async () => 'ran twice'),
          otherProcess: await other.locks.tryWhileHolding('range-1', async () => 'ran twice'),
          otherKey: await other.locks.tryWhileHolding('range-2', async () => 'ran'),
        }));
        assert.deepEqual(
          { ...inside, pid: typeof inside?.pid },
          { pid: 'number', sameProcess: undefined, otherProcess: undefined, otherKey: 'ran' },
        );
        assert.equal(
          await other.locks.tryWhileHolding('range-1', async () => 'ran after release'),
          'ran after release',
        );
      } finally {
        await Promise.all([store.close(), other.close()]);
      }
    });

    it('releases the locks when the store closes', async () => {
      const [store, other] = await Promise.all([
        MetadataStore.open({ connectionString: url, dataDir: data.dir }),
        MetadataStore.open({ connectionString: url, dataDir: data.dir }),
      ]);
      try {
        let release!: () => void;
        const held = store.locks.tryWhileHolding('range-3', () => new Promise<void>((resolve) => (release = resolve)));
        while (!release) await new Promise((resolve) => setTimeout(resolve, 10));
        assert.equal(await other.locks.tryWhileHolding('range-3', async () => 'ran'), undefined);
        const closing = store.close();
        release();
        await held;
        await closing;
        assert.equal(await other.locks.tryWhileHolding('range-3', async () => 'ran'), 'ran');
        await assert.rejects(
          store.locks.tryWhileHolding('range-4', async () => 'ran'),
          { code: 'METADATA_CLOSED' },
        );
      } finally {
        await Promise.all([store.close(), other.close()]);
      }
    });
  });
});
