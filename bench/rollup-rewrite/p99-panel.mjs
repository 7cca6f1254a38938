// Server CPU of the dashboard's p99-per-day panel (a percentile over the daily rollup's merged sketches) beside a
// sketch-free control panel on the same rollup (mean latency per service per day), against a running server
// holding bench.mjs's data (KEEP_DATA=1 or DATA_DIR): --repeats statements of each, alternated, after 3 untimed
// ones; CPU of the server's process tree per statement (means), wall medians, and a digest of the p99 answer to
// compare trees with. p99-ab.sh runs it A B A B against a base build.
//   node bench/rollup-rewrite/p99-panel.mjs --flight-port <port> --pid <server pid> [--repeats 15]
import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import { FlightSqlClient } from '../../dist/src/client/index.js';
import { loadAverage } from '../catalog-probe.mjs';
import { processTreeCpuMs } from '../process-cpu.mjs';
import { panels } from './panels.mjs';

const { values } = parseArgs({
  options: { 'flight-port': { type: 'string' }, pid: { type: 'string' }, repeats: { type: 'string', default: '15' } },
});
const [pid, repeats] = [Number(values.pid), Number(values.repeats)];
const client = await FlightSqlClient.connect({
  address: `127.0.0.1:${values['flight-port']}`,
  apiKey: 'admin-key-0123',
});
const sqlOf = (prefix) => panels.find(([name]) => name.startsWith(prefix))[1];
const statements = { p99: sqlOf('p99 latency per day'), control: sqlOf('mean latency per service per day') };
for (let i = 0; i < 3; i++) for (const sql of Object.values(statements)) await client.query(sql);
const figures = { p99: { cpu: [], ms: [] }, control: { cpu: [], ms: [] } };
let digest = '';
const loadBefore = loadAverage();
for (let i = 0; i < repeats; i++)
  for (const name of i % 2 ? ['p99', 'control'] : ['control', 'p99']) {
    const cpu0 = processTreeCpuMs(pid);
    const t0 = process.hrtime.bigint();
    const table = await client.query(statements[name]);
    figures[name].ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
    figures[name].cpu.push(processTreeCpuMs(pid) - cpu0);
    if (name === 'p99')
      digest = createHash('sha1')
        .update(JSON.stringify(table.toArray().map((r) => Object.values(r.toJSON()).map(String))))
        .digest('hex')
        .slice(0, 12);
  }
const mean = (list) => list.reduce((a, b) => a + b, 0) / list.length;
const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
const { p99, control } = figures;
console.log(
  `load ${loadBefore} -> ${loadAverage()} | p99 cpu ${mean(p99.cpu).toFixed(1)} ms, wall ${median(p99.ms).toFixed(1)} | control cpu ${mean(control.cpu).toFixed(1)}, wall ${median(control.ms).toFixed(1)} | p99 - control cpu ${(mean(p99.cpu) - mean(control.cpu)).toFixed(1)} ms | p99 answer ${digest}`,
);
client.close();
