// Driver of bench/sketches/run.sh (see there): the cost of Orrery's sketch macros against DuckDB's
// own approximate aggregates on the same rows, in one in-process DuckDB with the macros Orrery
// defines on every engine; then merge and read costs, the stored size per sketch, and the error
// against the exact answers (exit status 1 when a bound does not hold).
import { statSync, rmSync, mkdtempSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';

// The tree whose macros are measured (bench/lib.sh's ORRERY_ROOT: this one, or ORRERY_REF's build).
const root = process.env.ORRERY_ROOT ?? join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const { nativeSketchParameters, sketchStatements } = await import(
  pathToFileURL(join(root, 'dist/src/views/index.js')).href
);
const { registerNativeSketches } = await import(pathToFileURL(join(root, 'dist/src/engine/native-export.js')).href);

const rows = Number(process.env.ROWS ?? 10_000_000);
const groupCounts = (process.env.SKETCH_GROUPS ?? '1,100,10000').split(',').map(Number);
const repeats = Number(process.env.REPEATS ?? 3);
const threads = process.env.THREADS ?? '2';
const log = (line) => process.stderr.write(`${line}\n`);

if (loadavg()[0] > cpus().length)
  log(`bench: warning: 1-minute load average ${loadavg()[0].toFixed(1)} on ${cpus().length} cores; figures are noisy`);

// Two sets of the same macros in one DuckDB: `orrery` over the native aggregates (the server's
// default, when the addon is built), `sqldefs` over their SQL definitions (ORRERY_NATIVE=off).
// Each connection's own catalog comes first on its search path, so `sql` runs the SQL ones.
const instance = await DuckDBInstance.create(':memory:', { threads });
const db = await instance.connect();
const sql = await instance.connect();
await db.run("ATTACH ':memory:' AS orrery");
await db.run("ATTACH ':memory:' AS sqldefs");
await db.run('USE orrery');
await sql.run('USE sqldefs');
// The states' budget (the server's is the engine's memory_limit) set out of reach: this measures their cost.
registerNativeSketches(db, nativeSketchParameters, Number.MAX_SAFE_INTEGER);
for (const statement of sketchStatements(true)) await db.run(statement);
for (const statement of sketchStatements(false).filter((s) => !s.includes('snouttime'))) await sql.run(statement);
const value = async (sql) => (await db.runAndReadAll(sql)).getRows()[0][0];

const uniform = (stream) => `((hash(i * 7 + ${stream}) >> 11)::DOUBLE + 0.5) / 9007199254740992`;
log(`bench: generating ${rows} rows (lognormal x, Zipf-like k, 24 hours)`);
await db.run(
  `CREATE TABLE data AS SELECT i, i % 24 AS hour,
     exp(3 + 1.5 * sqrt(-2 * ln(${uniform(1)})) * cos(2 * pi() * ${uniform(2)})) AS x,
     CAST(floor(power(${rows}, ${uniform(3)})) AS BIGINT) AS k
   FROM range(${rows}) t(i)`,
);

/**
 * Median wall times (ms) of statements, each [connection, sql], run in turn REPEATS times (A, B,
 * C, A, B, C, ...) so that load from elsewhere on the machine hits them alike.
 */
async function times(...statements) {
  const runs = statements.map(() => []);
  for (let r = 0; r < repeats; r++) {
    for (const [i, [connection, text]] of statements.entries()) {
      const start = performance.now();
      await connection.runAndReadAll(text);
      runs[i].push(performance.now() - start);
    }
  }
  return runs.map((t) => t.sort((a, b) => a - b)[Math.floor(t.length / 2)]);
}

// Each aggregate's result is consumed (summed over the groups) so that DuckDB cannot drop it.
const grouped = (groups, aggregate, reduce) =>
  `SELECT ${reduce} FROM (SELECT i % ${groups} AS g, ${aggregate} AS a FROM orrery.main.data GROUP BY 1)`;
const pairs = [
  ['percentile_sketch(x)', 'sum(a.n)', 'approx_quantile(x, 0.99)', 'sum(a)'],
  ['distinct_sketch(k)', 'sum(len(a.hll_registers))', 'approx_count_distinct(k)', 'sum(a)'],
];
const results = [];
const fixed = (ms) => ms.toFixed(0).padStart(7);
console.log(`rows ${rows}, DuckDB threads ${threads}, median of ${repeats}, runs alternated`);
console.log(
  'groups  sketch                native ms   SQL ms   DuckDB                         ms   native/DuckDB  SQL/native',
);
for (const groups of groupCounts) {
  for (const [sketch, sketchReduce, duck, duckReduce] of pairs) {
    const [duckMs, nativeMs, sqlMs] = await times(
      [db, grouped(groups, duck, duckReduce)],
      [db, grouped(groups, sketch, sketchReduce)],
      [sql, grouped(groups, sketch, sketchReduce)],
    );
    results.push({
      groups,
      sketch,
      native_ms: Math.round(nativeMs),
      sql_ms: Math.round(sqlMs),
      duckdb: duck,
      duckdb_ms: Math.round(duckMs),
      ratio: nativeMs / duckMs,
      sql_over_native: sqlMs / nativeMs,
    });
    console.log(
      `${String(groups).padStart(6)}  ${sketch.padEnd(20)} ${fixed(nativeMs)}  ${fixed(sqlMs)}   ${duck.padEnd(26)} ${fixed(duckMs)}   ${(nativeMs / duckMs).toFixed(2).padStart(9)}x  ${(sqlMs / nativeMs).toFixed(2).padStart(8)}x`,
    );
  }
}

// Merge and read: hourly sketches per group (24 x 100 groups), merged per group into days.
await db.run(
  `CREATE TABLE hourly AS SELECT hour, i % 100 AS g, percentile_sketch(x) AS p, distinct_sketch(k) AS d FROM data GROUP BY 1, 2`,
);
const mergeP = 'SELECT sum(percentile(m, 0.99)) FROM (SELECT g, merge(p) AS m FROM orrery.main.hourly GROUP BY 1)';
const mergeD = 'SELECT sum(distinct_count(m)) FROM (SELECT g, merge(d) AS m FROM orrery.main.hourly GROUP BY 1)';
const [mergePNative, mergePSql, mergeDNative, mergeDSql] = await times(
  [db, mergeP],
  [sql, mergeP],
  [db, mergeD],
  [sql, mergeD],
);
// The same entries merged into one sketch instead of 100: a union whose cost grows faster than its
// entries (a lambda copying a list per element, issue 17) costs about 100x more per entry here.
const mergeDAll = 'SELECT distinct_count(merge(d)) FROM orrery.main.hourly';
const [mergeDAllNative, mergeDAllSql] = await times([db, mergeDAll], [sql, mergeDAll]);
const [readP, readD] = await times(
  [db, 'SELECT sum(percentile(p, 0.99)) FROM hourly'],
  [db, 'SELECT sum(distinct_count(d)) FROM hourly'],
);
const hourlyRows = Number(await value('SELECT count(*) FROM hourly'));
console.log(
  `\nmerge: ${hourlyRows} hourly sketches into 100 days: percentile ${mergePNative.toFixed(0)} ms native, ${mergePSql.toFixed(0)} ms SQL (${(mergePSql / mergePNative).toFixed(1)}x), ` +
    `distinct ${mergeDNative.toFixed(0)} ms native, ${mergeDSql.toFixed(0)} ms SQL (${(mergeDSql / mergeDNative).toFixed(1)}x)`,
);
console.log(
  `merge: the same ${hourlyRows} distinct sketches into one: ${mergeDAllNative.toFixed(0)} ms native, ${mergeDAllSql.toFixed(0)} ms SQL ` +
    `(${(mergeDAllSql / mergeDSql).toFixed(2)}x the SQL merge into 100 days)`,
);
console.log(
  `read: percentile(p, 0.99) ${((readP * 1000) / hourlyRows).toFixed(1)} us per sketch, distinct_count(d) ${((readD * 1000) / hourlyRows).toFixed(1)} us per sketch`,
);

// Stored size: Parquet (zstd) files of the sketches alone, per sketch, and the in-memory entries.
const dir = mkdtempSync(join(tmpdir(), 'orrery-sketches-'));
const sizes = {};
const bucketCount = 'cardinality(s.log_buckets)';
const registerCount = 'len(s.hll_registers)';
for (const [name, sql, entriesOf] of [
  ['percentile, whole table', 'SELECT percentile_sketch(x) AS s FROM data', bucketCount],
  ['distinct, whole table', 'SELECT distinct_sketch(k) AS s FROM data', registerCount],
  ['percentile, hourly x 100', 'SELECT p AS s FROM hourly', bucketCount],
  ['distinct, hourly x 100', 'SELECT d AS s FROM hourly', registerCount],
]) {
  const file = join(dir, 'sketches.parquet');
  await db.run(`COPY (${sql}) TO '${file}' (FORMAT parquet, COMPRESSION zstd)`);
  const count = Number(await value(`SELECT count(*) FROM (${sql})`));
  const entries = Number(await value(`SELECT avg(${entriesOf}) FROM read_parquet('${file}')`));
  sizes[name] = { bytes: Math.round(statSync(file).size / count), entries: Math.round(entries) };
  console.log(
    `size: ${name.padEnd(26)} ${String(sizes[name].bytes).padStart(7)} bytes per sketch in Parquet (zstd), ${sizes[name].entries} entries`,
  );
  rmSync(file);
}
rmSync(dir, { recursive: true });

// Accuracy against the exact answers, whole table and merged days.
const quantiles = [0.01, 0.1, 0.5, 0.9, 0.99, 0.999];
const [estimates, exact] = (
  await db.runAndReadAll(
    `SELECT [percentile(s, q) FOR q IN ${JSON.stringify(quantiles)}], (SELECT quantile_disc(x, ${JSON.stringify(quantiles)}) FROM data)
       FROM (SELECT merge(p) AS s FROM hourly)`,
  )
).getRows()[0];
const worstQuantile = Math.max(
  ...estimates.items.map((e, i) => Math.abs(e - exact.items[i]) / Math.abs(exact.items[i])),
);
const distinctExact = Number(await value('SELECT count(DISTINCT k) FROM data'));
const distinctEstimate = Number(await value('SELECT distinct_count(merge(d)) FROM hourly'));
const duckDistinct = Number(await value('SELECT approx_count_distinct(k) FROM data'));
const distinctError = Math.abs(distinctEstimate - distinctExact) / distinctExact;
const duckError = Math.abs(duckDistinct - distinctExact) / distinctExact;
console.log(
  `\nerror: percentile ${(worstQuantile * 100).toFixed(3)} % (worst of q = ${quantiles.join(', ')}; bound 1 %), ` +
    `distinct_count ${(distinctError * 100).toFixed(3)} % of ${distinctExact} (bound 2 %; approx_count_distinct ${(duckError * 100).toFixed(2)} %)`,
);
console.log(
  JSON.stringify({
    bench: 'sketches',
    rows,
    threads: Number(threads),
    results,
    merge_ms: {
      percentile: Math.round(mergePNative),
      percentile_sql: Math.round(mergePSql),
      distinct: Math.round(mergeDNative),
      distinct_sql: Math.round(mergeDSql),
      distinct_into_one: Math.round(mergeDAllNative),
      distinct_into_one_sql: Math.round(mergeDAllSql),
      sketches: hourlyRows,
    },
    read_us_per_sketch: { percentile: (readP * 1000) / hourlyRows, distinct: (readD * 1000) / hourlyRows },
    sizes,
    error: { percentile: worstQuantile, distinct: distinctError, approx_count_distinct: duckError },
  }),
);
sql.closeSync();
db.closeSync();
instance.closeSync();
if (worstQuantile > 0.01 * (1 + 1e-9) || distinctError > 0.02) {
  log('bench: an error bound does not hold');
  process.exit(1);
}
