// Rollup rewrite benchmark (issue 14, item 7): ROWS requests over 30 days (20 services, 2 % errors),
// a Grafana-like dashboard of 12 panels (counts, error rates, p99 latency, top-N, calendar buckets,
// a now()-relative window), each timed
//   - raw: before any rollup is declared;
//   - rollup: the same SQL once an hourly rollup and a daily rollup of it are declared and refreshed
//     (each panel's provenance names the rollup it read, or why none);
//   - duckdb: DuckDB in-process (the same release) answering the raw SQL on the table's Parquet files.
// Every panel's rollup answer must equal its raw answer (floats within 1e-9 relative). Prints a
// table, then one JSON line; exits 1 on a differing answer.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';
import { FlightSqlClient } from '../../dist/src/client/index.js';
import { panels } from './panels.mjs';

const { values } = parseArgs({
  options: {
    'flight-port': { type: 'string' },
    lake: { type: 'string' },
    rows: { type: 'string', default: '1000000' },
    repeats: { type: 'string', default: '3' },
  },
});
const rows = Number(values.rows);
const repeats = Number(values.repeats);
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

console.error(`bench: loading ${rows} requests over 30 days`);
await client.executeUpdate(
  `CREATE TABLE requests (ts TIMESTAMP, service VARCHAR, status VARCHAR, duration_ms DOUBLE) WITH (time_column = 'ts')`,
);
await client.executeUpdate(
  `INSERT INTO requests SELECT now()::TIMESTAMP - INTERVAL 30 DAY + to_microseconds(CAST(i * ${(30 * 86400 * 1e6) / rows} AS BIGINT)),
     'svc' || (i % 20), CASE WHEN hash(i) % 50 = 0 THEN 'error' ELSE 'ok' END, (hash(i * 7) % 100000) / 100.0
   FROM range(${rows}) t(i)`,
);

const raw = [];
for (const [name, sql] of panels)
  raw.push({ name, ...(await timedMedian(async () => rowsOf(await client.query(sql)))) });

await client.query(`select create_rollup('requests_hourly', 'requests', interval '1 hour',
  select_list => 'service, status, count(*) as n, sum(duration_ms) as d_sum, count(duration_ms) as d_n, max(duration_ms) as d_max, percentile_sketch(duration_ms) as d_p',
  group_by => 'service, status')`);
await client.query(`select create_rollup('requests_daily', 'requests_hourly', interval '1 day',
  select_list => 'service, status, sum(n) as n, sum(d_sum) as d_sum, sum(d_n) as d_n, max(d_max) as d_max, merge(d_p) as d_p',
  group_by => 'service, status')`);
const refreshStart = process.hrtime.bigint();
await client.query(`select refresh_rollup('requests_hourly')`);
await client.query(`select refresh_rollup('requests_daily')`);
const refreshSeconds = Number(process.hrtime.bigint() - refreshStart) / 1e9;

const rollup = [];
for (const [name, sql] of panels) {
  let read = null;
  const timed = await timedMedian(async () => {
    const table = await client.query(sql);
    const provenance = JSON.parse(table.schema.metadata.get('orrery.provenance') ?? '{"resources":[]}');
    const level = provenance.resources[0];
    read =
      level?.rollup?.name ??
      `raw (${level?.skipped_rollup.map((s) => `${s.name}: ${s.reason}`).join('; ') ?? 'no rollup considered'})`;
    return rowsOf(table);
  });
  rollup.push({ name, read, ...timed });
}
client.close();

// DuckDB in-process on the table's own Parquet files (DuckLake writes them under <lake>/tables).
const files = [];
const walk = (dir) => {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) walk(path);
    else if (entry.name.endsWith('.parquet') && path.includes('/requests/')) files.push(path);
  }
};
walk(join(values.lake, 'tables'));
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
  duckdb_seconds: duckdb[i].seconds,
  vs_duckdb: duckdb[i].seconds / rollup[i].seconds,
  rows: raw[i].result.length,
  same_answer: same(raw[i].result, rollup[i].result),
}));
const f = (x) => x.toFixed(4);
console.log(
  `requests ${rows} over 30 days; repeats ${repeats} (median); refresh of both rollups ${f(refreshSeconds)} s`,
);
console.log('panel | read | raw s | rollup s | speedup | duckdb s | duckdb/rollup | same');
for (const p of figures)
  console.log(
    `${p.panel} | ${p.read} | ${f(p.raw_seconds)} | ${f(p.rollup_seconds)} | ${p.speedup.toFixed(1)}x | ${f(p.duckdb_seconds)} | ${p.vs_duckdb.toFixed(1)}x | ${p.same_answer}`,
  );
console.log(JSON.stringify({ rows, repeats, refresh_seconds: refreshSeconds, panels: figures }));
process.exit(figures.every((p) => p.same_answer) ? 0 : 1);
