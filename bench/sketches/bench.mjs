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
const { sketchStatements } = await import(pathToFileURL(join(root, 'dist/src/views/index.js')).href);

const rows = Number(process.env.ROWS ?? 10_000_000);
const groupCounts = (process.env.SKETCH_GROUPS ?? '1,100,10000').split(',').map(Number);
const repeats = Number(process.env.REPEATS ?? 3);
const threads = process.env.THREADS ?? '2';
const log = (line) => process.stderr.write(`${line}\n`);

if (loadavg()[0] > cpus().length)
  log(`bench: warning: 1-minute load average ${loadavg()[0].toFixed(1)} on ${cpus().length} cores; figures are noisy`);

const instance = await DuckDBInstance.create(':memory:', { threads });
const db = await instance.connect();
await db.run("ATTACH ':memory:' AS orrery");
await db.run('USE orrery');
for (const statement of sketchStatements) await db.run(statement);
const value = async (sql) => (await db.runAndReadAll(sql)).getRows()[0][0];

const uniform = (stream) => `((hash(i * 7 + ${stream}) >> 11)::DOUBLE + 0.5) / 9007199254740992`;
log(`bench: generating ${rows} rows (lognormal x, Zipf-like k, 24 hours)`);
await db.run(
  `CREATE TABLE data AS SELECT i, i % 24 AS hour,
     exp(3 + 1.5 * sqrt(-2 * ln(${uniform(1)})) * cos(2 * pi() * ${uniform(2)})) AS x,
     CAST(floor(power(${rows}, ${uniform(3)})) AS BIGINT) AS k
   FROM range(${rows}) t(i)`,
);

/** Median wall time (ms) of a statement, run REPEATS times. */
async function time(sql) {
  const times = [];
  for (let r = 0; r < repeats; r++) {
    const start = performance.now();
    await db.runAndReadAll(sql);
    times.push(performance.now() - start);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)];
}

// Each aggregate's result is consumed (summed over the groups) so that DuckDB cannot drop it.
const grouped = (groups, aggregate, reduce) =>
  `SELECT ${reduce} FROM (SELECT i % ${groups} AS g, ${aggregate} AS a FROM data GROUP BY 1)`;
const pairs = [
  ['percentile_sketch(x)', 'sum(a.n)', 'approx_quantile(x, 0.99)', 'sum(a)'],
  ['distinct_sketch(k)', 'sum(len(a.hll_registers))', 'approx_count_distinct(k)', 'sum(a)'],
];
const results = [];
console.log(`rows ${rows}, DuckDB threads ${threads}, median of ${repeats}`);
console.log('groups  sketch                      ms      DuckDB                         ms      ratio');
for (const groups of groupCounts) {
  for (const [sketch, sketchReduce, duck, duckReduce] of pairs) {
    // Interleaved, so load from elsewhere on the machine hits both alike.
    const duckMs = await time(grouped(groups, duck, duckReduce));
    const sketchMs = await time(grouped(groups, sketch, sketchReduce));
    const ratio = sketchMs / duckMs;
    results.push({
      groups,
      sketch,
      sketch_ms: Math.round(sketchMs),
      duckdb: duck,
      duckdb_ms: Math.round(duckMs),
      ratio,
    });
    console.log(
      `${String(groups).padStart(6)}  ${sketch.padEnd(24)} ${sketchMs.toFixed(0).padStart(7)}   ${duck.padEnd(26)} ${duckMs
        .toFixed(0)
        .padStart(7)}   ${ratio.toFixed(2).padStart(6)}x`,
    );
  }
}

// Merge and read: hourly sketches per group (24 x 100 groups), merged per group into days.
await db.run(
  `CREATE TABLE hourly AS SELECT hour, i % 100 AS g, percentile_sketch(x) AS p, distinct_sketch(k) AS d FROM data GROUP BY 1, 2`,
);
const mergeP = await time('SELECT sum(percentile(m, 0.99)) FROM (SELECT g, merge(p) AS m FROM hourly GROUP BY 1)');
const mergeD = await time('SELECT sum(distinct_count(m)) FROM (SELECT g, merge(d) AS m FROM hourly GROUP BY 1)');
const readP = await time('SELECT sum(percentile(p, 0.99)) FROM hourly');
const readD = await time('SELECT sum(distinct_count(d)) FROM hourly');
const hourlyRows = Number(await value('SELECT count(*) FROM hourly'));
console.log(
  `\nmerge: ${hourlyRows} hourly sketches into 100 days: percentile ${mergeP.toFixed(0)} ms, distinct ${mergeD.toFixed(0)} ms`,
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
    merge_ms: { percentile: Math.round(mergeP), distinct: Math.round(mergeD), sketches: hourlyRows },
    read_us_per_sketch: { percentile: (readP * 1000) / hourlyRows, distinct: (readD * 1000) / hourlyRows },
    sizes,
    error: { percentile: worstQuantile, distinct: distinctError, approx_count_distinct: duckError },
  }),
);
db.closeSync();
instance.closeSync();
if (worstQuantile > 0.01 * (1 + 1e-9) || distinctError > 0.02) {
  log('bench: an error bound does not hold');
  process.exit(1);
}
