// Rollup rewrite, raw and rollup alternately (issue 14): against a server whose `requests` table and
// rollups bench.mjs made (KEEP_DATA=1 or DATA_DIR), each panel, its raw twin (the same SQL over a
// subquery of the table, which no rollup answers) and `SELECT 1` run one after the other, REPEATS
// times, so all see the same load. Prints per panel the rollup read, the median (and least) time of
// each, raw/rollup, and raw/`SELECT 1`: the most any read through the server could gain over raw
// (the per-statement floor: the Flight SQL call, planning); with --server-pid, the server's CPU per
// statement too (its process tree, Postgres included; /proc's 10 ms ticks summed over the repeats).
//   node bench/rollup-rewrite/twins.mjs --flight-port <port> [--repeats 7] [--server-pid <pid>] [--panels 'p99,24 h']
import { parseArgs } from 'node:util';
import { FlightSqlClient } from '../../dist/src/client/index.js';
import { processTreeCpuMs } from '../process-cpu.mjs';
import { panels } from './panels.mjs';

const { values } = parseArgs({
  options: {
    'flight-port': { type: 'string' },
    repeats: { type: 'string', default: '7' },
    'server-pid': { type: 'string' },
    // Comma-separated parts of panel names: only the panels whose name holds one of them.
    panels: { type: 'string' },
  },
});
const repeats = Number(values.repeats);
const serverPid = values['server-pid'] ? Number(values['server-pid']) : null;
const cpuMs = () => (serverPid === null ? 0 : processTreeCpuMs(serverPid));
const wanted = values.panels?.split(',') ?? null;
const client = await FlightSqlClient.connect({
  address: `127.0.0.1:${values['flight-port']}`,
  apiKey: 'admin-key-0123',
});
const rawTwin = (sql) => sql.replace(' from requests ', ' from (select * from requests) as requests ');
const stats = (times) => {
  const sorted = [...times].sort((a, b) => a - b);
  return { median: sorted[Math.floor(sorted.length / 2)], min: sorted[0] };
};
const ms = (x) => x.toFixed(1).padStart(7);
const cpuHeader = serverPid === null ? '' : ' | server cpu ms rollup / raw / SELECT 1';
console.log(
  `panel | read | rollup ms median (least) | raw ms median (least) | SELECT 1 ms median | raw/rollup | raw/SELECT 1${cpuHeader}`,
);
const results = [];
for (const [name, sql] of panels.filter(([name]) => !wanted || wanted.some((w) => name.includes(w)))) {
  const times = { rollup: [], raw: [], floor: [] };
  const cpu = { rollup: 0, raw: 0, floor: 0 };
  let read = 'raw';
  for (let i = 0; i < repeats; i++) {
    for (const [kind, text] of [
      ['rollup', sql],
      ['raw', rawTwin(sql)],
      ['floor', 'SELECT 1'],
    ]) {
      const cpuBefore = cpuMs();
      const start = process.hrtime.bigint();
      const table = await client.query(text);
      times[kind].push(Number(process.hrtime.bigint() - start) / 1e6);
      cpu[kind] += cpuMs() - cpuBefore;
      if (kind === 'rollup')
        read =
          JSON.parse(table.schema.metadata.get('orrery.provenance') ?? '{"resources":[]}').resources[0]?.rollup?.name ??
          'raw';
    }
  }
  const [a, b, c] = [stats(times.rollup), stats(times.raw), stats(times.floor)];
  const perStatement = (kind) => cpu[kind] / repeats;
  results.push({
    panel: name,
    read,
    rollup_ms: a.median,
    raw_ms: b.median,
    select_one_ms: c.median,
    ...(serverPid === null
      ? {}
      : {
          rollup_cpu_ms: perStatement('rollup'),
          raw_cpu_ms: perStatement('raw'),
          select_one_cpu_ms: perStatement('floor'),
        }),
  });
  const cpuFigures =
    serverPid === null
      ? ''
      : ` | ${perStatement('rollup').toFixed(1)} / ${perStatement('raw').toFixed(1)} / ${perStatement('floor').toFixed(1)}`;
  console.log(
    `${name} | ${read} | ${ms(a.median)} (${ms(a.min)}) | ${ms(b.median)} (${ms(b.min)}) | ${ms(c.median)} | ${(b.median / a.median).toFixed(2)}x | ${(b.median / c.median).toFixed(1)}x${cpuFigures}`,
  );
}
// The variant measured, for native-ab.sh: its BENCH_MODE (before/after), or the addon's on/off.
const mode = process.env.BENCH_MODE ?? process.env.ORRERY_NATIVE ?? null;
console.log(JSON.stringify({ bench: 'rollup-rewrite-twins', mode, results }));
client.close();
