// What the never-stale read costs the server against a read of the stored rows alone (issue 17, the 1.2x
// goal), this tree against another (--base <tree with dist/ built>), as server CPU: on a loaded machine a
// statement's wall time is mostly its wait for a core, its CPU time what it costs. Both servers on one
// embedded Postgres and one lake (bench/catalog-probe.mjs), bench/rollups' data (probe-data.mjs: --rows
// over 30 days, the hourly rollup refreshed, a minute of rows after it) made through the first; the reads
// of lake-phases.mjs --rollups (SELECT 1, the materialized rows, the never-stale read, the dashboard).
// Each statement runs --per times in a row on one server, then on the other (A B B A), --rounds times;
// with --ingest each read follows a write of 100 rows at now() through the same server, untimed (every
// read then meets a new tail file, as under steady ingestion); with --write-through other, through the other
// server (as a writer in another process would). Per statement, the medians of the rounds'
// server CPU per read (the server process's own, /proc: the shared Postgres is not counted; the reads'
// alone, not the writes') and wall time per read, and never-stale / materialized per server.
//
//   npm run build && node bench/rollups/cpu-ab.mjs --rows 2000000 --ingest --base <tree> [--rounds 6] [--per 10]
//     [--write-through other]
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { catalogProbe, loadAverage, median } from '../catalog-probe.mjs';
import { loadProbeData, probeStatements } from './probe-data.mjs';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '2000000' },
    rounds: { type: 'string', default: '6' },
    per: { type: 'string', default: '10' },
    ingest: { type: 'boolean', default: false },
    'write-through': { type: 'string', default: 'same' },
    base: { type: 'string' },
  },
});
const [rows, rounds, per] = [Number(values.rows), Number(values.rounds), Number(values.per)];
const root = fileURLToPath(new URL('../..', import.meta.url));
/** The CPU ms `pid` has used (user + system; /proc counts in ticks of 10 ms, which many reads average out). */
const cpuOf = (pid) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(')').pop().trim().split(/\s+/);
  return (Number(fields[11]) + Number(fields[12])) * 10;
};
const probe = await catalogProbe(root, 'orrery-rollups-cpu-');
try {
  const servers = [{ label: 'this', client: await probe.startServer(root, 'this') }];
  if (values.base) servers.push({ label: 'base', client: await probe.startServer(values.base, 'base') });
  for (const s of servers) s.pid = probe.servers.get(s.label).pid;
  await loadProbeData(servers[0].client, { rows, hosts: 50 });
  const writer = (s) => (values['write-through'] === 'other' ? (servers.find((o) => o !== s) ?? s) : s);
  const write = (s) =>
    values.ingest &&
    writer(s).client.executeUpdate(
      `INSERT INTO metrics SELECT now()::TIMESTAMP, 'host' || (i % 50), 1.0 FROM range(100) t(i)`,
    );
  const results = {};
  for (const s of servers)
    for (const [name, sql] of Object.entries(probeStatements)) {
      for (let i = 0; i < 3; i++) {
        await write(s);
        await s.client.query(sql); // warm: plans, kept tails
      }
      results[`${s.label}\u0000${name}`] = { cpu: [], wall: [] };
    }
  const loadBefore = loadAverage();
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? servers : [...servers].reverse();
    for (const [name, sql] of Object.entries(probeStatements))
      for (const s of order) {
        let [cpu, wall] = [0, 0n];
        for (let i = 0; i < per; i++) {
          await write(s);
          const c0 = cpuOf(s.pid);
          const t0 = process.hrtime.bigint();
          await s.client.query(sql);
          wall += process.hrtime.bigint() - t0;
          cpu += cpuOf(s.pid) - c0;
        }
        const result = results[`${s.label}\u0000${name}`];
        result.wall.push(Number(wall) / 1e6 / per);
        result.cpu.push(cpu / per);
      }
  }
  console.log(
    `load average ${loadBefore} before, ${loadAverage()} after; ${rows} rows${values.ingest ? `; a write of 100 rows before each read, through the ${values['write-through']} server` : ''}; medians of ${rounds} rounds of ${per} reads; server CPU (its own process) and wall ms per read`,
  );
  console.log(
    `statement | ${servers.map((s) => `${s.label} cpu | ${s.label} wall`).join(' | ')}${servers.length > 1 ? ' | cpu this/base | wall this/base' : ''}`,
  );
  const of = (s, name) => results[`${s.label}\u0000${name}`];
  for (const name of Object.keys(probeStatements)) {
    const figures = servers.map((s) => of(s, name));
    const cells = figures.map((f) => `${median(f.cpu).toFixed(2)} | ${median(f.wall).toFixed(2)}`);
    const ratios =
      servers.length > 1
        ? ` | ${(median(figures[0].cpu) / median(figures[1].cpu)).toFixed(2)} | ${(median(figures[0].wall) / median(figures[1].wall)).toFixed(2)}`
        : '';
    console.log(`${name} | ${cells.join(' | ')}${ratios}`);
  }
  for (const s of servers) {
    const [stale, stored] = [of(s, 'never-stale'), of(s, 'materialized')];
    console.log(
      `${s.label}: never-stale / materialized, cpu ${(median(stale.cpu) / median(stored.cpu)).toFixed(2)}x, wall ${(median(stale.wall) / median(stored.wall)).toFixed(2)}x`,
    );
  }
} finally {
  await probe.close();
}
