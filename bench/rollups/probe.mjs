// Rollup reads before / after a change in one run (issue 17): one embedded Postgres (pg_stat_statements
// preloaded) and one lake, `orrery serve` from this tree and, with --base <tree with dist/ built>, a
// second server from that tree on the same catalog and files. ROWS rows over 30 days, the hourly rollup
// of bench.mjs refreshed, then one minute of rows written after the refresh (the never-stale read's raw
// tail). Each case is timed on every server alternately (A, B, A, B; medians of --repeats); then, with a
// daily rollup of the hourly one and one late row 10 days back (a pending bucket in both), the
// never-stale read again, the raw statement of that closed day, rewritten onto the hourly rollup, and
// a per-day statement of the three closed days around it, rewritten onto the daily rollup; the Postgres
// statements one read runs are counted after each part. Prints a table and one JSON line.
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { alternately, catalogProbe, loadAverage, median, printCases } from '../catalog-probe.mjs';
import { loadProbeData } from './probe-data.mjs';

const { values } = parseArgs({
  options: {
    repeats: { type: 'string', default: '21' },
    rows: { type: 'string', default: '2000000' },
    hosts: { type: 'string', default: '50' },
    counted: { type: 'string', default: '5' },
    base: { type: 'string' },
  },
});
const root = process.env.ORRERY_ROOT ?? fileURLToPath(new URL('../..', import.meta.url));
const [repeats, counted, rows, hosts] = ['repeats', 'counted', 'rows', 'hosts'].map((k) => Number(values[k]));
const probe = await catalogProbe(root, 'orrery-rollups-probe-');

try {
  console.error(`bench: load average ${loadAverage()} at start; folder ${probe.dir}`);
  const client = await probe.startServer(root, 'orrery');
  const base = values.base ? await probe.startServer(resolve(values.base), 'base') : null;
  await loadProbeData(client, { rows, hosts });

  const since = `time_bucket(INTERVAL 1 HOUR, now()::TIMESTAMP - INTERVAL 7 DAY)`;
  const statements = {
    'SELECT 1': 'SELECT 1',
    'series, no row': 'SELECT count(*) FROM metrics WHERE false',
    materialized: `SELECT bucket, host, n, cpu_sum FROM metrics_hourly_materialized WHERE bucket >= now()::TIMESTAMP - INTERVAL 7 DAY`,
    'never-stale': `SELECT bucket, host, n, cpu_sum FROM metrics_hourly WHERE bucket >= now()::TIMESTAMP - INTERVAL 7 DAY`,
    dashboard: `SELECT bucket, host, cpu_sum / n AS cpu_avg, cpu_max FROM metrics_hourly WHERE bucket >= ${since} ORDER BY bucket, host`,
  };
  const servers = [['this', client], ...(base ? [['base', base]] : [])];
  const cases = servers.flatMap(([label, flight]) =>
    Object.entries(statements).map(([name, sql]) => ({ name: `${label} ${name}`, run: () => flight.query(sql) })),
  );
  // Both servers answer the same rows.
  // The rows as text, sorted: the never-stale read has no ORDER BY.
  const text = (table) =>
    table
      .toArray()
      .map((r) => JSON.stringify(r.toJSON(), (_, v) => (typeof v === 'bigint' ? String(v) : v)))
      .sort()
      .join('\n');
  for (const sql of Object.values(statements)) {
    const answers = await Promise.all(servers.map(async ([, flight]) => text(await flight.query(sql))));
    if (answers.some((a) => a !== answers[0])) throw new Error(`the servers answer differently: ${sql}`);
  }
  for (const c of cases) for (let i = 0; i < 3; i++) await c.run(); // warm
  console.error(`bench: timing (load average ${loadAverage()})`);
  const times = await alternately(cases, repeats);
  const perStatement = await probe.postgresPerStatement(cases, counted);
  // A daily rollup of the hourly one, refreshed, for the closed days below.
  await client.query(`select create_rollup('metrics_daily', 'metrics_hourly', interval '1 day',
    select_list => 'host, sum(n) as n, sum(cpu_sum) as cpu_sum', group_by => 'host')`);
  await client.query(`select refresh_rollup('metrics_daily')`);
  // Then one late row 10 days back, pending until the next refresh: the never-stale read aggregates its
  // bucket from the source too (outside the 7 days read, so the answer stays the same size).
  await client.executeUpdate(`INSERT INTO metrics VALUES (now()::TIMESTAMP - INTERVAL 10 DAY, 'host0', 50.0)`);
  // And the raw statement of one closed day holding that bucket, which the rewrite (#14) answers
  // from the rollup: its stored rows and the pending bucket's raw rows.
  const day = `date_trunc('day', now()::TIMESTAMP - INTERVAL 10 DAY)`;
  const closedDay = `SELECT time_bucket(INTERVAL 1 HOUR, ts) AS bucket, host, count(*) AS n, sum(cpu) AS cpu_sum FROM metrics
    WHERE ts >= ${day} AND ts < ${day} + INTERVAL 1 DAY GROUP BY ALL`;
  // Three closed days around it per day, which the rewrite answers from the daily rollup of the hourly
  // one: its stored rows and the pending day from the hourly rollup's stored rows and pending hour.
  const closedDays = `SELECT time_bucket(INTERVAL 1 DAY, ts) AS bucket, host, count(*) AS n, sum(cpu) AS cpu_sum FROM metrics
    WHERE ts >= ${day} - INTERVAL 1 DAY AND ts < ${day} + INTERVAL 2 DAY GROUP BY ALL`;
  const lateCases = servers.flatMap(([label, flight]) => [
    { name: `${label} never-stale, 1 pending`, run: () => flight.query(statements['never-stale']) },
    { name: `${label} rewritten day, 1 pending`, run: () => flight.query(closedDay) },
    { name: `${label} rewritten days of days`, run: () => flight.query(closedDays) },
  ]);
  for (const [, flight] of servers)
    for (const [sql, rollup] of [
      [closedDay, 'metrics_hourly'],
      [closedDays, 'metrics_daily'],
    ]) {
      const provenance = JSON.parse((await flight.query(sql)).schema.metadata.get('orrery.provenance') ?? '{}');
      if (!provenance.resources?.every((level) => level.rollup?.name === rollup))
        throw new Error(`the closed days did not read ${rollup}: ${JSON.stringify(provenance)}`);
    }
  for (const sql of [statements['never-stale'], closedDay, closedDays]) {
    const answers = await Promise.all(servers.map(async ([, flight]) => text(await flight.query(sql))));
    if (answers.some((a) => a !== answers[0])) throw new Error(`the servers answer differently: ${sql}`);
  }
  times.push(...(await alternately(lateCases, repeats)));
  const loadAfter = loadAverage();
  perStatement.push(...(await probe.postgresPerStatement(lateCases, counted)));
  cases.push(...lateCases);

  const med = Object.fromEntries(cases.map((c, k) => [c.name, median(times[k])]));
  console.log(`load average ${loadAfter} after timing; medians of ${repeats} alternated runs; ${rows} rows`);
  printCases(cases, med, perStatement, 32);
  for (const [label] of servers)
    console.log(
      `${label}: never-stale / materialized ${(med[`${label} never-stale`] / med[`${label} materialized`]).toFixed(3)}x; ` +
        `above SELECT 1: materialized ${(med[`${label} materialized`] - med[`${label} SELECT 1`]).toFixed(2)} ms, ` +
        `never-stale ${(med[`${label} never-stale`] - med[`${label} SELECT 1`]).toFixed(2)} ms, ` +
        `dashboard ${(med[`${label} dashboard`] - med[`${label} SELECT 1`]).toFixed(2)} ms`,
    );
  console.log(
    JSON.stringify({
      bench: 'rollups-probe',
      rows,
      load_average: loadAfter,
      base: values.base ?? null,
      medians_ms: Object.fromEntries(Object.entries(med).map(([k, v]) => [k, Number(v.toFixed(3))])),
      postgres_per_read: Object.fromEntries(cases.map((c, k) => [c.name, perStatement[k].kinds])),
    }),
  );
} finally {
  await probe.close();
}
