// What the rollup refresh jobs cost an idle `orrery serve` (issue 17): two servers at once, each with
// its own data folder and embedded Postgres, one running the jobs (ORRERY_ROLLUP_REFRESH_JOBS=on, the
// default) and one not (off), measured over the same seconds so the machine's load hits both. CPU of
// the Node process alone and of its descendants (the embedded Postgres and its backends), from /proc,
// over `--seconds`, `--rounds` times (the servers restarted each round, in swapped start order).
// With `--rollup`, each server first gets a small series table and an hourly rollup of it, so the
// one running jobs also refreshes it every minute (nothing new to aggregate). Prints a table and
// one JSON line.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { processTreeCpu } from '../process-cpu.mjs';

const { values } = parseArgs({
  options: {
    root: { type: 'string' },
    seconds: { type: 'string', default: '60' },
    rounds: { type: 'string', default: '2' },
    rollup: { type: 'boolean', default: false },
  },
});
const root = values.root ?? process.env.ORRERY_ROOT ?? new URL('../..', import.meta.url).pathname;
const { FlightSqlClient } = await import(pathToFileURL(join(root, 'dist/src/client/index.js')).href);
const [seconds, rounds] = [Number(values.seconds), Number(values.rounds)];
const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

/** `orrery serve` with jobs on or off, in a folder of its own; resolves once Flight SQL listens. */
async function start(jobs) {
  const dir = mkdtempSync(join(tmpdir(), `orrery-idle-${jobs}-`));
  const server = spawn(process.execPath, [join(root, 'dist/src/orrery.cjs'), 'serve'], {
    env: {
      ...process.env,
      MICROMEGAS_API_KEYS: JSON.stringify([{ name: 'admin', key: 'admin-key-0123' }]),
      MICROMEGAS_ADMINS: JSON.stringify(['admin']),
      ORRERY_DATA_DIR: dir,
      ORRERY_FLIGHT_SQL_ADDR: '127.0.0.1:0',
      ORRERY_HTTP_ADDR: '127.0.0.1:0',
      ORRERY_ROLLUP_REFRESH_JOBS: jobs,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  server.stdout.on('data', (d) => (log += d));
  server.stderr.on('data', (d) => (log += d));
  const exited = new Promise((done) => server.once('exit', done));
  const stop = async () => {
    server.kill('SIGINT');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  for (let i = 0; i < 1200; i++) {
    const port = /Flight SQL listening on 127\.0\.0\.1:(\d+)/.exec(log)?.[1];
    if (port) return { jobs, pid: server.pid, port, stop };
    if (server.exitCode !== null) break;
    await sleep(100);
  }
  await stop();
  throw new Error(`serve (jobs ${jobs}) did not start:\n${log}`);
}

const rows = [];
const running = new Set();
process.on('SIGINT', () => void Promise.all([...running].map((s) => s.stop())).then(() => process.exit(130)));
for (let round = 0; round < rounds; round++) {
  const order = round % 2 === 0 ? ['on', 'off'] : ['off', 'on'];
  const servers = [];
  try {
    for (const jobs of order) {
      const server = await start(jobs);
      servers.push(server);
      running.add(server);
    }
    if (values.rollup)
      for (const s of servers) {
        const client = await FlightSqlClient.connect({ address: `127.0.0.1:${s.port}`, apiKey: 'admin-key-0123' });
        await client.executeUpdate(
          `CREATE TABLE metrics (ts TIMESTAMP, host VARCHAR, cpu DOUBLE) WITH (time_column = 'ts')`,
        );
        await client.executeUpdate(
          `INSERT INTO metrics SELECT now()::TIMESTAMP - INTERVAL 1 DAY + to_microseconds(i * 1000000), 'host' || (i % 5), i % 100 FROM range(86400) t(i)`,
        );
        await client.query(`select create_rollup('metrics_hourly', 'metrics', interval '1 hour',
          select_list => 'host, count(*) as n, sum(cpu) as cpu_sum', group_by => 'host')`);
        client.close();
      }
    // Settled: start-up work and a new rollup's first refresh are not idling.
    await sleep(10_000);
    const before = servers.map((s) => processTreeCpu(s.pid));
    const loadBefore = loadAverage();
    await sleep(seconds * 1000);
    const after = servers.map((s) => processTreeCpu(s.pid));
    for (const [k, s] of servers.entries())
      rows.push({
        round,
        jobs: s.jobs,
        node_ms_per_s: (after[k].own - before[k].own) / seconds,
        postgres_ms_per_s: (after[k].descendants - before[k].descendants) / seconds,
        load: `${loadBefore} -> ${loadAverage()}`,
      });
  } finally {
    for (const s of servers) {
      running.delete(s);
      await s.stop();
    }
  }
}

const sum = (jobs, key) => rows.filter((r) => r.jobs === jobs).reduce((t, r) => t + r[key], 0) / rounds;
console.log(
  `idle orrery serve${values.rollup ? ' with one hourly rollup' : ''}, CPU ms per second over ${seconds} s (${rounds} round(s), both servers at once)`,
);
console.log('round  jobs  node ms/s  postgres ms/s  load');
for (const r of rows)
  console.log(
    `${String(r.round).padEnd(6)} ${r.jobs.padEnd(4)} ${r.node_ms_per_s.toFixed(2).padStart(10)} ${r.postgres_ms_per_s.toFixed(2).padStart(14)}  ${r.load}`,
  );
const figures = Object.fromEntries(
  ['on', 'off'].flatMap((jobs) => [
    [`node_ms_per_s_${jobs}`, sum(jobs, 'node_ms_per_s')],
    [`postgres_ms_per_s_${jobs}`, sum(jobs, 'postgres_ms_per_s')],
  ]),
);
console.log(
  `mean: jobs on ${figures.node_ms_per_s_on.toFixed(2)} + ${figures.postgres_ms_per_s_on.toFixed(2)} ms/s, ` +
    `off ${figures.node_ms_per_s_off.toFixed(2)} + ${figures.postgres_ms_per_s_off.toFixed(2)} ms/s (node + postgres); ` +
    `the jobs cost ${(figures.node_ms_per_s_on + figures.postgres_ms_per_s_on - figures.node_ms_per_s_off - figures.postgres_ms_per_s_off).toFixed(2)} ms of CPU per second`,
);
console.log(JSON.stringify({ bench: 'rollups-idle-cpu', seconds, rounds, rollup: values.rollup, ...figures, rows }));
