// Rollup rewrite benchmark (issue 14, item 7): ROWS requests over 30 days (20 services, 2 % errors),
// a Grafana-like dashboard of 12 panels (counts, error rates, p99 latency, top-N, calendar buckets,
// a now()-relative window), each timed, once an hourly rollup and a daily rollup of it are declared
// and refreshed, alternately (raw, rollup, rollup, raw, ...: both see the same load, each as often first):
//   - rollup: the panel's SQL (each panel's provenance names the rollup it read, or why none);
//   - raw: the same SQL over a subquery of the table (`from (select * from requests) as requests`),
//     which no rollup answers;
//   - duckdb: DuckDB in-process (the same release) answering the raw SQL on the table's Parquet files.
// With --server-pid, also the server's CPU per statement (its process tree: Postgres too) on each side.
// Each side runs --repeats runs of --per-run statements; the figures are medians of the runs.
// Every panel's rollup answer must equal its raw answer (floats within 1e-9 relative). Prints a
// table, then one JSON line; exits 1 on a differing answer.
import { parseArgs } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';
import { FlightSqlClient } from '../../dist/src/client/index.js';
import { seriesTableFiles } from '../lake-files.mjs';
import { processTreeCpuMs } from '../process-cpu.mjs';
import { loadAverage } from '../rollups/timing.mjs';
import { panels, requestsRollups, requestsTable, warmUp } from './panels.mjs';

const { values } = parseArgs({
  options: {
    'flight-port': { type: 'string' },
    lake: { type: 'string' },
    'server-pid': { type: 'string' },
    rows: { type: 'string', default: '1000000' },
    repeats: { type: 'string', default: '3' },
    'per-run': { type: 'string', default: '5' },
    warmup: { type: 'string', default: '12' },
  },
});
const rows = Number(values.rows);
const repeats = Number(values.repeats);
const perRun = Number(values['per-run']);
const client = await FlightSqlClient.connect({
  address: `127.0.0.1:${values['flight-port']}`,
  apiKey: 'admin-key-0123',
});

const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
const timedMedian = async (run) => {
  const times = [];
  let result;
  for (let i = 0; i < repeats; i++) {
    const start = process.hrtime.bigint();
    result = await run();
    times.push(Number(process.hrtime.bigint() - start) / 1e9);
  }
  return { seconds: median(times), result };
};
const plain = (value) =>
  typeof value === 'bigint' ? Number(value) : value instanceof Date ? value.toISOString() : value;
const rowsOf = (table) => table.toArray().map((r) => Object.values(r.toJSON()).map(plain));
const same = (a, b) =>
  a.length === b.length &&
  a.every((row, i) =>
    row.every((x, j) => {
      const y = b[i][j];
      if (typeof x === 'number' && typeof y === 'number')
        return x === y || Math.abs(x - y) <= 1e-9 * Math.max(Math.abs(x), Math.abs(y));
      return String(x) === String(y);
    }),
  );

// A data folder kept from an earlier run (DATA_DIR in run.sh) already holds the table and its rollups:
// reused as they are when the table has the rows asked for (generating 100 M rows takes minutes).
const rowsThere = await client.query('select count(*) as n from requests').then(
  (table) => Number(table.get(0).toJSON().n),
  () => null,
);
if (rowsThere !== null && rowsThere !== rows) {
  console.error(`bench: the data folder's requests holds ${rowsThere} rows, not ${rows}`);
  process.exit(1);
}
let loadSeconds = 0;
if (rowsThere === null) {
  console.error(`bench: loading ${rows} requests over 30 days`);
  const loadStart = process.hrtime.bigint();
  for (const sql of requestsTable(rows)) await client.executeUpdate(sql);
  loadSeconds = Number(process.hrtime.bigint() - loadStart) / 1e9;
  console.error(`bench: loaded in ${loadSeconds.toFixed(1)} s`);
  for (const sql of requestsRollups) await client.query(sql);
} else console.error(`bench: reusing the ${rows} requests and the rollups already in the data folder`);
const refreshStart = process.hrtime.bigint();
await client.query(`select refresh_rollup('requests_hourly')`);
await client.query(`select refresh_rollup('requests_daily')`);
const refreshSeconds = Number(process.hrtime.bigint() - refreshStart) / 1e9;

// Rows read: of the table within the panel's window (raw), of the rollup within it, plus the
// table's rows outside the whole buckets when it reads raw edges (counted apart, not timed).
const whereOf = (sql) => / where (.*?)(?: group by | order by |$)/.exec(sql)[1];
const count = async (sql) => Number((await client.query(sql)).toArray()[0].toJSON().n);
const literal = (text) => `TIMESTAMP '${text.replace('T', ' ').replace('Z', '')}'`;
const rowsRead = async (sql, level) => {
  const where = whereOf(sql);
  const raw = await count(`select count(*) as n from (select * from requests) as requests where ${where}`);
  if (!level?.rollup) return { raw, rollup: raw };
  const { name, buckets } = level.rollup;
  const inBuckets = buckets
    ? `bucket >= ${literal(buckets.from)}${buckets.to ? ` and bucket < ${literal(buckets.to)}` : ''}`
    : where.replaceAll(/\bts\b/g, 'bucket');
  let rollupRows = await count(`select count(*) as n from ${name} where ${inBuckets}`);
  if (buckets) {
    const outside = `not (ts >= ${literal(buckets.from)}${buckets.to ? ` and ts < ${literal(buckets.to)}` : ''})`;
    rollupRows += await count(
      `select count(*) as n from (select * from requests) as requests where (${where}) and ${outside}`,
    );
  }
  return { raw, rollup: rollupRows };
};

const rawTwin = (sql) => sql.replace(' from requests ', ' from (select * from requests) as requests ');
// A run is --per-run statements one after the other: its time and the server's CPU (its process and
// descendants: Postgres too; /proc counts 10 ms ticks, so one statement alone reads 0 or 10 ms) are per
// statement, and a panel's figures are the medians of its runs, so a run that met a refresh job or a
// burst of load on the machine moves the median no more than any other run (a sum over runs would).
const serverPid = values['server-pid'] ? Number(values['server-pid']) : null;
const serverCpuMs = () => (serverPid === null ? 0 : processTreeCpuMs(serverPid));
const timed = async (run) => {
  const cpu = serverCpuMs();
  const start = process.hrtime.bigint();
  let result;
  for (let i = 0; i < perRun; i++) result = await run();
  const seconds = Number(process.hrtime.bigint() - start) / 1e9 / perRun;
  return { seconds, cpuMs: (serverCpuMs() - cpu) / perRun, result };
};
// The first statements of a fresh server and client are several times slower than later ones: V8 compiles their
// code as it first runs it (a panel took 110 ms, then 14-32 ms for a dozen statements, then 6-9 ms at 100 M rows:
// PROFILE.md, s20). A user's dashboard asks a server and a client that have run for a while, so --warmup
// statements (warmUp, a statement no rollup answers, as written and as its raw twin) run untimed first; the first
// panel is not charged with them, and its first read of a rollup after the refresh still reads the stored rows'
// files, as a dashboard's first panel after a refresh job does.
const warmups = Number(values.warmup);
for (let i = 0; i < warmups; i++) await client.query(i % 2 === 0 ? warmUp : rawTwin(warmUp));
const raw = [];
const rollup = [];
for (const [name, sql] of panels) {
  let read = null;
  let level = null;
  const times = { raw: [], rollup: [] };
  const cpu = { raw: [], rollup: [] };
  let answers = {};
  for (let i = 0; i < repeats; i++) {
    const readRaw = () => timed(async () => rowsOf(await client.query(rawTwin(sql))));
    const readRollup = () =>
      timed(async () => {
        const table = await client.query(sql);
        const provenance = JSON.parse(table.schema.metadata.get('orrery.provenance') ?? '{"resources":[]}');
        level = provenance.resources[0];
        read =
          level?.rollup?.name ??
          `raw (${level?.skipped_rollup.map((s) => `${s.name}: ${s.reason}`).join('; ') ?? 'no rollup considered'})`;
        return rowsOf(table);
      });
    // A B B A: a statement's DoGet ends before its read transaction's COMMIT, which the next statement
    // meets (its wait, and the CPU counted while it runs); each side comes second as often as first.
    let r, u;
    if (i % 2 === 0) [r, u] = [await readRaw(), await readRollup()];
    else [u, r] = [await readRollup(), await readRaw()];
    times.raw.push(r.seconds);
    times.rollup.push(u.seconds);
    cpu.raw.push(r.cpuMs);
    cpu.rollup.push(u.cpuMs);
    answers = { raw: r.result, rollup: u.result };
  }
  console.error(
    `bench: ${name}: raw ${median(times.raw).toFixed(4)} s, rollup ${median(times.rollup).toFixed(4)} s (runs ${times.rollup.map((t) => (t * 1000).toFixed(1)).join(', ')} ms; ${read}; load average ${loadAverage()})`,
  );
  raw.push({ name, seconds: median(times.raw), cpuMs: median(cpu.raw), result: answers.raw });
  rollup.push({
    name,
    read,
    rowsRead: await rowsRead(sql, level),
    seconds: median(times.rollup),
    cpuMs: median(cpu.rollup),
    result: answers.rollup,
  });
}
client.close();

// DuckDB in-process on the table's own Parquet files (DuckLake writes them under <lake>/tables).
const files = seriesTableFiles(values.lake, 'requests');
const duck = await (await DuckDBInstance.create(':memory:')).connect();
await duck.run(`CREATE VIEW requests AS SELECT * FROM read_parquet([${files.map((f) => `'${f}'`).join(', ')}])`);
await duck.run(`CREATE MACRO percentile_sketch(x) AS quantile_cont(x, 0.99)`);
await duck.run(`CREATE MACRO percentile(p, q) AS p`);
const duckdb = [];
for (const [name, sql] of panels)
  duckdb.push({ name, ...(await timedMedian(async () => (await duck.runAndReadAll(sql)).getRows())) });

const figures = panels.map(([name], i) => ({
  panel: name,
  read: rollup[i].read,
  raw_seconds: raw[i].seconds,
  rollup_seconds: rollup[i].seconds,
  speedup: raw[i].seconds / rollup[i].seconds,
  ...(serverPid === null
    ? {}
    : {
        raw_cpu_ms: raw[i].cpuMs,
        rollup_cpu_ms: rollup[i].cpuMs,
        cpu_ratio: rollup[i].cpuMs > 0 ? raw[i].cpuMs / rollup[i].cpuMs : null,
      }),
  duckdb_seconds: duckdb[i].seconds,
  vs_duckdb: duckdb[i].seconds / rollup[i].seconds,
  rows: raw[i].result.length,
  raw_rows_read: rollup[i].rowsRead.raw,
  rollup_rows_read: rollup[i].rowsRead.rollup,
  same_answer: same(raw[i].result, rollup[i].result),
}));
const f = (x) => x.toFixed(4);
console.log(
  `requests ${rows} over 30 days (${loadSeconds > 0 ? `loaded in ${loadSeconds.toFixed(1)} s` : 'reused'}); medians of ${repeats} runs of ${perRun} statements (time and server CPU per statement); refresh of both rollups ${f(refreshSeconds)} s`,
);
const cpuColumns = serverPid === null ? '' : ' | raw cpu ms | rollup cpu ms | cpu raw/rollup';
console.log(
  `panel | read | raw s | rollup s | speedup${cpuColumns} | duckdb s | duckdb/rollup | rows read raw | rollup | same`,
);
const cpuFigures = (p) =>
  serverPid === null
    ? ''
    : ` | ${p.raw_cpu_ms.toFixed(1)} | ${p.rollup_cpu_ms.toFixed(1)} | ${p.cpu_ratio === null ? '-' : `${p.cpu_ratio.toFixed(2)}x`}`;
for (const p of figures)
  console.log(
    `${p.panel} | ${p.read} | ${f(p.raw_seconds)} | ${f(p.rollup_seconds)} | ${p.speedup.toFixed(1)}x${cpuFigures(p)} | ${f(p.duckdb_seconds)} | ${p.vs_duckdb.toFixed(1)}x | ${p.raw_rows_read} | ${p.rollup_rows_read} | ${p.same_answer}`,
  );
console.log(
  JSON.stringify({
    rows,
    repeats,
    per_run: perRun,
    load_seconds: loadSeconds,
    refresh_seconds: refreshSeconds,
    panels: figures,
  }),
);
process.exit(figures.every((p) => p.same_answer) ? 0 : 1);
