// What DuckLake itself does for a series table's index entries (issue 13), measured on DuckDB in-process with the
// ducklake extension Orrery loads (catalog in a DuckDB file here, in Orrery's Postgres when served: the pruning is
// the same). Two tables get the same rows, one INSERT per day as a client writes them: `raw`, as a series table is
// made, and `sorted`, with `ALTER TABLE ... SET SORTED BY (trace)` (what a bloom_filter or set entry on a series
// table installs: DuckLake sorts every INSERT's rows by it, so each row group's min/max of trace skips what an
// equality misses), and a control `small`, unsorted in the same small row groups (what the row groups alone cost).
// Each query runs on each table in turn, the order rotated each repeat; DuckDB's FileSystem log counts the files
// read and the bytes, and the process's CPU is measured. Prints a table with the ratios raw / other, then one JSON
// line; exits 1 on differing answers.
import { parseArgs } from 'node:util';
import { mkdirSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '3000000' },
    days: { type: 'string', default: '30' },
    repeats: { type: 'string', default: '5' },
    folder: { type: 'string', default: '/tmp/orrery-bench-series-indexes' },
    'row-group': { type: 'string', default: '16384' },
  },
});
const rows = Number(values.rows);
const days = Number(values.days);
const perDay = Math.floor(rows / days);
const repeats = Number(values.repeats);
const extensions =
  process.env.ORRERY_DUCKDB_EXTENSION_DIR ??
  join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'orrery', 'duckdb-extensions', 'v1.5.5', 'linux_amd64');

rmSync(values.folder, { recursive: true, force: true });
mkdirSync(values.folder, { recursive: true });
const instance = await DuckDBInstance.create(':memory:', { threads: '2' });
const db = await instance.connect();
const all = async (sql) => (await db.runAndReadAll(sql)).getRowObjectsJson();
await db.run(`LOAD '${join(extensions, 'ducklake.duckdb_extension')}'`);
await db.run(`ATTACH 'ducklake:${values.folder}/catalog.ducklake' AS lake (DATA_PATH '${values.folder}/data/')`);
await db.run(`SET TimeZone = 'UTC'`);

const tables = ['raw', 'sorted', 'small'];
const writeSeconds = { raw: 0, sorted: 0, small: 0 };
for (const table of tables) {
  await db.run(
    `CREATE TABLE lake.${table} (ts TIMESTAMP, pod VARCHAR, trace VARCHAR, status INTEGER, msg VARCHAR, audience VARCHAR NOT NULL DEFAULT 'public')`,
  );
}
await db.run(`ALTER TABLE lake.sorted SET SORTED BY (trace)`);
for (const table of ['sorted', 'small'])
  await db.run(
    `CALL lake.set_option('parquet_row_group_size', ${Number(values['row-group'])}, table_name => '${table}')`,
  );
for (let d = 0; d < days; d++) {
  for (const table of tables) {
    const start = process.hrtime.bigint();
    await db.run(
      `INSERT INTO lake.${table} SELECT TIMESTAMP '2026-11-01' + INTERVAL (${d}) DAY + to_microseconds(CAST(i * ${86_400e6 / perDay} AS BIGINT)),
         'pod-' || (hash(i * 31 + ${d}) % 400), md5((i + ${d} * ${perDay})::VARCHAR), CASE WHEN i % 97 = 0 THEN 500 ELSE 200 END,
         'request ' || (i % 1000) || ' served', 'tenant' || (i % 3) FROM range(${perDay}) t(i)`,
    );
    writeSeconds[table] += Number(process.hrtime.bigint() - start) / 1e9;
  }
}
const [{ files }] = await all(`SELECT count(*) AS files FROM ducklake_list_files('lake', 'raw')`);

// The hour and the id are of the middle day, so that they hold rows whatever --days is (with --days 4 and 1 M rows a
// day, each file has 8 row groups unsorted: the hour's read skips 7 of them by ts unless the file is sorted by trace).
const middle = Math.floor(days / 2);
const day = `2026-11-${String(middle + 1).padStart(2, '0')}`;
const queries = [
  ['minmax: ts, last day', `ts >= TIMESTAMP '2026-11-${String(days).padStart(2, '0')}'`],
  ['minmax: ts, one hour', `ts BETWEEN TIMESTAMP '${day} 10:00' AND TIMESTAMP '${day} 11:00'`],
  ['bloom_filter: trace = one id', `trace = md5('${perDay * middle + 1234}')`],
  ['bloom_filter: trace = absent id', `trace = md5('absent')`],
  ['pod = a value it misses (dictionary bloom)', `pod = 'pod-3999'`],
  ['status = 500 (no index)', `status = 500`],
];

const cpu = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};
await db.run(`CALL enable_logging('FileSystem')`);
async function measure(table, where) {
  await db.run(`CALL truncate_duckdb_logs()`);
  const before = cpu();
  const [answer] = await all(`SELECT count(*) AS n, count(DISTINCT audience) AS a FROM lake.${table} WHERE ${where}`);
  const ms = cpu() - before;
  const [log] = await all(
    `SELECT count(DISTINCT path) AS files, coalesce(sum(bytes), 0) AS bytes FROM duckdb_logs_parsed('FileSystem') WHERE op = 'READ'`,
  );
  return { answer: `${answer.n}/${answer.a}`, files: Number(log.files), bytes: Number(log.bytes), ms };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const results = [];
let differ = false;
for (const [label, where] of queries) {
  const runs = { raw: [], sorted: [], small: [] };
  for (let r = 0; r < repeats; r++) {
    for (const table of [...tables.slice(r % 3), ...tables.slice(0, r % 3)])
      runs[table].push(await measure(table, where));
  }
  const pick = (table) => ({
    answer: runs[table][0].answer,
    files: runs[table][0].files,
    mb: runs[table][0].bytes / 1e6,
    cpuMs: median(runs[table].map((x) => x.ms)),
  });
  const [raw, sorted, small] = tables.map(pick);
  if (raw.answer !== sorted.answer || raw.answer !== small.answer) differ = true;
  results.push({ label, raw, sorted, small });
}

const ratio = (a, b) => (b === 0 ? (a === 0 ? '1.0' : 'inf') : (a / b).toFixed(1));
const w = (t) => writeSeconds[t].toFixed(1);
console.log(
  `${rows} rows, ${days} INSERTs per table (${files} files each); write s: raw ${w('raw')}, sorted ${w('sorted')} (${ratio(writeSeconds.sorted, writeSeconds.raw)}x), small ${w('small')}`,
);
console.log(
  'query | answer | files raw/sorted/small | MB read raw/sorted/small (raw/sorted) | CPU ms raw/sorted/small (raw/sorted, raw/small)',
);
for (const { label, raw, sorted, small } of results) {
  const same = raw.answer === sorted.answer && raw.answer === small.answer;
  console.log(
    `${label} | ${raw.answer}${same ? '' : ` != ${sorted.answer} / ${small.answer}`} | ${raw.files}/${sorted.files}/${small.files} | ${raw.mb.toFixed(2)}/${sorted.mb.toFixed(2)}/${small.mb.toFixed(2)} (${ratio(raw.mb, sorted.mb)}x) | ${raw.cpuMs.toFixed(0)}/${sorted.cpuMs.toFixed(0)}/${small.cpuMs.toFixed(0)} (${ratio(raw.cpuMs, sorted.cpuMs)}x, ${ratio(raw.cpuMs, small.cpuMs)}x)`,
  );
}
console.log(JSON.stringify({ rows, days, files: Number(files), writeSeconds, results }));
rmSync(values.folder, { recursive: true, force: true });
process.exit(differ ? 1 : 0);
