// What the fixed clock costs a statement's connection (src/engine/duckdb-engine.ts, setClock): DuckDB alone, one
// connection, each call timed in alternated rounds (medians): SET VARIABLE as text (parsed each time, as setClock
// runs it for a statement whose clock is fixed), the same through a prepared statement bound to the clock, RESET
// VARIABLE (run when a statement without a fixed clock takes a connection a fixed one left set: the extra call when
// the two alternate), and a prepared `SELECT 1` for scale.
//
//   node bench/latency/clock-variable.mjs [--repeats 2001]
import { parseArgs } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';
import { loadAverage, median } from '../catalog-probe.mjs';

const { values } = parseArgs({ options: { repeats: { type: 'string', default: '2001' } } });
const repeats = Number(values.repeats);
const instance = await DuckDBInstance.create(':memory:');
const c = await instance.connect();
const text = (i) => `2026-12-06 22:03:00.${String(i % 1000).padStart(3, '0')}`;
const setPrepared = await c.prepare('SET VARIABLE __orrery_clock = $1::TIMESTAMP_NS');
const select = await c.prepare('SELECT 1');
const ways = {
  'SET VARIABLE (text)': (i) => c.run(`SET VARIABLE __orrery_clock = TIMESTAMP_NS '${text(i)}'`),
  'SET VARIABLE (prepared)': (i) => {
    setPrepared.bindVarchar(1, text(i));
    return setPrepared.run();
  },
  'RESET VARIABLE': () => c.run('RESET VARIABLE __orrery_clock'),
  'prepared SELECT 1': () => select.run(),
};
const times = Object.fromEntries(Object.keys(ways).map((k) => [k, []]));
const loadBefore = loadAverage();
for (let i = 0; i < repeats + 200; i++)
  for (const [name, way] of Object.entries(ways)) {
    const start = process.hrtime.bigint();
    await way(i);
    if (i >= 200) times[name].push(Number(process.hrtime.bigint() - start) / 1e3);
  }
console.log(`load average ${loadBefore} before timing, ${loadAverage()} after; medians of ${repeats}, alternated`);
const scale = median(times['prepared SELECT 1']);
for (const [name, t] of Object.entries(times))
  console.log(
    `${name.padEnd(26)} ${median(t).toFixed(1).padStart(7)} µs  ${(median(t) / scale).toFixed(2)}x a prepared SELECT 1`,
  );
