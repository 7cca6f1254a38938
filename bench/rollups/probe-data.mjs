// The data bench/rollups' probes read (probe.mjs, in-process.mjs), made through an Orrery server:
// `rows` rows over 30 days in the series table `metrics` (`hosts` hosts), bench.mjs's hourly rollup of
// it refreshed, then one minute of rows written after the refresh (the never-stale read's raw tail).

/** Loads the probes' data through `client` (an admin's Flight SQL client). */
export async function loadProbeData(client, { rows, hosts }) {
  const spanSeconds = 30 * 86400;
  await client.executeUpdate(`CREATE TABLE metrics (ts TIMESTAMP, host VARCHAR, cpu DOUBLE) WITH (time_column = 'ts')`);
  await client.executeUpdate(
    `INSERT INTO metrics SELECT now()::TIMESTAMP - INTERVAL 30 DAY + to_microseconds(CAST(i * ${(spanSeconds * 1e6) / rows} AS BIGINT)),
       'host' || (i % ${hosts}), (hash(i) % 10000) / 100.0 FROM range(${rows}) t(i)`,
  );
  await client.query(`select create_rollup('metrics_hourly', 'metrics', interval '1 hour',
    select_list => 'host, count(*) as n, count(cpu) as cpu_n, sum(cpu) as cpu_sum, max(cpu) as cpu_max', group_by => 'host')`);
  await client.query(`select refresh_rollup('metrics_hourly')`);
  const perMinute = Math.max(1, Math.round(rows / (30 * 1440)));
  await client.executeUpdate(
    `INSERT INTO metrics SELECT now()::TIMESTAMP - INTERVAL 1 MINUTE + to_microseconds(CAST(i * ${60e6 / perMinute} AS BIGINT)),
       'host' || (i % ${hosts}), 1.0 FROM range(${perMinute}) t(i)`,
  );
}

/** The reads explain.mjs and bench/latency/lake-phases.mjs --rollups time: the floor, the stored rows, the view, a dashboard. */
export const probeStatements = {
  'SELECT 1': 'SELECT 1',
  materialized: `SELECT bucket, host, n, cpu_sum FROM metrics_hourly_materialized WHERE bucket >= now()::TIMESTAMP - INTERVAL 7 DAY`,
  'never-stale': `SELECT bucket, host, n, cpu_sum FROM metrics_hourly WHERE bucket >= now()::TIMESTAMP - INTERVAL 7 DAY`,
  dashboard: `SELECT bucket, host, cpu_sum / n AS cpu_avg, cpu_max FROM metrics_hourly
    WHERE bucket >= time_bucket(INTERVAL 1 HOUR, now()::TIMESTAMP - INTERVAL 7 DAY) ORDER BY bucket, host`,
};
