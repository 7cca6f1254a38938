// Where the never-stale read's time goes, without Orrery (issue 17, the 1.2x goal): bench/rollups'
// data (ROWS rows over 30 days, the hourly rollup refreshed, one minute of rows after it) made through
// `orrery serve` on a probe's Postgres and lake, then read by DuckDB in-process on the same DuckLake
// catalog, each statement in a transaction of its own, alternately (A, B, ...; medians of --repeats):
//   materialized       the stored rows of 7 days (what bench.mjs compares with)
//   never-stale        those plus the aggregate of the source's rows from the watermark on (Orrery's view)
//   never-stale, empty the same with a tail bound no file reaches (the source's catalog reads, no file)
//   tail               the tail's aggregate alone
//   tail, minute's file the aggregate of the rows after the bulk load's newest (the minute's file alone)
//   tail, read_parquet the tail's aggregate over the table's files read by DuckDB's Parquet reader (no
//                      DuckLake scan: no catalog read, no delete files, no inlined rows)
//   never-stale, read_parquet  the stored rows plus that: the view as Orrery read it from ea0bcb8
//   materialized, read_parquet the stored rows from the materialized table's files by DuckDB's Parquet
//                      reader (no DuckLake scan)
//   never-stale, both read_parquet  those plus the tail read so: the view as Orrery reads it when both
//                      tables' files alone hold their rows (src/rollups/table-files.ts)
// --threads sets DuckDB's threads (a loaded machine's scheduling waits are fewer with 1).
// DuckDB's own profile (cpu_time, the scans' operator time) of each is printed too. Prints a table and
// one JSON line.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import { alternately, catalogProbe, loadAverage, median } from '../catalog-probe.mjs';
import { loadProbeData } from './probe-data.mjs';

const { values } = parseArgs({
  options: {
    repeats: { type: 'string', default: '31' },
    rows: { type: 'string', default: '2000000' },
    hosts: { type: 'string', default: '50' },
    threads: { type: 'string' },
  },
});
const root = process.env.ORRERY_ROOT ?? fileURLToPath(new URL('../..', import.meta.url));
const [repeats, rows, hosts] = ['repeats', 'rows', 'hosts'].map((k) => Number(values[k]));
const { duckdbBuild, extensionCacheFolder } = await import(
  pathToFileURL(join(root, 'dist/src/engine/extensions.js')).href
);
const probe = await catalogProbe(root, 'orrery-rollups-in-process-');

try {
  const client = await probe.startServer(root, 'orrery');
  await loadProbeData(client, { rows, hosts });

  // The server's DuckDB and extension files, DuckLake attached to the same catalog.
  const extensions = extensionCacheFolder(await duckdbBuild());
  const instance = await DuckDBInstance.create(':memory:');
  const duck = await instance.connect();
  await duck.run(`SET GLOBAL TimeZone = 'UTC'`);
  if (values.threads) await duck.run(`SET threads = ${Number(values.threads)}`);
  for (const name of ['ducklake', 'postgres_scanner']) await duck.run(`LOAD '${extensions}/${name}.duckdb_extension'`);
  await duck.run(
    `ATTACH 'ducklake:postgres:${probe.postgres.connectionString}' AS lake (METADATA_SCHEMA 'ducklake', READ_ONLY)`,
  );
  const read = async (sql) => (await duck.runAndReadAll(sql)).getRows();
  const [[snapshot]] = await read(`SELECT max(snapshot_id) FROM lake.snapshots()`);
  const [[watermark]] = await read(
    `SELECT CAST(watermark AS VARCHAR) FROM lake.rollups.metrics_hourly__state AT (VERSION => ${snapshot})`,
  );
  // The last row before the minute's insert (the snapshot before it): the bulk load's newest row.
  const [[bulkEnd]] = await read(
    `SELECT CAST(max(ts) AS VARCHAR) FROM lake.main.metrics AT (VERSION => ${BigInt(snapshot) - 1n})`,
  );
  // The table's data files at the snapshot (none has a delete file here), for DuckDB's Parquet reader alone.
  const files = (
    await read(`SELECT data_file FROM ducklake_list_files('lake', 'metrics', snapshot_version => ${snapshot})`)
  )
    .map(([file]) => `'${file}'`)
    .join(', ');
  // The rollup's stored rows' data files at the snapshot (none has a delete file here either).
  const storedFiles = (
    await read(
      `SELECT data_file FROM ducklake_list_files('lake', 'metrics_hourly_materialized', schema => 'rollups', snapshot_version => ${snapshot})`,
    )
  )
    .map(([file]) => `'${file}'`)
    .join(', ');
  const aggregate = (bound) =>
    `SELECT time_bucket(INTERVAL '1 hour', ts) AS bucket, host, count(*) AS n, count(cpu) AS cpu_n, sum(cpu) AS cpu_sum,
       max(cpu) AS cpu_max, audience FROM lake.main.metrics AT (VERSION => ${snapshot}) WHERE ts >= ${bound} GROUP BY ALL`;
  const stored = `SELECT * FROM lake.rollups.metrics_hourly_materialized AT (VERSION => ${snapshot})`;
  const tail = `TIMESTAMP '${watermark}'`;
  const days = (from) =>
    `SELECT bucket, host, n, cpu_sum FROM (${from}) WHERE bucket >= now()::TIMESTAMP - INTERVAL 7 DAY`;
  const statements = {
    materialized: days(stored),
    'never-stale': days(`${stored} WHERE bucket < ${tail} UNION ALL ${aggregate(tail)}`),
    'never-stale, empty': days(`${stored} WHERE bucket < ${tail} UNION ALL ${aggregate(`TIMESTAMP '2100-01-01'`)}`),
    tail: days(aggregate(tail)),
    "tail, minute's file": days(aggregate(`TIMESTAMP '${bulkEnd}' + INTERVAL 1 MICROSECOND`)),
    'tail, read_parquet': days(
      aggregate(tail).replace(`lake.main.metrics AT (VERSION => ${snapshot})`, `read_parquet([${files}])`),
    ),
    'never-stale, read_parquet': days(
      `${stored} WHERE bucket < ${tail} UNION ALL ${aggregate(tail).replace(`lake.main.metrics AT (VERSION => ${snapshot})`, `read_parquet([${files}])`)}`,
    ),
    'materialized, read_parquet': days(`SELECT * FROM read_parquet([${storedFiles}])`),
    'never-stale, both read_parquet': days(
      `SELECT * FROM read_parquet([${storedFiles}]) WHERE bucket < ${tail} UNION ALL ${aggregate(tail).replace(`lake.main.metrics AT (VERSION => ${snapshot})`, `read_parquet([${files}])`)}`,
    ),
  };
  const inTransaction = async (sql) => {
    await duck.run('BEGIN');
    await read(sql);
    await duck.run('COMMIT');
  };
  const cases = Object.entries(statements).map(([name, sql]) => ({ name, run: () => inTransaction(sql) }));
  for (const c of cases) for (let i = 0; i < 3; i++) await c.run(); // warm
  console.error(`bench: timing (load average ${loadAverage()})`);
  const times = await alternately(cases, repeats);
  const loadAfter = loadAverage();

  // DuckDB's profile of one run of each: its CPU time and each scan's operator time, rows scanned.
  const profile = join(probe.dir, 'profile.json');
  await duck.run(`SET enable_profiling = 'json'`);
  await duck.run(`SET profiling_output = '${profile}'`);
  const profiles = {};
  for (const [name, sql] of Object.entries(statements)) {
    await inTransaction(sql);
    const tree = JSON.parse(readFileSync(profile, 'utf8'));
    const scans = [];
    const visit = (node) => {
      if (node.operator_name === 'DUCKLAKE_SCAN') scans.push(Number((node.operator_timing * 1000).toFixed(2)));
      (node.children ?? []).forEach(visit);
    };
    visit(tree);
    profiles[name] = { cpu_ms: Number((tree.cpu_time * 1000).toFixed(2)), scan_ms: scans };
  }
  await duck.run(`SET enable_profiling = 'no_output'`);
  duck.closeSync();
  instance.closeSync();

  const medians = Object.fromEntries(cases.map((c, k) => [c.name, median(times[k])]));
  console.log(
    `load average ${loadAfter} after timing; medians of ${repeats} alternated runs; ${rows} rows; DuckDB in-process`,
  );
  console.log(`${'case'.padEnd(26)} median ms   DuckDB cpu ms   scans (operator ms)`);
  for (const [name, ms] of Object.entries(medians))
    console.log(
      `${name.padEnd(26)} ${ms.toFixed(2).padStart(9)}   ${profiles[name].cpu_ms.toFixed(2).padStart(13)}   ${profiles[name].scan_ms.join(', ')}`,
    );
  console.log(
    `never-stale / materialized ${(medians['never-stale'] / medians.materialized).toFixed(3)}x; ` +
      `with a tail no file reaches ${(medians['never-stale, empty'] / medians.materialized).toFixed(3)}x; ` +
      `the tail through read_parquet ${(medians['never-stale, read_parquet'] / medians.materialized).toFixed(3)}x`,
  );
  console.log(
    JSON.stringify({ bench: 'rollups-in-process', rows, load_average: loadAfter, medians_ms: medians, profiles }),
  );
} finally {
  await probe.close();
}
