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

/** Comparisons as read with their operands the other way round (`'cpu' = name` is `name = 'cpu'`). */
const mirrored: Record<string, string> = {
  COMPARE_EQUAL: 'COMPARE_EQUAL',
  COMPARE_NOTEQUAL: 'COMPARE_NOTEQUAL',
  COMPARE_LESSTHAN: 'COMPARE_GREATERTHAN',
  COMPARE_GREATERTHAN: 'COMPARE_LESSTHAN',
  COMPARE_LESSTHANOREQUALTO: 'COMPARE_GREATERTHANOREQUALTO',
  COMPARE_GREATERTHANOREQUALTO: 'COMPARE_LESSTHANOREQUALTO',
  COMPARE_DISTINCT_FROM: 'COMPARE_DISTINCT_FROM',
  COMPARE_NOT_DISTINCT_FROM: 'COMPARE_NOT_DISTINCT_FROM',
};

const isConstantNode = (n: Node): boolean => n.class === 'CONSTANT';

/** `true` as DuckDB parses it (a cast of 't'), or a boolean constant true. */
const isTrue = (n: Node): boolean => {
  const value = n.value as { type: { id: string }; is_null: boolean; value: unknown } | undefined;
  if (n.class === 'CONSTANT') return value?.type.id === 'BOOLEAN' && value.value === true;
  const child = n.child as Node | undefined;
  const text = (child?.value as { value: unknown } | undefined)?.value;
  return (
    n.class === 'CAST' &&
    (n.cast_type as { id: string }).id === 'BOOLEAN' &&
    child?.class === 'CONSTANT' &&
    typeof text === 'string' &&
    /^(t|true)$/i.test(text)
  );
};

/**
 * A comparison's operand as compared: a constant cast to the type it already has (`'cpu'::VARCHAR`, `CAST('cpu' AS
 * TEXT)`) is the constant. A string constant's own type is a literal's, which DuckDB casts to the other operand's
 * type as it does a VARCHAR (`x = '1'` and `x = '1'::VARCHAR` are one comparison for an integer x too).
 */
const operand = (n: Node): Node => {
  const child = n.child as Node | undefined;
  const type = n.cast_type as { id: string; type_info: unknown } | undefined;
  const value = child?.value as { type: { id: string; type_info: unknown } } | undefined;
  return n.class === 'CAST' &&
    n.try_cast === false &&
    child?.class === 'CONSTANT' &&
    type?.type_info === null &&
    value?.type.type_info === null &&
    value.type.id === type.id
    ? child
    : n;
};

const equal = (left: Node, right: Node): Node => ({
  class: 'COMPARISON',
  type: 'COMPARE_EQUAL',
  alias: '',
  left,
  right,
});

/**
 * Conditions in one form whatever their spelling, by rules that keep each row's value (NULLs included): a
 * comparison's constant on its right, a constant cast to its own type the constant, `x IN (a, b)` the OR of `x = a`
 * and `x = b`, ANDs and ORs flattened, their parts in one order, each part once, `AND true` left out. So a query's
 * `WHERE 'cpu' = name` finds a measure stored under `FILTER (WHERE name IN ('cpu'))`.
 */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value === null || typeof value !== 'object') return value;
  const node = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, canonical(v)])) as Node;
  if (node.class === 'COMPARISON' && mirrored[String(node.type)]) {
    const [left, right] = [operand(node.left as Node), operand(node.right as Node)];
    return isConstantNode(left) && !isConstantNode(right)
      ? { ...node, type: mirrored[String(node.type)], left: right, right: left }
      : { ...node, left, right };
  }
  if (node.type === 'COMPARE_IN') {
    const [subject, ...values] = node.children as Node[];
    if (values.every((v) => isConstantNode(operand(v))))
      return canonical({
        class: 'CONJUNCTION',
        type: 'CONJUNCTION_OR',
        alias: '',
        children: values.map((v) => equal(subject, v)),
      });
  }
  if (node.class === 'CONJUNCTION') {
    const parts = new Map<string, Node>();
    const add = (n: Node): void => {
      if (n.class === 'CONJUNCTION' && n.type === node.type) (n.children as Node[]).forEach(add);
      else if (!(node.type === 'CONJUNCTION_AND' && isTrue(n))) parts.set(JSON.stringify(n), n);
    };
    (node.children as Node[]).forEach(add);
    const sorted = [...parts.keys()].sort().map((k) => parts.get(k)!);
    // Every part was `true`: the condition is.
    if (sorted.length === 0) return (node.children as Node[])[0];
    return sorted.length === 1 ? sorted[0] : { ...node, children: sorted };
  }
  return node;
}

/**
 * A text equal for equal expressions (normal forms, a JSON property read however it is spelled, conditions however
 * they are written: see canonical).
 */
export const key = (value: unknown, qualifiers: ReadonlySet<string>): string =>
  JSON.stringify(canonical(normal(oneSpelling(value), qualifiers)));

/** A deep copy. */
export const copy = <T>(value: T): T => structuredClone(value);
