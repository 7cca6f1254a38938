import { clockProblem, queryShape, type DuckDBEngine, type Varying } from '../engine/index.js';
import { rollupErrors } from './errors.js';

// A rollup's select_list and group_by are SQL fragments placed into
// `SELECT <bucket> AS bucket, <select_list>, audience FROM <source> GROUP BY 1, <group_by>, audience`.
// They are read with DuckDB's own parser (json_serialize_sql), checked on its parse tree, and the
// statement Orrery runs is DuckDB's deparse of that tree with the bucket and audience added: no
// fragment is ever pasted into SQL text.

type Node = Record<string, unknown>;

/** The name a rollup's statement reads its source under (a CTE Orrery defines around it). */
export const sourceAlias = '__rollup_source';

/** The aggregate statement of a rollup, checked, with the columns it produces. */
export interface RollupQuery {
  /** `SELECT <bucket> AS bucket, <select_list>, audience FROM __rollup_source GROUP BY ...`, as DuckDB deparses it. */
  readonly sql: string;
  /** Output columns: bucket, the select list's names, audience. */
  readonly columns: readonly string[];
}

/**
 * Aggregates whose value over a bucket is the merge of their values over its parts: arg_max and arg_min too,
 * over the parts' args and the extremes they chose them by (entry-shape.ts, argOrderState).
 */
const mergeable = new Set([
  ...['sum', 'min', 'max', 'merge', 'first', 'last', 'bool_and', 'bool_or', 'bit_and', 'bit_or'],
  ...['arg_max', 'argmax', 'max_by', 'arg_min', 'argmin', 'min_by'],
]);

/** The hint table of the spec: what to keep in the source instead of an aggregate that does not merge. */
function mergeHint(name: string, distinct: boolean): string {
  if (distinct)
    return 'keep snouttime.distinct_sketch(x) as d in the source, then snouttime.merge(d) here, read with snouttime.distinct_count(d)';
  if (name === 'avg' || name === 'mean')
    return 'keep sum(x) as total, count(*) as n in the source, then sum(total), sum(n) here, and read total / n';
  if (/^(percentile_cont|percentile_disc|mode|median|quantile\w*|approx_quantile|approx_percentile\w*)$/.test(name))
    return 'keep snouttime.percentile_sketch(x) as p in the source, then snouttime.merge(p) here, read with snouttime.percentile(p, 0.99)';
  if (/^(stddev\w*|var\w*)$/.test(name))
    return 'keep sum(x), sum(x * x), count(*) in the source, then the sums of those here, and compute from them';
  if (name === 'count' || name === 'count_star') return 'keep count(*) as n in the source, then sum(n) here';
  return 'what merges: sum of sums, sum of counts, min of minimums, max of maximums, merge of sketches, first / last';
}

const stripped = (node: unknown): unknown => {
  if (Array.isArray(node)) return node.map(stripped);
  if (node === null || typeof node !== 'object') return node;
  return Object.fromEntries(
    Object.entries(node as Node)
      .filter(([key]) => key !== 'query_location' && key !== 'alias')
      .map(([key, value]) => [key, stripped(value)]),
  );
};
const sameExpression = (a: Node, b: Node): boolean => JSON.stringify(stripped(a)) === JSON.stringify(stripped(b));

function walk(node: unknown, visit: (node: Node) => void): void {
  if (Array.isArray(node)) {
    for (const item of node) walk(item, visit);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  visit(node as Node);
  for (const value of Object.values(node as Node)) walk(value, visit);
}

/** The functions a fragment calls that DuckDB (or Orrery's sketch functions) count as aggregates. */
function aggregateCalls(expression: Node, aggregates: ReadonlySet<string>): Node[] {
  const calls: Node[] = [];
  walk(expression, (node) => {
    if (node.class === 'FUNCTION' && aggregates.has(String(node.function_name).toLowerCase())) calls.push(node);
  });
  return calls;
}

/** Text of an expression as DuckDB deparses it, for messages. */
async function expressionText(engine: DuckDBEngine, expression: Node): Promise<string> {
  const tree = (await engine.parseSelect('SELECT 1'))!;
  (tree.statements[0].node as Node).select_list = [{ ...expression, alias: '' }];
  return (await engine.deparse(tree)).replace(/^SELECT\s+/i, '');
}

/**
 * Parses and checks select_list and group_by; builds the rollup's aggregate statement with
 * `bucketSql` (Orrery's own expression over the source's time column) as its first column and
 * group, and the audience as its last. `ofRollup`: the source is a rollup, so every aggregate
 * must merge. `varying`: the functions a rollup may not read (engine's withMacros, the engine's macros judged).
 */
export async function rollupQuery(
  engine: DuckDBEngine,
  options: {
    readonly selectList: string;
    readonly groupBy: string | null;
    readonly bucketSql: string;
    readonly aggregates: ReadonlySet<string>;
    readonly ofRollup: boolean;
    readonly varying: ReadonlyMap<string, Varying>;
  },
): Promise<RollupQuery> {
  const { selectList, groupBy } = options;
  if (selectList.trim() === '')
    throw rollupErrors.error(
      'ROLLUP_SELECT_LIST_INVALID',
      'create_rollup: select_list is required (the group columns and the aggregates, each named with as)',
    );
  const text = `SELECT ${selectList}\nFROM ${sourceAlias}${groupBy !== null && groupBy.trim() !== '' ? `\nGROUP BY ${groupBy}` : ''}`;
  let tree: { statements: Node[] } | null;
  try {
    tree = await engine.parseSelect(text);
  } catch (error) {
    throw rollupErrors.error(
      'ROLLUP_SELECT_LIST_INVALID',
      `create_rollup: select_list or group_by does not parse: ${(error as Error).message}`,
    );
  }
  const node = tree?.statements.length === 1 ? (tree.statements[0].node as Node) : undefined;
  const from = node?.from_table as Node | undefined;
  const plain =
    node?.type === 'SELECT_NODE' &&
    from?.type === 'BASE_TABLE' &&
    from.table_name === sourceAlias &&
    from.alias === '' &&
    from.schema_name === '' &&
    from.catalog_name === '' &&
    from.at_clause === null &&
    node.where_clause === null &&
    node.having === null &&
    node.qualify === null &&
    node.sample === null &&
    (node.modifiers as unknown[]).length === 0 &&
    ((node.cte_map as Node).map as unknown[]).length === 0 &&
    node.aggregate_handling === 'STANDARD_HANDLING' &&
    (node.group_sets as unknown[]).length <= 1;
  if (!tree || !node || !plain) {
    throw rollupErrors.error(
      'ROLLUP_SELECT_LIST_INVALID',
      'create_rollup: select_list must be a list of expressions and group_by a list of columns (no FROM, WHERE, HAVING, ORDER BY, LIMIT or set operation)',
    );
  }
  const items = node.select_list as Node[];
  const groups = node.group_expressions as Node[];
  walk([items, groups], (n) => {
    if (n.class === 'SUBQUERY' || n.class === 'WINDOW' || n.class === 'STAR')
      throw rollupErrors.error(
        'ROLLUP_SELECT_LIST_INVALID',
        `create_rollup: select_list and group_by may not hold ${n.class === 'STAR' ? '*' : n.class === 'WINDOW' ? 'window functions' : 'subqueries'}`,
      );
  });
  for (const group of groups) {
    if (group.class === 'CONSTANT')
      throw rollupErrors.error(
        'ROLLUP_SELECT_LIST_INVALID',
        'create_rollup: group_by names columns or expressions, not positions',
      );
    if (!items.some((item) => sameExpression(item, group))) {
      throw rollupErrors.error(
        'ROLLUP_SELECT_LIST_INVALID',
        `create_rollup: group column ${await expressionText(engine, group)} is not in select_list; add it there (select_list => '${await expressionText(engine, group)}, ...') so the rollup's rows can be told apart`,
      );
    }
  }
  // Every group column is in select_list by now. Stored buckets keep what it read at their refresh, while the
  // never-stale tail and raw queries read the current time: the rollup would no longer equal the raw aggregation.
  const clock = clockProblem(queryShape(tree), 'rollup buckets', options.varying);
  if (clock !== undefined)
    throw rollupErrors.error('ROLLUP_SELECT_LIST_INVALID', `create_rollup: select_list ${clock}`);
  const names: string[] = [];
  let anyAggregate = false;
  for (const item of items) {
    const group = groups.some((g) => sameExpression(item, g));
    const calls = aggregateCalls(item, options.aggregates);
    const alias = typeof item.alias === 'string' ? item.alias : '';
    const shown = await expressionText(engine, item);
    if (!group && calls.length === 0)
      throw rollupErrors.error(
        'ROLLUP_SELECT_LIST_INVALID',
        `create_rollup: ${shown} in select_list is neither a group column (in group_by) nor an aggregate`,
      );
    if (calls.length > 0) {
      anyAggregate = true;
      if (alias === '')
        throw rollupErrors.error(
          'ROLLUP_SELECT_LIST_INVALID',
          `create_rollup: name every aggregate with as: ${shown} as <name>`,
        );
    }
    if (options.ofRollup) {
      for (const call of calls) {
        const name = String(call.function_name).toLowerCase();
        const distinct = call.distinct === true;
        // DuckDB parses percentile_cont(q) WITHIN GROUP (ORDER BY x) as quantile_cont with that order: named as written.
        const ordered = ((call.order_bys as { orders?: unknown[] } | undefined)?.orders?.length ?? 0) > 0;
        const written = ordered && name.startsWith('quantile_') ? name.replace('quantile_', 'percentile_') : name;
        if (!mergeable.has(name) || distinct)
          throw rollupErrors.error(
            'ROLLUP_NOT_MERGEABLE',
            `create_rollup: ${distinct ? `${written}(distinct ...)` : written} does not merge, so it cannot be used in a rollup of a rollup: ${mergeHint(name, distinct)}`,
          );
      }
    }
    const columns = item.column_names as string[] | undefined;
    const name = alias !== '' ? alias : item.class === 'COLUMN_REF' ? columns![columns!.length - 1] : '';
    if (name === '')
      throw rollupErrors.error('ROLLUP_SELECT_LIST_INVALID', `create_rollup: name the group column ${shown} with as`);
    const lower = name.toLowerCase();
    if (lower === 'bucket' || lower === 'audience')
      throw rollupErrors.error(
        'ROLLUP_SELECT_LIST_INVALID',
        `create_rollup: '${name}' is a column Orrery adds to every rollup; name yours otherwise`,
      );
    if (names.some((n) => n.toLowerCase() === lower))
      throw rollupErrors.error(
        'ROLLUP_SELECT_LIST_INVALID',
        `create_rollup: two columns of select_list are named '${name}'`,
      );
    names.push(name);
  }
  if (!anyAggregate)
    throw rollupErrors.error(
      'ROLLUP_SELECT_LIST_INVALID',
      'create_rollup: select_list does not aggregate: give at least one aggregate, such as count(*) as n',
    );

  const bucketTree = (await engine.parseSelect(`SELECT ${options.bucketSql} AS bucket, audience FROM ${sourceAlias}`))!;
  const [bucket, audience] = (bucketTree.statements[0].node as Node).select_list as Node[];
  node.select_list = [bucket, ...items, audience];
  node.group_expressions = [{ ...bucket, alias: '' }, ...groups, { ...audience, alias: '' }];
  node.group_sets = [Array.from({ length: groups.length + 2 }, (_, i) => i)];
  return { sql: await engine.deparse(tree), columns: ['bucket', ...names, 'audience'] };
}
