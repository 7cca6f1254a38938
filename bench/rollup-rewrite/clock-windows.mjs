// Statements whose window moves with the clock (`ts >= now() - INTERVAL 1 DAY`) through the rollup rewrite
// against their raw twins (issue 14, "none slower"): such a statement has new bounds at every run, so
// the rewrite considers its rollups again each time, also when it reads raw in the end. `orrery serve`
// from --root (default this tree; another built tree to compare commits A B A B) on bench/catalog-probe's
// Postgres and lake, bench.mjs's table and rollups, then each statement and its twin (the same SQL over a
// subquery of the table, which no rollup answers) alternately: medians of --repeats, the server's CPU
// per statement (its process: DuckDB included, Postgres not) and its main thread's, and the median time of
// the rewrite itself (phase-probe.mjs, preloaded). Each statement's provenance says what it read. A third
// statement sends its time range as literals new at each run (a new text, as a dashboard's refresh does); a first,
// bench.mjs's 24 h panel up to the last midnight, keeps its bounds all day, so its kept rewrite is reused as it is.
//
//   npm run build && node bench/rollup-rewrite/clock-windows.mjs --rows 2000000 --repeats 30 [--root <tree>]
//   ORRERY_ROLLUP_RAW_EDGES_MIN_ROWS=0 node bench/rollup-rewrite/clock-windows.mjs ...   (whole hours + raw edges)
//   node bench/rollup-rewrite/clock-windows.mjs --after-refresh ...   (each run right after a refresh of the hourly
//   rollup, untimed: a new snapshot whose rollup state changed, as a dashboard meets after each minute's refresh job)
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { alternately, catalogProbe, loadAverage, median } from '../catalog-probe.mjs';
import { processTreeCpuMs } from '../process-cpu.mjs';
import { panels, requestsRollups, requestsTable } from './panels.mjs';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '2000000' },
    repeats: { type: 'string', default: '30' },
    root: { type: 'string' },
    'after-refresh': { type: 'boolean', default: false },
  },
});
const here = fileURLToPath(new URL('../..', import.meta.url));
const root = values.root ? resolve(values.root) : here;
const repeats = Number(values.repeats);
const probe = await catalogProbe(root, 'orrery-clock-windows-');
try {
  const phases = join(probe.dir, 'phases.json');
  console.error(
    `bench: load average ${loadAverage()} at start; ${values.rows} requests over 30 days; server from ${root}`,
  );
  const client = await probe.startServer(root, 'orrery', {
    nodeArgs: ['--import', join(here, 'bench/latency/phase-probe.mjs')],
    env: { PHASES_ROOT: root, PHASES_OUT: phases, UV_THREADPOOL_SIZE: '20' },
  });
  const server = probe.servers.get('orrery');
  for (const sql of requestsTable(Number(values.rows))) await client.executeUpdate(sql);
  for (const sql of requestsRollups) await client.query(sql);
  await client.query(`select refresh_rollup('requests_hourly')`);
  await client.query(`select refresh_rollup('requests_daily')`);

  const statements = [
    // bench.mjs's panel over the day before the last midnight: its bounds hold all day, so its rewrite is kept and
    // reused as it is (what a dashboard's panel pays at each refresh between the rollup's refreshes).
    panels.find(([name]) => name === 'error rate per hour, 24 h'),
    [
      'max latency per hour, 24 h',
      `select date_trunc('hour', ts) as t, max(duration_ms) as slowest from requests where ts >= now() - interval 1 day group by t order by t`,
    ],
    [
      'requests per service, 7 days',
      `select service, count(*) as n from requests where ts >= now() - interval 7 day group by service order by service`,
    ],
    // A dashboard's time range sent as literals, new at each refresh (Grafana's $__timeFilter): a new text each run.
    [
      'max latency per hour, 24 h, literal bounds',
      () => {
        const now = Date.now();
        const text = (ms) => `'${new Date(ms).toISOString().replace('T', ' ').replace('Z', '')}'`;
        return `select date_trunc('hour', ts) as t, max(duration_ms) as slowest from requests where ts >= ${text(now - 86_400_000)} and ts < ${text(now)} group by t order by t`;
      },
    ],
  ];
  const twin = (sql) =>
    typeof sql === 'function'
      ? () => twin(sql())
      : sql.replace(' from requests ', ' from (select * from requests) as requests ');
  /** CPU ms of the server's main thread (the JavaScript), from /proc. */
  const mainThreadMs = () => {
    const fields = readFileSync(`/proc/${server.pid}/task/${server.pid}/stat`, 'utf8')
      .split(')')
      .pop()
      .trim()
      .split(/\s+/);
    return (Number(fields[11]) + Number(fields[12])) * 10;
  };
  const cases = statements.flatMap(([name, sql]) => [
    { name, sql, cpu: 0, main: 0 },
    { name: `${name}: raw twin`, sql: twin(sql), cpu: 0, main: 0 },
  ]);
  const afterRefresh = values['after-refresh'];
  for (const c of cases) {
    if (afterRefresh) c.before = () => client.query(`select refresh_rollup('requests_hourly')`);
    c.run = async () => {
      const [cpu, main] = [processTreeCpuMs(server.pid), mainThreadMs()];
      const table = await client.query(typeof c.sql === 'function' ? c.sql() : c.sql);
      c.cpu += processTreeCpuMs(server.pid) - cpu;
      c.main += mainThreadMs() - main;
      return table;
    };
  }
  for (const c of cases) {
    const level = JSON.parse((await c.run()).schema.metadata.get('orrery.provenance') ?? '{"resources":[]}')
      .resources[0];
    c.read = level?.rollup?.name ?? 'raw';
    for (let i = 0; i < 2; i++) await c.run();
    c.cpu = c.main = 0;
  }
  server.kill('SIGUSR1'); // the phase probe forgets the warm-up
  await sleep(300);
  const times = await alternately(cases, repeats);
  server.kill('SIGUSR2');
  await sleep(1000);
  // Each statement is a GetFlightInfo then a DoGet: the rewrite is in the GetFlightInfo. After a refresh's two.
  const rpcs = JSON.parse(readFileSync(phases, 'utf8'));
  const rewriteMs = cases.map(() => []);
  const perCase = afterRefresh ? 4 : 2;
  rpcs.forEach((rpc, i) => {
    if (i % perCase < perCase - 2) return;
    const k = Math.floor(i / perCase) % cases.length;
    for (const [name, start, end] of rpc.phases) if (name === 'rollup rewrite') rewriteMs[k].push((end - start) / 1e6);
  });
  console.log(
    `load average ${loadAverage()}; ${repeats} alternated runs${afterRefresh ? ', each after a refresh' : ''}; server ${root}`,
  );
  console.log('statement | read | median ms | server CPU ms | main thread CPU ms | rewrite ms (median)');
  for (const [k, c] of cases.entries())
    console.log(
      `${c.name} | ${c.read} | ${median(times[k]).toFixed(1)} | ${(c.cpu / repeats).toFixed(1)} | ${(c.main / repeats).toFixed(1)} | ${rewriteMs[k].length ? median(rewriteMs[k]).toFixed(2) : '-'}`,
    );
  for (let k = 0; k < cases.length; k += 2)
    console.log(
      `${cases[k].name}: twin/statement time ${(median(times[k + 1]) / median(times[k])).toFixed(2)}x, CPU ${(cases[k + 1].cpu / cases[k].cpu).toFixed(2)}x`,
    );
  console.log(
    JSON.stringify({
      bench: 'rollup-rewrite-clock-windows',
      root,
      after_refresh: afterRefresh,
      cases: cases.map((c, k) => ({
        name: c.name,
        read: c.read,
        median_ms: median(times[k]),
        cpu_ms: c.cpu / repeats,
        main_cpu_ms: c.main / repeats,
        rewrite_ms: rewriteMs[k].length ? median(rewriteMs[k]) : null,
      })),
    }),
  );
} finally {
  await probe.close();
}
