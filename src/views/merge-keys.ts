import type { DuckDBEngine } from '../engine/index.js';
import { integerTypes, type ColumnSpec } from './view-set.js';

// Whether a set's merge can be left out: read from DuckDB's parse trees of its extract and merge queries
// when a definition is loaded. The merge re-aggregates rows of the same key found in several partitions;
// when each partition holds a key once and no two partitions share one (which the partitions' event-time
// ranges tell, sessionRelation), its rows are the partitions' rows as they are.

type Node = Record<string, unknown>;

const exact = (type: string): boolean => integerTypes.test(type) || /^DECIMAL\(\d+,\d+\)$/.test(type);
/** Aggregates answering a lone row's value unchanged (sum only of exact numbers: the set's type is cast back). */
const loneRowIdentities = new Set(['sum', 'min', 'max']);
/** Functions in a select list that make several rows of one group. */
const rowMultipliers = new Set(['unnest', 'unlist']);

const lower = (name: string): string => name.toLowerCase();
const columnName = (node: Node): string | undefined => {
  const names = node.class === 'COLUMN_REF' ? (node.column_names as string[]) : undefined;
  return names?.length === 1 ? lower(names[0]) : undefined;
};
/** An expression's tree without its alias and source positions, for comparing expressions as written. */
const canonical = (node: Node): string =>
  JSON.stringify({ ...node, alias: '' }, (key, value: unknown) => (key === 'query_location' ? undefined : value));
/**
 * Known aggregates: a select item that is a call of one is not a key of GROUP BY ALL. (An item not known as
 * one counts as a key, which can only refuse a skip.)
 */
const aggregates = new Set([
  'count_star',
  'count',
  'sum',
  'min',
  'max',
  'avg',
  'any_value',
  'arbitrary',
  'first',
  'last',
  'list',
  'array_agg',
  'string_agg',
  'median',
  'mode',
  'quantile_cont',
  'quantile_disc',
  'approx_count_distinct',
  'approx_quantile',
  'bool_and',
  'bool_or',
  'bit_and',
  'bit_or',
]);
const isAggregate = (node: Node): boolean =>
  node.class === 'FUNCTION' && aggregates.has(lower(String(node.function_name))) && node.schema === '';

/**
 * What a SELECT groups by, when it has one grouping: its GROUP BY expressions, or for GROUP BY ALL its
 * select items that are not aggregate calls (as indexes into the select list); undefined otherwise.
 */
function grouping(node: Node): { expressions: Node[] } | { items: number[] } | undefined {
  if (node.type !== 'SELECT_NODE') return undefined;
  const groups = node.group_expressions as Node[];
  const sets = node.group_sets as number[][];
  if (node.aggregate_handling === 'FORCE_AGGREGATES' && groups.length === 0 && sets.length === 0) {
    const select = node.select_list as Node[];
    return { items: select.flatMap((item, i) => (isAggregate(item) ? [] : [i])) };
  }
  const one =
    node.aggregate_handling === 'STANDARD_HANDLING' &&
    groups.length > 0 &&
    sets.length === 1 &&
    sets[0].length === groups.length &&
    groups.every((_, i) => sets[0].includes(i));
  return one ? { expressions: groups } : undefined;
}
const calls = (node: unknown, names: Set<string>): boolean => {
  if (Array.isArray(node)) return node.some((child) => calls(child, names));
  if (node === null || typeof node !== 'object') return false;
  const fields = node as Node;
  if (fields.class === 'FUNCTION' && names.has(lower(String(fields.function_name)))) return true;
  return Object.values(fields).some((child) => calls(child, names));
};

/**
 * The merge query's keys when its rows over partitions that share no key are those partitions' rows (cast
 * to the set's types), and each partition holds a key once; undefined when the trees do not show it.
 * The merge: `SELECT ... FROM {source} GROUP BY <columns>` and nothing more, each column a key or the
 * sum (of an integer or decimal), min or max of itself. The extract: one grouping whose every expression
 * is one of its output columns named as a key, so no two of its rows share a key.
 */
export async function mergeKeysOf(
  engine: DuckDBEngine,
  columns: readonly ColumnSpec[],
  merge: { statements: Node[] },
  extract: { statements: Node[] },
  setup: readonly string[],
): Promise<string[] | undefined> {
  const keys = mergeGrouping(merge.statements[0].node as Node, columns);
  if (!keys) return undefined;
  const node = extract.statements[0].node as Node;
  const groups = grouping(node);
  const select = node.select_list as Node[];
  if (!groups || select.length !== columns.length || calls(select, rowMultipliers)) return undefined;
  if ('items' in groups)
    return groups.items.every((i) => keys.includes(lower(columns[i].name))) ? named(keys, columns) : undefined;
  const written = select.map(canonical);
  let fromColumns: Set<string> | undefined;
  for (const group of groups.expressions) {
    // A GROUP BY expression written as one of the select list's.
    const same = written.flatMap((text, i) => (text === canonical(group) ? [lower(columns[i].name)] : []));
    if (same.some((name) => keys.includes(name))) continue;
    // A name: the select list's column of that alias, unless the FROM has a column of that name (DuckDB
    // groups by the FROM's column then).
    const name = columnName(group);
    const aliased = name === undefined ? -1 : select.findIndex((item) => lower(String(item.alias)) === name);
    if (aliased < 0 || !keys.includes(lower(columns[aliased].name))) return undefined;
    fromColumns ??= await fromColumnsOf(engine, extract, setup);
    if (!fromColumns || fromColumns.has(name!)) return undefined;
  }
  return named(keys, columns);
}

const named = (keys: readonly string[], columns: readonly ColumnSpec[]): string[] =>
  keys.map((key) => columns.find((c) => lower(c.name) === key)!.name);

/** The merge's keys (lower case) when it is a plain grouping of its source, each other column a lone row's identity. */
function mergeGrouping(node: Node, columns: readonly ColumnSpec[]): string[] | undefined {
  const from = node.from_table as Node;
  const plain =
    node.type === 'SELECT_NODE' &&
    (node.modifiers as unknown[]).length === 0 &&
    ((node.cte_map as { map: unknown[] }).map ?? []).length === 0 &&
    node.where_clause === null &&
    node.having === null &&
    node.qualify === null &&
    node.sample === null &&
    from.type === 'BASE_TABLE' &&
    from.table_name === '__source' &&
    from.schema_name === '' &&
    from.catalog_name === '';
  const groups = plain ? grouping(node) : undefined;
  if (!groups) return undefined;
  const select = node.select_list as Node[];
  const keys = 'items' in groups ? groups.items.map((i) => columnName(select[i])) : groups.expressions.map(columnName);
  if (keys.some((key) => key === undefined)) return undefined;
  if (select.length !== columns.length) return undefined;
  const selected = new Set<string>();
  for (const [i, item] of select.entries()) {
    const name = lower(columns[i].name);
    if (item.alias !== '' && lower(String(item.alias)) !== name) return undefined;
    if (columnName(item) === name && keys.includes(name)) {
      selected.add(name);
      continue;
    }
    const args = item.children as Node[] | undefined;
    const identity =
      item.class === 'FUNCTION' &&
      loneRowIdentities.has(lower(String(item.function_name))) &&
      item.schema === '' &&
      item.catalog === '' &&
      item.filter === null &&
      item.distinct === false &&
      item.export_state === false &&
      (item.order_bys as { orders: unknown[] }).orders.length === 0 &&
      args?.length === 1 &&
      columnName(args[0]) === name &&
      (lower(String(item.function_name)) !== 'sum' || exact(columns[i].type));
    if (!identity) return undefined;
  }
  // Every key is a column of the merge's rows.
  return keys.every((key) => selected.has(key!)) ? (keys as string[]) : undefined;
}

/** The columns (lower case) the extract's FROM offers its GROUP BY: `SELECT *` of it, planned by DuckDB. */
async function fromColumnsOf(
  engine: DuckDBEngine,
  extract: { statements: Node[] },
  setup: readonly string[],
): Promise<Set<string> | undefined> {
  const star = (await engine.parseSelect('SELECT * FROM t'))!.statements[0].node as Node;
  const node = extract.statements[0].node as Node;
  const from: Node = {
    ...node,
    select_list: star.select_list,
    group_expressions: [],
    group_sets: [],
    having: null,
    qualify: null,
    modifiers: [],
  };
  try {
    const sql = await engine.deparse({ statements: [{ ...extract.statements[0], node: from }] });
    const { schema } = await engine.describe(sql, { setup: [...setup] });
    return new Set(schema.fields.map((field) => lower(field.name)));
  } catch {
    return undefined;
  }
}
