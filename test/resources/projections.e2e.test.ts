// Projections (issue 13 item 6): a projection of log_entries sorted by level is a sorted copy of each partition
// file, backfilled at publish and written by the daemon for each partition it commits; a statement whose WHERE
// restricts the leading sort column reads the copies in place of the files, and every query answers as before
// the projection existed, for an admin and two audiences' keys. Prune queues the copies for deletion.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { deleteExpiredFiles } from '../../src/lakehouse/index.js';
import { runResourcesCli } from '../../src/resources/index.js';
import { plainRows } from '../lakehouse/lakehouse-fixtures.js';
import { adminKey } from '../support/orrery-process.js';
import { pastInsertTimes } from '../support/otlp.js';
import { assertReads, copyRows, projectionsOf } from '../support/projections.js';
import { publishFolder, teamKey, useAudiencesOrrery } from '../support/publish.js';

/** Each query, and whether an admin's reads the projection's copies. */
const queries: Array<[string, boolean]> = [
  ['SELECT msg, level FROM log_entries WHERE level = 3 ORDER BY msg', true],
  ['SELECT msg FROM log_entries WHERE level >= 3 AND exe <> $$x$$ ORDER BY msg', true],
  [
    'WITH e AS (SELECT * FROM log_entries WHERE level BETWEEN 2 AND 3) SELECT count(*) AS n, min(msg) AS m FROM e',
    true,
  ],
  ["SELECT count(*) AS n FROM log_entries WHERE exe = 'svc1'", false],
  ['SELECT msg FROM log_entries ORDER BY msg', false],
  ['SELECT a.msg FROM log_entries a JOIN log_entries b USING (msg) WHERE a.level = 3 ORDER BY 1', false],
];

describe('projections: sorted copies of the partitions, read when the WHERE restricts their sort column (issue 13)', () => {
  const suite = useAudiencesOrrery('orrery-projections-', { ORRERY_RETIRE_DELAY_SECONDS: '0' });
  const { fixture, dir } = suite;
  const answers = new Map<string, unknown>();

  const everyAnswer = () => suite.everyAnswer(queries.map(([sql]) => sql));
  const assertSameAnswers = async () => {
    const now = await everyAnswer();
    for (const [sql, rows] of answers) assert.deepEqual(now.get(sql), rows, sql);
  };
  // Levels out of order within a partition, so its sorted copy differs from it.
  const ingest = (i: number, key: string) =>
    suite.ingest(
      i,
      key,
      [17, 9, 13, 21, 9].map((severity, j) => ({ severity, body: `entry ${i}.${j}` })),
    );
  const { materialize } = suite;
  const copies = async () =>
    (
      await fixture.orrery.metadata.query<{ copy_path: string }>(
        'SELECT copy_path FROM resource_projection_files ORDER BY copy_path',
      )
    ).rows.map((r) => r.copy_path);
  const declare = (resources: unknown) =>
    writeFileSync(join(dir, 'resources', 'logs.resources.json'), JSON.stringify({ resources }));

  before(async () => {
    const start = Math.floor(Date.now() / 1000);
    for (const i of [0, 1, 2]) await ingest(i, i === 1 ? teamKey.key : adminKey.key);
    await materialize(start - 2, pastInsertTimes());
    for (const [sql, rows] of await everyAnswer()) answers.set(sql, rows);
    mkdirSync(join(dir, 'resources'), { recursive: true });
  });

  it('publish copies every partition sorted by level; queries restricting level read the copies, answers unchanged', async () => {
    // Storing a column entry is not installed by this server (a copy holds the stored columns anyway): planned
    // as omitted. Sorting by one is (projection-column.e2e).
    declare({
      pod: { column: { table: 'log_entries', expression: "properties->>'pod'" } },
      by_pod: { projection: { table: 'log_entries', order_by: ['pod'] } },
      pods: { projection: { table: 'log_entries', order_by: ['level'], columns: ['pod'] } },
      some: { projection: { table: 'log_entries', order_by: ['level'], columns: ['msg'] } },
    });
    const dry = await publishFolder(fixture.orrery.address, dir, '--dry-run');
    assert.match(dry.text, /^install projection by_pod on log_entries$/m);
    assert.match(dry.text, /^warning: omitted projection pods on log_entries .*physical columns only, .*\(pod\)$/m);
    assert.match(dry.text, /^install projection some on log_entries$/m);
    declare({ by_level: { projection: { table: 'log_entries', order_by: ['level'] } } });
    const run = await publishFolder(fixture.orrery.address, dir);
    assert.equal(run.status, 0, run.err.join('\n'));
    assert.match(run.text, /^backfill projection by_level on log_entries \(by level\): 3 of 3 partition\(s\)/m);
    const copied = await copies();
    assert.equal(copied.length, 3);
    for (const key of copied) assert.ok((await fixture.orrery.store.get(key)).length > 0, key);
    await assertSameAnswers();
    await assertReads(fixture.admin, queries, 'by_level');
    assert.equal(projectionsOf(await fixture.reader.query(queries[0][0])), undefined);
  });

  it('explain_resources tells an admin the projection a statement reads; a reader sees none', async () => {
    const explain = (client: typeof fixture.admin, sql: string) =>
      plainRows(client, `SELECT * FROM explain_resources('${sql.replaceAll("'", "''")}')`);
    const read = {
      level: null,
      table: 'log_entries',
      rollup: 'by_level',
      grain: null,
      decision: 'projection',
      reason: 'reads its sorted copies',
    };
    for (const [sql, reads] of queries) assert.deepEqual(await explain(fixture.admin, sql), reads ? [read] : [], sql);
    for (const [, client] of suite.clients().slice(1)) assert.deepEqual(await explain(client, queries[0][0]), []);
  });

  it('the daemon copies each partition it commits; prune queues every copy for deletion', async () => {
    const start = Math.floor(Date.now() / 1000);
    await ingest(3, adminKey.key);
    await materialize(start - 1, pastInsertTimes());
    assert.equal((await copies()).length, 4);
    assert.deepEqual(await plainRows(fixture.admin, 'SELECT count(*) AS n FROM log_entries WHERE level = 3'), [
      { n: 4 },
    ]);
    assert.ok(projectionsOf(await fixture.admin.query(queries[0][0])));

    const before = await copies();
    declare({});
    assert.equal((await publishFolder(fixture.orrery.address, dir)).status, 0);
    await fixture.orrery.metadata.query("UPDATE resource_ledger SET prune_after = now() - interval '1 second'");
    const env = { ORRERY_FLIGHT_SQL_ADDR: fixture.orrery.address, ORRERY_API_KEY: adminKey.key };
    const [out, err] = [[] as string[], [] as string[]];
    const status = await runResourcesCli(
      ['prune'],
      { env, out: (l) => out.push(l), err: (l) => err.push(l) },
      'resources',
    );
    assert.equal(status, 0, err.join('\n'));
    assert.ok(
      out.some((l) =>
        /^dropped projection by_level on log_entries \([0-9a-f]+\): 4 projection file\(s\) queued for deletion in 3600 s/.test(
          l,
        ),
      ),
      out.join('\n'),
    );
    assert.deepEqual(await copies(), []);
    // No statement reads them any more; they stay an hour (a statement planned before may), then go with the retired files.
    assert.equal(projectionsOf(await fixture.admin.query(queries[0][0])), undefined);
    for (const key of before) assert.ok((await fixture.orrery.store.get(key)).length > 0, key);
    await fixture.orrery.metadata.query(
      "UPDATE temporary_files SET expiration = now() - interval '1 second' WHERE file_path LIKE 'projections/%'",
    );
    assert.ok((await deleteExpiredFiles(fixture.orrery.metadata, fixture.orrery.store)) >= 4);
    for (const key of before) await assert.rejects(fixture.orrery.store.get(key), key);
  });

  it('a projection storing some columns holds those, and serves only statements reading them alone', async () => {
    const narrowQueries: Array<[string, boolean]> = [
      ["SELECT level FROM log_entries WHERE msg = 'entry 1.2'", true],
      ["SELECT l.msg, level FROM log_entries l WHERE msg >= 'entry 1' ORDER BY msg", true],
      ["SELECT count(*) AS n, max(time) AS t FROM log_entries WHERE msg LIKE 'entry 2%' AND msg > 'entry'", true],
      ["SELECT exe FROM log_entries WHERE msg = 'entry 1.2'", false],
      ["SELECT * FROM log_entries WHERE msg = 'entry 1.2'", false],
      ["SELECT l FROM log_entries l WHERE msg = 'entry 1.2'", false],
      ["SELECT level FROM (SELECT * FROM log_entries) WHERE msg = 'entry 1.2'", false],
      ["SELECT level, #3 AS p FROM log_entries WHERE msg = 'entry 1.2'", false],
    ];
    const expected = await suite.everyAnswer(narrowQueries.map(([sql]) => sql));
    declare({ by_msg: { projection: { table: 'log_entries', order_by: ['msg'], columns: ['level'] } } });
    const run = await publishFolder(fixture.orrery.address, dir);
    assert.equal(run.status, 0, run.err.join('\n'));
    // A copy holds the sort and declared columns and those the audience filter and event range read.
    const [copy] = await copies();
    const described = await copyRows(
      (await fixture.orrery.store.get(copy))!,
      (file) => `SELECT column_name FROM (DESCRIBE SELECT * FROM read_parquet('${file}')) ORDER BY 1`,
    );
    assert.deepEqual(described.flat(), ['audience', 'level', 'msg', 'time']);
    const now = await suite.everyAnswer(narrowQueries.map(([sql]) => sql));
    for (const [sql, rows] of expected) assert.deepEqual(now.get(sql), rows, sql);
    await assertReads(fixture.admin, narrowQueries, 'by_msg');
  });
});
