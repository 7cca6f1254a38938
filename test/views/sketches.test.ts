// The sketches' stated error bounds (issue 17 item 8), checked on a real DuckDB against exact
// answers over skewed data generated in DuckDB: lognormal and Pareto values with zeros and
// negative values for percentile sketches, Zipf-like keys for distinct sketches; for one sketch,
// per group, and for merges of many partial sketches (hourly sketches merged == the day's sketch).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DuckDBEngine } from '../../src/engine/index.js';
import {
  distinctPrecision,
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

const quantiles = [0, 0.0001, 0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 0.9999, 1];

describe('sketch error bounds (issue 17)', () => {
  let engine: DuckDBEngine;
  const values = async (sql: string): Promise<unknown[][]> => engine.values(sql);
  const one = async (sql: string): Promise<unknown> => (await values(sql))[0][0];

  before(async () => {
    engine = await DuckDBEngine.create({ startupSql: sketchStatements });
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
