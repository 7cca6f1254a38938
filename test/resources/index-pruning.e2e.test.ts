// Queries use the minmax, set and bloom_filter indexes installed on a view set (issue 13 items 6 and 5): a partition whose
// statistics exclude the WHERE's constant comparisons on the indexed column is not read, its file never
// opened; every query answers exactly as it did before the indexes existed, for each key (admins and
// keys of an audience); an admin's result tells what was skipped (orrery.provenance), a reader's does not.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { tableFromArrays, type Table } from 'apache-arrow';
import { runResourcesCli } from '../../src/resources/index.js';
import { TestFlightClient } from '../support/flight-client.js';
import { metricValue } from '../support/metric-value.js';
import { pastInsertTimes, postOtlp } from '../support/otlp.js';
import { adminKey } from '../support/orrery-process.js';
import { assertMsgBloomFilters, teamKey, useAudiencesOrrery } from '../support/publish.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

/** An OTLP/JSON logs body: one resource, records with a level, a body and a `pod` attribute. */
const logsBody = (service: string, records: Array<{ time: bigint; level: number; msg: string; pod: string }>) =>
  JSON.stringify({
    resourceLogs: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: service } }] },
        scopeLogs: [
          {
            scope: { name: 'app' },
            logRecords: records.map((r) => ({
              timeUnixNano: String(r.time),
              severityNumber: r.level,
              body: { stringValue: r.msg },
              attributes: [{ key: 'pod', value: { stringValue: r.pod } }],
            })),
          },
        ],
      },
    ],
  });

const rowsOf = (table: Table): unknown[] =>
  JSON.parse(
    JSON.stringify(
      table.toArray().map((r: Record<string, unknown>) => ({ ...r })),
      (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v),
    ),
  ) as unknown[];

const partitionsRead = (table: Table): unknown => {
  const text = table.schema.metadata.get('orrery.provenance');
  return text === undefined ? undefined : (JSON.parse(text) as { partitions?: unknown }).partitions;
};

/** Each query as each key, with and without indexes; and how many of the 3 partitions an admin's skips. */
const queries: Array<[string, number]> = [
  ['SELECT msg, level FROM log_entries WHERE level = 3 ORDER BY msg', 2],
  ['SELECT msg FROM log_entries WHERE 3 = level ORDER BY msg', 2],
  ["SELECT msg FROM log_entries WHERE level = '2' ORDER BY msg", 2],
  ['SELECT msg FROM log_entries WHERE level IN (4, 2, 40) ORDER BY msg', 1],
  ['SELECT msg FROM log_entries WHERE level > 3 ORDER BY msg', 2],
  ['SELECT msg FROM log_entries WHERE level >= 3 ORDER BY msg', 1],
  ['SELECT msg FROM log_entries WHERE level < 3 ORDER BY msg', 2],
  ['SELECT msg FROM log_entries WHERE level <= 3 ORDER BY msg', 1],
  ['SELECT msg FROM log_entries WHERE level BETWEEN 1 AND 3 ORDER BY msg', 1],
  ['SELECT msg FROM log_entries WHERE level = 3.5 ORDER BY msg', 3],
  ['SELECT count(*) AS n, min(msg) AS first FROM log_entries WHERE level = 99', 3],
  ["SELECT msg FROM log_entries e WHERE e.exe = 'svc1' ORDER BY msg", 2],
  ["SELECT msg FROM log_entries WHERE exe IN ('svc0', 'svc2') AND level >= 2 ORDER BY msg", 1],
  ["SELECT msg FROM log_entries WHERE exe = 'svc0' AND level = 2 ORDER BY msg", 3],
  ["SELECT msg FROM log_entries WHERE time > '2024-01-02 03:04:05.0015' ORDER BY msg", 2],
  ["SELECT msg FROM log_entries WHERE time <= TIMESTAMP '2024-01-02 03:04:05.000000001' ORDER BY msg", 2],
  // An OR skips the partitions every one of its alternatives excludes; one no index decides skips none.
  ["SELECT msg FROM log_entries WHERE level = 3 OR exe = 'svc0' ORDER BY msg", 1],
  ['SELECT msg FROM log_entries WHERE level = 4 OR level = 2 ORDER BY msg', 1],
  ["SELECT msg FROM log_entries WHERE (level = 3 AND exe = 'svc1') OR msg = 'entry 2.0' ORDER BY msg", 1],
  ['SELECT count(*) AS n FROM log_entries WHERE level = 99 OR level > 50', 3],
  ["SELECT msg FROM log_entries WHERE level >= 2 AND (exe = 'svc0' OR (exe = 'svc2' AND level = 3)) ORDER BY msg", 2],
  ['SELECT msg FROM log_entries WHERE (level = 3 OR level = 4) AND (level = 2 OR level = 3) ORDER BY msg', 2],
  ["SELECT msg FROM log_entries WHERE level = 3 OR lower(exe) = 'svc0' ORDER BY msg", 0],
  ['SELECT msg FROM log_entries WHERE level = 3 OR level IS NULL ORDER BY msg', 0],
  ['SELECT msg FROM log_entries WHERE NOT (level = 3 OR level = 4) ORDER BY msg', 0],
  ['SELECT msg FROM log_entries WHERE time < now() - INTERVAL 1 DAY OR level = 3 ORDER BY msg', 0],
  [
    'SELECT level, count(*) AS n FROM log_entries WHERE level >= 3 GROUP BY level HAVING count(*) > 1 ORDER BY level',
    1,
  ],
  ['SELECT a.msg FROM log_entries a JOIN log_entries b USING (msg) WHERE a.level = 3 ORDER BY a.msg', 0],
  // Several references read the same partitions: skipped are those every reference's WHEREs exclude.
  [
    'SELECT msg FROM log_entries WHERE level = 3 AND msg IN (SELECT msg FROM log_entries WHERE level = 4) ORDER BY msg',
    1,
  ],
  [
    'SELECT msg FROM log_entries WHERE level = 3 UNION ALL SELECT msg FROM (SELECT * FROM log_entries) WHERE level = 3 ORDER BY msg',
    2,
  ],
  ['SELECT count(*) AS n FROM log_entries WHERE level = 3 OR level > (SELECT min(level) FROM log_entries)', 0],
  ["SELECT msg FROM log_entries WHERE lower(exe) = 'svc1' ORDER BY msg", 0],
  ["SELECT msg FROM log_entries WHERE (properties->>'pod') = 'pod-1' ORDER BY msg", 0],
  ["SELECT msg FROM log_entries WHERE level = 'not a number'", 0],
  ["SELECT msg, level FROM log_entries WHERE msg = 'entry 1.1'", 2],
  // Between partition 0's min and max: only its bloom filter tells it is not there.
  ["SELECT count(*) AS n FROM log_entries WHERE msg = 'entry 0.05'", 3],
  ["SELECT msg FROM log_entries WHERE msg IN ('entry 2.0', 'entry 0.05') ORDER BY msg", 2],
  ['SELECT msg FROM log_entries WHERE msg = NULL', 3],
  // Column aliases rename the set's columns: here exe is the msg column, which the exe_set index does not describe.
  ["SELECT count(*) AS n FROM log_entries AS l(p, s, b, i, msg, u, c, t, g, lv, exe) WHERE exe = 'entry 0.0'", 0],
  // The set read in a CTE or a subquery: that SELECT's WHERE filters every row the statement reads of it.
  ['WITH e AS (SELECT msg, level FROM log_entries WHERE level = 3) SELECT msg FROM e ORDER BY msg', 2],
  ["SELECT count(*) AS n FROM (SELECT msg FROM log_entries l WHERE l.level >= 3) WHERE msg <> ''", 1],
  // A CTE handing the set's rows on, read once by a SELECT whose FROM is it alone: that SELECT's WHERE filters them.
  ['WITH e AS (SELECT * FROM log_entries) SELECT msg FROM e WHERE level = 3 ORDER BY msg', 2],
  ['WITH e AS (SELECT msg, level FROM log_entries) SELECT count(*) AS n FROM e AS x WHERE x.level >= 3', 1],
  [
    "WITH e AS (SELECT * FROM log_entries), f AS (SELECT * FROM e WHERE exe <> 'x') SELECT msg FROM f WHERE level = 3 ORDER BY msg",
    2,
  ],
  ['SELECT (WITH e AS (SELECT * FROM log_entries) SELECT count(*) FROM e WHERE e.level = 4) AS n', 2],
  // ... not a CTE read twice, renaming its columns, or through an aggregation.
  [
    'WITH e AS (SELECT * FROM log_entries) SELECT msg FROM e WHERE level = 3 UNION ALL SELECT msg FROM e WHERE level = 4 ORDER BY msg',
    0,
  ],
  ['WITH e(m, p, l) AS (SELECT msg, exe, level FROM log_entries) SELECT m FROM e WHERE l = 3 ORDER BY m', 0],
  ['WITH e AS (SELECT level, count(*) AS n FROM log_entries GROUP BY level) SELECT n FROM e WHERE level = 3', 0],
  // A WHERE over a subquery that hands the set's rows on unchanged filters them as the set's own does.
  ['SELECT msg FROM (SELECT * FROM log_entries) WHERE level = 3 ORDER BY msg', 2],
  ['SELECT s.msg FROM (SELECT msg, level FROM log_entries WHERE level >= 3) AS s WHERE s.level = 3 ORDER BY 1', 2],
  ["SELECT count(*) AS n FROM (SELECT * FROM (SELECT * FROM log_entries) WHERE exe <> 'x') WHERE level = 4", 2],
  [
    'SELECT level, count(*) AS n FROM (SELECT * FROM log_entries) WHERE level < 3 OR level > 3 GROUP BY 1 ORDER BY 1',
    1,
  ],
  // ... not through a LIMIT, an aggregation, a window, a renamed or replaced column, or column aliases.
  ['SELECT count(*) AS n FROM (SELECT * FROM log_entries ORDER BY msg LIMIT 3) WHERE level = 3', 0],
  ['SELECT n FROM (SELECT level, count(*) AS n FROM log_entries GROUP BY level) WHERE level = 3', 0],
  ['SELECT count(*) AS n FROM (SELECT *, row_number() OVER (ORDER BY msg) AS r FROM log_entries) WHERE r = 3', 0],
  ['SELECT msg FROM (SELECT msg, level + 1 AS level FROM log_entries) WHERE level = 3 ORDER BY msg', 0],
  ['SELECT msg FROM (SELECT * REPLACE (level + 1 AS level) FROM log_entries) WHERE level = 3 ORDER BY msg', 0],
  ['SELECT msg FROM (SELECT msg AS level, level AS msg FROM log_entries) WHERE msg = 3 ORDER BY level', 0],
  ['SELECT x FROM (SELECT * FROM log_entries) AS s(a, b, c, d, x, y, z, w, v, level) WHERE level = 3 ORDER BY x', 0],
  ['WITH log_entries AS (SELECT * FROM log_entries WHERE level = 4) SELECT msg FROM log_entries WHERE level = 3', 0],
  // Bounds written with the clock: the statement's now() is fixed once, the value pruning compares and the
  // statement runs with, so upper bounds, equalities and BETWEEN prune as lower bounds do (the rows are from 2024).
  ['SELECT count(*) AS n FROM log_entries WHERE time > now() - INTERVAL 1 DAY', 3],
  ["SELECT count(*) AS n FROM log_entries WHERE now() - INTERVAL '1 day' <= time AND level >= 2", 3],
  ['SELECT count(*) AS n FROM log_entries WHERE time < now() - INTERVAL 1 DAY', 0],
  ['SELECT count(*) AS n FROM log_entries WHERE time > now() - INTERVAL 36500 DAY', 0],
  ['SELECT count(*) AS n FROM log_entries WHERE time < now() - INTERVAL 36500 DAY', 3],
  ['SELECT msg FROM log_entries WHERE time <= now() - INTERVAL 36500 DAY OR level = 3 ORDER BY msg', 2],
  [
    'SELECT count(*) AS n FROM log_entries WHERE time BETWEEN now() - INTERVAL 36600 DAY AND now() - INTERVAL 36500 DAY',
    3,
  ],
  ['SELECT count(*) AS n FROM log_entries WHERE transaction_timestamp() - INTERVAL 36500 DAY >= time', 3],
  ['SELECT count(*) AS n, count(*) FILTER (WHERE now() > time) AS m FROM log_entries WHERE time = now()', 3],
  // current_date is the fixed clock's date.
  [
    "SELECT count(*) AS n FROM log_entries WHERE time < now() - INTERVAL 36500 DAY AND current_date > DATE '2000-01-01'",
    3,
  ],
  // ... unless the statement reads the clock otherwise too (fixing now() alone would give it two clocks).
  [
    "SELECT count(*) AS n FROM log_entries WHERE time < now() - INTERVAL 36500 DAY AND localtimestamp > TIMESTAMP '2000-01-01'",
    0,
  ],
];

/** Prepared statements, their parameters (one row) and how many partitions an admin's skips. */
const prepared: Array<[string, Table, number]> = [
  ['SELECT msg, level FROM log_entries WHERE level = $1 ORDER BY msg', tableFromArrays({ p: Int32Array.of(3) }), 2],
  ['SELECT msg FROM log_entries e WHERE e.exe = ? ORDER BY msg', tableFromArrays({ p: ['svc1'] }), 2],
  ['SELECT msg, level FROM log_entries WHERE msg = ? OR false', tableFromArrays({ p: ['entry 1.1'] }), 0],
  ['SELECT msg, level FROM log_entries WHERE msg = ?', tableFromArrays({ p: ['entry 1.1'] }), 2],
  [
    'SELECT msg FROM log_entries WHERE level IN (?, $2) ORDER BY msg',
    tableFromArrays({ a: Int32Array.of(4), b: Int32Array.of(9) }),
    2,
  ],
  [
    'SELECT msg FROM log_entries WHERE msg = ? OR level = $2 ORDER BY msg',
    tableFromArrays({ a: ['entry 1.1'], b: Int32Array.of(4) }),
    1,
  ],
  // Several parameter rows are several runs over the same files: only what every run excludes is skipped.
  [
    'SELECT msg, level FROM log_entries WHERE level = $1 ORDER BY level, msg',
    tableFromArrays({ p: Int32Array.of(3, 4) }),
    1,
  ],
  ['SELECT msg FROM log_entries WHERE exe = ? AND level >= 3', tableFromArrays({ p: ['svc1', 'svc9'] }), 2],
  ['SELECT msg FROM log_entries WHERE level = ? OR level > 90', tableFromArrays({ p: Int32Array.of(3, 2, 4) }), 0],
  // A DOUBLE bound to an INTEGER comparison is cast to the column's type by DuckDB: not pruned by it.
  ['SELECT msg FROM log_entries WHERE level = ? ORDER BY msg', tableFromArrays({ p: Float64Array.of(3.5) }), 0],
];

describe('queries skip partitions by the minmax, set and bloom_filter indexes (issue 13)', () => {
  const suite = useAudiencesOrrery('orrery-pruning-');
  const { fixture, dir } = suite;
  let files: string[] = [];
  const answers = new Map<string, unknown>();

  const answer = async (client: TestFlightClient, sql: string): Promise<unknown> => {
    try {
      return rowsOf(await client.query(sql));
    } catch (error) {
      return { error: (error as Error).message };
    }
  };
  const preparedAnswer = async (client: TestFlightClient, sql: string, parameters: Table): Promise<unknown> => {
    try {
      return rowsOf(await client.queryPrepared(sql, parameters));
    } catch (error) {
      return { error: (error as Error).message };
    }
  };
  const everyAnswer = async () => {
    const all = new Map<string, unknown>();
    for (const [who, client] of suite.clients()) {
      for (const [sql] of queries) all.set(`${who}: ${sql}`, await answer(client, sql));
      for (const [sql, parameters] of prepared)
        all.set(`${who}: ${sql}`, await preparedAnswer(client, sql, parameters));
    }
    return all;
  };

  before(async () => {
    // Three ingests a second and more apart, materialized by the second: three partitions of log_entries,
    // levels 4, 3 and 2 (severities 9, 13 and 17), the middle one from a key of audience team_x.
    const start = Math.floor(Date.now() / 1000);
    for (const [i, level] of [9, 13, 17].entries()) {
      const time = 1704164645000000000n + BigInt(i) * 1_000_000n;
      const records = [0, 1].map((j) => ({ time: time + BigInt(j), level, msg: `entry ${i}.${j}`, pod: `pod-${i}` }));
      const key = i === 1 ? teamKey.key : adminKey.key;
      const sent = await postOtlp(fixture.orrery.httpPort, 'logs', key, logsBody(`svc${i}`, records));
      assert.equal(sent.status, 200, sent.text);
      await sleep(1100);
    }
    for (const view of ['processes', 'log_entries'])
      await fixture.admin.query(
        `SELECT * FROM materialize_partitions('${view}', '${iso(start - 2)}', '${iso(pastInsertTimes())}', 1)`,
      );
    files = rowsOf(
      await fixture.admin.query(
        "SELECT file_path FROM list_partitions() WHERE view_set_name = 'log_entries' AND file_path IS NOT NULL",
      ),
    ).map((r) => String((r as { file_path: string }).file_path));
    assert.equal(files.length, 3);
    for (const [sql, rows] of await everyAnswer()) answers.set(sql, rows);
    assert.deepEqual(answers.get(`admin: ${queries[0][0]}`), [
      { msg: 'entry 1.0', level: 3 },
      { msg: 'entry 1.1', level: 3 },
    ]);
    assert.deepEqual(answers.get(`reader: ${queries[0][0]}`), []);

    mkdirSync(join(dir, 'resources'), { recursive: true });
    const resources = {
      level_minmax: { index: { table: 'log_entries', column: 'level', kind: 'minmax' } },
      exe_set: { index: { table: 'log_entries', column: 'exe', kind: 'set' } },
      time_minmax: { index: { table: 'log_entries', column: 'time', kind: 'minmax' } },
      msg_bloom: { index: { table: 'log_entries', column: 'msg', kind: 'bloom_filter' } },
    };
    writeFileSync(join(dir, 'resources', 'logs.resources.json'), JSON.stringify({ resources }));
    const err: string[] = [];
    const env = { ORRERY_FLIGHT_SQL_ADDR: fixture.orrery.address, ORRERY_API_KEY: adminKey.key };
    const status = await runResourcesCli(['--dir', dir], { env, out: () => {}, err: (l) => err.push(l) }, 'publish');
    assert.equal(status, 0, err.join('\n'));
  });

  it('answers every query as before the indexes, for every key, skipping the partitions the WHERE excludes', async () => {
    const now = await everyAnswer();
    for (const [sql, rows] of answers) assert.deepEqual(now.get(sql), rows, sql);
    for (const [sql, skipped] of queries) {
      const table = await fixture.admin.query(sql).catch(() => null);
      const read = table ? (partitionsRead(table) as Array<{ skipped: number }> | undefined) : undefined;
      assert.equal(read?.[0]?.skipped ?? 0, skipped, sql);
    }
  });

  it("tells an admin which partitions its WHERE skipped, by which index; a reader's result says nothing", async () => {
    const levelIs = await fixture.admin.query('SELECT msg FROM log_entries WHERE level = 3');
    assert.deepEqual(partitionsRead(levelIs), [
      { table: 'log_entries', partitions: 3, skipped: 2, indexes: ['level_minmax'] },
    ]);
    const both = await fixture.admin.query("SELECT msg FROM log_entries WHERE exe IN ('svc0', 'svc2') AND level > 2");
    assert.deepEqual(partitionsRead(both), [
      { table: 'log_entries', partitions: 3, skipped: 2, indexes: ['exe_set', 'level_minmax'] },
    ]);
    const none = await fixture.admin.query('SELECT count(*) AS n FROM log_entries WHERE level > 99');
    assert.deepEqual(rowsOf(none), [{ n: '0' }]);
    assert.deepEqual(partitionsRead(none), [
      { table: 'log_entries', partitions: 3, skipped: 3, indexes: ['level_minmax'] },
    ]);
    // An OR's skips are told by its first alternative's index.
    assert.deepEqual(
      partitionsRead(await fixture.admin.query("SELECT msg FROM log_entries WHERE level = 3 OR exe = 'svc0'")),
      [{ table: 'log_entries', partitions: 3, skipped: 1, indexes: ['level_minmax'] }],
    );
    for (const sql of [
      "SELECT msg FROM log_entries WHERE level = 3 OR lower(exe) = 'svc0'",
      'SELECT a.msg FROM log_entries a JOIN log_entries b USING (msg) WHERE a.level = 3',
      'SELECT msg FROM log_entries WHERE level >= 2',
    ])
      assert.equal(partitionsRead(await fixture.admin.query(sql)), undefined, sql);
    assert.equal(partitionsRead(await fixture.reader.query('SELECT msg FROM log_entries WHERE level = 2')), undefined);
  });

  it("decides a reader's statement by its audiences' statistics alone: another audience's values read no row, as absent ones", async () => {
    // Rows of partitions a statement reads, as the server counts them: its work, so what its time can tell.
    const rowsRead = async (client: TestFlightClient, sql: string) => {
      const before = await metricValue(fixture.orrery.httpPort, 'orrery_partition_rows_read_total');
      await client.query(sql);
      return (await metricValue(fixture.orrery.httpPort, 'orrery_partition_rows_read_total')) - before;
    };
    // Level 3, 'entry 1.0' and svc1 are team_x's alone (the middle partition): a reader reads none of its rows,
    // as for values nobody holds, by each kind (minmax, bloom_filter, set).
    for (const sql of [
      'SELECT msg FROM log_entries WHERE level = 3',
      'SELECT msg FROM log_entries WHERE level = 5',
      "SELECT msg FROM log_entries WHERE msg = 'entry 1.0'",
      "SELECT msg FROM log_entries WHERE msg = 'entry 9.9'",
      "SELECT msg FROM log_entries WHERE exe = 'svc1'",
      "SELECT msg FROM log_entries WHERE exe = 'svc9'",
    ])
      assert.equal(await rowsRead(fixture.reader, sql), 0, sql);
    assert.equal(await rowsRead(fixture.reader, 'SELECT msg FROM log_entries WHERE level = 2'), 2);
    assert.equal(await rowsRead(suite.team, 'SELECT msg FROM log_entries WHERE level = 3'), 2);
    assert.equal(await rowsRead(fixture.admin, 'SELECT msg FROM log_entries WHERE level = 3'), 2);
  });

  it('explain_resources names each partition an index skips, and by which index, to an admin; a reader sees none', async () => {
    // The partitions in the order they were written: levels 4, 3 (team_x's) and 2.
    const [level4, level3, level2] = rowsOf(
      await fixture.admin.query(
        "SELECT file_path FROM list_partitions() WHERE view_set_name = 'log_entries' AND file_path IS NOT NULL ORDER BY begin_insert_time",
      ),
    ).map((r) => String((r as { file_path: string }).file_path));
    const explain = (client: TestFlightClient, sql: string) =>
      client.query(`SELECT * FROM explain_resources('${sql.replaceAll("'", "''")}')`).then(rowsOf);
    const pruned = (index: string, file: string) => ({
      level: null,
      table: 'log_entries',
      rollup: index,
      grain: null,
      decision: 'pruned',
      reason: `partition ${file}`,
    });
    assert.deepEqual(await explain(fixture.admin, 'SELECT msg FROM log_entries WHERE level = 3'), [
      pruned('level_minmax', level4),
      pruned('level_minmax', level2),
    ]);
    // Each partition by the first index (in the order they are tried) that excludes it.
    assert.deepEqual(
      await explain(fixture.admin, "SELECT msg FROM log_entries WHERE exe IN ('svc0', 'svc2') AND level > 2"),
      [pruned('exe_set', level3), pruned('level_minmax', level2)],
    );
    assert.deepEqual(await explain(fixture.admin, "SELECT msg FROM log_entries WHERE level = 3 OR exe = 'svc0'"), [
      pruned('level_minmax', level2),
    ]);
    assert.deepEqual(
      await explain(fixture.admin, "SELECT msg FROM log_entries WHERE level = 3 OR lower(exe) = 'svc0'"),
      [],
    );
    for (const [, client] of suite.clients().slice(1))
      assert.deepEqual(await explain(client, 'SELECT msg FROM log_entries WHERE level = 3'), []);
  });

  it("prunes by a prepared statement's bound parameters as by constants, answering as before the indexes", async () => {
    for (const [sql, parameters, skipped] of prepared) {
      for (const [who, client] of suite.clients())
        assert.deepEqual(
          await preparedAnswer(client, sql, parameters),
          answers.get(`${who}: ${sql}`),
          `${who}: ${sql}`,
        );
      const read = partitionsRead(await fixture.admin.queryPrepared(sql, parameters)) as
        Array<{ skipped: number }> | undefined;
      assert.equal(read?.[0]?.skipped ?? 0, skipped, sql);
    }
  });

  it('keeps the statistics up to date as partitions land: the daemon indexes each new one', async () => {
    const start = Math.floor(Date.now() / 1000);
    const time = 1704164645000000000n + 3_000_000n;
    const records = [{ time, level: 21, msg: 'entry 3.0', pod: 'pod-3' }];
    assert.equal(
      (await postOtlp(fixture.orrery.httpPort, 'logs', adminKey.key, logsBody('svc3', records))).status,
      200,
    );
    await sleep(1100);
    for (const view of ['processes', 'log_entries'])
      await fixture.admin.query(
        `SELECT * FROM materialize_partitions('${view}', '${iso(start - 1)}', '${iso(pastInsertTimes())}', 1)`,
      );
    const table = await fixture.admin.query('SELECT msg FROM log_entries WHERE level = 4 ORDER BY msg');
    assert.deepEqual(rowsOf(table), [{ msg: 'entry 0.0' }, { msg: 'entry 0.1' }]);
    assert.deepEqual(partitionsRead(table), [
      { table: 'log_entries', partitions: 4, skipped: 3, indexes: ['level_minmax'] },
    ]);
  });

  it('never opens the file of a skipped partition', async () => {
    const skipped = async () =>
      (
        await fixture.orrery.metadata.query<{ file_path: string; begin: number; end: number }>(
          `SELECT file_path, extract(epoch FROM p.begin_insert_time)::float8 AS begin, extract(epoch FROM p.end_insert_time)::float8 AS end
             FROM resource_partition_stats s JOIN resource_indexes i USING (index_hash) JOIN lakehouse_partitions p USING (file_path)
            WHERE i.entry_key = 'level_minmax' AND s.max_value = '2'`,
        )
      ).rows[0];
    // Its rows written again to a file no statement has read: on S3, DuckDB serves a file it has read from what
    // it kept, without asking the store (partition files never change), so only a file never read shows the deletion.
    const { begin, end } = await skipped();
    await fixture.admin.query(
      `SELECT * FROM regenerate_partitions('log_entries', '${iso(begin)}', '${iso(end)}', ${end - begin})`,
    );
    const { file_path: path } = await skipped();
    const bytes = await fixture.orrery.store.get(path);
    // Gone, not overwritten: DuckDB keeps what it read of a file, so only a missing one shows it was opened. A
    // statement that opens a missing partition file has it contained (taken out of the partitions, its range
    // rebuilt from source), so the partition still registered under its file after the query shows it was not.
    const registered = async () =>
      (await fixture.orrery.metadata.query('SELECT 1 FROM lakehouse_partitions WHERE file_path = $1', [path])).rows
        .length === 1;
    await fixture.orrery.store.delete(path);
    try {
      assert.deepEqual(rowsOf(await fixture.admin.query('SELECT msg FROM log_entries WHERE level > 2 ORDER BY msg')), [
        { msg: 'entry 0.0' },
        { msg: 'entry 0.1' },
        { msg: 'entry 1.0' },
        { msg: 'entry 1.1' },
      ]);
      assert.ok(await registered(), 'the skipped partition file was opened');
      // The check sees a statement that reads it (a statement held open, a GetFlightInfo's prepared statement
      // kept 10 s, may still read the file through its open handle: wait until one does not).
      for (let waited = 0; await registered(); waited += 500) {
        await fixture.admin.query('SELECT msg FROM log_entries WHERE level <= 2');
        assert.ok(waited < 30_000, 'reading the deleted partition file never contained it');
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    } finally {
      await fixture.orrery.store.put(path, bytes);
    }
  });

  it('decides a repeated statement from the statistics it read before, asking Postgres nothing again', async () => {
    const sqls = [
      'SELECT msg FROM log_entries WHERE level = 3',
      "SELECT count(*) AS n FROM log_entries WHERE msg = 'entry 0.05'",
    ];
    const first = [];
    for (const sql of sqls) first.push(partitionsRead(await fixture.admin.query(sql)));
    assert.deepEqual(first[0], [{ table: 'log_entries', partitions: 4, skipped: 3, indexes: ['level_minmax'] }]);
    // The statistics taken away behind the server's back: a statement asking Postgres for them would skip nothing.
    const { metadata } = fixture.orrery;
    await metadata.query('CREATE TABLE kept_stats AS SELECT * FROM resource_partition_stats');
    await metadata.query('DELETE FROM resource_partition_stats');
    try {
      for (const [i, sql] of sqls.entries()) {
        assert.deepEqual(partitionsRead(await fixture.admin.query(sql)), first[i], sql);
        assert.deepEqual(
          rowsOf(await fixture.admin.query(sql)),
          rowsOf(await fixture.admin.query(`${sql} OR false`)),
          sql,
        );
      }
    } finally {
      await metadata.query('INSERT INTO resource_partition_stats SELECT * FROM kept_stats');
      await metadata.query('DROP TABLE kept_stats');
    }
  });

  it('writes a Parquet bloom filter on the column of a bloom_filter index in every partition file; a probe of an absent value skips its row groups', async () => {
    // Each row group's msg chunk has one (a log line of distinct values was written plain, without one).
    assert.ok((await assertMsgBloomFilters(fixture, 'entry 0.05')) >= 3);
  });
});
