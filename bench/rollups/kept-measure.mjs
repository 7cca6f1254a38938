// Issue 17, the budget of kept copies (ORRERY_ROLLUP_KEPT_MEMORY_LIMIT, src/rollups/kept-budget.ts): what measuring a
// kept tail's new row costs (Rollups.keptRow: kept-size.ts's statement on the ring's row `__id = <id>`, one more
// statement after the row's INSERT) against the INSERT itself, in DuckDB alone, in the server's shapes for
// bench/rollups' hourly rollup: a tail of 50 hosts (one group each) put in a ring of 32 rows at most, a row per
// write, the one before deleted (a new ring once 32 rows were put in it, as the server's). The INSERT aggregates an
// in-memory table here, not the tail's Parquet files as the server's does: the measure's share of a write's making
// is smaller in the server than the ratio below. Alternated (the order reversed every other round), medians.
//
//   npm run build && node bench/rollups/kept-measure.mjs [--rounds 400] [--hosts 50]
import { parseArgs } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';
import { loadAverage, median } from '../catalog-probe.mjs';

const { keepTailRowSql, ringRows, tailRingSql } = await import('../../dist/src/rollups/tail-values.js');
const { keptColumnsSql, keptSizeSql } = await import('../../dist/src/rollups/kept-size.js');
const { values } = parseArgs({
  options: { rounds: { type: 'string', default: '400' }, hosts: { type: 'string', default: '50' } },
});
const [rounds, hosts] = [Number(values.rounds), Number(values.hosts)];
const instance = await DuckDBInstance.create(':memory:', { threads: '2' });
const connection = await instance.connect();
await connection.run(
  `CREATE TABLE rows AS SELECT TIMESTAMP '2026-12-08 00:00:00' + to_seconds(range) AS ts, 'host' || (range % ${hosts}) AS host,
     random() AS cpu, 'public' AS audience FROM range(${hosts * 20})`,
);
const aggregate = `SELECT TIMESTAMP '2026-12-08 00:00:00' AS bucket, host, count(*) AS n, count(cpu) AS cpu_n,
  sum(cpu) AS cpu_sum, max(cpu) AS cpu_max, audience FROM rows GROUP BY ALL`;
let [ring, rings, id, put] = ['', 0, 0, 0];
let columns = [];
const newRing = async () => {
  if (ring) await connection.run(`DETACH DATABASE ${ring.slice(0, ring.indexOf('.'))}`);
  const name = `__orrery_tail_${++rings}`;
  ring = `${name}.main.${name}`;
  const { attach, create } = tailRingSql(ring, aggregate);
  await connection.run(attach);
  await connection.run(create);
  columns = (await connection.runAndReadAll(keptColumnsSql(ring))).getRows().map(([n, t]) => [String(n), String(t)]);
  put = 0;
};
await newRing();
const [insert, measure] = [[], []];
let bytes = 0;
for (let i = 0; i < rounds; i++) {
  if (put >= ringRows) await newRing();
  id++;
  put++;
  // The row's INSERT and its measure, timed apart; alternately first and second of the round's untimed work.
  const timed = async () => {
    let started = process.hrtime.bigint();
    await connection.run(keepTailRowSql(ring, id, aggregate));
    insert.push(Number(process.hrtime.bigint() - started) / 1e6);
    started = process.hrtime.bigint();
    const [[, measured]] = (await connection.runAndReadAll(keptSizeSql(ring, columns, `__id = ${id}`))).getRows();
    measure.push(Number(process.hrtime.bigint() - started) / 1e6);
    bytes = Number(measured);
  };
  const retire = () => (id > 1 ? connection.run(`DELETE FROM ${ring} WHERE __id = ${id - 1}`) : Promise.resolve());
  if (i % 2 === 0) {
    await timed();
    await retire();
  } else {
    await retire();
    await timed();
  }
}
const [a, b] = [median(insert), median(measure)];
console.log(
  `load average ${loadAverage()}; ${hosts} hosts a tail (${bytes} bytes measured); medians of ${rounds} rows`,
);
console.log(`kept tail's INSERT     ${a.toFixed(3)} ms`);
console.log(`its measure (SELECT)   ${b.toFixed(3)} ms`);
console.log(`measure / INSERT       ${(b / a).toFixed(2)}x`);
