// Issue 14 item 1 and database-resources.md (rollup): the spec's list of storable aggregates, entry by
// entry, as Orrery spells them over a view set: each is either stored (its states and the expression
// the stable view reads them with, as DuckDB deparses them) or not installed with its exact warning.
// Validation and the installer's shape agree on every entry.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DuckDBEngine } from '../../src/engine/index.js';
import {
  ExpressionAnalyzer,
  diagnosticLine,
  parseResourcesFile,
  tableResolver,
  validateResources,
  type ServerViewSet,
} from '../../src/resources/index.js';
import { entryShape } from '../../src/rollups/entry-shape.js';
import { builtinViewSets, sketchStatements } from '../../src/views/index.js';

const viewSets: ServerViewSet[] = builtinViewSets.map((v) => ({ name: v.name, columns: v.columns, loadError: null }));

/** The spec's aggregate (ClickHouse's name), Orrery's spelling over log_entries, and what becomes of it. */
const cases: ReadonlyArray<{
  readonly spec: string;
  readonly measure: string;
  /** The target's stored states and the stable view's expression for the measure `m`; or the warning. */
  readonly stored?: { readonly states: string; readonly view: string };
  readonly warning?: string;
}> = [
  { spec: 'count', measure: 'count(*)', stored: { states: 'count_star() AS m', view: 'm AS m' } },
  { spec: 'sum', measure: 'sum(level)', stored: { states: 'sum("level") AS m', view: 'm AS m' } },
  { spec: 'min', measure: 'min(level)', stored: { states: 'min("level") AS m', view: 'm AS m' } },
  { spec: 'max', measure: 'max(level)', stored: { states: 'max("level") AS m', view: 'm AS m' } },
  {
    spec: 'avg (stored as sum and count)',
    measure: 'avg(level)',
    stored: {
      states: 'sum("level") AS m__sum, count("level") AS m__count',
      view: '(CAST(m__sum AS DOUBLE) / "nullif"(m__count, 0)) AS m',
    },
  },
  {
    spec: 'argMax (beside the greatest level it chose among: its merge across buckets orders by it)',
    measure: 'arg_max(msg, level)',
    stored: {
      states: 'arg_max(msg, "level") AS m, max("level") FILTER (WHERE (msg IS NOT NULL)) AS m__order',
      view: 'm AS m',
    },
  },
  {
    spec: 'argMin (beside the least level it chose among)',
    measure: 'arg_min(msg, level)',
    stored: {
      states: 'arg_min(msg, "level") AS m, min("level") FILTER (WHERE (msg IS NOT NULL)) AS m__order',
      view: 'm AS m',
    },
  },
  {
    spec: 'argMaxIf (FILTER: the extreme under the same filter)',
    measure: "max_by(msg, level) FILTER (WHERE level <= 2 AND exe <> 'x')",
    stored: {
      states:
        'max_by(msg, "level") FILTER (WHERE (("level" <= 2) AND (exe != \'x\'))) AS m, max("level") FILTER (WHERE (("level" <= 2) AND (exe != \'x\') AND (msg IS NOT NULL))) AS m__order',
      view: 'm AS m',
    },
  },
  { spec: 'any', measure: 'any_value(exe)', stored: { states: 'any_value(exe) AS m', view: 'm AS m' } },
  {
    spec: 'uniq (a distinct-count sketch)',
    measure: 'approx_count_distinct(exe)',
    stored: { states: 'distinct_sketch(exe) AS m__distinct_sketch', view: 'distinct_count(m__distinct_sketch) AS m' },
  },
  {
    spec: 'approximate quantile (a percentile sketch)',
    measure: 'approx_quantile(level, 0.99)',
    stored: {
      states: 'percentile_sketch("level") AS m__percentile_sketch',
      view: 'percentile(m__percentile_sketch, 0.99) AS m',
    },
  },
  {
    spec: 'quantiles (one sketch, read at each quantile)',
    measure: 'approx_quantile(level, [0.5, 0.99])',
    stored: {
      states: 'percentile_sketch("level") AS m__percentile_sketch',
      view: 'CASE  WHEN (((m__percentile_sketch).n > 0)) THEN (list_value(percentile(m__percentile_sketch, 0.5), percentile(m__percentile_sketch, 0.99))) ELSE NULL END AS m',
    },
  },
  {
    spec: 'quantiles If (FILTER as the sketched value where it holds: a sketch leaves NULLs out)',
    measure: 'approx_quantile(level, [0.5]) FILTER (WHERE level <= 2)',
    stored: {
      states: 'percentile_sketch(CASE  WHEN (("level" <= 2)) THEN ("level") ELSE NULL END) AS m__percentile_sketch',
      view: 'CASE  WHEN (((m__percentile_sketch).n > 0)) THEN (list_value(percentile(m__percentile_sketch, 0.5))) ELSE NULL END AS m',
    },
  },
  {
    spec: 'If (FILTER)',
    measure: 'count(*) FILTER (WHERE level <= 2)',
    stored: { states: 'count_star() FILTER (WHERE ("level" <= 2)) AS m', view: 'm AS m' },
  },
  {
    spec: 'uniqIf (FILTER on a sketch)',
    measure: 'approx_count_distinct(exe) FILTER (WHERE level <= 2)',
    stored: {
      states: 'distinct_sketch(CASE  WHEN (("level" <= 2)) THEN (exe) ELSE NULL END) AS m__distinct_sketch',
      view: 'distinct_count(m__distinct_sketch) AS m',
    },
  },
  {
    spec: 'uniqExact',
    measure: 'count(DISTINCT exe)',
    warning: 'cannot be installed: count(DISTINCT …) is exact and cannot be stored; use approx_count_distinct',
  },
  {
    spec: 'exact quantile',
    measure: 'quantile_cont(level, 0.99)',
    warning:
      'cannot be installed: quantile_cont cannot be stored (exact quantiles and lists are not mergeable; use approx_quantile)',
  },
  {
    spec: 'exact quantile (median)',
    measure: 'median(level)',
    warning:
      'cannot be installed: median cannot be stored (exact quantiles and lists are not mergeable; use approx_quantile)',
  },
];

describe("the spec's storable aggregates, entry by entry (issue 14)", () => {
  let analyzer: ExpressionAnalyzer;
  let engine: DuckDBEngine;
  let aggregates: ReadonlySet<string>;
  before(async () => {
    analyzer = await ExpressionAnalyzer.open();
    engine = await DuckDBEngine.create({ threads: 1, startupSql: sketchStatements(false) });
    aggregates = new Set([
      ...(await engine.functions()).filter((f) => f.type === 'aggregate').map((f) => f.name.toLowerCase()),
      'percentile_sketch',
      'distinct_sketch',
      'merge',
    ]);
  });
  after(async () => {
    analyzer?.close();
    await engine?.close();
  });

  for (const c of cases) {
    it(`${c.spec}: ${c.measure}`, async () => {
      const resources = {
        r: { rollup: { table: 'log_entries', grain: '1h', dimensions: ['exe'], measures: { m: c.measure } } },
      };
      const file = parseResourcesFile('resources/logs.resources.json', JSON.stringify({ resources }));
      const { diagnostics } = await validateResources([file], tableResolver(viewSets, new Map()), analyzer);
      assert.deepEqual(
        diagnostics.map(diagnosticLine),
        c.warning ? [`resources/logs.resources.json: r: warning: ${c.warning}`] : [],
      );
      if (!c.stored) return;
      const shape = await entryShape(
        engine,
        { dimensions: ['exe'], measures: [{ name: 'm', expression: c.measure }] },
        aggregates,
      );
      if (typeof shape === 'string') assert.fail(shape);
      assert.equal(shape.selectList, `exe, ${c.stored.states}`);
      assert.equal(shape.viewSelectList, `bucket, exe, ${c.stored.view}, audience`);
    });
  }
});
