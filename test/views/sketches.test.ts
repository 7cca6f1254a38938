// The sketches' stated error bounds (issue 17 item 8), checked on a real DuckDB against exact
// answers over skewed data generated in DuckDB: lognormal and Pareto values with zeros and
// negative values for percentile sketches, Zipf-like keys for distinct sketches; for one sketch,
// per group, and for merges of many partial sketches (hourly sketches merged == the day's sketch).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DuckDBEngine, nativeExportProblem } from '../../src/engine/index.js';
import {
  distinctPrecision,
  nativeSketchParameters,
  orreryFunctionNames,
  percentileRelativeError,
  sketchStatements,
  snouttimeCatalog,
} from '../../src/views/index.js';

/** Deterministic uniforms in (0, 1) from a row number and a stream number. */
const uniform = (i: string, stream: number): string =>
  `((hash(${i} * 7 + ${stream}) >> 11)::DOUBLE + 0.5) / 9007199254740992`;
/** A standard normal (Box-Muller). */
const normal = (i: string): string => `sqrt(-2 * ln(${uniform(i, 1)})) * cos(2 * pi() * ${uniform(i, 2)})`;

/** The native sketch aggregates, as the server uses them: unless ORRERY_NATIVE=off or the addon is not built. */
const native = process.env.ORRERY_NATIVE !== 'off' && nativeExportProblem() === '';

const quantiles = [0, 0.0001, 0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 0.9999, 1];

describe('sketch error bounds (issue 17)', () => {
  let engine: DuckDBEngine;
  const values = async (sql: string): Promise<unknown[][]> => engine.values(sql);
  const one = async (sql: string): Promise<unknown> => (await values(sql))[0][0];

  before(async () => {
    engine = await DuckDBEngine.create({
      nativeSketches: native ? nativeSketchParameters : undefined,
      startupSql: sketchStatements(native),
    });
    // 240,000 rows over 24 hours: lognormal latencies, Pareto sizes (tail index 1.1), and a mix of
    // signs with 5 % zeros and 2 % NULLs.
    await engine.execute(
      `CREATE TABLE skewed AS SELECT i % 24 AS hour, i % 50 AS host,
         exp(3 + 1.5 * ${normal('i')}) AS latency,
         1 / power(${uniform('i', 3)}, 1 / 1.1) AS size,
         CASE WHEN ${uniform('i', 4)} < 0.02 THEN NULL WHEN ${uniform('i', 4)} < 0.07 THEN 0
              ELSE sign(${uniform('i', 5)} - 0.3) * exp(4 * ${normal('i + 1')}) END AS mixed
       FROM range(240000) t(i)`,
    );
  });
  after(() => engine.close());

  /** The largest relative error of percentile() against quantile_disc over `quantiles`, for each group of a query. */
  async function worstError(column: string, groupBy: string, sketchOf: string): Promise<number> {
    const rows = await values(
      `SELECT [percentile(s, q) FOR q IN ${JSON.stringify(quantiles)}], exact
         FROM (SELECT ${groupBy} AS g, ${sketchOf} AS s, quantile_disc(${column}, ${JSON.stringify(quantiles)}) AS exact
                 FROM skewed GROUP BY 1)`,
    );
    assert.ok(rows.length > 0);
    let worst = 0;
    for (const [estimates, exact] of rows) {
      const got = (estimates as { items: number[] }).items;
      const want = (exact as { items: number[] }).items;
      got.forEach((estimate, i) => {
        const error = want[i] === 0 ? Math.abs(estimate) : Math.abs(estimate - want[i]) / Math.abs(want[i]);
        worst = Math.max(worst, error);
      });
    }
    return worst;
  }

  for (const column of ['latency', 'size', 'mixed']) {
    it(`percentile of ${column} is within 1 % of quantile_disc: one sketch, 50 groups, 24 hourly sketches merged`, async () => {
      const bound = percentileRelativeError * (1 + 1e-9);
      assert.ok((await worstError(column, '1', `percentile_sketch(${column})`)) <= bound);
      assert.ok((await worstError(column, 'host', `percentile_sketch(${column})`)) <= bound);
      // merge() over hourly sketches, each group's hours read from a subquery of sketches.
      const merged = await values(
        `SELECT [percentile(s, q) FOR q IN ${JSON.stringify(quantiles)}],
                (SELECT quantile_disc(${column}, ${JSON.stringify(quantiles)}) FROM skewed)
           FROM (SELECT merge(p) AS s FROM (SELECT hour, percentile_sketch(${column}) AS p FROM skewed GROUP BY 1))`,
      );
      const [[got, want]] = merged as [[{ items: number[] }, { items: number[] }]];
      got.items.forEach((estimate, i) => {
        const exact = want.items[i];
        assert.ok(Math.abs(estimate - exact) <= bound * Math.abs(exact), `q=${quantiles[i]}: ${estimate} vs ${exact}`);
      });
    });
  }

  it('merging hourly percentile sketches gives the sketch of the day, value for value; so does a merge of merges', async () => {
    for (const column of ['latency', 'size', 'mixed']) {
      const day = `(SELECT percentile_sketch(${column}) FROM skewed)`;
      assert.equal(
        await one(
          `SELECT merge(p) = ${day} FROM (SELECT hour, percentile_sketch(${column}) AS p FROM skewed GROUP BY 1)`,
        ),
        true,
      );
      assert.equal(
        await one(
          `SELECT merge(p) = ${day} FROM (SELECT hour // 6, merge(p) AS p FROM
             (SELECT hour, host, percentile_sketch(${column}) AS p FROM skewed GROUP BY 1, 2) GROUP BY 1)`,
        ),
        true,
      );
    }
  });

  /** Zipf-like keys: key k drawn with weight about 1/k over `keys` keys, `rows` draws. */
  const zipf = (rows: number, keys: number): string =>
    `SELECT i % 24 AS hour, CAST(floor(power(${keys}, ${uniform('i', 6)})) AS BIGINT) AS k FROM range(${rows}) t(i)`;

  for (const [rows, keys] of [
    [20000, 5000],
    [200000, 100000],
    [2000000, 2000000],
  ]) {
    it(`distinct_count is within 2 % of count(DISTINCT) on ${rows} Zipf-like draws of ${keys} keys, merged from 24 hours too`, async () => {
      const [[exact, single, merged, equal]] = await values(
        `WITH draws AS (${zipf(rows, keys)}),
              hours AS (SELECT hour, distinct_sketch(k) AS d FROM draws GROUP BY 1)
         SELECT (SELECT count(DISTINCT k) FROM draws), (SELECT distinct_count(distinct_sketch(k)) FROM draws),
                (SELECT distinct_count(merge(d)) FROM hours),
                (SELECT merge(d) FROM hours) = (SELECT distinct_sketch(k) FROM draws)`,
      );
      assert.equal(equal, true);
      for (const estimate of [single, merged]) {
        assert.ok(
          Math.abs(Number(estimate) - Number(exact)) <= 0.02 * Number(exact),
          `${String(estimate)} vs ${String(exact)}`,
        );
      }
    });
  }

  it('distinct_count: 2 % holds for at least 95 % of 200 sets and 4 % (five standard errors) for all', async () => {
    // 200 sets of 10,000 to 80,000 distinct keys each, apart from each other.
    const [[within2, within4, sets]] = await values(
      `SELECT count(*) FILTER (WHERE abs(estimate - n) <= 0.02 * n), count(*) FILTER (WHERE abs(estimate - n) <= 0.04 * n), count(*)
         FROM (SELECT s, n, distinct_count(distinct_sketch(s * 1000000 + i)) AS estimate
                 FROM (SELECT s, 10000 * (1 + s % 8) AS n FROM range(200) t(s)), range(80000) r(i)
                WHERE i < n GROUP BY s, n)`,
    );
    assert.ok(1.04 / Math.sqrt(2 ** distinctPrecision) < 0.0082);
    assert.equal(sets, 200n);
    assert.ok(Number(within2) >= 0.95 * 200, `${String(within2)} of 200 within 2 %`);
    assert.equal(within4, 200n);
  });

  it('every sketch function of the registry exists on the search path and under snouttime.', async () => {
    const rows = await values(
      `SELECT DISTINCT database_name, function_name FROM duckdb_functions() WHERE function_type = 'macro'`,
    );
    const defined = new Set(rows.map(([catalog, name]) => `${String(catalog)}.${String(name)}`));
    const names = [...orreryFunctionNames('macro')];
    assert.ok(names.length >= 5);
    for (const name of names) {
      assert.ok(defined.has(`memory.${name}`) || defined.has(`orrery.${name}`), name);
      assert.ok(defined.has(`${snouttimeCatalog}.${name}`), `${snouttimeCatalog}.${name}`);
    }
    for (const name of ['first', 'last']) assert.ok(defined.has(`${snouttimeCatalog}.${name}`), name);
  });
});

// The native aggregates (engine/native/sketch-aggregates.cc) return exactly what their SQL
// definitions return: the same queries on the same rows in an engine with each, sketch states
// compared value for value. Groups of 60 to 300,000 rows cover sparse and dense registers, two
// threads the combine of partial states, a window the combine of shared ones.
describe(
  'native sketch aggregates equal their SQL definitions (issue 17 item 5, issue 14)',
  {
    skip: nativeExportProblem() ? 'the native addon is not built' : false,
  },
  () => {
    let withNative: DuckDBEngine;
    let withSql: DuckDBEngine;
    const data = `CREATE TABLE draws AS SELECT i, i % 24 AS hour, i % 50 AS host,
      CASE WHEN ${uniform('i', 7)} < 0.02 THEN NULL ELSE CAST(floor(power(200000, ${uniform('i', 6)})) AS BIGINT) END AS k,
      CASE WHEN ${uniform('i', 8)} < 0.02 THEN NULL WHEN ${uniform('i', 8)} < 0.05 THEN 0
           ELSE sign(${uniform('i', 5)} - 0.3) * exp(3 + 1.5 * ${normal('i')}) END AS x
    FROM range(300000) t(i)`;

    before(async () => {
      withNative = await DuckDBEngine.create({
        threads: 2,
        nativeSketches: nativeSketchParameters,
        startupSql: sketchStatements(true),
      });
      withSql = await DuckDBEngine.create({ threads: 2, startupSql: sketchStatements(false) });
      for (const engine of [withNative, withSql]) await engine.execute(data);
    });
    after(async () => {
      await withNative.close();
      await withSql.close();
    });

    async function same(sql: string): Promise<void> {
      const [native, macros] = await Promise.all([withNative.values(sql), withSql.values(sql)]);
      assert.ok(native.length > 0);
      assert.deepStrictEqual(native, macros, sql);
    }

    it('each engine runs the definition it was given', async () => {
      const kinds = async (engine: DuckDBEngine): Promise<unknown[][]> =>
        engine.values(
          `SELECT function_name, function_type FROM duckdb_functions()
          WHERE function_name IN ('__orrery_dd_build', '__orrery_dd_union', '__orrery_hll_build', '__orrery_hll_union')
          ORDER BY 1`,
        );
      assert.deepStrictEqual(await kinds(withNative), [
        ['__orrery_dd_build', 'aggregate'],
        ['__orrery_dd_union', 'aggregate'],
        ['__orrery_hll_build', 'aggregate'],
        ['__orrery_hll_union', 'aggregate'],
      ]);
      assert.deepStrictEqual(await kinds(withSql), [
        ['__orrery_dd_build', 'macro'],
        ['__orrery_dd_union', 'macro'],
        ['__orrery_hll_build', 'macro'],
        ['__orrery_hll_union', 'macro'],
      ]);
    });

    for (const [sketch, main, other] of [
      ['distinct_sketch', 'k', 'x'],
      ['percentile_sketch', 'x', 'k'],
    ]) {
      it(`${sketch}: per group of 60, 6,000 and 300,000 rows, over no rows and over NULLs only`, async () => {
        await same(`SELECT i % 5000, ${sketch}(${main}) FROM draws GROUP BY 1 ORDER BY 1`);
        await same(`SELECT host, ${sketch}(${main}), ${sketch}(${other}) FROM draws GROUP BY 1 ORDER BY 1`);
        await same(`SELECT ${sketch}(${main}), ${sketch}(${other}) FROM draws`);
        await same(`SELECT ${sketch}(${main}) FROM draws WHERE false`);
        await same(`SELECT host, ${sketch}(${main}) FROM draws WHERE ${main} IS NULL GROUP BY 1 ORDER BY 1`);
      });
    }

    it('percentile_sketch of extreme values', async () => {
      // NaN (with +infinity, above every value in DuckDB's order), infinities, the smallest and
      // largest doubles, negative zero, and values next to bucket bounds (powers of gamma).
      await same(
        `SELECT percentile_sketch(v) FROM (SELECT unnest(['nan', 'inf', '-inf', '5e-324', '-5e-324', '1.7976931348623157e308',
           '-1.7976931348623157e308', '-0.0', '1', '-1']::DOUBLE[]) AS v
         UNION ALL SELECT power((1 + ${percentileRelativeError}) / (1 - ${percentileRelativeError}), i / 2) * (1 + (i % 3 - 1) * 1e-15)
           FROM range(-4000, 4000) t(i))`,
      );
    });

    it('the rank of hashes next to every power of two (where log2 of a double rounds up)', async () => {
      await same(
        `SELECT __orrery_hll_build((CAST(b * 3 + d + 1 AS UBIGINT) << 50) | CAST((CAST(1 AS BIGINT) << b) + d AS UBIGINT))
         FROM range(50) t(b), (VALUES (-1), (0), (1)) v(d) WHERE (CAST(1 AS BIGINT) << b) + d >= 0`,
      );
    });

    it('merge of distinct and percentile sketches: per group, of all, with NULL sketches, of none', async () => {
      const hourly = `(SELECT hour, host % 5 AS part, distinct_sketch(k) AS d, percentile_sketch(x) AS p FROM draws GROUP BY 1, 2
                     UNION ALL SELECT 0, 0, NULL, NULL)`;
      await same(`SELECT part, merge(d), merge(p) FROM ${hourly} GROUP BY 1 ORDER BY 1`);
      await same(`SELECT merge(d), merge(p) FROM ${hourly}`);
      await same(`SELECT merge(d), merge(p) FROM ${hourly} WHERE false`);
    });

    it('the native unions as window functions (shared partial states) equal merges of the same frames', async () => {
      // A macro cannot be a window function: the SQL side merges each frame's rows through a join.
      const hours = 'hours AS (SELECT hour, distinct_sketch(k) AS d, percentile_sketch(x) AS p FROM draws GROUP BY 1)';
      const windowed = await withNative.values(
        `WITH ${hours} SELECT hour, __orrery_hll_union(d.hll_registers) OVER w, __orrery_dd_union(p.log_buckets) OVER w
         FROM hours WINDOW w AS (ORDER BY hour ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) ORDER BY hour`,
      );
      const framed = await withSql.values(
        `WITH ${hours} SELECT a.hour, merge(b.d).hll_registers, merge(b.p).log_buckets
         FROM hours a JOIN hours b ON b.hour BETWEEN a.hour - 3 AND a.hour GROUP BY a.hour ORDER BY a.hour`,
      );
      assert.equal(windowed.length, 24);
      assert.deepStrictEqual(windowed, framed);
    });

    it('merge refuses, by name, a hand-made distinct sketch whose entries no register can hold', async () => {
      await assert.rejects(
        withNative.values(
          `SELECT merge({'format': 'hll(14)', 'hll_registers': [1048576]}::STRUCT(format VARCHAR, hll_registers INTEGER[]))`,
        ),
        /merge\(\) takes sketches made by distinct_sketch\(\): 1048576 is not a register entry/,
      );
    });
  },
);

// The native aggregates' states live on the addon's heap and are counted against the limit by it; the
// SQL macros' (ORRERY_NATIVE=off) are DuckDB's own aggregate states, in its buffers: both fail alike.
for (const path of [
  {
    name: 'native sketch states',
    native: true,
    skip: nativeExportProblem() ? 'the native addon is not built' : false,
    refused: [
      /native sketch states would take more than 30\.5 MiB, the engine's memory_limit/,
      /group by fewer groups, narrow the query, or raise the limit/,
    ],
  },
  {
    name: 'sketch states of the SQL macros (ORRERY_NATIVE=off)',
    native: false,
    skip: false,
    refused: [/^Out of Memory Error: .*\/30\.5 MiB used/],
  },
])
  describe(`${path.name} count against DuckDB's memory_limit (issue 17)`, { skip: path.skip }, () => {
    let engine: DuckDBEngine;
    before(async () => {
      engine = await DuckDBEngine.create({
        threads: 2,
        memoryLimit: '32MB',
        nativeSketches: path.native ? nativeSketchParameters : undefined,
        startupSql: sketchStatements(path.native),
      });
    });
    after(() => engine.close());

    // 2,500 distinct values per group: each group's registers go dense (16 KiB).
    const sketches = (groups: number): string =>
      `SELECT count(*), sum(distinct_count(d)) FROM (SELECT i % ${groups} AS g, distinct_sketch(i) AS d
         FROM range(${groups * 2500}) t(i) GROUP BY g)`;

    it('a GROUP BY whose states pass the limit fails with QUERY_OUT_OF_MEMORY, and what it held is given back', async () => {
      const refusal = async (): Promise<void> => {
        await assert.rejects(engine.values(sketches(4000)), (error: Error & { code?: string; status?: string }) => {
          assert.equal(error.code, 'QUERY_OUT_OF_MEMORY');
          assert.equal(error.status, 'RESOURCE_EXHAUSTED');
          for (const pattern of path.refused) assert.match(error.message, pattern);
          return true;
        });
      };
      await refusal();
      // The failed query's states were destroyed and uncounted: a query that fits runs, again and again.
      for (let i = 0; i < 3; i++) {
        const [[groups, total]] = await engine.values(sketches(200));
        assert.equal(groups, 200n);
        assert.ok(Math.abs(Number(total) - 500_000) / 500_000 < 0.02);
      }
      await refusal();
      // percentile_sketch and merge are counted too: a union of many groups' sketches within the limit.
      const [[merged]] = await engine.values(
        `SELECT distinct_count(merge(d)) FROM (SELECT i % 200 AS g, distinct_sketch(i) AS d FROM range(500000) t(i) GROUP BY g)`,
      );
      assert.ok(Math.abs(Number(merged) - 500_000) / 500_000 < 0.02);
    });
  });
