import { quoteIdentifier, type DuckDBEngine } from '../engine/index.js';
import { call, column, copy, key, type Node } from './tree.js';

// What a resources file's rollup entry stores (database-resources.md, rollup): each measure, a
// named aggregate expression over the table, becomes the mergeable states the rollup keeps (avg as
// sum and count, approximate distinct and quantiles as Orrery's sketches, arg_max and arg_min beside
// the extreme of the value they order by, the rest as written, FILTER included) and the expression
// its stable view computes from them. Built on DuckDB's parse trees, deparsed by DuckDB.

/** One stored column of the target: its name and the aggregate over the table's rows it holds. */
export interface StoredState {
  readonly column: string;
  readonly aggregate: Node;
}

/** What the target stores and how its stable view reads it. */
export interface EntryShape {
  /** The target's select_list over the table (dimensions, then states) and its group_by. */
  readonly selectList: string;
  readonly groupBy: string | null;
  readonly states: readonly StoredState[];
  /** The stable view's select list over the target's columns: bucket, dimensions, each measure by name, audience. */
  readonly viewSelectList: string;
}

const none: ReadonlySet<string> = new Set();

/**
 * How a stored state merges across buckets and audiences, and when a coarser rollup reads it, by the state's function
 * (query-rewrite's mergeOf adds `merge`, a state its rewrites make of stored sketches).
 */
export const mergedBy: Readonly<Record<string, string>> = {
  count_star: 'sum',
  count: 'sum',
  sum: 'sum',
  min: 'min',
  max: 'max',
  bool_and: 'bool_and',
  bool_or: 'bool_or',
  bit_and: 'bit_and',
  bit_or: 'bit_or',
  distinct_sketch: 'merge',
  percentile_sketch: 'merge',
};

/** arg_max and arg_min by DuckDB's names for them: the aggregate of the value each orders by. */
const argOrders: Record<string, 'max' | 'min'> = {
  arg_max: 'max',
  argmax: 'max',
  max_by: 'max',
  arg_min: 'min',
  argmin: 'min',
  min_by: 'min',
};

/**
 * The state an arg_max(x, y) (arg_min) is merged by across buckets, stored beside it, with the merge and the names
 * DuckDB gives the same aggregate: max(y) (min) over the rows it
 * chose among, those with x not NULL too (DuckDB's arg_max leaves them out), under its own filter. Over a finer
 * rollup's rows, arg_max(its stored x, that state) is then the arg_max over their raw rows (ties chosen
 * arbitrarily, as the spec allows). Null for any other aggregate, and for arg_max(x, y, n) (lists).
 */
export function argOrderState(
  aggregate: Node,
): { readonly merge: string; readonly names: readonly string[]; readonly state: Node } | null {
  const order = argOrders[String(aggregate.function_name).toLowerCase()];
  const children = aggregate.children as Node[];
  const ordered = ((aggregate.order_bys as Node | undefined)?.orders as unknown[] | undefined)?.length ?? 0;
  if (!order || children.length !== 2 || aggregate.distinct === true || ordered > 0) return null;
  const notNull: Node = { class: 'OPERATOR', type: 'OPERATOR_IS_NOT_NULL', alias: '', children: [copy(children[0])] };
  const filter = aggregate.filter as Node | null;
  // DuckDB's parser flattens nested ANDs: the state's filter is built as it reads back.
  const conditions =
    filter === null
      ? []
      : filter.class === 'CONJUNCTION' && filter.type === 'CONJUNCTION_AND'
        ? (filter.children as Node[]).map(copy)
        : [copy(filter)];
  return {
    merge: `arg_${order}`,
    names: Object.keys(argOrders).filter((name) => argOrders[name] === order),
    state: call(order, [copy(children[1])], {
      filter:
        conditions.length === 0
          ? notNull
          : { class: 'CONJUNCTION', type: 'CONJUNCTION_AND', alias: '', children: [...conditions, notNull] },
    }),
  };
}

/** An expression (a tree's first select item) of a SQL text. */
async function expressionOf(engine: DuckDBEngine, sql: string): Promise<Node> {
  const tree = await engine.parseSelect(`SELECT ${sql}`);
  return ((tree!.statements[0].node as Node).select_list as Node[])[0];
}

/** A select list of expressions, each with its alias, as DuckDB deparses it. */
async function selectListText(engine: DuckDBEngine, items: readonly Node[]): Promise<string> {
  const tree = (await engine.parseSelect('SELECT 1'))!;
  (tree.statements[0].node as Node).select_list = items;
  return (await engine.deparse(tree)).replace(/^SELECT\s+/i, '');
}

/** Replaces the nodes `replaced` maps (by identity) in a copy of a tree. */
function replacing(value: unknown, replaced: ReadonlyMap<Node, Node>): unknown {
  if (Array.isArray(value)) return value.map((v) => replacing(v, replaced));
  if (value === null || typeof value !== 'object') return value;
  const found = replaced.get(value as Node);
  if (found) return copy(found);
  return Object.fromEntries(Object.entries(value as Node).map(([k, v]) => [k, replacing(v, replaced)]));
}

/** The outermost aggregate calls of an expression. */
function aggregateCalls(value: unknown, aggregates: ReadonlySet<string>, out: Node[] = []): Node[] {
  if (Array.isArray(value)) {
    for (const v of value) aggregateCalls(v, aggregates, out);
    return out;
  }
  if (value === null || typeof value !== 'object') return out;
  const node = value as Node;
  if (node.class === 'FUNCTION' && aggregates.has(String(node.function_name).toLowerCase())) {
    out.push(node);
    return out;
  }
  for (const child of Object.values(node)) aggregateCalls(child, aggregates, out);
  return out;
}

/**
 * The shape of a rollup entry: its states and the view over them; a string saying why a measure
 * cannot be stored (the entry is then not installed).
 */
export async function entryShape(
  engine: DuckDBEngine,
  entry: { readonly dimensions: readonly string[]; readonly measures: readonly { name: string; expression: string }[] },
  aggregates: ReadonlySet<string>,
): Promise<EntryShape | string> {
  const states: StoredState[] = [];
  const measures: Node[] = [];
  const taken = new Set([...entry.dimensions, 'bucket', 'audience'].map((n) => n.toLowerCase()));
  const columnName = (wanted: string): string => {
    let name = wanted;
    for (let i = 2; taken.has(name.toLowerCase()); i++) name = `${wanted}_${i}`;
    taken.add(name.toLowerCase());
    return name;
  };
  for (const measure of entry.measures) taken.add(measure.name.toLowerCase());
  for (const measure of entry.measures) {
    const item = await expressionOf(engine, measure.expression);
    const calls = aggregateCalls(item, aggregates);
    const replaced = new Map<Node, Node>();
    for (const found of calls) {
      const fn = String(found.function_name).toLowerCase();
      const filter = (found.filter as Node | null) ?? null;
      const children = found.children as Node[];
      const state = (name: string, stateChildren: Node[]): Node => ({
        ...call(name, stateChildren, { filter: filter && copy(filter) }),
        distinct: found.distinct,
      });
      // A sketch leaves NULLs out, so its FILTER (the spec's If) is its value where the filter holds:
      // the SQL definitions of the sketches are macros, which take no FILTER.
      const sketchState = async (name: string, value: Node): Promise<Node> => {
        if (!filter) return state(name, [copy(value)]);
        const when = await expressionOf(engine, 'CASE WHEN true THEN NULL END');
        const [check] = when.case_checks as Node[];
        check.when_expr = copy(filter);
        check.then_expr = copy(value);
        return { ...call(name, [when]), distinct: found.distinct };
      };
      const plain = calls.length === 1 && found === item;
      if (fn === 'avg' || fn === 'mean') {
        const sum = columnName(`${measure.name}__sum`);
        const count = columnName(`${measure.name}__count`);
        states.push({ column: sum, aggregate: state('sum', copy(children)) });
        states.push({ column: count, aggregate: state('count', copy(children)) });
        replaced.set(
          found,
          await expressionOf(engine, `CAST(${quoteIdentifier(sum)} AS DOUBLE) / nullif(${quoteIdentifier(count)}, 0)`),
        );
      } else if (fn === 'approx_count_distinct') {
        const sketch = columnName(`${measure.name}__distinct_sketch`);
        states.push({ column: sketch, aggregate: await sketchState('distinct_sketch', children[0]) });
        replaced.set(found, call('distinct_count', [column(sketch)]));
      } else if (fn === 'approx_quantile') {
        // One quantile, or a list of them (the spec's quantiles): each read from the one sketch.
        const quantile = children[1];
        const constant = (q: Node | undefined): boolean => q?.class === 'CONSTANT' && q.value !== null;
        const list =
          quantile?.class === 'FUNCTION' &&
          String(quantile.function_name).toLowerCase() === 'list_value' &&
          (quantile.children as Node[]).length > 0 &&
          (quantile.children as Node[]).every(constant)
            ? (quantile.children as Node[])
            : null;
        if (children.length !== 2 || !(constant(quantile) || list))
          return `measure '${measure.name}': approx_quantile is stored as a sketch read at constant quantiles; give one constant quantile or a list of them ([0.5, 0.99])`;
        const sketch = columnName(`${measure.name}__percentile_sketch`);
        states.push({ column: sketch, aggregate: await sketchState('percentile_sketch', children[0]) });
        const at = (q: Node): Node => call('percentile', [column(sketch), copy(q)]);
        if (list) {
          // approx_quantile of no value is NULL, not a list of NULLs: so is the list of a sketch of none.
          const some = await expressionOf(engine, `CASE WHEN (${quoteIdentifier(sketch)}).n > 0 THEN NULL END`);
          (some.case_checks as Node[])[0].then_expr = call('list_value', list.map(at));
          replaced.set(found, some);
        } else replaced.set(found, at(quantile));
      } else {
        const stored = plain ? measure.name : columnName(`${measure.name}__${fn}`);
        states.push({ column: stored, aggregate: copy(found) });
        const order = argOrderState(found);
        if (order) states.push({ column: columnName(`${measure.name}__order`), aggregate: order.state });
        replaced.set(found, column(stored));
      }
    }
    measures.push({ ...(replacing(item, replaced) as Node), alias: measure.name });
  }
  const dimensions = entry.dimensions.map((d) => column(d));
  return {
    selectList: await selectListText(engine, [
      ...dimensions,
      ...states.map((s) => ({ ...copy(s.aggregate), alias: s.column })),
    ]),
    groupBy: dimensions.length === 0 ? null : entry.dimensions.map(quoteIdentifier).join(', '),
    states,
    viewSelectList: await selectListText(engine, [column('bucket'), ...dimensions, ...measures, column('audience')]),
  };
}

/**
 * The select_list of a rollup of `finer` storing `shape`'s states: each state merged from the
 * finer one's column storing the same aggregate; or which state it cannot read that way.
 */
export async function selectListFrom(
  engine: DuckDBEngine,
  shape: EntryShape,
  finer: EntryShape,
  dimensions: readonly string[],
): Promise<{ readonly selectList: string } | { readonly problem: string }> {
  const items: Node[] = dimensions.map((d) => column(d));
  const stateOf = (aggregate: Node): StoredState | undefined =>
    finer.states.find((s) => key(s.aggregate, none) === key(aggregate, none));
  for (const state of shape.states) {
    const source = stateOf(state.aggregate);
    const order = argOrderState(state.aggregate);
    const orderSource = order && stateOf(order.state);
    const problem = {
      problem: `its ${String(state.aggregate.function_name)} state ${state.column} does not merge from it`,
    };
    if (order) {
      if (!source || !orderSource) return problem;
      items.push({ ...call(order.merge, [column(source.column), column(orderSource.column)]), alias: state.column });
      continue;
    }
    const merge = mergedBy[String(state.aggregate.function_name).toLowerCase()];
    if (!source || !merge || state.aggregate.distinct === true) return problem;
    items.push({ ...call(merge, [column(source.column)]), alias: state.column });
  }
  return { selectList: await selectListText(engine, items) };
}
