// What a publication promises beyond installing (issue 13, database-resources.md): a `set` index keeps a
// partition's distinct values only when there are at most 1,000 (a partition of more is read, never skipped by a
// list cut short); a stored column's backfill rewrites the files newest first (one failing midway leaves every newer
// file done) and stores the column ZSTD-compressed; two `orrery publish` runs started together: one installs and
// serves, the other fails naming the holder, with nothing of it recorded, installed or applied.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import pg from 'pg';
import { plainRows } from '../lakehouse/lakehouse-fixtures.js';
import { adminKey } from '../support/orrery-process.js';
import { publishFolder, skippedBy, useAudiencesOrrery } from '../support/publish.js';

const ms = 1_000_000n;
const first = 1704164645000000000n;
/** `<prefix> 0000` … with `count` distinct bodies, one millisecond apart. */
const records = (prefix: string, count: number, at: bigint) =>
  Array.from({ length: count }, (_, i) => ({
    time: at + BigInt(i) * ms,
    severity: 9,
    body: `${prefix} ${String(i).padStart(4, '0')}`,
    attributes: { pod: `pod-${i % 3}` },
  }));

/** A publication folder declaring `resources` (and, given `view`, a view set of that name in views/). */
function folder(parent: string, name: string, resources: unknown, view?: string): string {
  const dir = join(parent, name);
  mkdirSync(join(dir, 'resources'), { recursive: true });
  writeFileSync(join(dir, 'resources', 'logs.resources.json'), JSON.stringify({ resources }));
  if (view) {
    mkdirSync(join(dir, 'views'), { recursive: true });
    writeFileSync(
      join(dir, 'views', `${view}.sql`),
      `CREATE MATERIALIZED VIEW ${view} WITH (
  extract_query = $$SELECT date_bin('1 minute', time) AS time_bin, count(*) AS count, audience
    FROM log_entries WHERE insert_time >= '{begin}' AND insert_time < '{end}' GROUP BY ALL$$,
  count_src_query = $$SELECT sum(nb_objects) AS count FROM blocks WHERE insert_time >= '{begin}' AND insert_time < '{end}'$$,
  merge_partitions_query = $$SELECT time_bin, sum(count) AS count, audience FROM {source} GROUP BY ALL$$,
  update_group = 4000,
  time_column = 'time_bin'
)
`,
    );
  }
  return dir;
}

describe('publication guarantees: the set limit, newest first, ZSTD, two publishes at once (issue 13)', () => {
  const suite = useAudiencesOrrery('orrery-publish-guarantees-');
  const { fixture } = suite;
  const parent = mkdtempSync(join(tmpdir(), 'orrery-publish-folders-'));
  after(() => rmSync(parent, { recursive: true, force: true }));
  /** The object keys of log_entries' partition files, oldest first. */
  const files = async () =>
    (
      await fixture.orrery.metadata.query<{ file_path: string }>(
        "SELECT file_path FROM lakehouse_partitions WHERE view_set_name = 'log_entries' AND file_path IS NOT NULL ORDER BY begin_insert_time",
      )
    ).rows.map((r) => r.file_path);

  const msgSet = { msg_set: { index: { table: 'log_entries', column: 'msg', kind: 'set' } } };
  const pod = { pod: { column: { table: 'log_entries', expression: "properties->>'pod'" } } };

  let began = 0;
  before(async () => {
    began = Math.floor(Date.now() / 1000);
    // Three partitions, oldest first: 1,000 distinct messages 'a …', 1,001 'b …', and 2 'c …'.
    await suite.ingestPartitions([
      { key: adminKey.key, records: records('a', 1000, first) },
      { key: adminKey.key, records: records('b', 1001, first + 2000n * ms) },
      { key: adminKey.key, records: records('c', 2, first + 4000n * ms) },
    ]);
  });

  it('a set index lists a partition of 1,000 distinct values, and skips it; one of 1,001 is read', async () => {
    const run = await publishFolder(fixture.orrery.address, folder(parent, 'set', msgSet));
    assert.equal(run.status, 0, run.err.join('\n'));
    const { rows } = await fixture.orrery.metadata.query<{ n: number | null }>(
      `SELECT jsonb_array_length(s.distinct_values) AS n FROM resource_partition_stats s
         JOIN lakehouse_partitions p ON p.file_path = s.file_path ORDER BY p.begin_insert_time`,
    );
    assert.deepEqual(
      rows.map((r) => r.n),
      [1000, null, 2],
    );
    // Each value lies within its partition's min and max and is in no partition: the other two are skipped by
    // their min and max, 'a …''s by its list, 'b …''s (no list) is read.
    for (const [sql, skipped] of [
      ["SELECT count(*) AS n FROM log_entries WHERE msg = 'a 0500x'", 3],
      ["SELECT count(*) AS n FROM log_entries WHERE msg = 'b 0500x'", 2],
      ["SELECT count(*) AS n FROM log_entries WHERE msg IN ('b 0500', 'a 0999')", 1],
    ] as const) {
      assert.equal(skippedBy(await fixture.admin.query(sql)), skipped, sql);
      assert.deepEqual(await plainRows(fixture.admin, sql), await plainRows(fixture.admin, `${sql} OR false`), sql);
    }
    assert.deepEqual(await plainRows(fixture.admin, "SELECT count(*) AS n FROM log_entries WHERE msg = 'b 1000'"), [
      { n: 1 },
    ]);
  });

  it('a stored column is backfilled newest file first (one failing midway leaves the newer ones done), stored ZSTD', async () => {
    const dir = folder(parent, 'column', { ...msgSet, ...pod });
    const [oldest] = await files();
    const bytes = await fixture.orrery.store.get(oldest);
    await fixture.orrery.store.put(oldest, new TextEncoder().encode('not parquet'));
    let failed;
    try {
      failed = await publishFolder(fixture.orrery.address, dir);
    } finally {
      await fixture.orrery.store.put(oldest, bytes!);
    }
    assert.equal(failed.status, 1);
    assert.match(failed.err.join('\n'), /installing column pod on log_entries .* failed: /);
    const holding = async () =>
      (
        await fixture.orrery.metadata.query<{ file_path: string; holds: boolean }>(
          `SELECT p.file_path, f.file_path IS NOT NULL AS holds FROM lakehouse_partitions p
             LEFT JOIN resource_column_files f ON f.file_path = p.file_path
            WHERE p.view_set_name = 'log_entries' AND p.file_path IS NOT NULL ORDER BY p.begin_insert_time`,
        )
      ).rows;
    // The two newer files were rewritten (registered anew, holding the column) before the oldest failed.
    assert.deepEqual(
      (await holding()).map((r) => r.holds),
      [false, true, true],
    );
    const resumed = await publishFolder(fixture.orrery.address, dir);
    assert.equal(resumed.status, 0, resumed.err.join('\n'));
    assert.match(
      resumed.text,
      /^backfill stored column pod \(__orr_[0-9a-f]{16} VARCHAR\) on log_entries: 1 partition file/m,
    );
    const rewritten = await holding();
    assert.deepEqual(
      rewritten.map((r) => r.holds),
      [true, true, true],
    );
    const [{ name }] = (
      await fixture.orrery.metadata.query<{ name: string }>(
        "SELECT column_name AS name FROM resource_columns WHERE entry_key = 'pod'",
      )
    ).rows;
    const local = mkdtempSync(join(tmpdir(), 'orrery-zstd-'));
    const duck = await DuckDBInstance.create(':memory:');
    const connection = await duck.connect();
    try {
      for (const [i, { file_path }] of rewritten.entries()) {
        const file = join(local, `${i}.parquet`);
        writeFileSync(file, (await fixture.orrery.store.get(file_path))!);
        const chunks = (
          await connection.runAndReadAll(
            `SELECT DISTINCT compression FROM parquet_metadata('${file}') WHERE path_in_schema = '${name}'`,
          )
        ).getRowObjectsJson();
        assert.deepEqual(chunks, [{ compression: 'ZSTD' }], file_path);
      }
    } finally {
      connection.closeSync();
      duck.closeSync();
      rmSync(local, { recursive: true, force: true });
    }
  });

  it('two publishes started together: one installs and serves, the other fails naming it; nothing of the other is kept', async () => {
    const levelMinmax = { level_minmax: { index: { table: 'log_entries', column: 'level', kind: 'minmax' } } };
    const exeSet = { exe_set: { index: { table: 'log_entries', column: 'exe', kind: 'set' } } };
    const candidates = [
      {
        entry: 'level_minmax',
        view: 'x_counts',
        dir: folder(parent, 'x', { ...msgSet, ...pod, ...levelMinmax }, 'x_counts'),
      },
      { entry: 'exe_set', view: 'y_counts', dir: folder(parent, 'y', { ...msgSet, ...pod, ...exeSet }, 'y_counts') },
    ];
    const publications = async () =>
      (await fixture.orrery.metadata.query('SELECT id FROM resource_publications')).rows.length;
    const before = await publications();
    // Whichever takes the lock first stops at recording its publication (held here), so the other meets the lock.
    const holder = new pg.Client({ connectionString: fixture.orrery.metadata.connectionString });
    await holder.connect();
    let runs;
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE resource_publications IN EXCLUSIVE MODE');
      runs = candidates.map((c, i) => publishFolder(fixture.orrery.address, c.dir).then((run) => ({ i, run })));
      // Were the lock not taken by one alone, both would wait here: said as such rather than waiting forever.
      let settled = false;
      const bothWaiting = (async () => {
        for (; !settled; await new Promise((resolve) => setTimeout(resolve, 50))) {
          const waiting = await holder.query(
            "SELECT count(*)::int AS n FROM pg_locks WHERE relation = 'resource_publications'::regclass AND NOT granted",
          );
          if ((waiting.rows[0] as { n: number }).n > 1) assert.fail('both publishes got past the resources lock');
        }
        return undefined as never;
      })();
      const loser = await Promise.race([...runs, bothWaiting]);
      settled = true;
      await bothWaiting;
      assert.equal(loser.run.status, 1, loser.run.text);
      assert.match(
        loser.run.err.join('\n'),
        /another installation holds the resources lock: publish \(install\) by admin on host .+, pid \d+, since \d{4}-/,
      );
      await holder.query('COMMIT');
      const winner = await runs[1 - loser.i];
      assert.equal(winner.run.status, 0, winner.run.err.join('\n'));
      const won = candidates[winner.i];
      const lost = candidates[loser.i];
      assert.equal(await publications(), before + 1);
      const ledger = await plainRows(
        fixture.admin,
        "SELECT entry_key, state FROM resource_ledger() WHERE state <> 'retired' ORDER BY entry_key",
      );
      assert.deepEqual(
        ledger,
        ['msg_set', 'pod', won.entry].sort().map((entry_key) => ({ entry_key, state: 'ready' })),
      );
      assert.equal(
        (await fixture.orrery.metadata.query('SELECT 1 FROM resource_ledger WHERE entry_key = $1', [lost.entry])).rows
          .length,
        0,
      );
      const views = (await plainRows(fixture.admin, 'SELECT view_set_name FROM list_view_set_definitions()')).map(
        (r) => r.view_set_name,
      );
      assert.ok(views.includes(won.view), views.join(', '));
      assert.ok(!views.includes(lost.view), views.join(', '));
      assert.deepEqual((await fixture.orrery.metadata.query('SELECT token FROM resource_locks')).rows, []);
    } finally {
      await holder.query('ROLLBACK').catch(() => {});
      await holder.end();
      await Promise.allSettled(runs ?? []);
    }
  });

  it("a view set defined in SQL over log_entries stores the expression's values as its own column: the same as computed", async () => {
    // Its extract computes properties->>'pod' once per row as it materializes (the stored column is not read
    // there); queries over it read its partitions, so no statement computes the expression again (README).
    await fixture.admin.query(`CREATE MATERIALIZED VIEW pod_counts WITH (
  extract_query = $$SELECT date_bin('1 minute', time) AS time_bin, properties->>'pod' AS pod, count(*) AS count, audience FROM log_entries WHERE insert_time >= '{begin}' AND insert_time < '{end}' GROUP BY ALL$$,
  count_src_query = $$SELECT sum(nb_objects) AS count FROM blocks WHERE insert_time >= '{begin}' AND insert_time < '{end}'$$,
  merge_partitions_query = $$SELECT time_bin, pod, sum(count) AS count, audience FROM {source} GROUP BY ALL$$,
  update_group = 4000, time_column = 'time_bin')`);
    const iso = (seconds: number) => new Date(seconds * 1000).toISOString();
    await fixture.admin.query(
      `SELECT * FROM materialize_partitions('pod_counts', '${iso(began - 2)}', '${iso(Math.floor(Date.now() / 1000) + 2)}', 1)`,
    );
    const direct = "SELECT properties->>'pod' AS pod, count(*) AS n FROM log_entries GROUP BY ALL ORDER BY pod";
    const provenance = (await fixture.admin.query(direct)).schema.metadata.get('orrery.provenance');
    assert.match(String(provenance), /"use":"substituted"/);
    assert.deepEqual(
      await plainRows(fixture.admin, 'SELECT pod, sum(count)::BIGINT AS n FROM pod_counts GROUP BY ALL ORDER BY pod'),
      await plainRows(fixture.admin, direct),
    );
  });
});
