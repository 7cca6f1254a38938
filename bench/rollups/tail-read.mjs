// Issue 17, the never-stale goal (1.2x the materialized read): what reading a rollup's kept tail costs a
// never-stale read's run in DuckDB alone, this tree's shape (tail-values.ts tailRows, from dist/) against the
// one before it (s18's, 5caf989: the ring's row chosen by a scalar subquery of the connection's
// __orrery_tail_reads, checked by an aggregate counting the rows). The shapes are the server's for
// bench/rollups' hourly rollup: the stored rows (8,350 rows, 7 days of 50 hosts: one Parquet file read with
// read_parquet, so DuckDB binds the statement again at every run, as the server's), the kept tail (50 rows,
// a row of the ring), read with its prepared statement kept, after a fill naming another row each time.
// Alternated (each shape first every other round), medians; the materialized read's alone for scale.
//
//   npm run build && node bench/rollups/tail-read.mjs [--rounds 400]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';
import { loadAverage, median } from '../catalog-probe.mjs';

const { tailReadsSql, tailRows } = await import('../../dist/src/rollups/tail-values.js');
const { values } = parseArgs({ options: { rounds: { type: 'string', default: '400' } } });
const rounds = Number(values.rounds);
const dir = mkdtempSync(join(tmpdir(), 'orrery-tail-read-'));
try {
  const instance = await DuckDBInstance.create(':memory:', { threads: '2' });
  const connection = await instance.connect();
  const stored = join(dir, 'stored.parquet');
  await connection.run(
    `COPY (SELECT TIMESTAMP '2026-12-01 00:00:00' + to_hours(range // 50) AS bucket, 'host' || (range % 50) AS host,
       10::BIGINT AS n, 10::BIGINT AS cpu_n, 5.0::DOUBLE AS cpu_sum, 1.0::DOUBLE AS cpu_max, 'public' AS audience
       FROM range(8350)) TO '${stored}'`,
  );
  // The ring: a row per kept tail (its id, its 50 rows as a list), as tailRingSql and keepTailRowSql make it.
  const ring = '__orrery_tail_1.main.__orrery_tail_1';
  await connection.run(`ATTACH ':memory:' AS __orrery_tail_1`);
  await connection.run(
    `CREATE TABLE ${ring} AS SELECT r::BIGINT AS __id, list(__t) AS __rows FROM range(1, 9) AS rs(r),
       LATERAL (SELECT TIMESTAMP '2026-12-08 00:00:00' AS bucket, 'host' || h AS host, r::BIGINT AS n, r::BIGINT AS cpu_n,
         r::DOUBLE AS cpu_sum, 1.0::DOUBLE AS cpu_max, 'public' AS audience FROM range(50) AS hs(h)) AS __t GROUP BY r`,
  );
  const row = { table: ring, id: 1 };
  const before = `SELECT __row.* FROM (SELECT unnest(__rows) AS __row FROM (SELECT CASE WHEN count(*) = 1 THEN first(__rows)
    ELSE error('kept tail __orrery_tail_1 is gone') END AS __rows FROM ${ring}
    WHERE __id = (SELECT __orrery_tail_1 FROM __orrery_tail_reads)))`;
  const shapes = { this: tailRows(row, { kind: 'all' }, true), before };
  await connection.run(tailReadsSql(new Map([[ring, 1]])).setup);
  const view = (tail) =>
    `SELECT * FROM (SELECT * FROM read_parquet(['${stored}'])) WHERE bucket < TIMESTAMP '2026-12-08 00:00:00'
     UNION ALL ${tail}`;
  const read = (relation) =>
    `SELECT bucket, host, n, cpu_sum FROM (${relation}) WHERE bucket >= TIMESTAMP '2026-12-01 00:00:00'`;
  const cases = [
    { name: 'materialized', statement: await connection.prepare(read(`SELECT * FROM read_parquet(['${stored}'])`)) },
    ...Object.entries(shapes).map(([name, tail]) => ({ name, tail })),
  ];
  for (const c of cases.filter((c) => c.tail)) c.statement = await connection.prepare(read(view(c.tail)));
  const times = cases.map(() => []);
  let expected;
  for (let i = 0; i < rounds; i++) {
    const id = 1 + (i % 8);
    const order = i % 2 === 0 ? cases.keys() : [...cases.keys()].reverse();
    for (const k of order) {
      const c = cases[k];
      const started = process.hrtime.bigint();
      if (c.tail) await connection.run(tailReadsSql(new Map([[ring, id]])).fill);
      const rows = (await c.statement.runAndReadAll()).currentRowCount;
      times[k].push(Number(process.hrtime.bigint() - started) / 1e6);
      if (c.tail && (expected ??= rows) !== rows) throw new Error(`${c.name}: ${rows} rows, not ${expected}`);
    }
  }
  const ms = times.map((t) => median(t));
  console.log(`load average ${loadAverage()}; medians of ${rounds} alternated runs (fill + run of the kept statement)`);
  for (const [k, c] of cases.entries()) console.log(`${c.name.padEnd(14)} ${ms[k].toFixed(3)} ms`);
  console.log(
    `this / before ${(ms[1] / ms[2]).toFixed(2)}x; never-stale / materialized: this ${(ms[1] / ms[0]).toFixed(2)}x, before ${(ms[2] / ms[0]).toFixed(2)}x`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
