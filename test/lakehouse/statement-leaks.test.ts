// Issue 9 (items 2, 4, 6, 7): what a key that is not an admin learns beyond its audiences' rows.
// Two teams share every partition file; each probe runs as team_b, through a real Flight SQL
// client, and must learn nothing of team_a: no statistic, no metadata, no path, no internal SQL,
// no side effect of a statement it may not run.
import assert from 'node:assert/strict';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { logsRequest, postOtlp } from '../support/otlp.js';
import { adminKey, useOrrery } from '../support/orrery-process.js';
import { TestFlightClient } from '../support/flight-client.js';

const teamA = { name: 'team_a', key: 'team-a-key-0123', audiences: ['team_a'] };
const teamB = { name: 'team_b', key: 'team-b-key-0123', audiences: ['team_b'] };
const keys = JSON.stringify([adminKey, teamA, teamB]);
const secret = 'secret-of-team-a';

const rows = async (c: TestFlightClient, sql: string): Promise<unknown[][]> =>
  (await c.query(sql))
    .toArray()
    .map((r) => Object.values(r.toJSON()).map((v) => (typeof v === 'bigint' ? Number(v) : v)));

/** Every file and folder under a directory, as paths relative to it. */
function tree(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort();
}

describe('issue 9: what a non-admin statement reveals', () => {
  const fixture = useOrrery({ MICROMEGAS_API_KEYS: keys, ORRERY_RETIRE_DELAY_SECONDS: '0' }, 'serve');
  let admin: TestFlightClient;
  let b: TestFlightClient;
  let lake: string;

  before(async () => {
    admin = fixture.admin;
    b = new TestFlightClient(fixture.orrery.address);
    b.headers.authorization = `Bearer ${teamB.key}`;
    lake = join(fixture.orrery.dataDir, 'lake');
    const port = fixture.orrery.httpPort;
    const time = 1704164645000000000n;
    const aLogs = [
      { time, severity: 17, body: `${secret} 1` },
      { time: time + 1n, severity: 17, body: `${secret} 2` },
    ];
    assert.equal(
      (await postOtlp(port, 'logs', teamA.key, logsRequest({ 'service.name': 'exe-of-team-a' }, aLogs))).status,
      200,
    );
    const bLogs = [{ time: time + 5n, severity: 9, body: 'hello from b' }];
    assert.equal(
      (await postOtlp(port, 'logs', teamB.key, logsRequest({ 'service.name': 'exe-b' }, bLogs))).status,
      200,
    );
    const now = Math.floor(Date.now() / 1000);
    const range = `'${new Date((Math.floor(now / 60) * 60 - 60) * 1000).toISOString()}', '${new Date((Math.floor(now / 60) * 60 + 120) * 1000).toISOString()}', 180`;
    // errors_only holds team_a's rows alone: team_b sent no error.
    await admin.query(`CREATE MATERIALIZED VIEW errors_only WITH (
      extract_query = $$SELECT time, exe, msg, audience FROM log_entries WHERE level <= 2 AND insert_time >= '{begin}' AND insert_time < '{end}'$$,
      count_src_query = $$SELECT sum(nb_objects) AS count FROM blocks WHERE insert_time >= '{begin}' AND insert_time < '{end}'$$,
      merge_partitions_query = $$SELECT * FROM {source}$$,
      update_group = 5000, time_column = 'time')`);
    for (const view of ['processes', 'log_entries', 'errors_only'])
      await admin.query(`SELECT * FROM materialize_partitions('${view}', ${range})`);
    assert.deepEqual(await rows(admin, 'SELECT count(*) FROM log_entries'), [[3]]);
    assert.deepEqual(await rows(b, 'SELECT msg, exe, audience FROM log_entries'), [
      ['hello from b', 'exe-b', 'team_b'],
    ]);
  });

  /** Each statement is refused with `code`, and the refusal says nothing of team_a or of the server. */
  const refusedAll = async (statements: string[], code = 7): Promise<void> => {
    const answered: string[] = [];
    for (const sql of statements) {
      try {
        const table = await b.query(sql);
        answered.push(
          `${sql} => ${JSON.stringify(table.toArray().slice(0, 3), (_, v) => (typeof v === 'bigint' ? Number(v) : v))}`,
        );
      } catch (error) {
        const { code: got, details } = error as { code: number; details: string };
        if (got !== code) answered.push(`${sql} => code ${got}: ${details}`);
        assertClean(sql, details);
      }
    }
    assert.deepEqual(answered, []);
  };

  const assertClean = (sql: string, text: string): void => {
    for (const leak of [secret, 'exe-of-team-a', 'team_a', lake, fixture.orrery.dataDir, 'read_parquet', '.parquet']) {
      assert.ok(!text.includes(leak), `${sql} revealed ${leak}: ${text}`);
    }
  };

  it('storage statistics and file metadata are out of reach (item 2)', async () => {
    await refusedAll([
      'SELECT stats(msg) FROM log_entries',
      'SELECT stats(audience) FROM log_entries',
      'SELECT main.stats(exe) FROM log_entries',
      'SELECT system.main.stats(exe) FROM log_entries',
      'SELECT list_transform([1], x -> stats(msg)) FROM log_entries',
      'SELECT (SELECT stats(msg) FROM log_entries LIMIT 1)',
      'WITH s AS (SELECT stats(msg) AS s FROM log_entries) SELECT * FROM s',
      "SELECT * FROM parquet_metadata('x.parquet')",
      "SELECT * FROM parquet_schema('x.parquet')",
      "SELECT * FROM parquet_file_metadata('x.parquet')",
      "SELECT * FROM parquet_kv_metadata('x.parquet')",
      "SELECT * FROM pragma_storage_info('log_entries')",
      'SELECT * FROM pragma_database_size()',
      "SELECT get_block_size('orrery')",
      "SELECT json_serialize_plan('SELECT * FROM log_entries')",
    ]);
  });

  it('catalog functions, catalog relations and settings are out of reach (items 2 and 7)', async () => {
    await refusedAll([
      'SELECT * FROM duckdb_views()',
      'SELECT * FROM duckdb_tables()',
      'SELECT * FROM duckdb_functions()',
      'SELECT * FROM duckdb_settings()',
      'SELECT * FROM duckdb_temporary_files()',
      'SELECT * FROM duckdb_views',
      'SELECT * FROM duckdb_settings',
      'SELECT * FROM pg_views',
      'SELECT * FROM pg_catalog.pg_views',
      'SELECT * FROM pg_class',
      'SELECT * FROM information_schema.views',
      'SELECT * FROM information_schema.schemata',
      'SELECT * FROM system.main.duckdb_views',
      "SELECT current_setting('allowed_directories')",
      "SELECT current_setting('temp_directory')",
      "SELECT list_transform(['allowed_directories'], s -> current_setting(s))",
      "SELECT getvariable('x')",
      'SELECT pg_get_viewdef(0)',
      "SELECT in_search_path('orrery', 'main')",
      "SELECT nextval('s')",
      "SELECT write_log('x')",
      'SELECT * FROM (SELECT sql FROM duckdb_views()) v',
    ]);
  });

  it('information_schema.columns lists the columns of what the key may query, and nothing internal', async () => {
    const listed = await rows(
      b,
      'SELECT DISTINCT table_schema, table_name FROM information_schema.columns ORDER BY ALL',
    );
    const tables = await rows(b, 'SELECT table_schema, table_name FROM information_schema.tables ORDER BY ALL');
    assert.deepEqual(listed, tables);
    const text = JSON.stringify(await rows(b, 'SELECT * FROM information_schema.columns'));
    for (const leak of ['__', 'read_parquet', lake, fixture.orrery.dataDir]) assert.ok(!text.includes(leak), leak);
  });

  it("ordinary functions still work, Orrery's own included", async () => {
    assert.deepEqual(
      await rows(
        b,
        "SELECT count(*), max(length(msg)), upper(any_value(exe)), regexp_matches(min(msg), 'hello'), date_bin('1 minute', min(time)) IS NOT NULL, arrow_cast(1, 'Int64') FROM log_entries",
      ),
      [[1, 12, 'EXE-B', true, true, 1]],
    );
    assert.deepEqual(
      await rows(b, "SELECT list_transform([1, 2], x -> x * 10)::VARCHAR, strftime(TIMESTAMP '2024-01-02', '%Y')"),
      [['[10, 20]', '2024']],
    );
    assert.deepEqual(
      await rows(
        b,
        'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT sum(n)::BIGINT FROM r',
      ),
      [[6]],
    );
    assert.deepEqual(await rows(b, 'WITH x AS (SELECT count(*) AS n FROM log_entries) SELECT n FROM x'), [[1]]);
  });

  it('a CTE name shadows a catalog view only where it is in scope', async () => {
    await refusedAll([
      'WITH pg_views AS (SELECT * FROM pg_views) SELECT * FROM pg_views',
      'SELECT * FROM (WITH pg_views AS (SELECT 1) SELECT * FROM pg_views) a, pg_views',
      'WITH a AS (SELECT * FROM duckdb_views), duckdb_views AS (SELECT 1) SELECT * FROM a',
      'SHOW DATABASES',
    ]);
  });

  it('statements other than SELECT are refused before DuckDB sees them: no folder, file or catalog entry appears (item 6)', async () => {
    const catalog = async (): Promise<unknown[][]> =>
      rows(
        admin,
        `SELECT (SELECT count(*) FROM duckdb_tables()), (SELECT count(*) FROM duckdb_views() WHERE NOT temporary),
                (SELECT count(*) FROM duckdb_sequences()), (SELECT count(*) FROM duckdb_databases()),
                (SELECT count(*) FROM duckdb_functions()), (SELECT count(*) FROM duckdb_types())`,
      );
    const before = { files: tree(lake), catalog: await catalog() };
    const statements = [
      `EXPORT DATABASE '${lake}/exported'`,
      `EXPORT DATABASE '${lake}/exported' (FORMAT parquet)`,
      `COPY (SELECT 1) TO '${lake}/copied.csv'`,
      `COPY (SELECT * FROM log_entries) TO '${lake}/copied.parquet' (FORMAT parquet)`,
      `ATTACH '${lake}/attached.db' AS attached`,
      `IMPORT DATABASE '${lake}'`,
      'INSTALL httpfs',
      'LOAD httpfs',
      'PRAGMA enable_profiling',
      "PRAGMA profiling_output = '/tmp/orrery-profile.json'",
      'SET threads = 1',
      "SET VARIABLE leaked = 'x'",
      'CREATE TABLE made_by_b (a INT)',
      "CREATE TABLE made_by_b AS SELECT * FROM read_parquet('x')",
      'CREATE SEQUENCE seq_by_b',
      'CREATE MACRO macro_by_b(x) AS x',
      'CREATE VIEW view_by_b AS SELECT 1',
      "CREATE TYPE type_by_b AS ENUM ('a')",
      'CREATE SCHEMA schema_by_b',
      "CREATE SECRET secret_by_b (TYPE s3, KEY_ID 'k', SECRET 's')",
      'CALL pragma_version()',
      'CHECKPOINT',
      'VACUUM',
      'ANALYZE',
      'DETACH orrery',
      'USE system',
      'BEGIN TRANSACTION',
      'EXPLAIN SELECT * FROM log_entries',
      'EXPLAIN ANALYZE SELECT * FROM log_entries',
      'SELECT 1; CREATE TABLE made_by_b (a INT)',
    ];
    const answered: string[] = [];
    for (const sql of statements) {
      for (const [path, run] of [
        ['query', () => b.query(sql)],
        ['update', () => b.updateCount(sql)],
        ['prepare', () => b.prepare(sql)],
      ] as const) {
        try {
          await run();
          answered.push(`${path} ${sql}: answered`);
        } catch (error) {
          const { code, details } = error as { code: number; details: string };
          if (code !== 7 && code !== 3) answered.push(`${path} ${sql}: code ${code} ${details}`);
          assertClean(sql, details.replaceAll(lake, '<the lake named in the statement>'));
        }
      }
    }
    assert.deepEqual(answered, []);
    assert.deepEqual({ files: tree(lake), catalog: await catalog() }, before);
  });

  /** Adds a deny rule as the admin; its id. */
  const addRule = async (expr: string, reason: string): Promise<number> => {
    const [message] = [
      ...(await admin.query(`SELECT * FROM deny_queries(${quote(expr)}, ${quote(reason)})`)).getChild('msg')!,
    ] as string[];
    return Number(/^added rule (\d+)$/.exec(message)![1]);
  };
  const removeRule = (id: number): Promise<unknown> => admin.query(`SELECT * FROM remove_query_denial(${id})`);
  const quote = (text: string): string => `'${text.replaceAll("'", "''")}'`;
  const deniedBy = (id: number, reason: string) => ({ code: 8, details: `query denied by rule ${id}: ${reason}` });

  it('deny rules see the view sets a statement reads, however they are spelled (item 4)', async () => {
    const id = await addRule("user_id = 'team_b' AND list_contains(tables, 'log_entries')", 'log_entries is closed');
    try {
      for (const sql of [
        'SELECT count(*) FROM log_entries',
        'SELECT count(*) FROM "log_entries"',
        'SELECT count(*) FROM main.log_entries',
        "SELECT count(*) FROM view_instance(E'log\\x5fentries', 'global')",
        "SELECT count(*) FROM view_instance(E'log\\137entries', 'global')",
        "SELECT count(*) FROM view_instance('log_entries', 'global')",
        'WITH x AS (SELECT * FROM log_entries) SELECT count(*) FROM x',
        'SELECT (SELECT count(*) FROM log_entries)',
        'SELECT 1 WHERE EXISTS (SELECT 1 FROM log_entries)',
      ]) {
        await assert.rejects(b.query(sql), deniedBy(id, 'log_entries is closed'), sql);
      }
      // A view set named by an expression is not resolved: the call is refused instead.
      await assert.rejects(b.query("SELECT count(*) FROM view_instance('log' || '_entries', 'global')"), { code: 3 });
      assert.deepEqual(await rows(b, 'WITH log_entries AS (SELECT 1 AS n) SELECT n FROM log_entries'), [[1]]);
      assert.deepEqual(await rows(b, 'SELECT count(*) FROM processes'), [[1]]);
    } finally {
      await removeRule(id);
    }
    assert.deepEqual(await rows(b, 'SELECT count(*) FROM log_entries'), [[1]]);
  });

  it('deny rules see the view sets explain_resources and resource_omissions read of their arguments', async () => {
    const id = await addRule("user_id = 'team_b' AND list_contains(tables, 'log_entries')", 'log_entries is closed');
    const omissions = (resources: object): string =>
      `SELECT * FROM resource_omissions(${quote(JSON.stringify({ files: { 'resources/r.resources.json': JSON.stringify({ resources }) } }))})`;
    const minmax = (table: string) => ({ lvl: { index: { table, column: 'level', kind: 'minmax' } } });
    const onLogEntries = omissions(minmax('log_entries'));
    try {
      for (const sql of [
        onLogEntries,
        omissions(minmax('LOG_ENTRIES')),
        omissions(minmax('views/entries.sql#log_entries')),
        // A JSON escape in the file's text names the same view set.
        onLogEntries.replace('log_entries', 'log\\\\u005fentries'),
        omissions({ ...minmax('processes'), other: minmax('log_entries').lvl }),
        "SELECT * FROM explain_resources('SELECT count(*) FROM log_entries')",
        "SELECT * FROM explain_resources('SELECT count(*) FROM view_instance(''log_entries'', ''global'')')",
        `SELECT * FROM explain_resources(${quote(`SELECT * FROM explain_resources(${quote(onLogEntries)})`)})`,
      ]) {
        await assert.rejects(b.query(sql), deniedBy(id, 'log_entries is closed'), sql);
      }
      // Calls naming other view sets are answered.
      await b.query(omissions(minmax('processes')).replace('level', 'exe'));
      await b.query("SELECT * FROM explain_resources('SELECT count(*) FROM processes')");
    } finally {
      await removeRule(id);
    }
    await b.query(onLogEntries);
    await b.query("SELECT * FROM explain_resources('SELECT count(*) FROM log_entries')");
  });

  it('deny rules see the functions a statement calls (item 4)', async () => {
    const id = await addRule(
      "list_contains(functions, 'regexp_matches') OR list_contains(functions, 'list_partitions')",
      'no regexes',
    );
    try {
      for (const sql of [
        "SELECT regexp_matches('a', 'a')",
        `SELECT "regexp_matches"('a', 'a')`,
        "SELECT REGEXP_MATCHES('a', 'a')",
        "SELECT list_transform(['a'], x -> regexp_matches(x, 'a'))",
        'SELECT count(*) FROM list_partitions()',
      ]) {
        await assert.rejects(b.query(sql), deniedBy(id, 'no regexes'), sql);
        await assert.rejects(admin.query(sql), deniedBy(id, 'no regexes'), sql);
      }
      assert.deepEqual(await rows(b, "SELECT 'a' ~ 'a'"), [[true]]);
    } finally {
      await removeRule(id);
    }
  });

  it('only a statement that is rule management alone skips the rules (item 4)', async () => {
    const id = await addRule("user_id = 'admin'", 'admins are paused');
    try {
      assert.equal(
        (await admin.query("SELECT rule_id FROM list_query_denials() WHERE reason ILIKE '%paused%'")).numRows,
        1,
      );
      for (const sql of [
        'SELECT * FROM list_query_denials(), log_entries',
        'SELECT (SELECT count(*) FROM log_entries) FROM list_query_denials()',
        'SELECT rule_id FROM list_query_denials() UNION ALL SELECT range FROM range(1)',
        "SELECT current_setting('threads') FROM list_query_denials()",
        'WITH x AS (SELECT * FROM log_entries) SELECT * FROM list_query_denials(), x',
        'SELECT 1',
      ]) {
        await assert.rejects(admin.query(sql), deniedBy(id, 'admins are paused'), sql);
      }
    } finally {
      await removeRule(id);
    }
    assert.deepEqual(await rows(admin, 'SELECT count(*) FROM list_query_denials()'), [[0]]);
  });

  it('a rule that fails on a statement refuses it without quoting the check (items 4 and 7)', async () => {
    const marker = await addRule("user_id = 'nobody' AND sql = 'marker-of-another-rule'", 'another rule');
    const failing = await addRule("user_id = 'team_b' AND sql::INTEGER > 0", 'numbers only');
    try {
      await assert.rejects(b.query('SELECT 1'), (error: { code: number; details: string }) => {
        assert.equal(error.code, 8);
        assert.equal(
          error.details,
          `query denied by rule ${failing}: numbers only (the rule could not be evaluated on this statement)`,
        );
        return true;
      });
    } finally {
      await removeRule(failing);
      await removeRule(marker);
    }
  });

  it('an expression that fails on a row names no row of another audience (item 7)', async () => {
    for (const sql of [
      'SELECT count(*) FROM log_entries WHERE CAST(msg AS INTEGER) = 1',
      'SELECT count(*) FROM log_entries WHERE CAST(exe AS INTEGER) = 1 AND level > 0',
      'SELECT CAST(msg AS INTEGER) FROM log_entries',
      'SELECT count(*) FROM log_entries WHERE error(msg) IS NULL',
      'SELECT count(*) FROM processes WHERE CAST(exe AS DATE) IS NULL',
      'SELECT count(*) FROM errors_only WHERE CAST(msg AS INTEGER) = 1',
      "SELECT count(*) FROM log_entries WHERE regexp_matches(msg, '(' || msg)",
    ]) {
      try {
        await b.query(sql);
      } catch (error) {
        assertClean(sql, (error as { details: string }).details);
      }
    }
  });

  it('list_partitions shows a non-admin only partitions holding its rows, counted over its rows (item 7)', async () => {
    const sql = 'SELECT view_set_name, num_rows, file_size, source_count FROM list_partitions() ORDER BY view_set_name';
    assert.deepEqual(await rows(b, sql), [
      ['log_entries', 1, null, null],
      ['processes', 1, null, null],
    ]);
    const times =
      "SELECT min_event_time::VARCHAR, max_event_time::VARCHAR FROM list_partitions() WHERE view_set_name = 'log_entries'";
    assert.deepEqual(await rows(b, times), [['2024-01-02 03:04:05.000000005', '2024-01-02 03:04:05.000000005']]);
    const everything = await rows(
      admin,
      'SELECT view_set_name, num_rows FROM list_partitions() WHERE num_rows > 0 ORDER BY view_set_name',
    );
    assert.deepEqual(everything, [
      ['errors_only', 2],
      ['log_entries', 3],
      ['processes', 2],
    ]);
  });

  it('errors name no server path and quote no internal SQL (item 7)', async () => {
    const [path] = (
      await rows(admin, "SELECT file_path FROM list_partitions() WHERE view_set_name = 'log_entries' AND num_rows > 0")
    )[0] as string[];
    rmSync(join(lake, path));
    // A missing file is contained (quarantined, its range rebuilt) and the statement answers: Postgres refuses
    // the quarantine record here, so the read fails and its error reaches the keys.
    await fixture.orrery.metadata.query(
      'ALTER TABLE quarantined_partitions ADD CONSTRAINT refuse_in_test CHECK (file_path IS NULL) NOT VALID',
    );
    try {
      for (const sql of [
        'SELECT count(*) FROM log_entries',
        'SELECT * FROM list_partitions()',
        "SELECT * FROM view_instance('log_entries', 'global')",
      ]) {
        await assert.rejects(b.query(sql), (error: { code: number; details: string }) => {
          assert.equal(error.code, 14, error.details); // UNAVAILABLE: the file could not be contained
          assert.ok(error.details.includes(path), error.details); // the partition's key, which is no server path
          for (const leak of [lake, fixture.orrery.dataDir, 'read_parquet', 'audience IN', secret]) {
            assert.ok(!error.details.includes(leak), `${sql} revealed ${leak}: ${error.details}`);
          }
          return true;
        });
      }
      await assert.rejects(admin.query('SELECT count(*) FROM log_entries'), (error: { details: string }) =>
        error.details.includes(path),
      );
    } finally {
      await fixture.orrery.metadata.query('ALTER TABLE quarantined_partitions DROP CONSTRAINT refuse_in_test');
    }
  });
});
