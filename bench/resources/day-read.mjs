// DuckDB alone (in-process, no server) on a kept by_pod folder (#13, PROFILE.md): the issue's "one pod's errors in
// the last day" over the last day's partition files as the raw query reads them (the JSON property), the same files by
// the pod's stored column, the projection's copies of them, and those copies merged into one file per day (what a
// per-day copy would be): CPU (the process's, DuckDB's threads included) and wall time per statement, medians of
// blocks of 10, the files' row groups; `SELECT 1` for DuckDB's own floor. With --scale n, each of the day's partition
// files is first written again with its rows n times over (a day of n times the entries, as at 100 M for n = 10) and
// its copy made as projections.ts makes one (sorted by the pod's stored column and time, row groups of 16,384 rows,
// Parquet bloom filters), and those are read instead.
//
//   node bench/resources/day-read.mjs --lake <folder>/orrery/lake --last-day '2026-01-30 00:00:00' [--threads 1]
//     [--scale 10]
import { readdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';

const { values } = parseArgs({
  options: {
    lake: { type: 'string' },
    'last-day': { type: 'string' },
    threads: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '7' },
    scale: { type: 'string', default: '1' },
  },
});
const lake = values.lake;
const instance = await DuckDBInstance.create(':memory:', { threads: values.threads });
const connection = await instance.connect();
const rows = async (sql) => (await connection.runAndReadAll(sql)).getRows();
const parquet = (dir) =>
  readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.parquet'))
    .map((f) => join(dir, f));
// generate.mjs's files were rewritten with the stored column (publish); the originals wait under generated/ for deletion.
const partitions = parquet(join(lake, 'views', 'log_entries')).filter((f) => !f.includes('/generated/'));
const copies = parquet(join(lake, 'projections'));
const list = (files) => `[${files.map((f) => `'${f}'`).join(', ')}]`;
const since = `TIMESTAMP_NS '${values['last-day']}'`;
const lastDay = async (files) =>
  (
    await rows(
      `SELECT filename FROM read_parquet(${list(files)}, filename = true) GROUP BY filename HAVING max(time) >= ${since}`,
    )
  ).map(([f]) => String(f));
let [dayFiles, dayCopies] = [await lastDay(partitions), await lastDay(copies)];
const [[column]] = await rows(`SELECT name FROM parquet_schema('${dayFiles[0]}') WHERE name LIKE '__orr_%'`);
const scratch = mkdtempSync(join(tmpdir(), 'orrery-day-read-'));
const scale = Number(values.scale);
if (scale > 1) {
  const [files, sorted] = [[], []];
  for (const [i, file] of dayFiles.entries()) {
    files.push(join(scratch, `partition-${i}.parquet`));
    sorted.push(join(scratch, `copy-${i}.parquet`));
    await connection.run(
      `COPY (SELECT f.* FROM read_parquet('${file}') f, range(${scale}) ORDER BY time) TO '${files[i]}' (FORMAT parquet, COMPRESSION zstd)`,
    );
    await connection.run(
      `COPY (SELECT * FROM read_parquet('${files[i]}') ORDER BY ${column}, time) TO '${sorted[i]}' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 16384, DICTIONARY_SIZE_LIMIT 16384, BLOOM_FILTER_FALSE_POSITIVE_RATIO 0.01)`,
    );
  }
  [dayFiles, dayCopies] = [files, sorted];
}
const merged = join(scratch, 'day.parquet');
await connection.run(
  `COPY (SELECT * FROM read_parquet(${list(dayCopies)}) ORDER BY ${column}, time) TO '${merged}' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 16384)`,
);
const groups = async (files) =>
  Number(
    (
      await rows(`SELECT count(*) FROM (SELECT DISTINCT file_name, row_group_id FROM parquet_metadata(${list(files)}))`)
    )[0][0],
  );
const statement = (files, where) =>
  `SELECT level, count(*) AS n FROM read_parquet(${list(files)}) WHERE ${since} <= time AND ${where} GROUP BY level ORDER BY level`;
const cases = [
  [
    'partition files, JSON (raw)',
    dayFiles,
    statement(dayFiles, "((properties->>('po' || 'd') = 'pod-7' AND level <= 2) OR false)"),
  ],
  ['partition files, stored column', dayFiles, statement(dayFiles, `${column} = 'pod-7' AND level <= 2`)],
  ["by_pod's copies", dayCopies, statement(dayCopies, `${column} = 'pod-7' AND level <= 2`)],
  ['copies merged per day', [merged], statement([merged], `${column} = 'pod-7' AND level <= 2`)],
  ['SELECT 1', [], 'SELECT 1'],
];
const answers = new Set();
for (const [, , sql] of cases.slice(0, 4))
  answers.add(JSON.stringify(await rows(sql), (_k, v) => (typeof v === 'bigint' ? String(v) : v)));
const times = cases.map(() => ({ cpu: [], wall: [] }));
for (let r = 0; r < Number(values.rounds); r++)
  for (const [i, [, , sql]] of cases.entries()) {
    const [cpu, start] = [process.cpuUsage(), process.hrtime.bigint()];
    for (let j = 0; j < 10; j++) await rows(sql);
    const used = process.cpuUsage(cpu);
    times[i].cpu.push((used.user + used.system) / 1e4);
    times[i].wall.push(Number(process.hrtime.bigint() - start) / 1e7);
  }
const median = (l) => [...l].sort((a, b) => a - b)[Math.floor(l.length / 2)];
console.log(
  `DuckDB alone, ${values.threads} thread(s), the day's rows x ${scale}, per statement, medians of ${values.rounds} blocks of 10`,
);
for (const [i, [name, files]] of cases.entries())
  console.log(
    `${name.padEnd(32)} ${String(files.length).padStart(2)} file(s) ${String(files.length ? await groups(files) : 0).padStart(3)} row groups  CPU ${median(times[i].cpu).toFixed(2).padStart(6)} ms  wall ${median(times[i].wall).toFixed(2).padStart(6)} ms`,
  );
console.log(`answers ${answers.size === 1 ? 'equal' : 'DIFFER'}`);
rmSync(scratch, { recursive: true });
