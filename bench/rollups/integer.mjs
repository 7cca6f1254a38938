// Rollups benchmark for integer time (issue 17, item 13, with bucket_width): ROWS blocks of a chain (heights 0 to
// ROWS - 1, HOSTS miners) in a series table on `height`, the spec's blocks_per_10k rollup of it as written (no
// group) and one per miner, and as bench.mjs for timestamps:
//   1. the dashboard query (per miner per 10,000 blocks over the last 7/30 of the heights) on the rollup vs the
//      same aggregation on the raw table;
//   2. the never-stale read with the tail of one minute's blocks (written after the refresh) vs a purely
//      materialized read of the same buckets;
//   3. refresh cost after those blocks;
//   4. the cost of one late row (a block far below the watermark): buckets recomputed (goal 1);
//   5. the reads of 2, each right after a write of 100 blocks.
// The watermark of an integer rollup follows the largest height in the table, not the clock. Prints a table,
// then one JSON line; exits 1 when a rollup's answer differs from the raw one.
import * as timing from './timing.mjs';

const { rows, hosts: miners, repeats, client } = await timing.benchSetup();
const width = 10_000;
const alternately = (...statements) => timing.alternately(client, repeats, ...statements);
const scalar = timing.scalarOf(client);

console.error(`bench: loading ${rows} blocks, ${miners} miners (load average ${timing.loadAverage()})`);
// The spec's blocks table, named chain_blocks: blocks is one of Orrery's view sets.
await client.executeUpdate(
  `CREATE TABLE chain_blocks (height BIGINT NOT NULL, miner VARCHAR, gas_used BIGINT) WITH (time_column = 'height')`,
);
const load = await timing.timed(() =>
  client.executeUpdate(
    `INSERT INTO chain_blocks SELECT i, 'miner' || (i % ${miners}), hash(i) % 30000000 FROM range(${rows}) t(i)`,
  ),
);
let next = rows;
/** Writes `count` blocks after the highest. */
const append = (count) => {
  const from = next;
  next += count;
  return client.executeUpdate(
    `INSERT INTO chain_blocks SELECT i, 'miner' || (i % ${miners}), 1000 FROM range(${from}, ${from + count}) t(i)`,
  );
};
// The spec's statement as written, then one per miner (the dashboard's).
await client.query(`select snouttime.create_rollup('blocks_per_10k', 'chain_blocks', bucket_width => 10000,
  select_list => 'count(*) as n, sum(gas_used) as gas')`);
await client.query(`select create_rollup('miners_per_10k', 'chain_blocks', bucket_width => ${width},
  select_list => 'miner, count(*) as n, sum(gas_used) as gas, max(gas_used) as gas_max', group_by => 'miner')`);
const firstRefresh = await timing.timed(() => scalar(`select refresh_rollup('miners_per_10k')`));
await scalar(`select refresh_rollup('blocks_per_10k')`);

// 1. The dashboard: the last 7/30 of the heights, from a bucket boundary, the same bound on both sides.
const since = Math.floor((rows - (rows * 7) / 30) / width) * width;
const dashboardRollup = `SELECT bucket, miner, gas / n AS gas_avg, gas_max FROM miners_per_10k
  WHERE bucket >= ${since} ORDER BY bucket, miner`;
const dashboardRaw = `SELECT height // ${width} * ${width} AS bucket, miner, sum(gas_used) / count(*) AS gas_avg,
  max(gas_used) AS gas_max FROM (SELECT height, miner, gas_used FROM chain_blocks) raw WHERE height >= ${since}
  GROUP BY ALL ORDER BY bucket, miner`;
console.error(`bench: dashboard (load average ${timing.loadAverage()})`);
const [onRollup, onRaw, selectOne] = await alternately(dashboardRollup, dashboardRaw, 'SELECT 1');
const sameAnswer = (a, b) =>
  a.numRows === b.numRows &&
  Array.from({ length: a.numRows }, (_, i) => [a.get(i).toJSON(), b.get(i).toJSON()]).every(
    ([x, y]) =>
      String(x.bucket) === String(y.bucket) &&
      x.miner === y.miner &&
      Math.abs(Number(x.gas_avg) - Number(y.gas_avg)) < 1e-6 &&
      String(x.gas_max) === String(y.gas_max),
  );
const dashboardOk = sameAnswer(onRollup.table, onRaw.table);

// 2. One minute of blocks after a refresh (as many as bench.mjs's rows per minute): the never-stale read's raw
// tail, against the stored rows alone.
await scalar(`select refresh_rollup('miners_per_10k')`);
const perMinute = Math.max(1, Math.round(rows / (30 * 1440)));
const ingestMinute = await timing.timed(() => append(perMinute));
const neverStaleSql = `SELECT bucket, miner, n, gas FROM miners_per_10k WHERE bucket >= ${since}`;
const materializedSql = `SELECT bucket, miner, n, gas FROM miners_per_10k_materialized WHERE bucket >= ${since}`;
console.error(`bench: never-stale read (load average ${timing.loadAverage()})`);
const [neverStale, materialized] = await alternately(neverStaleSql, materializedSql);
const tailRows = neverStale.table.numRows - materialized.table.numRows;

// 3. The refresh after those blocks (nothing recomputed unless a bucket closed).
const refreshMinute = await timing.timed(() => scalar(`select refresh_rollup('miners_per_10k')`));
const tail = { neverStale, materialized, tailRows, perMinute, refreshMinute };

// 4. One late block, a third of the chain back: the buckets it leaves pending and the refresh.
const lateHeight = Math.floor(rows / 3);
await client.executeUpdate(`INSERT INTO chain_blocks VALUES (${lateHeight}, 'miner0', 77)`);
const pendingAfterLate = await scalar(`SELECT pending_buckets FROM list_rollups() WHERE name = 'miners_per_10k'`);
const minMaxBuckets = Math.floor(next / width) - Math.floor(lateHeight / width);
const late = await timing.timed(() => scalar(`select refresh_rollup('miners_per_10k')`));

// 5. Steady ingestion: the same two reads, each right after a write of 100 blocks into the tail.
console.error(`bench: reads after a write each (load average ${timing.loadAverage()})`);
const afterWrite = [neverStaleSql, materializedSql].map(() => []);
for (let i = 0; i < repeats; i++)
  for (const [k, sql] of [neverStaleSql, materializedSql].entries()) {
    await append(100);
    afterWrite[k].push((await timing.timed(() => client.query(sql))).seconds);
  }
const [neverStaleAfterWrite, materializedAfterWrite] = afterWrite.map(timing.median);
console.error(`bench: checking every bucket against the raw rows (load average ${timing.loadAverage()})`);
const mismatches = async (rollup, groups) =>
  scalar(
    `WITH raw AS (SELECT height // ${width} * ${width} AS bucket, ${groups} count(*) AS n, sum(gas_used) AS gas, audience
                  FROM chain_blocks GROUP BY ALL)
     SELECT count(*) FROM ${rollup} r FULL JOIN raw USING (bucket, ${groups} audience)
     WHERE r.n IS DISTINCT FROM raw.n OR r.gas IS DISTINCT FROM raw.gas`,
  );
const [minersOff, blocksOff] = [await mismatches('miners_per_10k', 'miner,'), await mismatches('blocks_per_10k', '')];
client.close();

const figures = {
  rows,
  miners,
  repeats,
  load_average: timing.loadAverage(),
  load_seconds: load.seconds,
  first_refresh_seconds: firstRefresh.seconds,
  dashboard_rollup_seconds: onRollup.seconds,
  dashboard_raw_seconds: onRaw.seconds,
  dashboard_speedup: onRaw.seconds / onRollup.seconds,
  select_one_seconds: selectOne.seconds,
  ...timing.tailFigures({ ...tail, neverStaleAfterWrite, materializedAfterWrite }),
  late_row_pending_buckets: pendingAfterLate,
  late_row_min_max_buckets: minMaxBuckets,
  late_row_ranges: late.result,
  late_row_refresh_seconds: late.seconds,
  answers_match: dashboardOk && minersOff === 0 && blocksOff === 0,
};
const f = (x) => (typeof x === 'number' && !Number.isInteger(x) ? x.toFixed(4) : String(x));
const ms = (x) => `${(x * 1000).toFixed(1)} ms`;
console.log(
  `integer time: ${rows} blocks (${miners} miners), buckets of ${width}, median of ${repeats} alternated runs; ` +
    `load ${f(load.seconds)} s; load average at the end ${figures.load_average}`,
);
console.log(
  `1. dashboard (per miner per ${width} blocks, last 7/30 of the heights): rollup ${ms(onRollup.seconds)} vs the ` +
    `same aggregation on raw ${ms(onRaw.seconds)}: ${f(figures.dashboard_speedup)}x (SELECT 1 ${ms(selectOne.seconds)})`,
);
console.log(
  `2. never-stale read (${tailRows} row(s) from ${perMinute} blocks of raw tail): ${ms(neverStale.seconds)} vs the ` +
    `materialized rows alone ${ms(materialized.seconds)}: ${f(figures.never_stale_ratio)}x (goal <= 1.2x)`,
);
console.log(
  `3. refresh after ${perMinute} blocks (inserted in ${ms(ingestMinute.seconds)}): ${ms(refreshMinute.seconds)}, ` +
    `${refreshMinute.result} range(s); rebuilding the rollup took ${f(firstRefresh.seconds)} s`,
);
console.log(
  `4. one late block (height ${lateHeight}): ${pendingAfterLate} bucket(s) pending, ${late.result} range(s) ` +
    `recomputed in ${ms(late.seconds)} (goal 1 bucket); a min-max invalidation would recompute ${minMaxBuckets} buckets`,
);
console.log(
  `5. the same reads, each right after a write of 100 blocks: never-stale ${ms(neverStaleAfterWrite)} vs ` +
    `materialized ${ms(materializedAfterWrite)}: ${f(figures.never_stale_after_write_ratio)}x`,
);
console.log(`answers match the raw aggregation (both rollups, every bucket): ${figures.answers_match}`);
console.log(JSON.stringify(figures));
process.exit(figures.answers_match ? 0 : 1);
