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
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import pg from 'pg';

const { values } = parseArgs({
  options: {
    repeats: { type: 'string', default: '21' },
    rows: { type: 'string', default: '1000' },
    counted: { type: 'string', default: '10' },
    base: { type: 'string' },
  },
});
const root = process.env.ORRERY_ROOT ?? fileURLToPath(new URL('../..', import.meta.url));
const load = (tree, path) => import(pathToFileURL(join(tree, path)).href);
const { FlightSqlClient } = await load(root, 'dist/src/client/index.js');
const { EmbeddedPostgres } = await load(root, 'dist/src/metadata/index.js');
const { duckdbBuild, extensionCacheFolder } = await load(root, 'dist/src/engine/extensions.js');

const repeats = Number(values.repeats);
const counted = Number(values.counted);
const rows = Number(values.rows);
const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
const ms = (start) => Number(process.hrtime.bigint() - start) / 1e6;
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

const dir = mkdtempSync(join(tmpdir(), 'orrery-ducklake-cost-'));
const cleanups = [];
const cleanup = async () => {
  for (const close of cleanups.reverse()) await close().catch((e) => console.error(`bench: ${e.message}`));
  rmSync(dir, { recursive: true, force: true });
};
process.on('SIGINT', () => void cleanup().then(() => process.exit(130)));

/** `orrery serve` from `tree` in a process of its own, on the probe's Postgres and lake. */
async function startServer(tree, name, connectionString, lake) {
  const server = spawn(process.execPath, [join(tree, 'dist/src/orrery.cjs'), 'serve'], {
    env: {
      ...process.env,
      MICROMEGAS_SQL_CONNECTION_STRING: connectionString,
      MICROMEGAS_OBJECT_STORE_URI: pathToFileURL(lake).href,
      MICROMEGAS_API_KEYS: JSON.stringify([{ name: 'admin', key: 'admin-key-0123' }]),
      MICROMEGAS_ADMINS: JSON.stringify(['admin']),
      ORRERY_DATA_DIR: join(dir, name),
      ORRERY_FLIGHT_SQL_ADDR: '127.0.0.1:0',
      ORRERY_HTTP_ADDR: '127.0.0.1:0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  server.stdout.on('data', (d) => (log += d));
  server.stderr.on('data', (d) => (log += d));
  const exited = new Promise((done) => server.once('exit', done));
  cleanups.push(async () => {
    server.kill('SIGINT');
    await exited;
  });
  for (let i = 0; i < 1200; i++) {
    const port = /Flight SQL listening on 127\.0\.0\.1:(\d+)/.exec(log)?.[1];
    if (port) {
      const client = await FlightSqlClient.connect({ address: `127.0.0.1:${port}`, apiKey: 'admin-key-0123' });
      cleanups.push(async () => client.close());
      return client;
    }
    if (server.exitCode !== null) break;
    await sleep(100);
  }
  throw new Error(`${name} did not start:\n${log}`);
}

try {
  console.error(`bench: load average ${loadAverage()} at start; folder ${dir}`);
  // The embedded Postgres, restarted once with pg_stat_statements preloaded.
  let postgres = await EmbeddedPostgres.start({ dataDir: join(dir, 'pg') });
  const setup = new pg.Client({ connectionString: postgres.connectionString });
  await setup.connect();
  await setup.query(`ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'`);
  await setup.end();
  await postgres.close();
  postgres = await EmbeddedPostgres.start({ dataDir: join(dir, 'pg') });
  cleanups.push(() => postgres.close());
  const admin = new pg.Client({ connectionString: postgres.connectionString });
  await admin.connect();
  cleanups.push(() => admin.end());
  await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');

  const lake = join(dir, 'lake');
  const client = await startServer(root, 'orrery', postgres.connectionString, lake);
  const base = values.base ? await startServer(resolve(values.base), 'base', postgres.connectionString, lake) : null;
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

  const times = cases.map(() => []);
  for (let i = 0; i < repeats; i++) {
    for (const [k, c] of cases.entries()) {
      const start = process.hrtime.bigint();
      await c.run();
      times[k].push(ms(start));
    }
  }

  // Postgres statements per statement of each case (pg_stat_statements, reset before each case).
  const kindOf = (query) => {
    const text = query.trim();
    if (/^BEGIN/i.test(text)) return 'BEGIN';
    if (/^(COMMIT|ROLLBACK|DISCARD)|^SELECT \$1$/i.test(text)) return 'pool+COMMIT';
    if (/ducklake_/i.test(text) && /^COPY/i.test(text))
      return /ducklake_snapshot\b/i.test(text) ? 'DuckLake snapshot' : 'DuckLake catalog';
    return 'Orrery';
  };
  const perStatement = [];
  for (const c of cases) {
    await admin.query('SELECT pg_stat_statements_reset()');
    for (let i = 0; i < counted; i++) await c.run();
    const { rows: stats } = await admin.query(
      `SELECT query, calls::int, total_exec_time FROM pg_stat_statements WHERE query NOT ILIKE '%pg_stat_statements%'`,
    );
    const kinds = {};
    for (const row of stats) {
      const kind = (kinds[kindOf(row.query)] ??= { calls: 0, ms: 0 });
      kind.calls += row.calls / counted;
      kind.ms += row.total_exec_time / counted;
    }
    perStatement.push({ kinds, queries: stats.map((r) => ({ per: r.calls / counted, query: r.query })) });
  }

  const med = Object.fromEntries(cases.map((c, k) => [c.name, median(times[k])]));
  console.log(
    `load average ${loadAverage()}; medians of ${repeats} alternated runs; Postgres statements per statement (of ${counted})`,
  );
  console.log('case                    median ms   Postgres statements per statement (calls, exec ms)');
  for (const [k, c] of cases.entries()) {
    const kinds = Object.entries(perStatement[k].kinds)
      .sort()
      .map(([kind, v]) => `${kind} ${v.calls.toFixed(1)} (${v.ms.toFixed(2)})`)
      .join(', ');
    console.log(`${c.name.padEnd(22)} ${med[c.name].toFixed(2).padStart(10)}   ${kinds}`);
  }
  const ratio = (a, b) => (med[a] / med[b]).toFixed(2);
  console.log(
    `Orrery / in-process: empty ${ratio('Orrery empty', 'in-process empty')}x, small ${ratio('Orrery small', 'in-process small')}x; ` +
      `above SELECT 1: empty ${(med['Orrery empty'] - med['Orrery SELECT 1']).toFixed(2)} ms, small ${(med['Orrery small'] - med['Orrery SELECT 1']).toFixed(2)} ms`,
  );
  if (base)
    console.log(
      `base / this tree: SELECT 1 ${ratio('base SELECT 1', 'Orrery SELECT 1')}x, empty ${ratio('base empty', 'Orrery empty')}x, small ${ratio('base small', 'Orrery small')}x`,
    );
  if (process.env.VERBOSE)
    for (const [k, c] of cases.entries()) {
      console.log(`-- ${c.name}`);
      for (const q of perStatement[k].queries)
        console.log(`  ${q.per.toFixed(2)}x ${q.query.replace(/\s+/g, ' ').slice(0, 200)}`);
    }
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
  await cleanup();
}
