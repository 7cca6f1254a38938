// Index entries on a series table (issue 13), published with `orrery publish`: DuckLake's own per-file min/max
// satisfy a minmax entry; a bloom_filter entry sorts the table's new files by its column in small row groups, so
// the row groups whose min/max admit an equality's value hold a few of the rows; a text entry is installed as the
// statistics of the table's data files (test/sql/series-text-index.test).
// Counted on the files themselves (Parquet row group statistics, which DuckDB's reader skips by), against a twin
// table without the entries that gets the same rows; answers are the twin's for every key (audiences kept).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { plainRows, pollUntil, refusal, scalar } from '../lakehouse/lakehouse-fixtures.js';
import { FlightSql, packAny, unpackAny } from '../support/flight-client.js';
import { metricValue } from '../support/metric-value.js';
import { publishFolder, runCliAs, useAudiencesOrrery } from '../support/publish.js';
import { adminKey } from '../support/orrery-process.js';

/** gRPC's ABORTED. */
const aborted = 10;

/**
 * Rows per INSERT: past one default row group (122,880 rows), so each file of the twin has two; 60 ms apart, 2 h 10 min
 * of them (16.7 a second: hour buckets of 60,000 rows, the widest holding at most 153,600).
 */
const rowsPerInsert = 130_000;

/** The Parquet files DuckLake wrote for `table` under the server's data folder. */
function tableFiles(dataDir: string, table: string): string[] {
  return readdirSync(dataDir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.parquet') && e.parentPath.split('/').includes(table))
    .map((e) => join(e.parentPath, e.name));
}

/**
 * How many rows lie in row groups whose min/max of `column` admit a value from `low` to `high` (what a reader of
 * `trace = value`, or of `ts BETWEEN low AND high`, reads).
 */
async function rowsAdmitting(files: readonly string[], value: string, column = 'trace', high = value): Promise<number> {
  const db = await (await DuckDBInstance.create(':memory:')).connect();
  try {
    const list = files.map((f) => `'${f}'`).join(', ');
    const reader = await db.runAndReadAll(
      `SELECT coalesce(sum(row_group_num_rows), 0)::BIGINT FROM parquet_metadata([${list}])
        WHERE path_in_schema = '${column}' AND stats_min_value <= '${high}' AND stats_max_value >= '${value}'`,
    );
    return Number(reader.getRows()[0][0]);
  } finally {
    db.closeSync();
  }
}

describe('index entries on a series table (issue 13)', () => {
  const suite = useAudiencesOrrery('orrery-series-indexes-');
  const { fixture, dir } = suite;
  let published = '';
  /** Each table's files written before the publication. */
  const earlier = new Map<string, string[]>();
  /** An id of the second INSERT after the publication, and one no row holds. */
  const probeId = String(3 * rowsPerInsert + 777);
  const probe = `md5('${probeId}')`;
  const absent = `md5('absent')`;

  const update = (query: string, transactionId?: Uint8Array) =>
    fixture.admin.client.doPut(packAny('CommandStatementUpdate', { query, transactionId }), []);
  async function begin(): Promise<Uint8Array> {
    const [body] = await fixture.admin.doAction('BeginTransaction', packAny('ActionBeginTransactionRequest', {}));
    return (
      FlightSql.ActionBeginTransactionResult.decode(unpackAny(body)!.value) as unknown as { transactionId: Uint8Array }
    ).transactionId;
  }
  const end = (transactionId: Uint8Array, commit: boolean) =>
    fixture.admin.doAction(
      'EndTransaction',
      packAny('ActionEndTransactionRequest', { transactionId, action: commit ? 1 : 2 }),
    );

  const insert = async (table: string, n: number) =>
    fixture.admin.query(
      `INSERT INTO ${table} (ts, trace, pod, audience)
       SELECT TIMESTAMP '2026-11-0${n + 1}' + to_microseconds(i * 60000), md5((i + ${n * rowsPerInsert})::VARCHAR),
              'pod-' || (i % 40), CASE WHEN i % 2 = 0 THEN 'public' ELSE 'team_x' END
       FROM range(${rowsPerInsert}) t(i)`,
    );

  before(async () => {
    for (const table of ['spans_idx', 'spans_raw'])
      await fixture.admin.query(
        `CREATE TABLE ${table} (ts TIMESTAMP, trace VARCHAR, pod VARCHAR) WITH (time_column = 'ts')`,
      );
    for (const n of [0, 1]) for (const table of ['spans_idx', 'spans_raw']) await insert(table, n);
    mkdirSync(join(dir, 'resources'), { recursive: true });
    const resources = {
      ts_minmax: { index: { table: 'spans_idx', column: 'ts', kind: 'minmax' } },
      trace_bloom: { index: { table: 'spans_idx', column: 'trace', kind: 'bloom_filter' } },
      // A second sorting column: sorted only within equal traces (every row's own), its row groups would each span
      // every pod.
      pod_set: { index: { table: 'spans_idx', column: 'pod', kind: 'set' } },
      pod_text: { index: { table: 'spans_idx', column: 'pod', kind: 'text' } },
    };
    writeFileSync(join(dir, 'resources', 'spans.resources.json'), JSON.stringify({ resources }));
    const run = await publishFolder(fixture.orrery.address, dir);
    assert.equal(run.status, 0, run.err.join('\n'));
    published = run.text;
    for (const table of ['spans_idx', 'spans_raw']) earlier.set(table, tableFiles(fixture.orrery.dataDir, table));
    // Written after the publication: sorted by trace.
    for (const n of [2, 3]) for (const table of ['spans_idx', 'spans_raw']) await insert(table, n);
  });

  it('plans minmax as satisfied by DuckLake, installs bloom_filter as the sort order and text over the files, omits a second sort column saying why', () => {
    assert.match(
      published,
      /^satisfied index ts_minmax on spans_idx: DuckLake keeps every data file's min and max of ts, and a read skips the files a filter's range misses$/m,
    );
    assert.match(
      published,
      /^ {2}trace_bloom: spans_idx sorted by \(time_bucket\(INTERVAL '1 hour', "ts"\), trace\) in row groups of 16384 rows: .* 2 file\(s\) written before keep their order$/m,
    );
    assert.match(published, /^ready index trace_bloom on spans_idx$/m);
    assert.match(
      published,
      /^warning: omitted index pod_set on spans_idx \(.*\): spans_idx is sorted by trace \(index trace_bloom\): DuckLake sorts a table in one order, in which pod would be sorted only within rows of equal trace/m,
    );
    assert.match(
      published,
      /^backfill text index pod_text on spans_idx: 2 of 2 partition\(s\) to read \(0 done before\)/m,
    );
    assert.match(published, /^ready index pod_text on spans_idx$/m);
  });

  it('files written after it hold trace sorted within hours: an equality reads a fraction of their rows, an hour no more than the twin', async () => {
    const later = (table: string) =>
      tableFiles(fixture.orrery.dataDir, table).filter((f) => !earlier.get(table)!.includes(f));
    assert.equal(later('spans_idx').length, 2);
    const id = createHash('md5').update(probeId).digest('hex');
    // The twin's row groups (two a file) each span every id; the indexed table's, those of each hour (three a file)
    // holding the id and those across two hours (the end of one, the start of the next).
    assert.equal(await rowsAdmitting(later('spans_raw'), id), 2 * rowsPerInsert);
    const admitted = await rowsAdmitting(later('spans_idx'), id);
    assert.ok(admitted <= 2 * 5 * 16_384, `${admitted} rows admitted`);
    // An hour of the first file: the twin reads its first row group (the file's first 2 h 3 min), the indexed table
    // that hour's rows (60,000) and the row groups across its ends; sorted by trace alone, every row group of it.
    const hour = ['2026-11-03 01:00:00', '2026-11-03 01:59:59.99'] as const;
    const twin = await rowsAdmitting(later('spans_raw'), hour[0], 'ts', hour[1]);
    assert.equal(twin, 122_880);
    const inHour = await rowsAdmitting(later('spans_idx'), hour[0], 'ts', hour[1]);
    assert.ok(inHour <= 60_000 + 2 * 16_384, `${inHour} rows admitted`);
    // Its files written before keep their order.
    assert.equal(await rowsAdmitting(earlier.get('spans_idx')!, id), 2 * rowsPerInsert);
  });

  it('answers as the twin without entries for every key, audiences kept', async () => {
    const queries = (table: string) => [
      `SELECT count(*) AS n, min(pod) AS pod FROM ${table} WHERE trace = ${probe}`,
      `SELECT count(*) AS n FROM ${table} WHERE trace = ${absent}`,
      `SELECT count(*) AS n, count(DISTINCT trace) AS traces FROM ${table} WHERE ts >= TIMESTAMP '2026-11-04'`,
      `SELECT audience, count(*) AS n FROM ${table} WHERE trace IN (${probe}, md5('4')) GROUP BY ALL ORDER BY ALL`,
    ];
    const twin = await suite.everyAnswer(queries('spans_raw'));
    const indexed = await suite.everyAnswer(queries('spans_idx'));
    assert.deepEqual([...indexed.values()], [...twin.values()]);
    // The reader (audience public) sees the public rows alone.
    assert.deepEqual(await plainRows(fixture.reader, queries('spans_idx')[3]), [{ audience: 'public', n: 1 }]);
    assert.deepEqual(await plainRows(fixture.admin, queries('spans_idx')[3]), [
      { audience: 'public', n: 1 },
      { audience: 'team_x', n: 1 },
    ]);
  });

  it('a publication again leaves the table as it is: no DuckLake snapshot, which would fail INSERTs in flight', async () => {
    const latest = async () =>
      (
        await fixture.orrery.metadata.query<{ id: string }>(
          'SELECT max(snapshot_id)::text AS id FROM ducklake.ducklake_snapshot',
        )
      ).rows[0].id;
    const before = await latest();
    const again = await publishFolder(fixture.orrery.address, dir);
    assert.equal(again.status, 0, again.err.join('\n'));
    assert.match(again.text, /^ {2}trace_bloom: spans_idx already sorted by \(time_bucket\(.*\), trace\):/m);
    assert.equal(await latest(), before);
  });

  it('an INSERT running while a publication sorts its table is run once more and kept; a transaction that wrote it hears TRANSACTION_CONFLICT', async () => {
    for (const table of ['spans_busy', 'spans_tx'])
      await fixture.admin.query(
        `CREATE TABLE ${table} (ts TIMESTAMP, trace VARCHAR, pod VARCHAR) WITH (time_column = 'ts')`,
      );
    const tx = await begin();
    await update(`INSERT INTO spans_tx VALUES (TIMESTAMP '2026-11-10', 'a', 'p')`, tx);
    // 600 rows of 100 ms each: 60 s from its start, when it read the table's catalog (its DuckLake snapshot), for
    // the publication to sort the table meanwhile. Its run once more, begun (now()) past that minute, sleeps no more.
    const running = () => metricValue(fixture.orrery.httpPort, 'orrery_queries_running');
    const reruns = () => metricValue(fixture.orrery.httpPort, 'orrery_conflict_reruns_total');
    const rerunsBefore = await reruns();
    const slowUntil = new Date(Date.now() + 60_000).toISOString().replace('T', ' ').replace('Z', '');
    const slow = update(
      `INSERT INTO spans_busy SELECT TIMESTAMP '2026-11-10' + to_seconds(i), md5(i::VARCHAR), 'p' FROM range(600) t(i)
        WHERE sleep_ms(CASE WHEN now() < TIMESTAMP '${slowUntil}' THEN 100 ELSE 0 END) IS NULL`,
    );
    await pollUntil('the INSERT running', running, (n) => n >= 1, { timeoutMs: 120_000, intervalMs: 50 });
    writeFileSync(
      join(dir, 'resources', 'busy.resources.json'),
      JSON.stringify({
        resources: {
          busy_bloom: { index: { table: 'spans_busy', column: 'trace', kind: 'bloom_filter' } },
          tx_bloom: { index: { table: 'spans_tx', column: 'trace', kind: 'bloom_filter' } },
        },
      }),
    );
    const run = await publishFolder(fixture.orrery.address, dir);
    assert.equal(run.status, 0, run.err.join('\n'));
    assert.match(run.text, /^ {2}busy_bloom: spans_busy sorted by /m);
    await slow;
    assert.equal(await scalar(fixture.admin, 'SELECT count(*) FROM spans_busy'), 600);
    // The INSERT committed after the sort, run once more: DuckLake refused its first commit (the table altered since
    // it began), not one begun after the sort.
    assert.equal(await reruns(), rerunsBefore + 1);
    // Each snapshot's changes to the table after its creation, in order: an INSERT's (inlined or in a file) or the sort.
    const { rows } = await fixture.orrery.metadata.query<{ id: string; changes: string }>(
      `SELECT t.table_id::text AS id, c.changes_made AS changes FROM ducklake.ducklake_snapshot_changes c
         JOIN ducklake.ducklake_table t ON t.table_name = 'spans_busy' AND t.end_snapshot IS NULL
        WHERE c.snapshot_id > t.begin_snapshot ORDER BY c.snapshot_id`,
    );
    const changes = rows.flatMap(({ id, changes }) =>
      changes
        .split(',')
        .filter((c) => c.endsWith(`:${id}`))
        .map((c) => (c.startsWith('altered_table:') ? 'sorted' : c.replace(/:.*/, ''))),
    );
    assert.deepEqual(
      changes.map((c) => (c === 'inlined_insert' ? 'inserted_into_table' : c)),
      ['sorted', 'inserted_into_table'],
    );
    // The client's transaction is its own to run again: told so, nothing of it kept.
    const refused = await refusal(end(tx, true));
    assert.equal(refused.code, aborted, refused.details);
    assert.match(refused.details, /another transaction has altered it.*nothing of it was kept: run it again/s);
    assert.equal(await scalar(fixture.admin, 'SELECT count(*) FROM spans_tx'), 0);
  });

  it('status lists it ready, with no drift; the column it sorts by cannot be dropped or renamed', async () => {
    await assert.rejects(
      fixture.admin.query('ALTER TABLE spans_idx DROP COLUMN trace'),
      /'trace' sorts 'spans_idx' for index entries of published resources files \(DuckLake sorts its new files by it\): it can be dropped once no publication declares them and prune has dropped them/,
    );
    // Renamed, the entry would name a column the table no longer has: status would call it unsorted.
    await assert.rejects(
      fixture.admin.query('ALTER TABLE spans_idx RENAME COLUMN trace TO trace_id'),
      /'trace' sorts 'spans_idx' .*: it can be renamed once no publication declares them/,
    );
    const status = await runCliAs(adminKey.key, fixture.orrery.address, 'resources', ['status']);
    assert.equal(status.status, 0, status.err.join('\n'));
    assert.match(status.text, /trace_bloom/);
    assert.doesNotMatch(status.text, /not sorted by/);
  });

  it('retired, it keeps sorting for its seven days; pruned, new files are unsorted and the column can be dropped', async () => {
    writeFileSync(
      join(dir, 'resources', 'spans.resources.json'),
      JSON.stringify({ resources: { ts_minmax: { index: { table: 'spans_idx', column: 'ts', kind: 'minmax' } } } }),
    );
    const retired = await publishFolder(fixture.orrery.address, dir);
    assert.equal(retired.status, 0, retired.err.join('\n'));
    assert.match(retired.text, /^retired index trace_bloom on spans_idx \([0-9a-f]{8}\) for 7 days$/m);
    await assert.rejects(fixture.admin.query('ALTER TABLE spans_idx DROP COLUMN trace'), /'trace' sorts 'spans_idx'/);
    await fixture.orrery.metadata.query(
      "UPDATE resource_ledger SET prune_after = now() - interval '1 second' WHERE entry_key = 'trace_bloom'",
    );
    const pruned = await runCliAs(adminKey.key, fixture.orrery.address, 'resources', ['prune']);
    assert.equal(pruned.status, 0, pruned.err.join('\n'));
    assert.match(
      pruned.text,
      /^dropped index trace_bloom on spans_idx \([0-9a-f]{8}\): spans_idx unsorted again \(row groups of 122880 rows\)$/m,
    );
    const before = new Set(tableFiles(fixture.orrery.dataDir, 'spans_idx'));
    await insert('spans_idx', 4);
    const added = tableFiles(fixture.orrery.dataDir, 'spans_idx').filter((f) => !before.has(f));
    assert.equal(added.length, 1);
    // Its two row groups (122,880 rows and the rest) each span every id again.
    assert.equal(await rowsAdmitting(added, createHash('md5').update('520005').digest('hex')), rowsPerInsert);
    await fixture.admin.query('ALTER TABLE spans_idx DROP COLUMN trace');
  });
});
