// Rollups benchmark (issue 17, item 13): ROWS rows over 30 days in a series table (HOSTS hosts),
// the spec's hourly rollup of it, and:
//   1. the dashboard query (per host per hour over 7 days) on the rollup vs the same aggregation on
//      the raw table (goal >= 100x);
//   2. the never-stale read with one minute of raw tail (rows written after the refresh) vs a purely
//      materialized read of the same buckets (goal <= 1.2x);
//   3. refresh cost per minute of ingest (a refresh after one minute's rows);
//   4. the cost of one late row: buckets recomputed (goal 1) and the refresh's time.
// Prints a table, then one JSON line; exits 1 when the rollup's answer differs from the raw one.
import { parseArgs } from 'node:util';
import { FlightSqlClient } from '../../dist/src/client/index.js';

const { values } = parseArgs({
  options: {
    'flight-port': { type: 'string' },
    rows: { type: 'string', default: '2000000' },
    hosts: { type: 'string', default: '50' },
    repeats: { type: 'string', default: '5' },
  },
});
const rows = Number(values.rows);
const hosts = Number(values.hosts);
const repeats = Number(values.repeats);
const client = await FlightSqlClient.connect({
  address: `127.0.0.1:${values['flight-port']}`,
  apiKey: 'admin-key-0123',
});

const seconds = (start) => Number(process.hrtime.bigint() - start) / 1e9;
const timed = async (work) => {
  const start = process.hrtime.bigint();
  const result = await work();
  return { seconds: seconds(start), result };
};
const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
const best = async (sql) => {
  const times = [];
  let table;
  for (let i = 0; i < repeats; i++) {
    const { seconds: s, result } = await timed(() => client.query(sql));
    times.push(s);
    table = result;
  }
  return { seconds: median(times), table };
};
const scalar = async (sql) => Number(Object.values((await client.query(sql)).get(0).toJSON())[0]);

const spanSeconds = 30 * 86400;
console.error(`bench: loading ${rows} rows over 30 days, ${hosts} hosts`);
await client.executeUpdate(`CREATE TABLE metrics (ts TIMESTAMP, host VARCHAR, cpu DOUBLE) WITH (time_column = 'ts')`);
const load = await timed(() =>
  client.executeUpdate(
    `INSERT INTO metrics SELECT now()::TIMESTAMP - INTERVAL 30 DAY + to_microseconds(CAST(i * ${(spanSeconds * 1e6) / rows} AS BIGINT)),
       'host' || (i % ${hosts}), (hash(i) % 10000) / 100.0 FROM range(${rows}) t(i)`,
  ),
);
await client.query(`select create_rollup('metrics_hourly', 'metrics', interval '1 hour',
  select_list => 'host, count(*) as n, sum(cpu) as cpu_sum, max(cpu) as cpu_max', group_by => 'host')`);
const firstRefresh = await timed(() => scalar(`select refresh_rollup('metrics_hourly')`));

// The last 7 days of whole hours: the same bound on both sides.
const since = `time_bucket(INTERVAL 1 HOUR, now()::TIMESTAMP - INTERVAL 7 DAY)`;
const dashboardRollup = `SELECT bucket, host, cpu_sum / n AS cpu_avg, cpu_max FROM metrics_hourly
  WHERE bucket >= ${since} ORDER BY bucket, host`;
const dashboardRaw = `SELECT time_bucket(INTERVAL 1 HOUR, ts::TIMESTAMP) AS bucket, host, avg(cpu) AS cpu_avg, max(cpu) AS cpu_max
  FROM metrics WHERE ts >= ${since} GROUP BY ALL ORDER BY bucket, host`;
const onRollup = await best(dashboardRollup);
const onRaw = await best(dashboardRaw);
const sameAnswer = (a, b) => {
  if (a.numRows !== b.numRows) return false;
  for (let i = 0; i < a.numRows; i++) {
    const x = a.get(i).toJSON();
    const y = b.get(i).toJSON();
    if (
      String(x.host) !== String(y.host) ||
      Math.abs(Number(x.cpu_avg) - Number(y.cpu_avg)) > 1e-9 ||
      x.cpu_max !== y.cpu_max
    )
      return false;
  }
  return true;
};
const dashboardOk = sameAnswer(onRollup.table, onRaw.table);

// One minute of ingest after a refresh: the never-stale read's raw tail.
await scalar(`select refresh_rollup('metrics_hourly')`);
const perMinute = Math.max(1, Math.round(rows / (30 * 1440)));
await client.executeUpdate(
  `INSERT INTO metrics SELECT now()::TIMESTAMP - INTERVAL 1 MINUTE + to_microseconds(CAST(i * ${60e6 / perMinute} AS BIGINT)),
     'host' || (i % ${hosts}), 1.0 FROM range(${perMinute}) t(i)`,
);
const neverStale = await best(
  `SELECT bucket, host, n, cpu_sum FROM metrics_hourly WHERE bucket >= now()::TIMESTAMP - INTERVAL 7 DAY`,
);
const materialized = await best(
  `SELECT bucket, host, n, cpu_sum FROM metrics_hourly_materialized WHERE bucket >= now()::TIMESTAMP - INTERVAL 7 DAY`,
);
const refreshMinute = await timed(() => scalar(`select refresh_rollup('metrics_hourly')`));

// One late row, ten days back.
await client.executeUpdate(`INSERT INTO metrics VALUES (now()::TIMESTAMP - INTERVAL 10 DAY, 'host0', 50.0)`);
const late = await timed(() => scalar(`select refresh_rollup('metrics_hourly')`));
// Every bucket of the rollup against the raw aggregation (sums of doubles compared within rounding).
const afterLate = await scalar(
  `WITH raw AS (SELECT time_bucket(INTERVAL 1 HOUR, ts::TIMESTAMP) AS bucket, host, count(*) AS n, sum(cpu) AS cpu_sum,
                       max(cpu) AS cpu_max, audience FROM metrics GROUP BY ALL)
   SELECT count(*) FROM metrics_hourly r FULL JOIN raw USING (bucket, host, audience)
   WHERE r.n IS DISTINCT FROM raw.n OR r.cpu_max IS DISTINCT FROM raw.cpu_max OR abs(r.cpu_sum - raw.cpu_sum) > 1e-6
      OR r.cpu_sum IS NULL OR raw.cpu_sum IS NULL`,
);
client.close();

const figures = {
  rows,
  hosts,
  load_seconds: load.seconds,
  first_refresh_seconds: firstRefresh.seconds,
  dashboard_rollup_seconds: onRollup.seconds,
  dashboard_raw_seconds: onRaw.seconds,
  dashboard_speedup: onRaw.seconds / onRollup.seconds,
  never_stale_seconds: neverStale.seconds,
  materialized_seconds: materialized.seconds,
  never_stale_ratio: neverStale.seconds / materialized.seconds,
  rows_per_minute: perMinute,
  refresh_per_minute_seconds: refreshMinute.seconds,
  refresh_per_minute_ranges: refreshMinute.result,
  late_row_ranges: late.result,
  late_row_refresh_seconds: late.seconds,
  answers_match: dashboardOk && afterLate === 0,
};
const f = (x) => (typeof x === 'number' && !Number.isInteger(x) ? x.toFixed(4) : String(x));
console.log(
  `rows ${rows} (${hosts} hosts, 30 days); load ${f(load.seconds)} s; first refresh ${f(firstRefresh.seconds)} s`,
);
console.log(
  `dashboard (per host per hour, 7 days): rollup ${f(onRollup.seconds)} s, raw ${f(onRaw.seconds)} s, ${f(figures.dashboard_speedup)}x (goal >= 100x)`,
);
console.log(
  `never-stale read with 1 min of raw tail: ${f(neverStale.seconds)} s vs materialized ${f(materialized.seconds)} s, ${f(figures.never_stale_ratio)}x (goal <= 1.2x)`,
);
console.log(
  `refresh after one minute of ingest (${perMinute} rows): ${f(refreshMinute.seconds)} s, ${refreshMinute.result} range(s)`,
);
console.log(`one late row: ${late.result} range(s) recomputed (goal 1), refresh ${f(late.seconds)} s`);
console.log(`answers match the raw aggregation: ${figures.answers_match}`);
console.log(JSON.stringify(figures));
process.exit(figures.answers_match ? 0 : 1);
