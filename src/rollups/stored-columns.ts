import type { DuckDBEngine } from '../engine/index.js';
import type { RollupDefinition } from './rollup-sql.js';
import { argOrderState } from './entry-shape.js';
import { copy, isExpression, key, normal, type Node } from './tree.js';

// What a rollup stores, in terms of its base table's rows: each dimension as the expression
// over base columns it groups by, each measure as the aggregate over base rows it holds. For a
// rollup of a rollup the expressions are composed through its source (the daily `sum(n)` of an
// hourly `count(*) AS n` stores `count(*)`), so a query over the base table is matched against
// every rollup of the chain alike.

export interface StoredMeasure {
  readonly name: string;
  /** The aggregate over base rows, in normal form (no alias, lower case, no qualifier). */
  readonly aggregate: Node;
}

export interface StoredColumns {
  /** Dimension name by the key of its expression over base columns. */
  readonly dimensions: ReadonlyMap<string, string>;
  readonly measures: readonly StoredMeasure[];
  /** The first measure's name by the key of its aggregate (with no qualifier). */
  readonly measureKeys: ReadonlyMap<string, string>;
  /** Every column of the rollup's view, lower case: bucket, dimensions, measures, audience. */
  readonly names: ReadonlySet<string>;
}

const none: ReadonlySet<string> = new Set();

/** How a stored aggregate merges when rolled up again, by the aggregate it rolls up (sum of counts is a count). */
const composes: Record<string, readonly string[]> = {
  sum: ['count_star', 'count', 'sum'],
  min: ['min'],
  max: ['max'],
  bool_and: ['bool_and'],
  bool_or: ['bool_or'],
  bit_and: ['bit_and'],
  bit_or: ['bit_or'],
  merge: ['percentile_sketch', 'distinct_sketch', 'merge'],
};

interface Raw {
  readonly dimensions: Map<string, Node>;
  readonly measures: Map<string, Node>;
}

/** Replaces column references by the expressions they stand for; null when one stands for nothing known. */
function substituted(node: unknown, columns: ReadonlyMap<string, Node>): unknown {
  if (Array.isArray(node)) {
    const out = node.map((n) => substituted(n, columns));
    return out.includes(null) ? null : out;
  }
  if (node === null || typeof node !== 'object') return node;
  if (isExpression(node) && node.class === 'COLUMN_REF') {
    const names = node.column_names as string[];
    const found = names.length === 1 ? columns.get(names[0]) : undefined;
    return found ? copy(found) : null;
  }
  const out: Node = {};
  for (const [k, v] of Object.entries(node)) {
    const s = substituted(v, columns);
    if (s === null && v !== null) return null;
    out[k] = s;
  }
  return out;
}

async function rawColumns(
  engine: DuckDBEngine,
  definition: RollupDefinition,
  definitions: ReadonlyMap<string, RollupDefinition>,
  cache: Map<string, Raw | null>,
): Promise<Raw | null> {
  if (cache.has(definition.name)) return cache.get(definition.name)!;
  cache.set(definition.name, null);
  const tree = await engine.parseSelect(definition.query);
  const node = tree?.statements[0]?.node as Node | undefined;
  if (!node || node.type !== 'SELECT_NODE') return null;
  const items = (node.select_list as Node[]).slice(1, -1);
  const groupKeys = new Set((node.group_expressions as Node[]).slice(1, -1).map((g) => key(g, none)));
  let source: Raw | null = null;
  if (definition.sourceIsRollup) {
    const parent = definitions.get(definition.source);
    source = parent ? await rawColumns(engine, parent, definitions, cache) : null;
    if (!source) return null;
  }
  const raw: Raw = { dimensions: new Map(), measures: new Map() };
  definition.columns.slice(1, -1).forEach((name, i) => {
    const item = normal(items[i], none) as Node;
    const lower = name.toLowerCase();
    if (groupKeys.has(key(items[i], none))) {
      const expression = source ? (substituted(item, source.dimensions) as Node | null) : item;
      if (expression) raw.dimensions.set(lower, expression);
      return;
    }
    if (!source) {
      raw.measures.set(lower, item);
      return;
    }
    // A rollup of a rollup: f(c) over a stored aggregate g(x) is g(x) when f merges g; arg_max(a, o) over a
    // stored arg_max(x, y) and the extreme it was chosen by is arg_max(x, y).
    const children = item.children as Node[] | undefined;
    const storedAs = (c: Node | undefined): Node | undefined =>
      c?.class === 'COLUMN_REF' ? source.measures.get((c.column_names as string[]).join('.')) : undefined;
    const [arg, order] = [storedAs(children?.[0]), storedAs(children?.[1])];
    const merged = arg && argOrderState(arg);
    if (
      merged &&
      order &&
      item.class === 'FUNCTION' &&
      item.filter === null &&
      children?.length === 2 &&
      argOrderState({ ...item, children: [arg, order] })?.merge === merged.merge &&
      key(order, none) === key(merged.state, none)
    ) {
      raw.measures.set(lower, copy(arg));
      return;
    }
    if (item.class !== 'FUNCTION' || item.filter !== null || item.distinct === true || children?.length !== 1) return;
    const [child] = children;
    const inner =
      child.class === 'COLUMN_REF' ? source.measures.get((child.column_names as string[]).join('.')) : undefined;
    if (inner && composes[String(item.function_name)]?.includes(String(inner.function_name)))
      raw.measures.set(lower, copy(inner));
  });
  cache.set(definition.name, raw);
  return raw;
}

/** The stored columns of a rollup, or null when its statement cannot be read back (then no query reads it). */
export async function storedColumns(
  engine: DuckDBEngine,
  definition: RollupDefinition,
  definitions: ReadonlyMap<string, RollupDefinition>,
  cache: Map<string, Raw | null> = new Map(),
): Promise<StoredColumns | null> {
  const raw = await rawColumns(engine, definition, definitions, cache);
  if (!raw) return null;
  const measureKeys = new Map<string, string>();
  for (const [name, aggregate] of raw.measures) {
    const k = key(aggregate, none);
    if (!measureKeys.has(k)) measureKeys.set(k, name);
  }
  return {
    dimensions: new Map([...raw.dimensions].map(([name, expression]) => [key(expression, none), name])),
    measures: [...raw.measures].map(([name, aggregate]) => ({ name, aggregate })),
    measureKeys,
    names: new Set(definition.columns.map((c) => c.toLowerCase())),
  };
}
