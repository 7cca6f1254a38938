// The 12 panels of the rollup rewrite benchmark (bench.mjs, twins.mjs): [name, SQL over `requests`].
// Whole days back from the last midnight, so calendar panels are aligned; the last panel is not.
const day0 = `date_trunc('day', now()::TIMESTAMP)`;
export const panels = [
  [
    'requests per hour, 7 days',
    `select date_trunc('hour', ts) as t, count(*) as n from requests where ts >= ${day0} - interval 7 day and ts < ${day0} group by t order by t`,
  ],
  [
    'requests per day, 30 days',
    `select date_trunc('day', ts) as t, count(*) as n from requests where ts >= ${day0} - interval 30 day and ts < ${day0} group by t order by t`,
  ],
  [
    'errors per day per service',
    `select date_trunc('day', ts) as t, service, count(*) filter (where status = 'error') as errors from requests where ts >= ${day0} - interval 30 day and ts < ${day0} group by all order by t, service`,
  ],
  [
    'error rate per hour, 24 h',
    `select date_trunc('hour', ts) as t, count(*) filter (where status = 'error') / count(*) as error_rate from requests where ts >= ${day0} - interval 1 day and ts < ${day0} group by t order by t`,
  ],
  [
    'p99 latency per day',
    `select date_trunc('day', ts) as t, percentile(percentile_sketch(duration_ms), 0.99) as p99 from requests where ts >= ${day0} - interval 30 day and ts < ${day0} group by t order by t`,
  ],
  [
    'mean latency per service per day',
    `select date_trunc('day', ts) as t, service, avg(duration_ms) as mean from requests where ts >= ${day0} - interval 30 day and ts < ${day0} group by all order by t, service`,
  ],
  [
    'max latency per hour, 24 h',
    `select date_trunc('hour', ts) as t, max(duration_ms) as slowest from requests where ts >= ${day0} - interval 1 day and ts < ${day0} group by t order by t`,
  ],
  [
    'top 5 services, 30 days',
    `select service, count(*) as n from requests where ts >= ${day0} - interval 30 day and ts < ${day0} group by service order by n desc, service limit 5`,
  ],
  [
    'services seen per day',
    `select date_trunc('day', ts) as t, count(distinct service) as services from requests where ts >= ${day0} - interval 30 day and ts < ${day0} group by t order by t`,
  ],
  [
    'requests per week',
    `select date_trunc('week', ts) as t, count(*) as n from requests where ts >= ${day0} - interval 28 day and ts < ${day0} group by t order by t`,
  ],
  [
    'requests per month',
    `select date_trunc('month', ts) as t, count(*) as n from requests where ts >= date_trunc('month', now()::TIMESTAMP) - interval 1 month and ts < ${day0} group by t order by t`,
  ],
  // A fixed instant off the hour (now() would move between the raw and the rollup runs).
  [
    'requests per service, last 7 days (raw edges)',
    `select service, count(*) as n from requests where ts >= TIMESTAMP '${new Date(Date.now() - 7 * 86400e3).toISOString().slice(0, 19).replace('T', ' ')}' group by service order by service`,
  ],
];
