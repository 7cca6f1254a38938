// Where a DuckLake read's fixed cost goes (issues 10, 14, 17): `SELECT count(*)` of an empty and of a
// small series table, timed alternately (A, B, A, B; medians of --repeats)
//   (a) in DuckDB in-process (@duckdb/node-api, the server's DuckDB and extensions), DuckLake attached to
//       the same Postgres catalog: the statement as one query, then as Orrery runs it (prepared at
//       GetFlightInfo, run at DoGet), each step in a transaction of its own and both in one;
//   (b) through Orrery over Flight SQL (GetFlightInfo + DoGet), with `SELECT 1` as the statement floor;
//       with --base <tree with dist/ built>, also through a second server from that tree on the same
//       Postgres and lake (before / after in one run);
// then, per statement, the Postgres statements each ran (pg_stat_statements on the embedded server,
// preloaded for this run: calls and execution time by kind). Prints a table and one JSON line.
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import { alternately, catalogProbe, loadAverage, median, printCases } from '../catalog-probe.mjs';

const { values } = parseArgs({
  options: {
    repeats: { type: 'string', default: '21' },
    rows: { type: 'string', default: '1000' },
    counted: { type: 'string', default: '10' },
    base: { type: 'string' },
  },
});
const root = process.env.ORRERY_ROOT ?? fileURLToPath(new URL('../..', import.meta.url));
const { duckdbBuild, extensionCacheFolder } = await import(
  pathToFileURL(join(root, 'dist/src/engine/extensions.js')).href
);

const repeats = Number(values.repeats);
const counted = Number(values.counted);
const rows = Number(values.rows);
const probe = await catalogProbe(root, 'orrery-ducklake-cost-');
const { postgres } = probe;
const cleanups = [];

try {
  console.error(`bench: load average ${loadAverage()} at start; folder ${probe.dir}`);
  const client = await probe.startServer(root, 'orrery');
  const base = values.base ? await probe.startServer(resolve(values.base), 'base') : null;
  await client.executeUpdate(`CREATE TABLE dl_empty (ts TIMESTAMP, host VARCHAR, v DOUBLE) WITH (time_column = 'ts')`);
  await client.executeUpdate(`CREATE TABLE dl_small (ts TIMESTAMP, host VARCHAR, v DOUBLE) WITH (time_column = 'ts')`);
  await client.executeUpdate(
    `INSERT INTO dl_small SELECT TIMESTAMP '2026-01-01' + to_seconds(i), 'h' || (i % 5), i FROM range(${rows}) t(i)`,
  );

  // DuckDB in-process: the server's extension files, DuckLake attached to the same catalog.
  const extensions = extensionCacheFolder(await duckdbBuild());
  const instance = await DuckDBInstance.create(':memory:');
  const duck = await instance.connect();
  cleanups.push(async () => (duck.closeSync(), instance.closeSync()));
  for (const name of ['ducklake', 'postgres_scanner']) await duck.run(`LOAD '${extensions}/${name}.duckdb_extension'`);
  await duck.run(
    `ATTACH 'ducklake:postgres:${postgres.connectionString}' AS lake (METADATA_SCHEMA 'ducklake', READ_ONLY)`,
  );
  const small = 'SELECT count(*) FROM lake.main.dl_small';
  const preparedRun = async (sql) => {
    const prepared = await duck.prepare(sql);
    await prepared.runAndReadAll();
    prepared.destroySync();
  };
  const cases = [
    { name: 'in-process empty', run: () => duck.runAndReadAll('SELECT count(*) FROM lake.main.dl_empty') },
    { name: 'in-process small', run: () => duck.runAndReadAll(small) },
    { name: 'prepare, run small', run: () => preparedRun(small) },
    {
      name: 'both in 1 txn small',
      run: async () => {
        await duck.run('BEGIN TRANSACTION');
        await preparedRun(small);
        await duck.run('COMMIT');
      },
    },
  ];
  for (const [label, flight] of [['Orrery', client], ...(base ? [['base', base]] : [])]) {
    cases.push(
      { name: `${label} SELECT 1`, run: () => flight.query('SELECT 1') },
      { name: `${label} empty`, run: () => flight.query('SELECT count(*) FROM dl_empty') },
      { name: `${label} small`, run: () => flight.query('SELECT count(*) FROM dl_small') },
    );
  }
  for (const flight of [client, base].filter(Boolean)) {
    const n = Number(Object.values((await flight.query('SELECT count(*) AS n FROM dl_small')).get(0).toJSON())[0]);
    if (n !== rows) throw new Error(`a server counts ${n} rows, expected ${rows}`);
  }
  for (const c of cases) for (let i = 0; i < 3; i++) await c.run(); // warm

  const times = await alternately(cases, repeats);
  const perStatement = await probe.postgresPerStatement(cases, counted);

  const med = Object.fromEntries(cases.map((c, k) => [c.name, median(times[k])]));
  console.log(
    `load average ${loadAverage()}; medians of ${repeats} alternated runs; Postgres statements per statement (of ${counted})`,
  );
  printCases(cases, med, perStatement);
  const ratio = (a, b) => (med[a] / med[b]).toFixed(2);
  console.log(
    `Orrery / in-process: empty ${ratio('Orrery empty', 'in-process empty')}x, small ${ratio('Orrery small', 'in-process small')}x; ` +
      `above SELECT 1: empty ${(med['Orrery empty'] - med['Orrery SELECT 1']).toFixed(2)} ms, small ${(med['Orrery small'] - med['Orrery SELECT 1']).toFixed(2)} ms`,
  );
  if (base)
    console.log(
      `base / this tree: SELECT 1 ${ratio('base SELECT 1', 'Orrery SELECT 1')}x, empty ${ratio('base empty', 'Orrery empty')}x, small ${ratio('base small', 'Orrery small')}x`,
    );
  console.log(
    JSON.stringify({
      bench: 'ducklake-cost',
      load_average: loadAverage(),
      base: values.base ?? null,
      medians_ms: Object.fromEntries(Object.entries(med).map(([k, v]) => [k, Number(v.toFixed(3))])),
      postgres_per_statement: Object.fromEntries(cases.map((c, k) => [c.name, perStatement[k].kinds])),
    }),
  );
} finally {
  for (const close of cleanups.reverse()) await close().catch((e) => console.error(`bench: ${e.message}`));
  await probe.close();
}
