// Issue 17, the never-stale goal (1.2x the materialized read) under steady ingestion, in DuckDB alone: what the
// DuckDB part of each read costs, without Orrery's server, Postgres or Flight SQL around it. The shapes are
// those the server builds for bench/rollups' hourly rollup (probe-data.mjs: host, count(*), count(cpu), sum(cpu),
// max(cpu)): the stored rows (8,350 rows, 7 days of 50 hosts: one Parquet file, read with read_parquet as the
// server reads them), the kept tail's aggregate (a table of an in-memory database of its own) and one file of
// 100 rows written before each read. Per write, alternated (each side first every other write), medians:
//
//   materialized   the stored rows' read, its prepared statement kept (a Parquet read binds again at every run)
//   main           what main does: the view's text names the files written since its kept aggregate (made again
//                  every 4 files): the view set up on the connection, the statement prepared, run
//   inline         the same text without a view (the rollup's SELECT inlined in the statement): prepared, run
//   parts          branch s16-stale-parts: the view's text stays the same; each new file's aggregate inserted
//                  into a parts table and the statement's parts listed in a temporary table (the fill), then
//                  the statement prepared and run
//
//   node bench/rollups/duckdb-alone.mjs [--writes 200]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';
import { loadAverage, median } from '../catalog-probe.mjs';

const { values } = parseArgs({ options: { writes: { type: 'string', default: '200' } } });
const writes = Number(values.writes);
const dir = mkdtempSync(join(tmpdir(), 'orrery-duckdb-alone-'));
const file = (name) => `'${join(dir, `${name}.parquet`)}'`;
try {
  const instance = await DuckDBInstance.create(':memory:', { threads: '2' });
  const admin = await instance.connect();
  await admin.run(
    `COPY (SELECT TIMESTAMP '2026-12-01 00:00:00' + to_hours(range // 50) AS bucket, 'host' || (range % 50) AS host,
       10::BIGINT AS n, 10::BIGINT AS cpu_n, 5.0::DOUBLE AS cpu_sum, 1.0::DOUBLE AS cpu_max, 'public' AS audience
       FROM range(8350)) TO ${file('stored')}`,
  );
  for (let w = 0; w < writes; w++)
    await admin.run(
      `COPY (SELECT TIMESTAMP '2026-12-08 00:00:00' + to_seconds(${w}) AS ts, 'host' || (range % 50) AS host,
         1.0::DOUBLE AS cpu, 'public' AS audience FROM range(100)) TO ${file(`w${w}`)}`,
    );
  const aggregate = (ws) =>
    `SELECT time_bucket(INTERVAL 1 HOUR, ts) AS bucket, host, count(*) AS n, count(cpu) AS cpu_n, sum(cpu) AS cpu_sum,
       max(cpu) AS cpu_max, audience FROM read_parquet([${ws.map((w) => file(`w${w}`)).join(', ')}])
     WHERE ts >= TIMESTAMP '2026-12-08 00:00:00' GROUP BY ALL`;
  const merged = (parts) =>
    `SELECT bucket, host, CAST(sum(n) AS BIGINT) AS n, CAST(sum(cpu_n) AS BIGINT) AS cpu_n, sum(cpu_sum) AS cpu_sum,
       max(cpu_max) AS cpu_max, audience FROM (${parts}) AS __parts GROUP BY bucket, host, audience`;
  const stored = `SELECT * FROM read_parquet([${file('stored')}]) WHERE bucket < TIMESTAMP '2026-12-08 00:00:00'`;
  const window = `WHERE bucket >= TIMESTAMP '2026-12-01 00:00:00'`;
  await admin.run(`ATTACH ':memory:' AS kept`);
  await admin.run(`CREATE TABLE kept.main.kept AS ${aggregate([0])}`);
  await admin.run(`CREATE TABLE kept.main.parts AS SELECT 0::BIGINT AS __part, * FROM kept.main.kept LIMIT 0`);
  const [main, inline, parts] = [await instance.connect(), await instance.connect(), await instance.connect()];
  const materialized = await (
    await instance.connect()
  ).prepare(`SELECT bucket, host, n, cpu_sum FROM (${stored}) ${window}`);
  await parts.run(`CREATE TEMP TABLE listed AS SELECT []::BIGINT[] AS parts`);
  await parts.run(
    `CREATE TEMP VIEW r AS ${stored} UNION ALL ${merged(`SELECT * FROM kept.main.kept UNION ALL SELECT * EXCLUDE (__part)
       FROM kept.main.parts WHERE __part IN (SELECT unnest(parts) FROM temp.main.listed)`)}`,
  );
  const read = `SELECT bucket, host, n, cpu_sum FROM r ${window}`;
  const times = {};
  const timed = async (name, work) => {
    const start = performance.now();
    await work();
    (times[name] ??= []).push(performance.now() - start);
  };
  const prepareAndRun = async (connection, sql) => {
    const prepared = await connection.prepare(sql);
    await prepared.runAndReadAll();
    prepared.destroySync();
  };
  const listed = [];
  const sides = {
    materialized: () => timed('materialized: run', () => materialized.runAndReadAll()),
    main: async (since) => {
      const view = `${stored} UNION ALL ${merged(`SELECT * FROM kept.main.kept UNION ALL SELECT * FROM (${aggregate(since)})`)}`;
      await timed('main: view set-up', () => main.run(`CREATE OR REPLACE TEMP VIEW r AS ${view}`));
      await timed('main: prepare + run', () => prepareAndRun(main, read));
    },
    inline: (since) =>
      timed('inline: prepare + run', () =>
        prepareAndRun(
          inline,
          `SELECT bucket, host, n, cpu_sum FROM (${stored} UNION ALL ${merged(`SELECT * FROM kept.main.kept UNION ALL SELECT * FROM (${aggregate(since)})`)}) ${window}`,
        ),
      ),
    parts: async (_since, w) => {
      if (listed.length >= 64) listed.length = 0; // a new kept aggregate every 64 files
      listed.push(w);
      await timed('parts: fill (part made, parts listed)', () =>
        parts.run(
          `INSERT INTO kept.main.parts SELECT ${w}::BIGINT AS __part, * FROM (${aggregate([w])});
           UPDATE temp.main.listed SET parts = [${listed.join(', ')}]::BIGINT[]`,
        ),
      );
      await timed('parts: prepare + run', () => prepareAndRun(parts, read));
    },
  };
  const names = Object.keys(sides);
  const load = loadAverage();
  for (let w = 1; w < writes; w++) {
    const since = Array.from(
      { length: w - Math.floor((w - 1) / 4) * 4 },
      (_, i) => Math.floor((w - 1) / 4) * 4 + 1 + i,
    );
    const order = w % 2 ? names : [...names].reverse();
    for (const name of order) await sides[name](since, w);
  }
  const total = (name) => {
    const parts = Object.keys(times).filter((k) => k.startsWith(`${name}:`));
    return median(times[parts[0]].map((_, i) => parts.reduce((sum, k) => sum + times[k][i], 0)));
  };
  console.log(
    `DuckDB alone, ${writes - 1} reads each after a write of 100 rows; load ${load} -> ${loadAverage()}; medians, ms`,
  );
  for (const [name, list] of Object.entries(times)) console.log(`  ${name.padEnd(40)} ${median(list).toFixed(2)}`);
  const base = total('materialized');
  for (const name of names)
    console.log(
      `  ${`${name}, whole`.padEnd(40)} ${total(name).toFixed(2)}  (${(total(name) / base).toFixed(2)}x materialized)`,
    );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
