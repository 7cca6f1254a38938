// Issue 12: series tables created and written through Flight SQL, stored as DuckLake tables (catalog
// in Orrery's Postgres, Parquet under the lake), read back filtered by audience, and kept away from
// any statement that would reach DuckLake's catalog, snapshots or files directly.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { RecordBatchReader } from 'apache-arrow';
import {
  clientFor,
  plainRows,
  refusal,
  scalar,
  sharedEnv,
  startRole,
  startTestPostgres,
  type InProcessOrrery,
  type TestKey,
  type TestPostgres,
} from '../lakehouse/lakehouse-fixtures.js';
import type { TestFlightClient } from '../support/flight-client.js';

const admin: TestKey = { name: 'admin', key: 'admin-key-series-0001', audiences: ['ops'] };
const teamA: TestKey = { name: 'team-a', key: 'team-a-key-series-0001', audiences: ['team-a'] };
const teamB: TestKey = { name: 'team-b', key: 'team-b-key-series-0001', audiences: ['team-b'] };

describe('series tables (issue 12)', () => {
  let postgres: TestPostgres;
  let lakeDir: string;
  let orrery: InProcessOrrery;
  let asAdmin: TestFlightClient;
  let asTeamA: TestFlightClient;
  let asTeamB: TestFlightClient;
  const env = (): Record<string, string> =>
    sharedEnv({
      keys: [admin, teamA, teamB],
      admins: [admin.name],
      connectionString: postgres.connectionString,
      lakeDir,
    });

  before(async () => {
    postgres = await startTestPostgres();
    lakeDir = mkdtempSync(join(tmpdir(), 'orrery-series-lake-'));
    orrery = await startRole('serve', env());
    asAdmin = clientFor(orrery.flightPort, admin);
    asTeamA = clientFor(orrery.flightPort, teamA);
    asTeamB = clientFor(orrery.flightPort, teamB);
  });
  after(async () => {
    for (const c of [asAdmin, asTeamA, asTeamB]) c?.close();
    await orrery?.close();
    await postgres?.close();
    rmSync(lakeDir, { recursive: true, force: true });
  });

  it('an admin creates one; it is a table like the view sets, with the audience column added', async () => {
    assert.equal(
      await asAdmin.updateCount(
        `CREATE TABLE metrics (ts TIMESTAMP, host VARCHAR, cpu DOUBLE) WITH (time_column = 'ts')`,
      ),
      0,
    );
    const { table } = await asTeamA.command('CommandGetTables', {
      tableNameFilterPattern: 'metrics',
      includeSchema: true,
    });
    assert.deepEqual(table.getChild('table_name')!.toArray(), ['metrics']);
    const schemaBytes = table.getChild('table_schema')!.get(0) as Uint8Array;
    const reader = RecordBatchReader.from(Uint8Array.from([...schemaBytes, 255, 255, 255, 255, 0, 0, 0, 0]));
    reader.open();
    assert.deepEqual(
      reader.schema.fields.map((f) => [f.name, String(f.type)]),
      [
        ['ts', 'Timestamp<NANOSECOND, UTC>'],
        ['host', 'Utf8'],
        ['cpu', 'Float64'],
        ['audience', 'Utf8'],
      ],
    );
    const sets = await plainRows(
      asTeamA,
      `SELECT view_set_name, schema FROM list_view_sets() WHERE view_set_name = 'metrics'`,
    );
    assert.deepEqual(sets, [
      { view_set_name: 'metrics', schema: 'ts TIMESTAMP, host VARCHAR, cpu DOUBLE, audience VARCHAR' },
    ]);
  });

  it('refuses a second table of the same name, a view set name, and an unknown option', async () => {
    assert.match(
      (await refusal(asAdmin.updateCount('CREATE TABLE metrics (ts TIMESTAMP)'))).details,
      /series table 'metrics' already exists/,
    );
    assert.equal(await asAdmin.updateCount('CREATE TABLE IF NOT EXISTS metrics (ts TIMESTAMP)'), 0);
    assert.match(
      (await refusal(asAdmin.updateCount('CREATE TABLE log_entries (ts TIMESTAMP)'))).details,
      /name of a view set/,
    );
    const bad = await refusal(asAdmin.updateCount(`CREATE TABLE t1 (ts TIMESTAMP) WITH (partition_by = 'ts')`));
    assert.equal(bad.code, 3);
    assert.match(bad.details, /unknown option 'partition_by'/);
    const twoClocks = await refusal(asAdmin.updateCount('CREATE TABLE t2 (a TIMESTAMP, b TIMESTAMP)'));
    assert.match(twoClocks.details, /several timestamp columns \(a, b\)/);
    const notTime = await refusal(asAdmin.updateCount(`CREATE TABLE t3 (a VARCHAR) WITH (time_column = 'a')`));
    assert.match(notTime.details, /time_column 'a' is VARCHAR/);
  });

  it('any key inserts; rows of a non-admin carry its first audience whatever it sends', async () => {
    assert.equal(
      await asTeamA.updateCount(
        `INSERT INTO metrics VALUES ('2024-05-01 10:00:00', 'web-1', 0.5), ('2024-05-01 10:01:00', 'web-1', 0.7)`,
      ),
      2,
    );
    assert.equal(
      await asTeamA.updateCount(
        `INSERT INTO metrics (ts, host, cpu, audience) VALUES ('2024-05-01 10:02:00', 'web-1', 0.9, 'team-b')`,
      ),
      1,
    );
    assert.equal(
      await asTeamB.updateCount(`INSERT INTO metrics SELECT '2024-05-01 10:00:00'::TIMESTAMP, 'db-1', 0.25, 'public'`),
      1,
    );
    assert.equal(
      await asAdmin.updateCount(`INSERT INTO metrics VALUES ('2024-05-01 11:00:00', 'lb-1', 0.1, 'public')`),
      1,
    );
    assert.deepEqual(
      await plainRows(asAdmin, 'SELECT host, audience, count(*) AS n FROM metrics GROUP BY ALL ORDER BY ALL'),
      [
        { host: 'db-1', audience: 'team-b', n: 1 },
        { host: 'lb-1', audience: 'public', n: 1 },
        { host: 'web-1', audience: 'team-a', n: 3 },
      ],
    );
  });

  it('non-admins read their audiences and public only, through every way of naming the table', async () => {
    assert.deepEqual(await plainRows(asTeamA, 'SELECT host, count(*) AS n FROM metrics GROUP BY 1 ORDER BY 1'), [
      { host: 'lb-1', n: 1 },
      { host: 'web-1', n: 3 },
    ]);
    assert.deepEqual(await plainRows(asTeamB, 'SELECT host FROM main.metrics ORDER BY 1'), [
      { host: 'db-1' },
      { host: 'lb-1' },
    ]);
    assert.equal(await scalar(asTeamB, `SELECT count(*) FROM (SELECT * FROM metrics WHERE audience = 'team-a')`), 0);
  });

  it('a non-admin INSERT ... SELECT reads through the same filter', async () => {
    assert.equal(
      await asTeamB.updateCount("INSERT INTO metrics (ts, host, cpu) SELECT ts, host || '-copy', cpu FROM metrics"),
      2,
    );
    assert.deepEqual(
      await plainRows(asAdmin, `SELECT host, audience FROM metrics WHERE host LIKE '%-copy' ORDER BY 1`),
      [
        { host: 'db-1-copy', audience: 'team-b' },
        { host: 'lb-1-copy', audience: 'team-b' },
      ],
    );
    const sneaky = await refusal(
      asTeamB.updateCount(`INSERT INTO metrics SELECT * FROM read_parquet('${lakeDir}/tables/**/*.parquet')`),
    );
    assert.equal(sneaky.code, 7);
  });

  it('UPDATE, DELETE and TRUNCATE are for admins and return the rows changed', async () => {
    assert.equal((await refusal(asTeamA.updateCount(`UPDATE metrics SET cpu = 0`))).code, 7);
    assert.equal((await refusal(asTeamA.updateCount(`DELETE FROM metrics`))).code, 7);
    assert.equal((await refusal(asTeamA.updateCount(`TRUNCATE metrics`))).code, 7);
    assert.equal(await asAdmin.updateCount(`UPDATE metrics SET cpu = cpu * 2 WHERE host = 'web-1'`), 3);
    assert.equal(await scalar(asAdmin, `SELECT round(sum(cpu), 6) FROM metrics WHERE host = 'web-1'`), 4.2);
    assert.equal(await asAdmin.updateCount(`DELETE FROM metrics WHERE host LIKE '%-copy'`), 2);
    assert.equal(await scalar(asAdmin, 'SELECT count(*) FROM metrics'), 5);
  });

  it('ALTER TABLE adds, renames and drops columns, but keeps the audience and time columns', async () => {
    assert.equal(await asAdmin.updateCount('ALTER TABLE metrics ADD COLUMN region VARCHAR'), 0);
    assert.equal(await asAdmin.updateCount('ALTER TABLE metrics RENAME COLUMN region TO zone'), 0);
    assert.deepEqual(await plainRows(asTeamA, `SELECT count(zone) AS zoned, count(*) AS n FROM metrics`), [
      { zoned: 0, n: 4 },
    ]);
    assert.equal(await asAdmin.updateCount('ALTER TABLE metrics DROP COLUMN zone'), 0);
    assert.match((await refusal(asAdmin.updateCount('ALTER TABLE metrics DROP COLUMN audience'))).details, /audience/);
    assert.match((await refusal(asAdmin.updateCount('ALTER TABLE metrics DROP COLUMN ts'))).details, /time column/);
    assert.equal((await refusal(asTeamA.updateCount('ALTER TABLE metrics ADD COLUMN x INT'))).code, 7);
  });

  it('no statement reaches DuckLake catalog, snapshots, files or Postgres directly, for any key', async () => {
    const attempts = [
      'SELECT * FROM __orrery_lake.main.metrics',
      'SELECT * FROM "__orrery_lake"."main"."metrics"',
      `SELECT * FROM ducklake_snapshots('__orrery_lake')`,
      `SELECT * FROM __orrery_lake.snapshots()`,
      `SELECT * FROM ducklake_table_changes('__orrery_lake', 'main', 'metrics', 0, 1)`,
      'SELECT * FROM __ducklake_metadata___orrery_lake.ducklake.ducklake_snapshot',
      `SELECT * FROM postgres_query('${postgres.connectionString}', 'SELECT 1')`,
      `SELECT * FROM postgres_scan('${postgres.connectionString}', 'public', 'api_keys')`,
      `CALL postgres_execute('x', 'DROP SCHEMA ducklake CASCADE')`,
      'DROP TABLE __orrery_lake.main.metrics',
      'DETACH __orrery_lake',
    ];
    assert.equal((await refusal(asAdmin.query('/* quiet */ DETACH memory'))).code, 7);
    for (const client of [asAdmin, asTeamA]) {
      for (const sql of attempts) {
        const { code, details } = await refusal(client.query(sql));
        assert.equal(code, 7, `${sql}: ${details}`);
        assert.match(details, /internal to Orrery's series tables/, sql);
      }
    }
    // The family of ways to reach them without naming them in the text: SQL built at run time, SQL
    // read from files, and search paths that make bare names resolve there.
    const lake = `'__orr' || 'ery_lake'`;
    const indirect = [
      `SELECT * FROM query('SELECT * FROM ' || ${lake} || '.main.metrics')`,
      `SELECT * FROM "query"('SELECT * FROM ' || ${lake} || '.main.metrics')`,
      `SELECT * FROM query_table(${lake} || '.main.metrics')`,
      `SELECT * FROM query('SELECT * FROM postgres' || '_query(''x'', ''SELECT 1'')')`,
      `SELECT * FROM query('SELECT * FROM __ducklake' || '_metadata___orr' || 'ery_lake.ducklake.ducklake' || '_snapshot')`,
      `SELECT * FROM json_execute_serialized_sql(json_serialize_sql('SELECT * FROM ' || ${lake} || '.main.metrics'))`,
      `PRAGMA json_execute_serialized_sql(json_serialize_sql('DROP TABLE ' || ${lake} || '.main.metrics'))`,
      `CREATE MACRO through(q) AS TABLE SELECT * FROM query(q)`,
      `IMPORT DATABASE '${lakeDir}'`,
      `PRAGMA import_database('${lakeDir}')`,
      `SET search_path = ${lake} || '.main'`,
      `SET SESSION schema = ${lake} || '.main'`,
      `RESET search_path`,
      `USE memory`,
      `SELECT * FROM arrow_scan(0, 0, 0)`,
    ];
    for (const sql of indirect) {
      const { code, details } = await refusal(asAdmin.query(sql));
      assert.equal(code, 7, `${sql}: ${details}`);
      assert.match(details, /^permission denied: .*it is not available$/, sql);
      assert.equal((await refusal(asTeamA.query(sql))).code, 7, sql);
    }
    // As an update (CommandStatementUpdate) too.
    assert.equal((await refusal(asAdmin.updateCount(`SET search_path = ${lake} || '.main'`))).code, 7);
    // Words inside literals and comments are not calls.
    assert.deepEqual(await plainRows(asAdmin, `SELECT 'query(1)' AS q /* query(2) */`), [{ q: 'query(1)' }]);
    // Files and other databases: refused for admins as for non-admins, before DuckDB sees them.
    const outside = [
      `SELECT * FROM read_parquet('s3://bucket/metrics.parquet')`,
      `SELECT * FROM read_csv('http://127.0.0.1:9/x.csv')`,
      `ATTACH 'ducklake:postgres:${postgres.connectionString}' AS other`,
      `ATTACH '${lakeDir}/x.duckdb' AS other`,
    ];
    for (const sql of outside) {
      const forAdmin = await refusal(asAdmin.query(sql)).catch((error: Error) =>
        assert.fail(`${sql}: ${error.message}`),
      );
      assert.match(
        forAdmin.details,
        /reads files; query the view sets|internal to Orrery|ATTACH and DETACH are not available/i,
        sql,
      );
      assert.ok([3, 7].includes(forAdmin.code), `${sql}: ${forAdmin.code}`);
      assert.equal((await refusal(asTeamA.query(sql))).code, 7, sql);
    }
  });

  it('keeps its data as Parquet under the lake and its catalog in Postgres: another server sees the same rows', async () => {
    // Small writes are inlined into the catalog by DuckLake; a larger one is written as Parquet.
    assert.equal(
      await asAdmin.updateCount(
        `INSERT INTO metrics SELECT TIMESTAMP '2024-04-01' + INTERVAL (range) SECOND, 'bulk', 1.0, 'ops' FROM range(5000)`,
      ),
      5000,
    );
    assert.equal(await asAdmin.updateCount(`DELETE FROM metrics WHERE host = 'bulk'`), 5000);
    const files = readdirSync(join(lakeDir, 'tables'), { recursive: true }).map(String);
    assert.ok(
      files.some((f) => f.endsWith('.parquet')),
      files.join(', '),
    );
    const { rows } = await postgres.pool.query(
      `SELECT count(*)::int AS n FROM ducklake.ducklake_table WHERE table_name = 'metrics'`,
    );
    assert.ok(rows[0].n >= 1);
    const second = await startRole('serve', env());
    const other = clientFor(second.flightPort, teamA);
    try {
      assert.equal(await scalar(other, 'SELECT count(*) FROM metrics'), 4);
      assert.equal(await other.updateCount(`INSERT INTO metrics VALUES ('2024-05-02 00:00:00', 'web-2', 0.3)`), 1);
      assert.equal(await scalar(asTeamA, `SELECT count(*) FROM metrics WHERE host = 'web-2'`), 1);
    } finally {
      other.close();
      await second.close();
    }
  });

  it('DROP TABLE removes it; IF EXISTS makes a missing one fine', async () => {
    assert.equal((await refusal(asTeamA.updateCount('DROP TABLE metrics'))).code, 7);
    assert.equal(await asAdmin.updateCount('DROP TABLE metrics'), 0);
    const gone = await refusal(asTeamA.query('SELECT * FROM metrics'));
    assert.equal(gone.code, 7);
    assert.match(gone.details, /relation 'metrics' does not exist/);
    assert.equal(await asAdmin.updateCount('DROP TABLE IF EXISTS metrics'), 0);
  });
});
