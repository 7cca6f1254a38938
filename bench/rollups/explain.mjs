// DuckDB's profile of the rollup reads through the server (issue 17's breakdown): bench/rollups' data
// (probe-data.mjs: ROWS rows, the hourly rollup refreshed, one minute of rows after it) on a probe's
// Postgres and lake, then an admin's EXPLAIN ANALYZE of the materialized rows, the never-stale read and
// the dashboard, and of the never-stale read again with one late row 10 days back (a pending bucket):
// prints each plan (the scans, their rows and DuckDB's total time) after the client's median time.
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { alternately, catalogProbe, loadAverage, median } from '../catalog-probe.mjs';
import { loadProbeData, probeStatements } from './probe-data.mjs';

const { values } = parseArgs({
  options: {
    repeats: { type: 'string', default: '11' },
    rows: { type: 'string', default: '2000000' },
    hosts: { type: 'string', default: '50' },
  },
});
const root = process.env.ORRERY_ROOT ?? fileURLToPath(new URL('../..', import.meta.url));
const [repeats, rows, hosts] = ['repeats', 'rows', 'hosts'].map((k) => Number(values[k]));
const probe = await catalogProbe(root, 'orrery-rollups-explain-');

try {
  const client = await probe.startServer(root, 'orrery');
  await loadProbeData(client, { rows, hosts });
  const statements = probeStatements;
  const plan = async (sql) =>
    (await client.query(`EXPLAIN ANALYZE ${sql}`))
      .toArray()
      .map((row) => Object.values(row.toJSON()).join('\n'))
      .join('\n');
  const report = async (label) => {
    const cases = Object.entries(statements).map(([name, sql]) => ({ name, run: () => client.query(sql) }));
    for (const c of cases) for (let i = 0; i < 3; i++) await c.run();
    const times = await alternately(cases, repeats);
    console.log(`== ${label}: load average ${loadAverage()}; medians of ${repeats} alternated runs; ${rows} rows`);
    for (const [k, c] of cases.entries()) console.log(`${c.name.padEnd(16)} ${median(times[k]).toFixed(2)} ms`);
    for (const [name, sql] of Object.entries(statements).slice(1))
      console.log(`-- ${label}: ${name}\n${await plan(sql)}`);
  };
  await report('one minute of tail');
  await client.executeUpdate(`INSERT INTO metrics VALUES (now()::TIMESTAMP - INTERVAL 10 DAY, 'host0', 50.0)`);
  await report('and one pending bucket');
} finally {
  await probe.close();
}
