// CREATE / DROP MATERIALIZED VIEW through Flight SQL: the spec's example, every check made
// before anything is written, dependents, schema hashes, reload, introspection.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { logsRequest, postOtlp } from '../support/otlp.js';
import { adminKey, useOrrery } from '../support/orrery-process.js';
import { specExample as specExampleOf } from '../support/spec-example.js';
import type { TestFlightClient } from '../support/flight-client.js';

const specExample = specExampleOf('target_counts');

/** A valid definition with one part swapped out. */
function definition(name: string, parts: Partial<Record<'extract' | 'count' | 'merge' | 'group' | 'extra', string>> = {}): string {
  const extract =
    parts.extract ??
    "SELECT date_bin('1 minute', time) AS time_bin, level, count(*) AS count, audience FROM log_entries WHERE insert_time >= '{begin}' AND insert_time < '{end}' GROUP BY ALL";
  const count = parts.count ?? "SELECT sum(nb_objects) AS count FROM blocks WHERE insert_time >= '{begin}' AND insert_time < '{end}'";
  const merge = parts.merge ?? 'SELECT time_bin, level, sum(count) AS count, audience FROM {source} GROUP BY ALL';
  return `CREATE MATERIALIZED VIEW ${name} WITH (extract_query = $$${extract}$$, count_src_query = $$${count}$$,
    merge_partitions_query = $$${merge}$$, update_group = ${parts.group ?? '5000'}, time_column = 'time_bin'${parts.extra ?? ''})`;
}

const rows = async (c: TestFlightClient, sql: string): Promise<Array<Record<string, unknown>>> =>
  (await c.query(sql)).toArray().map((r) => r.toJSON() as Record<string, unknown>);
const count = async (c: TestFlightClient, sql: string): Promise<number> => Number((await c.query(sql)).getChildAt(0)!.get(0) ?? 0);

describe('materialized view DDL', () => {
  const staticDir = mkdtempSync(join(tmpdir(), 'orrery-static-'));
  writeFileSync(join(staticDir, 'levels.csv'), 'level,name\n2,error\n4,info\n');
  const fixture = useOrrery(
    { MICROMEGAS_VIEW_DEFINITION_REFRESH_SECONDS: '1', ORRERY_RETIRE_DELAY_SECONDS: '0', MICROMEGAS_STATIC_TABLES_URL: `file://${staticDir}` },
    'serve',
  );
  let admin: TestFlightClient;
  let reader: TestFlightClient;
  let range: string;
  after(() => rmSync(staticDir, { recursive: true, force: true }));

  before(async () => {
    ({ admin, reader } = fixture);
    const logs = Array.from({ length: 12 }, (_, i) => ({ time: 1704164645000000000n + BigInt(i) * 1_000_000_000n, severity: i % 2 ? 9 : 17, body: `m${i}`, target: 'api' }));
    assert.equal((await postOtlp(fixture.orrery.httpPort, 'logs', adminKey.key, logsRequest({ 'service.name': 'ddl' }, logs))).status, 200);
    const now = Math.floor(Date.now() / 1000);
    const begin = new Date((Math.floor(now / 60) * 60 - 60) * 1000).toISOString();
    const end = new Date((Math.floor(now / 60) * 60 + 120) * 1000).toISOString();
    range = `'${begin}', '${end}', 180`;
    for (const view of ['blocks', 'log_entries']) await admin.query(`SELECT * FROM materialize_partitions('${view}', ${range})`);
  });

  const definitions = async (): Promise<string[]> =>
    [...(await admin.query('SELECT view_set_name FROM list_view_set_definitions() ORDER BY view_set_name')).getChildAt(0)!] as string[];

  it("runs the spec's example unchanged; the view materializes and answers in the extract's types", async () => {
    assert.deepEqual(await rows(admin, specExample), [{ view_set_name: 'target_counts', action: 'created' }]);
    assert.deepEqual(await definitions(), ['log_stats', 'target_counts']);
    await admin.query(`SELECT * FROM materialize_partitions('target_counts', ${range})`);
    const table = await admin.query('SELECT target, sum(count) AS total FROM target_counts GROUP BY target');
    assert.deepEqual(table.toArray().map((r) => [r.target, Number(r.total)]), [['api', 12]]);
    const types = (await admin.query('SELECT * FROM target_counts')).schema.fields.map((f) => `${f.name}:${f.type}`);
    assert.deepEqual(types, ['time_bin:Timestamp<NANOSECOND, UTC>', 'target:Utf8', 'count:Int64', 'audience:Utf8']);
    const stored = await rows(admin, "SELECT definition_sql, load_error FROM list_view_set_definitions() WHERE view_set_name = 'target_counts'");
    assert.deepEqual(stored, [{ definition_sql: specExample, load_error: null }]);
    assert.ok((await rows(reader, "SELECT view_set_name FROM list_view_sets() WHERE view_set_name = 'target_counts'")).length === 1);
  });

  it('refuses each bad definition with a message naming the rule, and stores nothing', async () => {
    const before = await definitions();
    const cases: Array<[string, RegExp]> = [
      [definition('bad_plan', { extract: 'SELECT nope FROM log_entries' }), /extract_query does not plan/],
      [definition('bad_audience', { extract: "SELECT date_bin('1 minute', time) AS time_bin, count(*) AS count FROM log_entries GROUP BY ALL", merge: 'SELECT time_bin, sum(count) AS count FROM {source} GROUP BY ALL' }), /audience or process_id column of a string type/],
      [definition('bad_merge', { merge: 'SELECT time_bin, count, level, audience FROM {source}' }), /merge_partitions_query must return the extract query's columns in order/],
      [definition('bad_count', { count: "SELECT 'x' AS count FROM blocks WHERE insert_time >= '{begin}' AND insert_time < '{end}'" }), /count_src_query must return a single integer column named count/],
      [definition('bad_placeholder', { count: 'SELECT count(*) AS count FROM blocks' }), /count_src_query must reference both \{begin\} and \{end\}/],
      [definition('bad_source', { merge: 'SELECT time_bin, level, count, audience FROM target_counts' }), /merge_partitions_query must reference \{source\}/],
      [definition('bad_random', { extract: "SELECT date_bin('1 minute', time) AS time_bin, level, count(*) + random()::BIGINT AS count, audience FROM log_entries GROUP BY ALL" }), /calls random\(\), a volatile function/],
      [definition('bad_now', { extract: "SELECT date_bin('1 minute', current_timestamp) AS time_bin, level, count(*) AS count, audience FROM log_entries GROUP BY ALL" }), /uses current_timestamp, which is volatile/],
      [definition('bad_admin_fn', { count: "SELECT count(*) AS count FROM retire_partitions('a', 'b', '{begin}', '{end}')" }), /calls retire_partitions\(\), an admin or per-instance function/],
      [definition('bad_group', { group: '2000' }), /update_group 2000 must be greater than the update_group of log_entries \(2000\)/],
      [definition('bad_sort', { extra: ", merge_sort_order = 'nope'" }), /merge_sort_order column 'nope' is not a column/],
      [definition('bad_time', { extract: "SELECT date_bin('1 minute', time)::VARCHAR AS time_bin, level, count(*) AS count, audience FROM log_entries GROUP BY ALL", merge: 'SELECT time_bin, level, sum(count) AS count, audience FROM {source} GROUP BY ALL' }), /time_column 'time_bin' must be a nanosecond timestamp|min_time_column 'time_bin' must be a nanosecond timestamp/],
      [definition('bad_ddl', { extract: "COPY (SELECT 1) TO 'x.csv'" }), /extract_query must be a SELECT: no DDL or DML/],
      [definition('bad_count_view', { count: "SELECT sum(count) AS count FROM target_counts WHERE time_bin >= '{begin}' AND time_bin < '{end}'", group: '6000' }), /count_src_query must count a raw source table such as blocks, not the materialized view target_counts/],
      [definition('log_entries'), /taken by a built-in view set or a static table/],
      [definition('levels'), /taken by a built-in view set or a static table/],
      [definition('target_counts'), /view set target_counts already exists/],
    ];
    for (const [sql, message] of cases) await assert.rejects(admin.query(sql), { details: message }, sql.slice(0, 60));
    assert.deepEqual(await definitions(), before);
  });

  it('refuses non-admins', async () => {
    await assert.rejects(reader.query(definition('by_reader')), { code: 7, details: /admins only/ });
    await assert.rejects(reader.query('DROP MATERIALIZED VIEW target_counts'), { code: 7 });
    await assert.rejects(reader.query('CREATE MATERIALIZED VIEW x WITH (nonsense'), { code: 7, details: /admins only/ });
  });

  it('refuses a replace or a drop that would break a dependent, naming it', async () => {
    const dependent = definition('per_target', {
      extract: "SELECT time_bin, target, count, audience FROM target_counts WHERE time_bin >= '{begin}' AND time_bin < '{end}'",
      merge: 'SELECT time_bin, target, sum(count) AS count, audience FROM {source} GROUP BY ALL',
      group: '6000',
    });
    assert.deepEqual(await rows(admin, dependent), [{ view_set_name: 'per_target', action: 'created' }]);
    const breaking = specExample.replace('CREATE MATERIALIZED VIEW', 'CREATE OR REPLACE MATERIALIZED VIEW').replaceAll('target', 'level').replace('level_counts', 'target_counts');
    await assert.rejects(admin.query(breaking), { code: 9, details: /replacing target_counts would break per_target/ });
    await assert.rejects(admin.query('DROP MATERIALIZED VIEW target_counts'), { code: 9, details: /dropping target_counts would break per_target/ });
    assert.deepEqual(await rows(admin, 'DROP MATERIALIZED VIEW per_target'), [{ view_set_name: 'per_target', action: 'dropped' }]);
    assert.deepEqual(await rows(admin, 'DROP MATERIALIZED VIEW IF EXISTS per_target'), [{ view_set_name: 'per_target', action: 'not_found' }]);
    await assert.rejects(admin.query('DROP MATERIALIZED VIEW per_target'), { code: 5, details: 'view set per_target does not exist' });
  });

  it('a content-only replace keeps partitions; a schema change stops reading them', async () => {
    const replace = (sql: string): string => sql.replace('CREATE MATERIALIZED VIEW', 'CREATE OR REPLACE MATERIALIZED VIEW');
    assert.deepEqual(await rows(admin, definition('shapes')), [{ view_set_name: 'shapes', action: 'created' }]);
    await admin.query(`SELECT * FROM materialize_partitions('shapes', ${range})`);
    assert.equal(await count(admin, 'SELECT sum(count) FROM shapes'), 12);
    const hourly = definition('shapes', {
      extract: "SELECT date_bin('1 hour', time) AS time_bin, level, count(*) AS count, audience FROM log_entries WHERE insert_time >= '{begin}' AND insert_time < '{end}' GROUP BY ALL",
    });
    assert.deepEqual(await rows(admin, replace(hourly)), [{ view_set_name: 'shapes', action: 'replaced' }]);
    assert.equal(await count(admin, 'SELECT sum(count) FROM shapes'), 12, 'same schema: the old partitions are still read');
    const wider = definition('shapes', {
      extract: "SELECT date_bin('1 minute', time) AS time_bin, level, count(*) AS count, min(msg) AS first_msg, audience FROM log_entries WHERE insert_time >= '{begin}' AND insert_time < '{end}' GROUP BY ALL",
      merge: 'SELECT time_bin, level, sum(count) AS count, min(first_msg) AS first_msg, audience FROM {source} GROUP BY ALL',
    });
    assert.deepEqual(await rows(admin, replace(wider)), [{ view_set_name: 'shapes', action: 'replaced' }]);
    assert.equal(await count(admin, 'SELECT count(*) FROM shapes'), 0, 'new schema: partitions of the old hash are not read');
    await admin.query(`SELECT * FROM materialize_partitions('shapes', ${range})`);
    assert.equal(await count(admin, 'SELECT sum(count) FROM shapes'), 12);
    assert.deepEqual(await rows(admin, 'DROP MATERIALIZED VIEW shapes'), [{ view_set_name: 'shapes', action: 'dropped' }]);
  });

  it('explains a change without making it', async () => {
    assert.deepEqual(await rows(admin, `EXPLAIN ${definition('explained')}`), [{ view_set_name: 'explained', action: 'would_create' }]);
    assert.deepEqual(await rows(admin, 'EXPLAIN DROP MATERIALIZED VIEW target_counts'), [{ view_set_name: 'target_counts', action: 'would_drop' }]);
    assert.ok(!(await definitions()).includes('explained'));
  });

  it('DROP retires the partitions of the view', async () => {
    assert.ok((await count(admin, "SELECT count(*) FROM list_partitions() WHERE view_set_name = 'target_counts'")) > 0);
    assert.deepEqual(await rows(admin, 'DROP MATERIALIZED VIEW target_counts'), [{ view_set_name: 'target_counts', action: 'dropped' }]);
    assert.equal(await count(admin, "SELECT count(*) FROM list_partitions() WHERE view_set_name = 'target_counts'"), 0);
    await assert.rejects(admin.query('SELECT * FROM target_counts'), { code: 3 });
  });

  it('log_stats is a stored definition like any other: inspected, replaced, dropped', async () => {
    const [stats] = await rows(admin, "SELECT definition_sql, update_group, load_error FROM list_view_set_definitions() WHERE view_set_name = 'log_stats'");
    assert.match(String(stats.definition_sql), /^CREATE MATERIALIZED VIEW log_stats WITH \(/);
    assert.equal(stats.update_group, 3000);
    assert.equal(stats.load_error, null);
    const replaced = String(stats.definition_sql).replace('CREATE MATERIALIZED VIEW', 'CREATE OR REPLACE MATERIALIZED VIEW');
    assert.deepEqual(await rows(admin, replaced), [{ view_set_name: 'log_stats', action: 'replaced' }]);
    assert.deepEqual(await rows(admin, 'DROP MATERIALIZED VIEW log_stats'), [{ view_set_name: 'log_stats', action: 'dropped' }]);
    assert.deepEqual(await rows(admin, String(stats.definition_sql)), [{ view_set_name: 'log_stats', action: 'created' }]);
  });

  it('picks up a definition written by another server, and shows one that fails to load without blocking the others', async () => {
    const { db } = fixture.orrery;
    const insert = (name: string, extract: string) =>
      db.query(
        `INSERT INTO lakehouse_view_set_definitions (view_set_name, definition_sql, extract_query, count_src_query, merge_partitions_query, update_group, view_options, updated_by)
         VALUES ($1, $2, $3, $4, $5, 5000, '{"minTimeColumn":"time_bin","maxTimeColumn":"time_bin","sourcePartitionDelta":"1 day","mergePartitionDelta":"1 day"}', 'elsewhere')`,
        [name, `-- written elsewhere: ${name}`, extract, "SELECT sum(nb_objects) AS count FROM blocks WHERE insert_time >= '{begin}' AND insert_time < '{end}'", 'SELECT time_bin, level, sum(count) AS count, audience FROM {source} GROUP BY ALL'],
      );
    await insert('from_elsewhere', "SELECT date_bin('1 minute', time) AS time_bin, level, count(*) AS count, audience FROM log_entries GROUP BY ALL");
    await insert('broken_elsewhere', 'SELECT no_such_column FROM log_entries');
    const deadline = Date.now() + 10000;
    while (!(await rows(admin, "SELECT view_set_name FROM list_view_sets() WHERE view_set_name = 'from_elsewhere'")).length) {
      if (Date.now() > deadline) assert.fail('from_elsewhere was not loaded within 10 s');
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(await count(admin, 'SELECT count(*) FROM from_elsewhere'), 0);
    const [broken] = await rows(admin, "SELECT load_error FROM list_view_set_definitions() WHERE view_set_name = 'broken_elsewhere'");
    assert.match(String(broken.load_error), /extract_query does not plan/);
    assert.ok(!(await rows(admin, "SELECT view_set_name FROM list_view_sets() WHERE view_set_name = 'broken_elsewhere'")).length);
    const metrics = await (await fetch(`http://127.0.0.1:${fixture.orrery.httpPort}/metrics`)).text();
    assert.match(metrics, /^orrery_view_definition_load_failures_total\{view_set="broken_elsewhere"\} 1$/m);
    assert.deepEqual(await rows(admin, 'DROP MATERIALIZED VIEW broken_elsewhere'), [{ view_set_name: 'broken_elsewhere', action: 'dropped' }]);
  });

  it('serves static tables to queries and to view definitions', async () => {
    assert.deepEqual(await rows(reader, 'SELECT level, name FROM levels ORDER BY level'), [{ level: 2n, name: 'error' }, { level: 4n, name: 'info' }]);
    const withStatic = definition('named_levels', {
      extract: "SELECT date_bin('1 minute', time) AS time_bin, l.name, count(*) AS count, audience FROM log_entries e JOIN levels l ON e.level = l.level GROUP BY ALL",
      merge: 'SELECT time_bin, name, sum(count) AS count, audience FROM {source} GROUP BY ALL',
    });
    assert.deepEqual(await rows(admin, withStatic), [{ view_set_name: 'named_levels', action: 'created' }]);
    await admin.query(`SELECT * FROM materialize_partitions('named_levels', ${range})`);
    const table = await admin.query('SELECT name, sum(count) AS n FROM named_levels GROUP BY name ORDER BY name');
    assert.deepEqual(table.toArray().map((r) => [r.name, Number(r.n)]), [['error', 6], ['info', 6]]);
  });
});
