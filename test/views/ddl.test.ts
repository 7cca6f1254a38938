// CREATE / DROP MATERIALIZED VIEW through Flight SQL: the spec's example, schema hashes, reload,
// introspection. (Each check, dependents, EXPLAIN and DROP as SQL cases: test/sql/view-ddl.test.)
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { logsRequest, postOtlp } from '../support/otlp.js';
import { adminKey, useOrrery } from '../support/orrery-process.js';
import { specExample as specExampleOf } from '../support/spec-example.js';
import { decodeSchema, type TestFlightClient } from '../support/flight-client.js';
import { scrapeMetrics } from '../support/metric-value.js';

const specExample = specExampleOf('target_counts');

/** A valid definition with one part swapped out. */
function definition(
  name: string,
  parts: Partial<Record<'extract' | 'count' | 'merge' | 'group' | 'extra', string>> = {},
): string {
  const extract =
    parts.extract ??
    "SELECT date_bin('1 minute', time) AS time_bin, level, count(*) AS count, audience FROM log_entries WHERE insert_time >= '{begin}' AND insert_time < '{end}' GROUP BY ALL";
  const count =
    parts.count ??
    "SELECT sum(nb_objects) AS count FROM blocks WHERE insert_time >= '{begin}' AND insert_time < '{end}'";
  const merge = parts.merge ?? 'SELECT time_bin, level, sum(count) AS count, audience FROM {source} GROUP BY ALL';
  return `CREATE MATERIALIZED VIEW ${name} WITH (extract_query = $$${extract}$$, count_src_query = $$${count}$$,
    merge_partitions_query = $$${merge}$$, update_group = ${parts.group ?? '5000'}, time_column = 'time_bin'${parts.extra ?? ''})`;
}

const rows = async (c: TestFlightClient, sql: string): Promise<Array<Record<string, unknown>>> =>
  (await c.query(sql)).toArray().map((r) => r.toJSON() as Record<string, unknown>);
const count = async (c: TestFlightClient, sql: string): Promise<number> =>
  Number((await c.query(sql)).getChildAt(0)!.get(0) ?? 0);

describe('materialized view DDL', () => {
  const staticDir = mkdtempSync(join(tmpdir(), 'orrery-static-'));
  writeFileSync(join(staticDir, 'levels.csv'), 'level,name\n2,error\n4,info\n');
  const fixture = useOrrery(
    {
      MICROMEGAS_VIEW_DEFINITION_REFRESH_SECONDS: '1',
      ORRERY_RETIRE_DELAY_SECONDS: '0',
      MICROMEGAS_STATIC_TABLES_URL: `file://${staticDir}`,
    },
    'serve',
  );
  let admin: TestFlightClient;
  let reader: TestFlightClient;
  let range: string;
  after(() => rmSync(staticDir, { recursive: true, force: true }));

  before(async () => {
    ({ admin, reader } = fixture);
    const logs = Array.from({ length: 12 }, (_, i) => ({
      time: 1704164645000000000n + BigInt(i) * 1_000_000_000n,
      severity: i % 2 ? 9 : 17,
      body: `m${i}`,
      target: 'api',
    }));
    assert.equal(
      (await postOtlp(fixture.orrery.httpPort, 'logs', adminKey.key, logsRequest({ 'service.name': 'ddl' }, logs)))
        .status,
      200,
    );
    const now = Math.floor(Date.now() / 1000);
    const begin = new Date((Math.floor(now / 60) * 60 - 60) * 1000).toISOString();
    const end = new Date((Math.floor(now / 60) * 60 + 120) * 1000).toISOString();
    range = `'${begin}', '${end}', 180`;
    for (const view of ['blocks', 'log_entries'])
      await admin.query(`SELECT * FROM materialize_partitions('${view}', ${range})`);
  });

  const definitions = async (): Promise<string[]> =>
    [
      ...(await admin.query('SELECT view_set_name FROM list_view_set_definitions() ORDER BY view_set_name')).getChildAt(
        0,
      )!,
    ] as string[];

  it("runs the spec's example unchanged; the view materializes and answers in the extract's types", async () => {
    assert.deepEqual(await rows(admin, specExample), [{ view_set_name: 'target_counts', action: 'created' }]);
    assert.deepEqual(await definitions(), ['log_stats', 'target_counts']);
    await admin.query(`SELECT * FROM materialize_partitions('target_counts', ${range})`);
    const table = await admin.query('SELECT target, sum(count) AS total FROM target_counts GROUP BY target');
    assert.deepEqual(
      table.toArray().map((r) => [r.target, Number(r.total)]),
      [['api', 12]],
    );
    const types = (await admin.query('SELECT * FROM target_counts')).schema.fields.map((f) => `${f.name}:${f.type}`);
    assert.deepEqual(types, ['time_bin:Timestamp<NANOSECOND, UTC>', 'target:Utf8', 'count:Int64', 'audience:Utf8']);
    const stored = await rows(
      admin,
      "SELECT definition_sql, load_error FROM list_view_set_definitions() WHERE view_set_name = 'target_counts'",
    );
    assert.deepEqual(stored, [{ definition_sql: specExample, load_error: null }]);
    assert.ok(
      (await rows(reader, "SELECT view_set_name FROM list_view_sets() WHERE view_set_name = 'target_counts'"))
        .length === 1,
    );
  });

  it('a content-only replace keeps partitions; a schema change stops reading them', async () => {
    const replace = (sql: string): string =>
      sql.replace('CREATE MATERIALIZED VIEW', 'CREATE OR REPLACE MATERIALIZED VIEW');
    assert.deepEqual(await rows(admin, definition('shapes')), [{ view_set_name: 'shapes', action: 'created' }]);
    await admin.query(`SELECT * FROM materialize_partitions('shapes', ${range})`);
    assert.equal(await count(admin, 'SELECT sum(count) FROM shapes'), 12);
    const hourly = definition('shapes', {
      extract:
        "SELECT date_bin('1 hour', time) AS time_bin, level, count(*) AS count, audience FROM log_entries WHERE insert_time >= '{begin}' AND insert_time < '{end}' GROUP BY ALL",
    });
    assert.deepEqual(await rows(admin, replace(hourly)), [{ view_set_name: 'shapes', action: 'replaced' }]);
    assert.equal(
      await count(admin, 'SELECT sum(count) FROM shapes'),
      12,
      'same schema: the old partitions are still read',
    );
    const wider = definition('shapes', {
      extract:
        "SELECT date_bin('1 minute', time) AS time_bin, level, count(*) AS count, min(msg) AS first_msg, audience FROM log_entries WHERE insert_time >= '{begin}' AND insert_time < '{end}' GROUP BY ALL",
      merge:
        'SELECT time_bin, level, sum(count) AS count, min(first_msg) AS first_msg, audience FROM {source} GROUP BY ALL',
    });
    assert.deepEqual(await rows(admin, replace(wider)), [{ view_set_name: 'shapes', action: 'replaced' }]);
    assert.equal(
      await count(admin, 'SELECT count(*) FROM shapes'),
      0,
      'new schema: partitions of the old hash are not read',
    );
    await admin.query(`SELECT * FROM materialize_partitions('shapes', ${range})`);
    assert.equal(await count(admin, 'SELECT sum(count) FROM shapes'), 12);
    assert.deepEqual(await rows(admin, 'DROP MATERIALIZED VIEW shapes'), [
      { view_set_name: 'shapes', action: 'dropped' },
    ]);
  });

  it('log_stats is a stored definition like any other: inspected, replaced, dropped', async () => {
    const [stats] = await rows(
      admin,
      "SELECT definition_sql, update_group, load_error FROM list_view_set_definitions() WHERE view_set_name = 'log_stats'",
    );
    assert.match(String(stats.definition_sql), /^CREATE MATERIALIZED VIEW log_stats WITH \(/);
    assert.equal(stats.update_group, 3000);
    assert.equal(stats.load_error, null);
    const replaced = String(stats.definition_sql).replace(
      'CREATE MATERIALIZED VIEW',
      'CREATE OR REPLACE MATERIALIZED VIEW',
    );
    assert.deepEqual(await rows(admin, replaced), [{ view_set_name: 'log_stats', action: 'replaced' }]);
    assert.deepEqual(await rows(admin, 'DROP MATERIALIZED VIEW log_stats'), [
      { view_set_name: 'log_stats', action: 'dropped' },
    ]);
    assert.deepEqual(await rows(admin, String(stats.definition_sql)), [
      { view_set_name: 'log_stats', action: 'created' },
    ]);
  });

  it('picks up a definition written by another server, and shows one that fails to load without blocking the others', async () => {
    const { metadata: db } = fixture.orrery;
    const insert = (name: string, extract: string) =>
      db.query(
        `INSERT INTO lakehouse_view_set_definitions (view_set_name, definition_sql, extract_query, count_src_query, merge_partitions_query, update_group, view_options, updated_by)
         VALUES ($1, $2, $3, $4, $5, 5000, '{"minTimeColumn":"time_bin","maxTimeColumn":"time_bin","sourcePartitionDelta":"1 day","mergePartitionDelta":"1 day"}', 'elsewhere')`,
        [
          name,
          `-- written elsewhere: ${name}`,
          extract,
          "SELECT sum(nb_objects) AS count FROM blocks WHERE insert_time >= '{begin}' AND insert_time < '{end}'",
          'SELECT time_bin, level, sum(count) AS count, audience FROM {source} GROUP BY ALL',
        ],
      );
    await insert(
      'from_elsewhere',
      "SELECT date_bin('1 minute', time) AS time_bin, level, count(*) AS count, audience FROM log_entries GROUP BY ALL",
    );
    await insert('broken_elsewhere', 'SELECT no_such_column FROM log_entries');
    const deadline = Date.now() + 60_000;
    while (
      !(await rows(admin, "SELECT view_set_name FROM list_view_sets() WHERE view_set_name = 'from_elsewhere'")).length
    ) {
      if (Date.now() > deadline) assert.fail('from_elsewhere was not loaded within 60 s');
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(await count(admin, 'SELECT count(*) FROM from_elsewhere'), 0);
    const [broken] = await rows(
      admin,
      "SELECT load_error FROM list_view_set_definitions() WHERE view_set_name = 'broken_elsewhere'",
    );
    assert.match(String(broken.load_error), /extract_query does not plan/);
    assert.ok(
      !(await rows(admin, "SELECT view_set_name FROM list_view_sets() WHERE view_set_name = 'broken_elsewhere'"))
        .length,
    );
    const metrics = await scrapeMetrics(fixture.orrery.httpPort);
    assert.match(metrics, /^orrery_view_definition_load_failures_total\{view_set="broken_elsewhere"\} 1$/m);
    assert.deepEqual(await rows(admin, 'DROP MATERIALIZED VIEW broken_elsewhere'), [
      { view_set_name: 'broken_elsewhere', action: 'dropped' },
    ]);
  });

  it('serves static tables to view definitions', async () => {
    const withStatic = definition('named_levels', {
      extract:
        "SELECT date_bin('1 minute', time) AS time_bin, l.name, count(*) AS count, audience FROM log_entries e JOIN levels l ON e.level = l.level GROUP BY ALL",
      merge: 'SELECT time_bin, name, sum(count) AS count, audience FROM {source} GROUP BY ALL',
    });
    assert.deepEqual(await rows(admin, withStatic), [{ view_set_name: 'named_levels', action: 'created' }]);
    await admin.query(`SELECT * FROM materialize_partitions('named_levels', ${range})`);
    const table = await admin.query('SELECT name, sum(count) AS n FROM named_levels GROUP BY name ORDER BY name');
    assert.deepEqual(
      table.toArray().map((r) => [r.name, Number(r.n)]),
      [
        ['error', 6],
        ['info', 6],
      ],
    );
  });

  // A text prepared again is answered as before, without planning, unless what it reads changed (s21-review2's G7):
  // a view set replaced changes no DuckDB catalog.
  it('a text over a view set prepared again after the set was replaced is described again', async () => {
    const columns = async (): Promise<string[]> =>
      decodeSchema((await reader.prepare('SELECT * FROM prepared_shape')).datasetSchema).fields.map((f) => f.name);
    await admin.query(definition('prepared_shape'));
    assert.deepEqual(await columns(), ['time_bin', 'level', 'count', 'audience']);
    const wider = definition('prepared_shape', {
      extract:
        "SELECT date_bin('1 minute', time) AS time_bin, level, count(*) AS count, min(msg) AS first_msg, audience FROM log_entries WHERE insert_time >= '{begin}' AND insert_time < '{end}' GROUP BY ALL",
      merge:
        'SELECT time_bin, level, sum(count) AS count, min(first_msg) AS first_msg, audience FROM {source} GROUP BY ALL',
    });
    await admin.query(wider.replace('CREATE MATERIALIZED VIEW', 'CREATE OR REPLACE MATERIALIZED VIEW'));
    assert.deepEqual(await columns(), ['time_bin', 'level', 'count', 'first_msg', 'audience']);
    await admin.query('DROP MATERIALIZED VIEW prepared_shape');
  });
});
