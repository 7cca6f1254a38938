// Resources benchmark (see run.sh): dashboard queries over log_entries without indexes, then with a
// minmax index on time, a set index on exe and a bloom filter on msg installed by `orrery publish`;
// the partitions each query skipped (from the admin's orrery.provenance), median times, the ratio.
// With --kind columns: queries on the `pod` JSON property before and after publishing a stored column
// of it (and a bloom filter on that column), the column read (provenance) against the same expression
// spelled so that it is computed. With --kind text: `msg ILIKE` searches over the days (a week by default)
// before and after publishing a text index on msg, timeouts logged on one day of seven. With --kind projection:
// filters on level and on msg before and after publishing projections sorted by each. Exits 1 when an answer with the resources differs from its answer without.
import { createHash } from 'node:crypto';
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { FlightSqlClient } from '../../dist/src/client/index.js';
import { publishSeconds as publishDir } from './publish.mjs';
import { generateLogEntries } from './generate.mjs';

const { values } = parseArgs({
  options: {
    'http-port': { type: 'string' },
    'flight-port': { type: 'string' },
    dir: { type: 'string' },
    rows: { type: 'string', default: '200000' },
    days: { type: 'string', default: '10' },
    repeats: { type: 'string', default: '5' },
    kind: { type: 'string', default: 'indexes' },
    // GENERATE=1: the entries written by DuckDB and registered directly (generate.mjs), in the server's data folder.
    generate: { type: 'boolean', default: false },
    'data-dir': { type: 'string' },
    'per-partition': { type: 'string', default: '1000000' },
    processes: { type: 'string', default: '20' },
    // --kind projection: the columns by_msg stores besides msg (comma-separated; empty: every column).
    'projection-columns': { type: 'string', default: '' },
    // --kind projection --projection-by pod: instead, by_pod sorted by a column entry of the pod property (the spec's).
    'projection-by': { type: 'string', default: '' },
    // --projection-by pod --time-minmax: a minmax index on time too, so the last day's query opens that day's copies only.
    'time-minmax': { type: 'boolean', default: false },
  },
});
const columns = values.kind === 'columns';
const text = values.kind === 'text';
const projection = values.kind === 'projection';
// --kind dashboard: the issue's dashboard at once (item 8): the pod's stored column with a bloom filter, by_pod sorted by
// it, and a text index on msg, one publish over one data set (at 100 M, one generation and one publish).
const dashboard = values.kind === 'dashboard';
const byPod = projection && values['projection-by'] === 'pod';
if (values['projection-by'] !== '' && !byPod) throw new Error('--projection-by takes pod (with --kind projection)');
if (values['time-minmax'] && !byPod) throw new Error('--time-minmax goes with --kind projection --projection-by pod');
const [rows, days, repeats] = [values.rows, values.days, values.repeats].map(Number);
const apiKey = 'admin-key-0123';
const address = `127.0.0.1:${values['flight-port']}`;
const client = await FlightSqlClient.connect({ address, apiKey });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const dayNanos = 86_400_000_000_000n;
const base = BigInt(Date.parse('2026-01-01T00:00:00Z')) * 1_000_000n;

/** Whether a day logs timeouts: every day, or (--kind text) one day of seven, an incident's. */
const timeoutDay = (day) => !(text || dashboard) || day % 7 === 3;
/** A request's log line: an id that sorts nowhere near its day's other ids, and its outcome. */
const message = (day, j) =>
  `request ${createHash('sha1').update(`${day}/${j}`).digest('hex').slice(0, 16)} ${j % 97 === 0 && timeoutDay(day) ? 'timeout' : 'ok'}`;
/** The same line in DuckDB's SQL, of the columns day and j (generate.mjs). */
const messageSql = `'request ' || substr(sha1(concat(day, '/', j)), 1, 16) || ' ' || CASE WHEN j % 97 = 0 AND ${text || dashboard ? 'day % 7 = 3' : 'true'} THEN 'timeout' ELSE 'ok' END`;

// One partition per day: each day's entries (one service) are ingested a second apart from the next
// day's, and materialized in one-second partitions.
// With --generate, one day of ten entries is ingested so the server writes a partition to take as the template.
const perDay = Math.ceil(rows / days);
const started = Date.now();
const ingestBegin = new Date(Math.floor(Date.now() / 1000) * 1000 - 2000);
for (let day = 0; day < (values.generate ? 1 : days); day++) {
  for (let first = 0; first < (values.generate ? 10 : perDay); first += 5000) {
    const count = Math.min(5000, (values.generate ? 10 : perDay) - first);
    const logRecords = Array.from({ length: count }, (_, k) => {
      const j = first + k;
      return {
        timeUnixNano: String(base + BigInt(day) * dayNanos + BigInt(j) * 1_000_000n),
        severityNumber: [9, 13, 17, 21][j % 4],
        body: { stringValue: message(day, j) },
        attributes: [{ key: 'pod', value: { stringValue: `pod-${j % 50}` } }],
      };
    });
    const body = JSON.stringify({
      resourceLogs: [
        {
          resource: { attributes: [{ key: 'service.name', value: { stringValue: `svc-${day}` } }] },
          scopeLogs: [{ scope: { name: 'app' }, logRecords }],
        },
      ],
    });
    const response = await fetch(`http://127.0.0.1:${values['http-port']}/v1/logs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body,
    });
    if (response.status !== 200) throw new Error(`OTLP POST: ${response.status} ${await response.text()}`);
  }
  await sleep(1100);
}
const ingestEnd = new Date(Date.now() + 2000);
for (const view of ['processes', 'log_entries'])
  await client.query(
    `SELECT * FROM materialize_partitions('${view}', '${ingestBegin.toISOString()}', '${ingestEnd.toISOString()}', 1)`,
  );
if (values.generate)
  await generateLogEntries({
    dataDir: values['data-dir'],
    days,
    perDay,
    perPartition: Number(values['per-partition']),
    processes: Number(values.processes),
    base,
    messageSql,
    log: (line) => console.error(line),
  });
const partitions = Number(
  (
    await client.query(
      "SELECT count(*) AS n FROM list_partitions() WHERE view_set_name = 'log_entries' AND file_path IS NOT NULL",
    )
  ).get(0).n,
);
console.error(
  `bench: ${rows} entries in ${partitions} partitions, ingested and materialized in ${((Date.now() - started) / 1000).toFixed(1)} s`,
);

const lastDay = new Date(Number((base + BigInt(days - 1) * dayNanos) / 1_000_000n))
  .toISOString()
  .replace('T', ' ')
  .replace('Z', '');
/**
 * A query as [name, select ... from, where, rest, window]: its WHERE as written, and the same WHERE `OR false` (no
 * resource serves it). A time window (a conjunct on time) stays outside the `OR false`: without any resource, the
 * partitions outside it are skipped by their event-time bounds, as a user's raw query is.
 */
const twins = ([name, head, where, rest, window]) => ({
  name,
  indexed: `${head} WHERE ${where}${window ? ` AND ${window}` : ''} ${rest}`.trim(),
  unindexed: `${head} WHERE ${window ? `${window} AND ` : ''}((${where}) OR false) ${rest}`.trim(),
});
/**
 * A top-N by time is read newest partition first (index or not); under an outer `SELECT *` it is not, which is
 * how the planner read it before: both forms are timed too, `nested` (the index alone) and `nested_unindexed`.
 */
const topN = /ORDER BY time (DESC|ASC)? ?LIMIT/;
const withNested = (q) =>
  topN.test(q.indexed)
    ? { ...q, nested: `SELECT * FROM (${q.indexed})`, nestedUnindexed: `SELECT * FROM (${q.unindexed})` }
    : q;
// Each query as [name, select ... from, where, rest]; the same WHERE `OR false` is what no index serves
// (DuckDB folds it away, so the scan is the same), timed alternately with the indexed form.
/** One request's entry by its log line; and the top pods, which no resource serves (the control). */
const needle = [
  'one request by its log line',
  'SELECT exe, level FROM log_entries',
  `msg = '${message(Math.floor(days / 2), 123)}'`,
  '',
];
const topPods = [
  'top pods (no filter)',
  "SELECT properties->>'pod' AS pod, count(*) AS n FROM log_entries",
  'true',
  'GROUP BY pod ORDER BY n DESC, pod LIMIT 5',
];
const indexQueries = [
  [
    'one service, its errors by level',
    'SELECT level, count(*) AS n FROM log_entries',
    "exe = 'svc-3' AND level <= 3",
    'GROUP BY level ORDER BY level',
  ],
  [
    'the last day, per service',
    'SELECT exe, count(*) AS n FROM log_entries',
    `time >= '${lastDay}'`,
    'GROUP BY exe ORDER BY exe',
  ],
  [
    'timeouts of two services',
    'SELECT count(*) AS n FROM log_entries',
    "exe IN ('svc-1', 'svc-2') AND msg ILIKE '%timeout%'",
    '',
  ],
  // An OR of indexed conditions, and a WHERE over a subquery handing the set's rows on (#13).
  [
    'two services, either',
    'SELECT level, count(*) AS n FROM log_entries',
    "exe = 'svc-3' OR exe = 'svc-5'",
    'GROUP BY level ORDER BY level',
  ],
  [
    'one service, outer WHERE',
    'SELECT level, count(*) AS n FROM (SELECT * FROM log_entries)',
    "exe = 'svc-3'",
    'GROUP BY level ORDER BY level',
  ],
  // One side of a join, restricted by its own qualified columns (#13): the processes' rows are joined in.
  [
    'one service, joined with its processes',
    'SELECT l.level, count(*) AS n FROM log_entries l JOIN processes p ON l.process_id = p.process_id',
    "l.exe = 'svc-3' AND l.level <= 3",
    'GROUP BY l.level ORDER BY l.level',
  ],
  needle,
  topPods,
].map(twins);
/** The pod property's key spelled so that neither a stored column nor a projection sorted by one serves it. */
const computed = (sql) =>
  sql.replaceAll("->>'pod'", "->>('po' || 'd')").replaceAll("properties, 'pod')", "properties, 'po' || 'd')");
// The stored column's queries; computed, the property's key is spelled 'po' || 'd' (DuckDB folds it to the same
// constant, so the work is the expression's), which is not the stored expression, so it is not read from the column.
const columnQueries = [
  ['one pod, its entries', "SELECT count(*) AS n FROM log_entries WHERE properties->>'pod' = 'pod-7'"],
  // The issue's dashboard query (as --projection-by pod's first).
  [
    "one pod's errors, last day",
    `SELECT level, count(*) AS n FROM log_entries WHERE properties->>'pod' = 'pod-7' AND level <= 2 AND time >= '${lastDay}' GROUP BY level ORDER BY level`,
  ],
  [
    'one pod, its errors by level',
    "SELECT level, count(*) AS n FROM log_entries WHERE properties->>'pod' = 'pod-7' AND level <= 3 GROUP BY level ORDER BY level",
  ],
  // micromegas's spelling of the same property read (#13).
  ['one pod, property_get', "SELECT count(*) AS n FROM log_entries WHERE property_get(properties, 'pod') = 'pod-7'"],
  [
    'top pods',
    "SELECT properties->>'pod' AS pod, count(*) AS n FROM log_entries GROUP BY pod ORDER BY n DESC, pod LIMIT 5",
  ],
  [
    'pods of errors, last day',
    `SELECT properties->>'pod' AS pod, count(*) AS n FROM log_entries WHERE level <= 2 AND time >= '${lastDay}' GROUP BY ALL ORDER BY n DESC, pod LIMIT 5`,
  ],
].map(([name, sql]) => ({ name, indexed: sql, unindexed: computed(sql) }));
// The text index's searches, and one whose word every partition holds (it skips nothing: the index's cost).
const textQueries = [
  [
    'timeouts per service',
    'SELECT exe, count(*) AS n FROM log_entries',
    "msg ILIKE '%timeout%'",
    'GROUP BY exe ORDER BY exe',
  ],
  ['latest timeouts', 'SELECT time, exe, msg FROM log_entries', "msg ILIKE '%timeout%'", 'ORDER BY time DESC LIMIT 20'],
  ['contains, case-sensitive', 'SELECT count(*) AS n FROM log_entries', "contains(msg, 'timeout')", ''],
  ['a word every day holds', 'SELECT count(*) AS n FROM log_entries', "msg ILIKE '%request%'", ''],
  // A search of the side a LEFT JOIN keeps (#13): its entries with their processes' rows, if any (an inner join
  // lets DuckDB skip row groups by the processes' ids, which the generated entries' mostly lack).
  [
    'timeouts per process, left join',
    'SELECT p.exe, count(*) AS n FROM log_entries l LEFT JOIN processes p ON l.process_id = p.process_id',
    "l.msg ILIKE '%timeout%'",
    'GROUP BY p.exe ORDER BY p.exe',
  ],
]
  .map(twins)
  .map(withNested);
// The projections' queries: each filters on one projection's sort column; the last filters on none.
const projectionQueries = [
  ['fatal entries per service', 'SELECT exe, count(*) AS n FROM log_entries', 'level = 1', 'GROUP BY exe ORDER BY exe'],
  needle,
  topPods,
].map(twins);
// --projection-by pod: the issue's dashboard query (one pod's errors in the last day, by the JSON property) and more,
// the copies sorted by the pod's stored column against the raw query (the property read from JSON, partition files).
const podProjectionQueries = [
  [
    "one pod's errors, last day",
    'SELECT level, count(*) AS n FROM log_entries',
    `properties->>'pod' = 'pod-7' AND level <= 2`,
    'GROUP BY level ORDER BY level',
    `time >= '${lastDay}'`,
  ],
  // The same over the last fifth of the day's entries (one a millisecond), its bound a timestamp plus an interval: at
  // 100 M, in the last of the day's partitions.
  [
    "one pod's errors, day's last fifth",
    'SELECT level, count(*) AS n FROM log_entries',
    `properties->>'pod' = 'pod-7' AND level <= 2`,
    'GROUP BY level ORDER BY level',
    `time >= TIMESTAMP '${lastDay}' + INTERVAL ${Math.floor(perDay * 0.8)} MILLISECOND`,
  ],
  ['one pod, its entries', 'SELECT count(*) AS n FROM log_entries', "properties->>'pod' = 'pod-7'", ''],
  [
    'one pod, its errors by level',
    'SELECT level, count(*) AS n FROM log_entries',
    "properties->>'pod' = 'pod-7' AND level <= 3",
    'GROUP BY level ORDER BY level',
  ],
  [
    'one pod, its latest 20',
    'SELECT time, msg FROM log_entries',
    "properties->>'pod' = 'pod-7'",
    'ORDER BY time DESC LIMIT 20',
  ],
  topPods,
]
  .map(twins)
  .map((q) => ({ ...q, unindexed: computed(q.unindexed) }));
// --kind dashboard: the pod's queries (the raw side reads the JSON property), and a week's msg ILIKE searches (the raw
// side the same WHERE `OR false`); the week holds one incident day (one of seven logs timeouts).
const weekAgo = new Date(Number((base + BigInt(days - 7) * dayNanos) / 1_000_000n))
  .toISOString()
  .replace('T', ' ')
  .replace('Z', '');
const dashboardQueries = [
  ...podProjectionQueries,
  ...[
    [
      'timeouts per service, a week',
      'SELECT exe, count(*) AS n FROM log_entries',
      "msg ILIKE '%timeout%'",
      'GROUP BY exe ORDER BY exe',
      `time >= '${weekAgo}'`,
    ],
    [
      'latest timeouts',
      'SELECT time, exe, msg FROM log_entries',
      "msg ILIKE '%timeout%'",
      'ORDER BY time DESC LIMIT 20',
    ],
  ].map(twins),
];
const queries = dashboard
  ? dashboardQueries
  : columns
    ? columnQueries
    : text
      ? textQueries
      : byPod
        ? podProjectionQueries
        : projection
          ? projectionQueries
          : indexQueries;

const plain = (table) =>
  JSON.stringify(
    table.toArray().map((r) => r.toJSON()),
    (_k, v) => (typeof v === 'bigint' ? v.toString() : v),
  );
const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
const provenanceOf = (table) => JSON.parse(table.schema.metadata.get('orrery.provenance') ?? '{}');
/**
 * The partitions a result did not read: those an index or the event-time bounds skipped, or, for a latest-n top-N
 * bounded by time, all but the newest its first run read (short of n rows it would run again over every one).
 */
const skippedBy = (table, partitions) => {
  const bounded = provenanceOf(table).newest_first?.[0]?.bounded;
  return bounded ? partitions - bounded.partitions : (provenanceOf(table).partitions?.[0]?.skipped ?? 0);
};
/** Whether an index skipped partitions (the partitions' event-time bounds are no resource: every raw query has them). */
const indexUsed = (table) => provenanceOf(table).partitions?.[0]?.indexes.some((i) => i !== '(event time)') ?? false;
/** What a result read of the resources: a projection's copies ('copies'), a stored column ('column'), or neither (''). */
const columnRead = (table) =>
  (provenanceOf(table).projections?.length ?? 0) > 0
    ? 'copies'
    : (provenanceOf(table).stored_columns?.some((u) => u.use === 'substituted') ?? false)
      ? 'column'
      : '';
const timedOnce = async (sql) => {
  const start = process.hrtime.bigint();
  const table = await client.query(sql);
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, table };
};

// The answers before any resource exists, and their times (median of the repeats, the queries in turn).
const before = [];
for (const q of queries) before.push(plain(await client.query(q.indexed)));
const beforeMs = queries.map(() => []);
for (let r = 0; r < repeats; r++)
  for (const [i, q] of queries.entries()) beforeMs[i].push((await timedOnce(q.indexed)).ms);

mkdirSync(join(values.dir, 'resources'), { recursive: true });
writeFileSync(
  join(values.dir, 'resources', 'logs.resources.json'),
  JSON.stringify({
    resources: dashboard
      ? {
          pod: { column: { table: 'log_entries', expression: "properties->>'pod'" } },
          pod_bloom: { index: { table: 'log_entries', column: 'pod', kind: 'bloom_filter' } },
          by_pod: { projection: { table: 'log_entries', order_by: ['pod', 'time'] } },
          msg_text: { index: { table: 'log_entries', column: 'msg', kind: 'text' } },
        }
      : columns
        ? {
            pod: { column: { table: 'log_entries', expression: "properties->>'pod'" } },
            pod_bloom: { index: { table: 'log_entries', column: 'pod', kind: 'bloom_filter' } },
          }
        : text
          ? { msg_text: { index: { table: 'log_entries', column: 'msg', kind: 'text' } } }
          : byPod
            ? {
                pod: { column: { table: 'log_entries', expression: "properties->>'pod'" } },
                by_pod: { projection: { table: 'log_entries', order_by: ['pod', 'time'] } },
                ...(values['time-minmax']
                  ? { time_minmax: { index: { table: 'log_entries', column: 'time', kind: 'minmax' } } }
                  : {}),
              }
            : projection
              ? {
                  by_level: { projection: { table: 'log_entries', order_by: ['level'] } },
                  by_msg: {
                    projection: {
                      table: 'log_entries',
                      order_by: ['msg'],
                      ...(values['projection-columns'] ? { columns: values['projection-columns'].split(',') } : {}),
                    },
                  },
                }
              : {
                  time_minmax: { index: { table: 'log_entries', column: 'time', kind: 'minmax' } },
                  exe_set: { index: { table: 'log_entries', column: 'exe', kind: 'set' } },
                  msg_bloom: { index: { table: 'log_entries', column: 'msg', kind: 'bloom_filter' } },
                },
  }),
);
const publishSeconds = await publishDir(values.dir, address, apiKey);

// Rows and bytes of the partition files a query opens (explain_resources names those an index skips, and those a
// latest-n top-N's first run leaves out);
// row groups DuckDB skips inside an opened file (min/max, Parquet bloom filters, a projection's sorted
// copy) are not counted, and a projection's copies are counted as the files they copy.
const lakeFiles = new Map(
  (
    await client.query(
      "SELECT file_path, num_rows FROM list_partitions() WHERE view_set_name = 'log_entries' AND file_path IS NOT NULL",
    )
  )
    .toArray()
    .map((r) => [
      r.file_path,
      { rows: Number(r.num_rows), bytes: statSync(join(values['data-dir'], 'lake', r.file_path)).size },
    ]),
);
const opened = async (sql) => {
  const explained = await client.query(`SELECT * FROM explain_resources('${sql.replaceAll("'", "''")}')`);
  const pruned = new Set(
    explained
      .toArray()
      .filter((r) => r.decision === 'pruned' || r.decision === 'bounded')
      .map((r) => String(r.reason).replace(/^partition /, '')),
  );
  const read = [...lakeFiles].filter(([file]) => !pruned.has(file)).map(([, f]) => f);
  return { rows: read.reduce((n, f) => n + f.rows, 0), bytes: read.reduce((n, f) => n + f.bytes, 0) };
};
const everything = await opened('SELECT 1');

/** A statement planned as it would run (partition lists, index statistics, the views' setup), not run: explain_resources. */
const planned = (sql) => `SELECT * FROM explain_resources('${sql.replaceAll("'", "''")}')`;

/** Two statements timed in turn, A B on even repeats and B A on odd ones (neither always runs right after the other). */
const inTurn = async (x, y, r) => {
  if (r % 2 === 0) return [await timedOnce(x), await timedOnce(y)];
  const second = await timedOnce(y);
  return [await timedOnce(x), second];
};

const results = [];
let ok = true;
for (const [i, q] of queries.entries()) {
  const [withIndexes, without, nested, nestedWithout] = [[], [], [], []];
  // Planning alone, the index consulted or not: what the resources cost a statement they do not speed up.
  const [planWith, planWithout] = [[], []];
  for (let r = 0; r < repeats * 4; r++) {
    const [a, b] = await inTurn(planned(q.indexed), planned(q.unindexed), r);
    planWith.push(a.ms);
    planWithout.push(b.ms);
  }
  let answers = new Set([before[i]]);
  let skipped = 0;
  let read = '';
  await client.query(q.indexed);
  await client.query(q.unindexed);
  for (let r = 0; r < repeats; r++) {
    const [a, b] = await inTurn(q.indexed, q.unindexed, r);
    withIndexes.push(a.ms);
    without.push(b.ms);
    if (q.nested) {
      const [c, d] = await inTurn(q.nested, q.nestedUnindexed, r);
      nested.push(c.ms);
      nestedWithout.push(d.ms);
      answers = new Set([...answers, plain(c.table), plain(d.table)]);
    }
    skipped = skippedBy(a.table, partitions);
    read = columnRead(a.table);
    if (indexUsed(b.table) || columnRead(b.table)) throw new Error(`a resource served ${q.unindexed}`);
    answers = new Set([...answers, plain(a.table), plain(b.table)]);
  }
  const same = answers.size === 1;
  ok &&= same;
  results.push({
    query: q.name,
    sql: q.indexed,
    partitions,
    skipped,
    column_read: read,
    rows_read: (await opened(q.indexed)).rows,
    bytes_read: (await opened(q.indexed)).bytes,
    rows_read_without: everything.rows,
    bytes_read_without: everything.bytes,
    before_publish_ms: Number(median(beforeMs[i]).toFixed(1)),
    without_ms: Number(median(without).toFixed(1)),
    with_ms: Number(median(withIndexes).toFixed(1)),
    plan_without_ms: Number(median(planWithout).toFixed(2)),
    plan_with_ms: Number(median(planWith).toFixed(2)),
    ratio: Number((median(without) / median(withIndexes)).toFixed(2)),
    ...(q.nested
      ? {
          nested_ms: Number(median(nested).toFixed(1)),
          nested_without_ms: Number(median(nestedWithout).toFixed(1)),
          // Against the statement as the planner read it before newest-first (no index, every partition).
          ratio_to_nested_without: Number((median(nestedWithout) / median(withIndexes)).toFixed(2)),
        }
      : {}),
    same_answer: same,
  });
}
client.close();

console.log(
  `Orrery resources (${values.kind}): ${rows} log entries in ${partitions} partitions (${days} days, one service each), median of ${repeats} alternating runs; publish (install and backfill) ${publishSeconds.toFixed(1)} s`,
);
const header = `${'query'.padEnd(34)} ${'skipped'.padStart(9)} ${'column'.padStart(7)} ${'rows read'.padStart(23)} ${'MB read'.padStart(15)} ${'before ms'.padStart(10)} ${'without ms'.padStart(11)} ${'with ms'.padStart(9)} ${'ratio'.padStart(7)}  answer`;
console.log(header);
console.log('-'.repeat(header.length));
for (const r of results)
  console.log(
    `${r.query.padEnd(34)} ${`${r.skipped}/${r.partitions}`.padStart(9)} ${(r.column_read || '-').padStart(7)} ${`${r.rows_read} / ${r.rows_read_without}`.padStart(23)} ${`${(r.bytes_read / 1e6).toFixed(0)} / ${(r.bytes_read_without / 1e6).toFixed(0)}`.padStart(15)} ${r.before_publish_ms.toFixed(1).padStart(10)} ${r.without_ms.toFixed(1).padStart(11)} ${r.with_ms.toFixed(1).padStart(9)} ${r.ratio.toFixed(2).padStart(7)}  ${r.same_answer ? 'same' : 'DIFFERS'}`,
  );
console.log(
  columns
    ? "before = the query before publishing; without = after, its property key spelled 'po' || 'd' (computed); with = the stored column read; ratio = without / with"
    : byPod || dashboard
      ? "before = the query before publishing; column 'copies' = by_pod's copies read (sorted by the pod's stored column), 'column' = the pod's stored column read from the partition files; ratio = time of the raw query (the same WHERE `OR false`, the key spelled 'po' || 'd': the property read from JSON in the partition files) / time with"
      : projection
        ? "before = the query before publishing; column 'copies' = the projection's sorted copies read; ratio = time without (the same WHERE `OR false`, which reads the partition files) / time with"
        : text
          ? 'before = the query before publishing; ratio = time without the text index (the same WHERE `OR false`) / time with it; answers checked against those before publishing'
          : 'before = the query before publishing; ratio = time without an index (the same WHERE `OR false`) / time with the indexes; answers checked against those before publishing',
);
for (const r of results)
  console.log(
    `${r.query}: planning alone (explain_resources, median of ${repeats * 4} in turn) ${r.plan_with_ms.toFixed(2)} ms with the resources, ${r.plan_without_ms.toFixed(2)} without`,
  );
for (const r of results.filter((r) => r.nested_ms !== undefined))
  console.log(
    `${r.query}: newest first ${r.with_ms.toFixed(1)} ms with the index, ${r.without_ms.toFixed(1)} without; under SELECT * (not newest first) ${r.nested_ms.toFixed(1)} with, ${r.nested_without_ms.toFixed(1)} without: ${r.ratio_to_nested_without.toFixed(2)}x`,
  );
console.log(
  'rows read / MB read: in the partition files the query opens with the resources / without (row groups skipped inside a file not counted)',
);
console.log(
  JSON.stringify({
    bench: 'resources',
    kind: values.kind,
    projection_by: values['projection-by'] || null,
    time_minmax: values['time-minmax'],
    rows,
    days,
    partitions,
    repeats,
    publish_s: publishSeconds,
    results,
    ok,
  }),
);
process.exitCode = ok ? 0 : 1;
