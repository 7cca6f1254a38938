// Why a statement reading the lake is bound again at each run (issue 10): DuckDB's binder marks a
// prepared statement "always rebind" when a scan's bind data does not support the statement cache
// (bind_basetableref.cpp and bind_table_function.cpp: `!bind_data->SupportStatementCache()`), and the
// multi-file scans (DuckLake's tables, read_parquet: MultiFileBindData) never do. So the statement a
// GetFlightInfo prepared and held is bound again when the DoGet runs it, also inside the transaction it
// was prepared in. Seen here through DuckLake's log of its metadata queries (a DuckDB-file catalog in a
// temporary folder; the binder's decision does not depend on the catalog's database): the run of a
// prepared statement makes the same queries as preparing and running the text at once (the bind's
// row-count query again, then the scan's file list); then the three are timed. Needs `npm run build`
// and the lake extensions installed.
//
// Then the paths a DoGet could take alone, were GetFlightInfo to answer from a cached description
// without preparing: every streaming run the C API offers (duckdb_prepare, then
// duckdb_execute_prepared_streaming or a pending prepared statement; @duckdb/node-api's
// connection.stream(text) is the same) binds twice, so it makes the 3 queries today's prepare at
// GetFlightInfo plus run at DoGet make; only duckdb_query (connection.run(text): a materialized result)
// binds once.
//
//   node bench/latency/lake-rebind.mjs [N=200]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { duckdbBuild, extensionCacheFolder, extensionFile } from '../../dist/src/engine/extensions.js';

const n = Number(process.argv[2] ?? 200);
const folder = mkdtempSync(join(tmpdir(), 'orrery-lake-rebind-'));
const db = await DuckDBInstance.create(':memory:', { threads: '1' });
try {
  const c = await db.connect();
  const log = await db.connect();
  await c.run(`LOAD '${extensionFile(extensionCacheFolder(await duckdbBuild()), 'ducklake')}'`);
  await c.run(
    `ATTACH 'ducklake:${folder}/meta.ducklake' AS lake (DATA_PATH '${folder}/data', DATA_INLINING_ROW_LIMIT 0)`,
  );
  await c.run('CREATE TABLE lake.t AS SELECT range AS i FROM range(1000)');
  const sql = 'SELECT count(*) FROM lake.t WHERE i > 5';
  const queries = async (step) => {
    await log.run('CALL truncate_duckdb_logs()');
    await step();
    const rows = (
      await log.runAndReadAll(
        `SELECT regexp_extract(message, '(SELECT|WITH)\\s+(\\S+( \\S+)?)', 2) FROM duckdb_logs() WHERE type = 'DuckLakeMetadata' ORDER BY timestamp`,
      )
    ).getRows();
    return `${rows.length} (${rows.map(([q]) => q).join('; ')})`;
  };
  await c.run('BEGIN');
  const prepared = await c.prepare(sql);
  await (await prepared.run()).getRows();
  await log.run(`CALL enable_logging(level => 'debug')`);
  console.log('DuckLake metadata queries, in one transaction, catalog already read:');
  console.log('  prepare alone:                ', await queries(async () => (await c.prepare(sql)).destroySync()));
  console.log('  run of the prepared statement:', await queries(async () => (await prepared.run()).getRows()));
  console.log('  the text prepared and run:    ', await queries(async () => (await c.run(sql)).getRows()));
  const fresh = async (read) => {
    const p = await c.prepare(sql);
    try {
      await read(p);
    } finally {
      p.destroySync();
    }
  };
  console.log('A DoGet alone, without a prepare at GetFlightInfo:');
  console.log('  prepare, then run:            ', await queries(() => fresh(async (p) => (await p.run()).getRows())));
  console.log(
    '  prepare, then stream:         ',
    await queries(() => fresh(async (p) => (await p.stream()).fetchChunk())),
  );
  console.log('  connection.stream(text):      ', await queries(async () => (await c.stream(sql)).fetchChunk()));
  console.log('  connection.run(text), no stream:', await queries(async () => (await c.run(sql)).getRows()));
  await log.run(`CALL disable_logging()`);
  const time = async (f) => {
    const start = performance.now();
    for (let i = 0; i < n; i++) await f();
    return ((performance.now() - start) / n).toFixed(3);
  };
  for (let round = 0; round < 2; round++) {
    const run = await time(async () => (await prepared.run()).getRows());
    const text = await time(async () => (await c.run(sql)).getRows());
    const prepare = await time(async () => (await c.prepare(sql)).destroySync());
    const streamed = await time(() => fresh(async (p) => (await p.stream()).fetchChunk()));
    console.log(
      `ms each (${n}): run of the prepared statement ${run}, text prepared and run ${text}, prepare alone ${prepare}, ` +
        `prepare then stream ${streamed}; prepare + run / prepare then stream ${((Number(prepare) + Number(run)) / Number(streamed)).toFixed(2)}`,
    );
  }
  await c.run('COMMIT');
} finally {
  db.closeSync();
  rmSync(folder, { recursive: true, force: true });
}
console.log(`1-minute load average: ${(await import('node:os')).loadavg()[0].toFixed(1)}`);
