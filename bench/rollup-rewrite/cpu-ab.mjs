// What a rollup-answered panel costs the server (issue 14: "each statement that reads a rollup should cost
// close to a scan of a few hundred state rows"), this tree against another (--base <tree with dist/ built>):
// both servers on one embedded Postgres and one lake (bench/catalog-probe.mjs), bench.mjs's table of --rows
// requests and its two rollups made through the first. Each statement runs --per statements in a row on one
// server, then on the other (A B B A), --rounds times; per statement the medians of the rounds' server CPU
// (the server process's own: the shared Postgres is not counted) and wall time. Besides SELECT 1 and three
// panels with their raw twins, each rollup panel is also read with its window as constant timestamps, as
// Grafana sends a dashboard's range.
//
//   npm run build && node bench/rollup-rewrite/cpu-ab.mjs --rows 1000000 --base <tree> [--rounds 6] [--per 20]
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { catalogProbe, loadAverage, median } from '../catalog-probe.mjs';
import { processTreeCpu } from '../process-cpu.mjs';
import { panels, requestsRollups, requestsTable } from './panels.mjs';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '1000000' },
    rounds: { type: 'string', default: '6' },
    per: { type: 'string', default: '20' },
    base: { type: 'string' },
  },
});
const [rows, rounds, per] = [Number(values.rows), Number(values.rounds), Number(values.per)];
const root = fileURLToPath(new URL('../..', import.meta.url));
const probe = await catalogProbe(root, 'orrery-rewrite-cpu-');
try {
  const servers = [{ label: 'this', client: await probe.startServer(root, 'this') }];
  if (values.base) servers.push({ label: 'base', client: await probe.startServer(values.base, 'base') });
  for (const s of servers) s.pid = probe.servers.get(s.label).pid;
  const { client } = servers[0];
  for (const sql of requestsTable(rows)) await client.executeUpdate(sql);
  for (const sql of requestsRollups) await client.query(sql);
  await client.query(`select refresh_rollup('requests_hourly')`);
  await client.query(`select refresh_rollup('requests_daily')`);
  // The last midnight, as the panels' date_trunc('day', now()) gives it (a run across midnight moves it).
  const day0 = new Date(Math.floor(Date.now() / 86400e3) * 86400e3);
  const literal = (daysBack) =>
    `TIMESTAMP '${new Date(day0.getTime() - daysBack * 86400e3).toISOString().slice(0, 19).replace('T', ' ')}'`;
  const statements = { 'SELECT 1': 'SELECT 1' };
  const picked = {
    'requests per day, 30 days': ['daily', 30],
    'max latency per hour, 24 h': ['hourly', 1],
    'requests per service, last 7 days (raw edges)': ['open', null],
  };
  for (const [name, sql] of panels.filter(([n]) => n in picked)) {
    const [short, days] = picked[name];
    statements[short] = sql;
    if (days !== null)
      statements[`${short}, constant window`] = sql
        .replace(/ts >= date_trunc\('day', now\(\)::TIMESTAMP\) - interval \d+ day/, `ts >= ${literal(days)}`)
        .replace(/ts < date_trunc\('day', now\(\)::TIMESTAMP\)/, `ts < ${literal(0)}`);
    statements[`${short}, raw twin`] = sql.replace(' from requests ', ' from (select * from requests) as requests ');
  }
  const cpuOf = (pid) => processTreeCpu(pid).own;
  const results = {};
  for (const s of servers)
    for (const [name, sql] of Object.entries(statements)) {
      for (let i = 0; i < 5; i++) await s.client.query(sql); // warm: plans, kept tails and stored rows
      results[`${s.label}\u0000${name}`] = { cpu: [], wall: [] };
    }
  const loadBefore = loadAverage();
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? servers : [...servers].reverse();
    for (const [name, sql] of Object.entries(statements))
      for (const s of order) {
        const c0 = cpuOf(s.pid);
        const t0 = process.hrtime.bigint();
        for (let i = 0; i < per; i++) await s.client.query(sql);
        const result = results[`${s.label}\u0000${name}`];
        result.wall.push(Number(process.hrtime.bigint() - t0) / 1e6 / per);
        result.cpu.push((cpuOf(s.pid) - c0) / per);
      }
  }
  console.log(
    `load average ${loadBefore} before, ${loadAverage()} after; ${rows} requests; medians of ${rounds} rounds of ${per} statements; server CPU (its own process) and wall ms per statement`,
  );
  console.log(
    `statement | ${servers.map((s) => `${s.label} cpu | ${s.label} wall`).join(' | ')}${servers.length > 1 ? ' | cpu this/base' : ''}`,
  );
  for (const name of Object.keys(statements)) {
    const figures = servers.map((s) => results[`${s.label}\u0000${name}`]);
    const cells = figures.map((f) => `${median(f.cpu).toFixed(2)} | ${median(f.wall).toFixed(2)}`);
    const ratio = servers.length > 1 ? ` | ${(median(figures[0].cpu) / median(figures[1].cpu)).toFixed(2)}` : '';
    console.log(`${name} | ${cells.join(' | ')}${ratio}`);
  }
} finally {
  await probe.close();
}
