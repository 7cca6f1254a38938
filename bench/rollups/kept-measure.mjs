// Issue 17, the budget of kept copies (ORRERY_ROLLUP_KEPT_MEMORY_LIMIT, src/rollups/kept-budget.ts): what charging a
// kept tail's new row costs, in DuckDB alone, three ways: the row's INSERT alone; the statement that measured it
// after the INSERT until the row answered its own bytes (kept-size.ts's keptSizeSql on the ring's row `__id = <id>`,
// run in the background); and the INSERT … RETURNING the server runs now (Rollups.keptRow: keptRowBytes, one statement
// per row). Each round puts the same rows in two rings, one the first way (then measured), one the RETURNING way, and
// checks that the bytes the RETURNING answered equal the measure of its row and of the other ring's row (every row).
// The server's shapes for bench/rollups' hourly rollup: a tail of 50 hosts (one group each) put in a ring of 32 rows at
// most, a row per write, the one before deleted (a new ring once 32 rows were put in it, as the server's). The INSERT
// aggregates an in-memory table here, not the tail's Parquet files as the server's does: a row's making is a larger
// share of a write's in the server than here. Alternated (the order of the two rings reversed every other round),
// medians.
//
//   npm run build && node bench/rollups/kept-measure.mjs [--rounds 400] [--hosts 50]
import assert from 'node:assert/strict';
import { parseArgs } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';
import { loadAverage, median } from '../catalog-probe.mjs';

const { keepTailRowSql, ringRows, tailRingSql } = await import('../../dist/src/rollups/tail-values.js');
const { keptColumnsSql, keptRowBytes, keptSizeSql } = await import('../../dist/src/rollups/kept-size.js');
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
let [made, id, put] = [0, 0, 0];
/** The two rings (measured after its INSERT; RETURNING), each with its columns. */
let rings = [];
const newRing = async (old) => {
  if (old) await connection.run(`DETACH DATABASE ${old.table.slice(0, old.table.indexOf('.'))}`);
  const name = `__orrery_tail_${++made}`;
  const table = `${name}.main.${name}`;
  const { attach, create } = tailRingSql(table, aggregate);
  await connection.run(attach);
  await connection.run(create);
  const columns = (await connection.runAndReadAll(keptColumnsSql(table)))
    .getRows()
    .map(([n, t]) => [String(n), String(t)]);
  return { table, columns };
};
const measure = async ({ table, columns }, row) =>
  (await connection.runAndReadAll(keptSizeSql(table, columns, `__id = ${row}`))).getRows()[0][1];
const timed = async (times, run) => {
  const started = process.hrtime.bigint();
  const result = await run();
  times.push(Number(process.hrtime.bigint() - started) / 1e6);
  return result;
};
const [insert, measured, returning] = [[], [], []];
let bytes = 0n;
for (let i = 0; i < rounds; i++) {
  if (put % ringRows === 0) rings = await Promise.all([0, 1].map((r) => newRing(rings[r])));
  id++;
  put++;
  const [apart, answering] = rings;
  // The row's INSERT and its measure, timed apart; the INSERT … RETURNING; the row before deleted in each, untimed.
  const before = async () => {
    await timed(insert, () => connection.run(keepTailRowSql(apart.table, id, aggregate)));
    bytes = await timed(measured, () => measure(apart, id));
  };
  const now = async () => {
    const [[answered]] = (
      await timed(returning, () =>
        connection.runAndReadAll(keepTailRowSql(answering.table, id, aggregate, keptRowBytes(answering.columns))),
      )
    ).getRows();
    assert.equal(answered, await measure(answering, id), `row ${id}: RETURNING against its measure`);
    return answered;
  };
  const retire = () =>
    id > 1
      ? Promise.all(rings.map(({ table }) => connection.run(`DELETE FROM ${table} WHERE __id = ${id - 1}`)))
      : null;
  await retire();
  let answered;
  if (i % 2 === 0) {
    await before();
    answered = await now();
  } else {
    answered = await now();
    await before();
  }
  assert.equal(answered, bytes, `row ${id}: RETURNING against the measure of the same rows in the other ring`);
}
const [a, b, c] = [median(insert), median(measured), median(returning)];
console.log(
  `load average ${loadAverage()}; ${hosts} hosts a tail (${bytes} bytes; RETURNING answered its measure at each of ${rounds} rows); medians`,
);
console.log(`kept tail's INSERT                 ${a.toFixed(3)} ms`);
console.log(`its measure (SELECT), after it     ${b.toFixed(3)} ms   measure / INSERT ${(b / a).toFixed(2)}x`);
console.log(`INSERT + measure (two statements)  ${(a + b).toFixed(3)} ms`);
console.log(
  `INSERT … RETURNING its bytes       ${c.toFixed(3)} ms   / INSERT ${(c / a).toFixed(2)}x, / INSERT + measure ${(c / (a + b)).toFixed(2)}x`,
);
