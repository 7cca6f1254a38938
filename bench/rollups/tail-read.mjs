// Issue 17, the never-stale goal (1.2x the materialized read): what a never-stale read's run costs in DuckDB alone
// against the materialized read's, in the server's shapes for bench/rollups' hourly rollup, and where the
// difference goes. The stored rows (8,350 rows, 7 days of 50 hosts) are read from their kept in-memory table
// (Rollups.keptStored, as the server's view and `_materialized` name read them once their files were read:
// DuckDB keeps both statements' plans); the kept tail (50 rows) is a row of the rollup's ring (tail-values.ts
// tailRows, from dist/), named by the connection's __orrery_tail_reads, filled before each run. Each statement is
// prepared once and run again and again, as the server's kept statements are:
//   - materialized: the stored rows;
//   - never-stale: the stored rows UNION ALL the kept tail, its row told natively (the server's with the native addon:
//     tail-rows.cc's __orrery_tail_row filters the ring's scan);
//   - never-stale, fill: the same, its row chosen by a fill and a join (the server's without the addon);
//   - fill + materialized: the fill (an UPDATE of the temporary table) and the materialized read, to part the fill's
//     cost from the ring's read;
//   - never-stale, row by id: the ring's row named by its id in the text (no fill; the same LEFT JOIN, with a constant
//     row): what reading the tail costs when nothing chooses its row at run time (a text per row: each would be
//     prepared anew in the server);
//   - materialized, Parquet: the stored rows from their file (bound again at every run), the server's before 4402b47.
// --ring: the rows in the ring (under steady ingestion a row per write, each deleted 10 s after the next replaced it:
// ~200 at bench/latency/lake-phases.mjs --ingest's pace). Alternated (the order reversed every other round), medians.
//
//   npm run build && node bench/rollups/tail-read.mjs [--rounds 400] [--ring 200]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createRequire } from 'node:module';
import { DuckDBInstance } from '@duckdb/node-api';
import { loadAverage, median } from '../catalog-probe.mjs';

const { tailReadsSql, tailRows } = await import('../../dist/src/rollups/tail-values.js');
const { values } = parseArgs({
  options: { rounds: { type: 'string', default: '400' }, ring: { type: 'string', default: '200' } },
});
const [rounds, ringRows] = [Number(values.rounds), Number(values.ring)];
const dir = mkdtempSync(join(tmpdir(), 'orrery-tail-read-'));
try {
  const instance = await DuckDBInstance.create(':memory:', { threads: '2' });
  const connection = await instance.connect();
  const native = createRequire(import.meta.url)('../../dist/native/arrow_export.node');
  native.registerTailRowFunction(connection.connection);
  const stored = join(dir, 'stored.parquet');
  await connection.run(
    `COPY (SELECT TIMESTAMP '2026-12-01 00:00:00' + to_hours(range // 50) AS bucket, 'host' || (range % 50) AS host,
       10::BIGINT AS n, 10::BIGINT AS cpu_n, 5.0::DOUBLE AS cpu_sum, 1.0::DOUBLE AS cpu_max, 'public' AS audience
       FROM range(8350)) TO '${stored}'`,
  );
  // The stored rows kept, and the ring, each a table of an in-memory database of its own (tail-values.ts).
  const kept = '__orrery_tail_s2.main.__orrery_tail_s2';
  await connection.run(`ATTACH ':memory:' AS __orrery_tail_s2`);
  await connection.run(`CREATE TABLE ${kept} AS SELECT * FROM read_parquet(['${stored}'])`);
  const ring = '__orrery_tail_1.main.__orrery_tail_1';
  await connection.run(`ATTACH ':memory:' AS __orrery_tail_1`);
  await connection.run(
    `CREATE TABLE ${ring} AS SELECT r::BIGINT AS __id, list(__t) AS __rows FROM range(1, ${ringRows + 1}) AS rs(r),
       LATERAL (SELECT TIMESTAMP '2026-12-08 00:00:00' AS bucket, 'host' || h AS host, r::BIGINT AS n, r::BIGINT AS cpu_n,
         r::DOUBLE AS cpu_sum, 1.0::DOUBLE AS cpu_max, 'public' AS audience FROM range(50) AS hs(h)) AS __t GROUP BY r`,
  );
  await connection.run(tailReadsSql(new Map([[ring, 1]])).setup);
  const view = (rows, tail) => `SELECT * FROM ${rows} WHERE bucket < TIMESTAMP '2026-12-08 00:00:00' UNION ALL ${tail}`;
  const read = (relation) =>
    `SELECT bucket, host, n, cpu_sum FROM (${relation}) WHERE bucket >= TIMESTAMP '2026-12-01 00:00:00'`;
  const byId = Math.ceil(ringRows / 2);
  const cases = [
    { name: 'materialized', sql: read(`SELECT * FROM ${kept}`) },
    {
      name: 'never-stale',
      sql: read(view(kept, tailRows({ table: ring, id: 1 }, { kind: 'all' }, 'native'))),
      told: true,
    },
    {
      name: 'never-stale, fill',
      sql: read(view(kept, tailRows({ table: ring, id: 1 }, { kind: 'all' }, 'fill'))),
      fill: true,
    },
    { name: 'fill + materialized', sql: read(`SELECT * FROM ${kept}`), fill: true, tail: false },
    { name: 'never-stale, row by id', sql: read(view(kept, tailRows({ table: ring, id: byId }, { kind: 'all' }))) },
    { name: 'materialized, Parquet', sql: read(`SELECT * FROM read_parquet(['${stored}'])`) },
  ];
  for (const c of cases) c.statement = await connection.prepare(c.sql);
  const times = cases.map(() => []);
  for (let i = 0; i < rounds; i++) {
    // Each run reads another row of the ring, as each read after a write does.
    const id = 1 + (i % ringRows);
    const order = i % 2 === 0 ? [...cases.keys()] : [...cases.keys()].reverse();
    for (const k of order) {
      const c = cases[k];
      const started = process.hrtime.bigint();
      if (c.fill) await connection.run(tailReadsSql(new Map([[ring, id]])).fill);
      if (c.told) native.setTailReads(connection.connection, ['__orrery_tail_1'], [id]);
      const reader = await c.statement.runAndReadAll();
      times[k].push(Number(process.hrtime.bigint() - started) / 1e6);
      // Checked in 2 rounds of 20, untimed (the rows made JavaScript values cost more than the run).
      if (i % 20 >= 2) continue;
      const rows = reader.getRows();
      const tail = c.name.startsWith('never-stale') ? (c.name === 'never-stale, row by id' ? byId : id) : 0;
      const tailN = rows.filter((r) => String(r[0]).startsWith('2026-12-08')).reduce((n, r) => n + Number(r[2]), 0);
      if (rows.length !== (tail ? 8400 : 8350) || tailN !== 50 * tail)
        throw new Error(`${c.name}: ${rows.length} rows, the tail's n ${tailN} (row ${id})`);
    }
  }
  const ms = times.map((t) => median(t));
  console.log(
    `load average ${loadAverage()}; ${ringRows} rows in the ring; medians of ${rounds} alternated runs of the kept statements`,
  );
  for (const [k, c] of cases.entries()) console.log(`${c.name.padEnd(24)} ${ms[k].toFixed(3)} ms`);
  console.log(
    `never-stale / materialized ${(ms[1] / ms[0]).toFixed(2)}x (its row told natively: the ring's row read ${(ms[1] - ms[0]).toFixed(2)} ms); with a fill ${(ms[2] / ms[0]).toFixed(2)}x: the fill ${(ms[3] - ms[0]).toFixed(2)} ms, the ring's row chosen and read ${(ms[2] - ms[3]).toFixed(2)} ms (by its id in the text: ${(ms[4] - ms[0]).toFixed(2)} ms)`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
