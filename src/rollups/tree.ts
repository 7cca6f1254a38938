// Small helpers over DuckDB's parse trees (json_serialize_sql): building expression nodes and
// comparing expressions whatever their aliases, positions, qualifiers or letter case.
import { propertyRead } from '../resources/index.js';

export type Node = Record<string, unknown>;

export const isExpression = (value: unknown): value is Node =>
  value !== null && typeof value === 'object' && !Array.isArray(value) && typeof (value as Node).class === 'string';

export const column = (...names: string[]): Node => ({
  class: 'COLUMN_REF',
  type: 'COLUMN_REF',
  alias: '',
  column_names: names,
});

export const call = (
  name: string,
  children: Node[],
  options: { filter?: Node | null; operator?: boolean } = {},
): Node => ({
  class: 'FUNCTION',
  type: 'FUNCTION',
  alias: '',
  function_name: name,
  schema: '',
  children,
  filter: options.filter ?? null,
  order_bys: { type: 'ORDER_MODIFIER', orders: [] },
  distinct: false,
  is_operator: options.operator ?? false,
  export_state: false,
  catalog: '',
});

export const integer = (value: number): Node => ({
  class: 'CONSTANT',
  type: 'VALUE_CONSTANT',
  alias: '',
  value: { type: { id: 'INTEGER', type_info: null }, is_null: false, value },
});

export const coalesce = (...children: Node[]): Node => ({
  class: 'OPERATOR',
  type: 'OPERATOR_COALESCE',
  alias: '',
  children,
});

export const cast = (child: Node, castType: unknown): Node => ({
  class: 'CAST',
  type: 'OPERATOR_CAST',
  alias: '',
  child,
  cast_type: castType,
  try_cast: false,
});

/** Every expression node under a value (itself included), depth first. */
export function expressions(value: unknown, visit: (node: Node) => void): void {
  if (Array.isArray(value)) {
    for (const item of value) expressions(item, visit);
    return;
  }
  if (value === null || typeof value !== 'object') return;
  if (isExpression(value)) visit(value);
  for (const child of Object.values(value as Node)) expressions(child, visit);
}

/**
 * A copy of a value with each node `replacement` answers for replaced by (a copy of) its answer, keeping the
 * replaced node's alias; the others copied as they are.
 */
export function replaced<T>(value: T, replacement: (node: Node) => Node | undefined): T {
  const replace = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(replace);
    if (v === null || typeof v !== 'object') return v;
    const node = v as Node;
    const by = replacement(node);
    if (by) return { ...copy(by), alias: node.alias ?? '' };
    return Object.fromEntries(Object.entries(node).map(([k, c]) => [k, replace(c)]));
  };
  return replace(value) as T;
}

/** Whether anything under a value satisfies `test`. */
export function some(value: unknown, test: (node: Node) => boolean): boolean {
  let found = false;
  expressions(value, (node) => {
    found ||= test(node);
  });
  return found;
}

/** The names (lower case) of the tables a parsed statement reads, however qualified. */
export function baseTables(value: unknown): Set<string> {
  const named = new Set<string>();
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (value === null || typeof value !== 'object') return;
    const node = value as Node;
    if (node.type === 'BASE_TABLE' && typeof node.table_name === 'string') named.add(node.table_name.toLowerCase());
    Object.values(node).forEach(visit);
  };
  visit(value);
  return named;
}

/** Functions of the rollups spec that Orrery also answers unqualified (`snouttime.merge` is `merge`). */
const plainSchemas = new Set(['', 'main', 'snouttime']);

/**
 * How a qualifier of several names (`main.log_entries`) is held in a set of qualifiers (see ownNames): its names in
 * lower case joined by a NUL character, which no name holds (DuckDB's parser ends a SQL text at one), so that it
 * never equals a one-name qualifier written with dots (`"main.log_entries"`).
 */
export const qualifierOf = (names: readonly string[]): string => names.map((n) => n.toLowerCase()).join('\u0000');

/**
 * A column reference's names in lower case, without the qualifier naming the level's table when it is one of
 * `qualifiers` (an alias or table name, or a longer spelling held as qualifierOf writes it): `[column]` then.
 * A name whose qualifier is not one of them (a struct field's, another relation's) is kept whole.
 */
export function ownNames(names: readonly string[], qualifiers: ReadonlySet<string>): string[] {
  const lower = names.map((n) => n.toLowerCase());
  return lower.length >= 2 && qualifiers.has(qualifierOf(lower.slice(0, -1))) ? lower.slice(-1) : lower;
}

/**
 * An expression as compared: no alias or position, column names in lower case and without a
 * qualifier naming the level's table (see ownNames), function names in lower case and without the
 * `snouttime` prefix. Two expressions are the same when their normal forms are.
 */
export function normal(value: unknown, qualifiers: ReadonlySet<string>): unknown {
  if (Array.isArray(value)) return value.map((v) => normal(v, qualifiers));
  if (value === null || typeof value !== 'object') return value;
  const node = value as Node;
  const out: Node = {};
  for (const [key, child] of Object.entries(node)) {
    if (key === 'query_location') continue;
    out[key] = key === 'alias' && isExpression(node) ? '' : normal(child, qualifiers);
  }
  if (node.class === 'COLUMN_REF') {
    out.column_names = ownNames(node.column_names as string[], qualifiers);
  }
  if (node.class === 'FUNCTION') {
    out.function_name = String(node.function_name).toLowerCase();
    if (plainSchemas.has(String(node.schema).toLowerCase()) && node.catalog === '') out.schema = '';
  }
  return out;
}

/**
 * Every JSON property read by a constant key spelled one way (`->>`, json_extract_string, property_get:
 * see propertyRead), so that the spellings of one read compare equal, as a stored column reads them.
 */
function oneSpelling(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(oneSpelling);
  if (value === null || typeof value !== 'object') return value;
  const read = propertyRead(value as Node);
  if (read)
    return { class: 'FUNCTION', function_name: 'json property', children: [oneSpelling(read.subject), read.key] };
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, oneSpelling(v)]));
}

/** A text equal for equal expressions (normal forms, a JSON property read however it is spelled). */
export const key = (value: unknown, qualifiers: ReadonlySet<string>): string =>
  JSON.stringify(normal(oneSpelling(value), qualifiers));

/** A deep copy. */
export const copy = <T>(value: T): T => structuredClone(value);
