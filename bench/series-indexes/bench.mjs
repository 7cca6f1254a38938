// What DuckLake itself does for a series table's index entries (issue 13), measured on DuckDB in-process with the
// ducklake extension Orrery loads (catalog in a DuckDB file here, in Orrery's Postgres when served: the pruning is
// the same). Tables get the same rows, one INSERT per day as a client writes them: `raw`, as a series table is made;
// `bucketed`, what a bloom_filter or set entry on a series table installs: `SET SORTED BY (time_bucket(--bucket, ts),
// trace)` in row groups of --bucket-row-group rows (DuckLake sorts every INSERT's rows by it, so each row group's
// min/max of trace skips what an equality misses, and of ts what a time range misses; Orrery picks the bucket from the
// table's rate, about 1.25 default row groups of rows: 3 hours at 1 M rows a day); `sorted`, what it installed before,
// `SET SORTED BY (trace)` in row groups of --row-group rows (each row group spanning its file's whole time range); and
// a control `small`, unsorted in row groups of --row-group rows (what the row groups alone cost).
// Each query runs on each table in turn, the order rotated each repeat; DuckDB's FileSystem log counts the files
// read and the bytes, and the process's CPU is measured. Prints a table with the ratios other / raw, then one JSON
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
    bucket: { type: 'string', default: '3 hours' },
    'bucket-row-group': { type: 'string', default: '16384' },
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

const tables = ['raw', 'sorted', 'bucketed', 'small'];
const writeSeconds = Object.fromEntries(tables.map((t) => [t, 0]));
for (const table of tables) {
  await db.run(
    `CREATE TABLE lake.${table} (ts TIMESTAMP, pod VARCHAR, trace VARCHAR, status INTEGER, msg VARCHAR, audience VARCHAR NOT NULL DEFAULT 'public')`,
  );
}
await db.run(`ALTER TABLE lake.sorted SET SORTED BY (trace)`);
await db.run(`ALTER TABLE lake.bucketed SET SORTED BY (time_bucket(INTERVAL '${values.bucket}', ts), trace)`);
for (const [table, size] of [
  ['sorted', values['row-group']],
  ['bucketed', values['bucket-row-group']],
  ['small', values['row-group']],
])
  await db.run(`CALL lake.set_option('parquet_row_group_size', ${Number(size)}, table_name => '${table}')`);
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
  const runs = Object.fromEntries(tables.map((t) => [t, []]));
  for (let r = 0; r < repeats; r++) {
    for (const table of [...tables.slice(r % tables.length), ...tables.slice(0, r % tables.length)])
      runs[table].push(await measure(table, where));
  }
  const pick = (table) => ({
    answer: runs[table][0].answer,
    files: runs[table][0].files,
    mb: runs[table][0].bytes / 1e6,
    cpuMs: median(runs[table].map((x) => x.ms)),
  });
  const measured = Object.fromEntries(tables.map((t) => [t, pick(t)]));
  if (tables.some((t) => measured[t].answer !== measured.raw.answer)) differ = true;
  results.push({ label, ...measured });
}

const ratio = (a, b) => (b === 0 ? (a === 0 ? '1.0' : 'inf') : (a / b).toFixed(1));
const others = tables.slice(1);
const w = (t) => writeSeconds[t].toFixed(1);
console.log(
  `${rows} rows, ${days} INSERTs per table (${files} files each); bucketed by ${values.bucket} in row groups of ${values['bucket-row-group']}; write s: raw ${w('raw')}, ${others.map((t) => `${t} ${w(t)} (${ratio(writeSeconds[t], writeSeconds.raw)}x)`).join(', ')}`,
);
console.log(
  `query | answer | files ${tables.join('/')} | MB read ${tables.join('/')} (other / raw) | CPU ms ${tables.join('/')} (other / raw)`,
);
const each = (r, f) => tables.map((t) => f(r[t])).join('/');
const ratios = (r, f) => others.map((t) => `${ratio(f(r[t]), f(r.raw))}x`).join(', ');
for (const r of results) {
  const answers = [...new Set(tables.map((t) => r[t].answer))];
  console.log(
    `${r.label} | ${answers.join(' != ')} | ${each(r, (x) => x.files)} | ${each(r, (x) => x.mb.toFixed(2))} (${ratios(r, (x) => x.mb)}) | ${each(r, (x) => x.cpuMs.toFixed(0))} (${ratios(r, (x) => x.cpuMs)})`,
  );
}
console.log(JSON.stringify({ rows, days, files: Number(files), writeSeconds, results }));
rmSync(values.folder, { recursive: true, force: true });
process.exit(differ ? 1 : 0);
