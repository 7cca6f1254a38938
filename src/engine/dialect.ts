// DataFusion's timestamp semantics on DuckDB's parse tree. DataFusion (and micromegas) has one
// timestamp type family, nanoseconds, and compares any of them with any other; DuckDB has
// TIMESTAMP (microseconds), TIMESTAMP_NS and TIMESTAMPTZ (microseconds, no nanosecond variant)
// and refuses to compare TIMESTAMP_NS with TIMESTAMPTZ. Orrery's time columns are TIMESTAMP_NS
// (UTC instants), so every timestamp a statement writes is made a TIMESTAMP_NS: casts to
// TIMESTAMP or TIMESTAMPTZ (the `TIMESTAMP '…'` and `TIMESTAMPTZ '…'` literals are casts) and
// arrow_cast to an Arrow timestamp type. A string with an offset keeps its instant, and
// nanosecond digits are kept; one with a zone name is read by TIMESTAMPTZ, to microseconds.
// The functions that return TIMESTAMPTZ (now(), to_timestamp, …) are redefined as macros
// (views/sql-functions.ts).
import { clockInstantFunctions, clockKeywords, varyingFunctions } from './varying-functions.js';

type Node = Record<string, unknown>;

const nanosecondCast = new Set(['TIMESTAMP', 'TIMESTAMP WITH TIME ZONE']);

/** Arrow type names arrow_cast takes, for the types whose DuckDB twin differs from the value's own. */
function duckdbTypeOfArrow(arrowType: string): string | undefined {
  const name = arrowType.trim();
  if (/^Timestamp\s*\(/i.test(name)) return 'TIMESTAMP_NS';
  const simple: Record<string, string> = {
    Int8: 'TINYINT',
    Int16: 'SMALLINT',
    Int32: 'INTEGER',
    Int64: 'BIGINT',
    UInt8: 'UTINYINT',
    UInt16: 'USMALLINT',
    UInt32: 'UINTEGER',
    UInt64: 'UBIGINT',
    Float32: 'FLOAT',
    Float64: 'DOUBLE',
    Utf8: 'VARCHAR',
    LargeUtf8: 'VARCHAR',
    Utf8View: 'VARCHAR',
    Boolean: 'BOOLEAN',
    Date32: 'DATE',
    Date64: 'DATE',
    Binary: 'BLOB',
    LargeBinary: 'BLOB',
  };
  return simple[name];
}

/** A text constant whose time is followed by a zone name (two letters or more: `UTC`, `Europe/Paris`), not an offset. */
function namesTimeZone(child: unknown): boolean {
  const constant = child as Node | undefined;
  const value = constant?.class === 'CONSTANT' ? (constant.value as Node | undefined) : undefined;
  return typeof value?.value === 'string' && /\d\s*[A-Za-z]{2,}[A-Za-z0-9_/+-]*\s*$/.test(value.value);
}

/** A cast standing where `replaced` stood (its alias and position). */
const castNode = (replaced: Node, child: unknown, id: string): Node => ({
  class: 'CAST',
  type: 'OPERATOR_CAST',
  alias: replaced.alias ?? '',
  query_location: replaced.query_location,
  child,
  cast_type: { id, type_info: null },
  try_cast: false,
});

/**
 * Rewrites, in place, the timestamp casts of a json_serialize_sql tree to TIMESTAMP_NS and
 * arrow_cast calls with a literal Arrow type to casts. True when anything changed (the
 * statement must then be run from the rewritten tree).
 */
export function nanosecondTimestamps(tree: { statements: Node[] }): boolean {
  let changed = false;
  const visit = (value: unknown): unknown => {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) value[i] = visit(value[i]);
      return value;
    }
    if (value === null || typeof value !== 'object') return value;
    const node = value as Node;
    for (const key of Object.keys(node)) node[key] = visit(node[key]);
    if (node.class === 'CAST') {
      const target = node.cast_type as Node;
      if (typeof target?.id === 'string' && nanosecondCast.has(target.id)) {
        // A zone name ('… Europe/Paris') only DuckDB's TIMESTAMPTZ (ICU) reads: through it, to microseconds.
        if (target.id === 'TIMESTAMP WITH TIME ZONE' && namesTimeZone(node.child))
          node.child = castNode({ query_location: node.query_location }, node.child, 'TIMESTAMP WITH TIME ZONE');
        node.cast_type = { id: 'TIMESTAMP_NS', type_info: null };
        changed = true;
      }
      return node;
    }
    if (node.class === 'FUNCTION' && String(node.function_name).toLowerCase() === 'arrow_cast' && !node.schema) {
      const [arg, type] = (node.children as Node[]) ?? [];
      const literal = type?.class === 'CONSTANT' ? ((type.value as Node)?.value as unknown) : undefined;
      const target = typeof literal === 'string' ? duckdbTypeOfArrow(literal) : undefined;
      if (arg && target) {
        changed = true;
        return castNode(node, arg, target);
      }
    }
    return node;
  };
  visit(tree.statements);
  return changed;
}

// DataFusion's catalog listings: `SHOW TABLES` is `SELECT * FROM information_schema.tables`,
// whose columns are table_catalog, table_schema, table_name and table_type. DuckDB's catalog
// holds only what a statement has set up, so the caller answers both from its own listing.

/** What DuckDB's SHOW parses to for `SHOW TABLES` and `SHOW ALL TABLES`. */
const tableShows = new Set(['"tables"', '__show_tables_expanded']);

/** Whether a relation, as written, is information_schema.<view>. */
function isInformationSchema(relation: { catalog: string; schema: string; name: string }, view: string): boolean {
  return (
    ['', 'orrery'].includes(relation.catalog.toLowerCase()) &&
    relation.schema.toLowerCase() === 'information_schema' &&
    relation.name.toLowerCase() === view
  );
}

/** Whether a relation, as written, is information_schema.tables. */
export const isTablesListing = (relation: { catalog: string; schema: string; name: string }): boolean =>
  isInformationSchema(relation, 'tables');

/** Whether a relation, as written, is information_schema.columns. */
export const isColumnsListing = (relation: { catalog: string; schema: string; name: string }): boolean =>
  isInformationSchema(relation, 'columns');

/** Whether a SHOW listing (a QueryShape's catalogListings entry) is SHOW [ALL] TABLES. */
export const isTablesShow = (listing: string): boolean => tableShows.has(listing);

/**
 * Rewrites, in place, every `information_schema.tables` and `SHOW [ALL] TABLES` of a
 * json_serialize_sql tree to read `relations.tables` instead, and every `information_schema.columns`
 * to read `relations.columns`. True when anything changed.
 */
export function substituteListings(
  tree: { statements: Node[] },
  relations: { tables: string; columns: string },
): boolean {
  let changed = false;
  const visit = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(visit);
    if (value === null || typeof value !== 'object') return value;
    const node = value as Node;
    const written = {
      catalog: (node.catalog_name as string | undefined) ?? '',
      schema: (node.schema_name as string | undefined) ?? '',
      name: (node.table_name as string | undefined) ?? '',
    };
    const relation =
      (node.type === 'BASE_TABLE' && isTablesListing(written)) ||
      (node.type === 'SHOW_REF' && !node.query && tableShows.has(node.table_name as string))
        ? relations.tables
        : node.type === 'BASE_TABLE' && isColumnsListing(written)
          ? relations.columns
          : undefined;
    if (relation !== undefined) {
      changed = true;
      return {
        type: 'BASE_TABLE',
        alias: node.alias ?? '',
        sample: node.sample ?? null,
        query_location: node.query_location,
        schema_name: '',
        table_name: relation,
        column_name_alias: node.column_name_alias ?? [],
        catalog_name: '',
        at_clause: null,
      };
    }
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, visit(v)]));
  };
  tree.statements = tree.statements.map((s) => visit(s) as Node);
  return changed;
}

// Time bounds a scan can use. DuckDB pushes `column op constant` into a scan (DuckLake skips files,
// Parquet row groups) only when the constant has the column's type; otherwise it casts the column
// and reads every file. Orrery's instants are TIMESTAMP_NS (above) and a TIMESTAMPTZ literal stays
// TIMESTAMPTZ, so a series table's TIMESTAMP column compared with them was read whole, and its
// TIMESTAMPTZ column could not be compared with TIMESTAMP_NS at all (a DuckDB binder error).

/** The microsecond time types of series-table columns that the rewrite below bounds. */
export type MicrosecondTime = 'TIMESTAMP' | 'TIMESTAMP WITH TIME ZONE';

const instantFunctions = new Set([
  ...clockInstantFunctions,
  'to_timestamp',
  'to_timestamp_seconds',
  'to_timestamp_millis',
  'to_timestamp_micros',
  'to_timestamp_nanos',
  'make_timestamp_ns',
  'date_bin',
]);

/** Whether an expression reads nothing that varies by row or by binding: no column, subquery or parameter. */
function constantExpression(value: unknown): boolean {
  if (Array.isArray(value)) return value.every(constantExpression);
  if (value === null || typeof value !== 'object') return true;
  const node = value as Node;
  if (node.class === 'COLUMN_REF') {
    const names = node.column_names as string[];
    return names.length === 1 && clockKeywords.has(names[0].toLowerCase());
  }
  if (node.class === 'SUBQUERY' || node.class === 'PARAMETER' || node.class === 'WINDOW') return false;
  // The bound repeats the expression: a volatile one would not be the same value twice.
  if (node.class === 'FUNCTION' && varyingFunctions.get(String(node.function_name).toLowerCase()) === 'random')
    return false;
  return Object.values(node).every(constantExpression);
}

/**
 * The type of a column-free timestamp expression whose type the parse tree tells: TIMESTAMP_NS
 * (Orrery's casts, now() and the other macros returning TIMESTAMP_NS), TIMESTAMPTZ (a typed
 * literal) or a bound parameter (its type known only when it is bound).
 */
function instantKind(node: Node): 'TIMESTAMP_NS' | 'TIMESTAMP WITH TIME ZONE' | 'PARAMETER' | undefined {
  if (node.class === 'PARAMETER') return 'PARAMETER';
  if (node.class === 'CONSTANT') {
    const type = ((node.value as Node | undefined)?.type as Node | undefined)?.id;
    return type === 'TIMESTAMP WITH TIME ZONE' && (node.value as Node).is_null !== true ? type : undefined;
  }
  if (node.class === 'COLUMN_REF') {
    const names = node.column_names as string[];
    // DuckDB binds a bare `current_timestamp` to get_current_timestamp(), Orrery's macro.
    return names.length === 1 && names[0].toLowerCase() === 'current_timestamp' ? 'TIMESTAMP_NS' : undefined;
  }
  if (!constantExpression(node)) return undefined;
  if (node.class === 'CAST' && (node.cast_type as Node)?.id === 'TIMESTAMP_NS' && node.try_cast !== true)
    return 'TIMESTAMP_NS';
  if (node.class === 'FUNCTION' && !node.schema && instantFunctions.has(String(node.function_name)))
    return 'TIMESTAMP_NS';
  return undefined;
}

const clone = (node: Node): Node => structuredClone(node);

function call(name: string, children: Node[], at: unknown, operator = false): Node {
  return {
    class: 'FUNCTION',
    type: 'FUNCTION',
    alias: '',
    query_location: at,
    function_name: name,
    schema: '',
    children,
    filter: null,
    order_bys: { type: 'ORDER_MODIFIER', orders: [] },
    distinct: false,
    is_operator: operator,
    export_state: false,
    catalog: '',
  };
}

function integer(value: number, at: unknown): Node {
  return {
    class: 'CONSTANT',
    type: 'VALUE_CONSTANT',
    alias: '',
    query_location: at,
    value: { type: { id: 'BIGINT', type_info: null }, is_null: false, value },
  };
}

const comparison = (type: string, left: Node, right: Node, at: unknown): Node => ({
  class: 'COMPARISON',
  type,
  alias: '',
  query_location: at,
  left,
  right,
});

/** The latest microsecond at or before an instant: a TIMESTAMP (DuckDB's cast from TIMESTAMP_NS rounds down). */
const floorMicros = (value: Node): Node =>
  castNode({ query_location: value.query_location }, clone(value), 'TIMESTAMP');

/** `floor + 1 µs`: above every instant whose floor is `floor` (a bound for a value of unknown precision). */
const aboveMicros = (value: Node): Node => {
  const at = value.query_location;
  return call('+', [floorMicros(value), call('to_microseconds', [integer(1, at)], at)], at, true);
};

type Side = 'lower' | 'upper';

/**
 * The conditions `column op value` becomes, for a column named like a series table's column of
 * microsecond type `type`: the exact comparison ANDed with an implied bound of microsecond precision
 * (floor for a lower bound, floor + 1 µs for an upper one), which DuckDB pushes into the scan.
 * - TIMESTAMP: the comparison kept as written.
 * - TIMESTAMPTZ and a TIMESTAMP_NS value (which DuckDB refuses to compare): the column cast to
 *   TIMESTAMP_NS (the engine's time zone is UTC) against the value, which is exact whatever the
 *   column turns out to be (a CTE's or view set's nanosecond column of the same name included).
 * The implied bounds follow from the exact comparison for any column type, so no answer changes.
 */
function boundedComparison(
  column: Node,
  op: string,
  value: Node,
  type: MicrosecondTime,
  at: unknown,
): Node | undefined {
  const kind = instantKind(value);
  if (!kind || (type === 'TIMESTAMP WITH TIME ZONE' && kind !== 'TIMESTAMP_NS')) return undefined;
  const sides: Side[] =
    op === 'COMPARE_EQUAL'
      ? ['lower', 'upper']
      : op === 'COMPARE_GREATERTHAN' || op === 'COMPARE_GREATERTHANOREQUALTO'
        ? ['lower']
        : op === 'COMPARE_LESSTHAN' || op === 'COMPARE_LESSTHANOREQUALTO'
          ? ['upper']
          : [];
  if (sides.length === 0) return undefined;
  const implied = sides.map((side) =>
    side === 'lower'
      ? comparison('COMPARE_GREATERTHANOREQUALTO', clone(column), floorMicros(value), at)
      : comparison('COMPARE_LESSTHANOREQUALTO', clone(column), aboveMicros(value), at),
  );
  const exact =
    type === 'TIMESTAMP'
      ? comparison(op, column, value, at)
      : comparison(op, castNode({ query_location: at }, column, 'TIMESTAMP_NS'), value, at);
  return {
    class: 'CONJUNCTION',
    type: 'CONJUNCTION_AND',
    alias: '',
    query_location: at,
    children: [exact, ...implied],
  };
}

/** Keys of a parse tree's nodes holding conditions: WHERE, HAVING, QUALIFY, JOIN ... ON. */
const conditionKeys = new Set(['where_clause', 'having', 'qualify', 'condition']);

const mirrored: Record<string, string> = {
  COMPARE_GREATERTHAN: 'COMPARE_LESSTHAN',
  COMPARE_GREATERTHANOREQUALTO: 'COMPARE_LESSTHANOREQUALTO',
  COMPARE_LESSTHAN: 'COMPARE_GREATERTHAN',
  COMPARE_LESSTHANOREQUALTO: 'COMPARE_GREATERTHANOREQUALTO',
  COMPARE_EQUAL: 'COMPARE_EQUAL',
};

/**
 * Rewrites, in place, the comparisons (and BETWEENs) of a json_serialize_sql tree between a
 * column named in `columns` (lower case: series tables' TIMESTAMP and TIMESTAMPTZ columns) and a
 * timestamp of another type, so that DuckDB pushes them into the scan (see boundedComparison).
 * Run after nanosecondTimestamps. True when anything changed.
 */
export function scanTimeBounds(tree: { statements: Node[] }, columns: ReadonlyMap<string, MicrosecondTime>): boolean {
  if (columns.size === 0) return false;
  let changed = false;
  const typeOf = (node: Node | undefined): MicrosecondTime | undefined => {
    if (node?.class !== 'COLUMN_REF') return undefined;
    const names = node.column_names as string[];
    return columns.get(names[names.length - 1].toLowerCase());
  };
  // Only conditions are rewritten: a select-list item's name is its text when it has no alias.
  const visit = (value: unknown, inCondition: boolean): unknown => {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) value[i] = visit(value[i], inCondition);
      return value;
    }
    if (value === null || typeof value !== 'object') return value;
    const node = value as Node;
    for (const key of Object.keys(node))
      node[key] = visit(node[key], conditionKeys.has(key) ? true : key === 'select_list' ? false : inCondition);
    if (!inCondition) return node;
    const at = node.query_location;
    if (node.class === 'COMPARISON' && typeof node.type === 'string' && node.type in mirrored) {
      const [left, right] = [node.left as Node, node.right as Node];
      const leftType = typeOf(left);
      const rightType = leftType ? undefined : typeOf(right);
      const bounded = leftType
        ? boundedComparison(left, node.type, right, leftType, at)
        : rightType
          ? boundedComparison(right, mirrored[node.type], left, rightType, at)
          : undefined;
      if (bounded) {
        changed = true;
        return bounded;
      }
    }
    if (node.class === 'BETWEEN') {
      const type = typeOf(node.input as Node);
      if (!type) return node;
      const lower = boundedComparison(node.input as Node, 'COMPARE_GREATERTHANOREQUALTO', node.lower as Node, type, at);
      const upper = boundedComparison(node.input as Node, 'COMPARE_LESSTHANOREQUALTO', node.upper as Node, type, at);
      if (!lower && !upper) return node;
      changed = true;
      const lowerSide =
        lower ?? comparison('COMPARE_GREATERTHANOREQUALTO', clone(node.input as Node), node.lower as Node, at);
      const upperSide =
        upper ?? comparison('COMPARE_LESSTHANOREQUALTO', clone(node.input as Node), node.upper as Node, at);
      return {
        class: 'CONJUNCTION',
        type: 'CONJUNCTION_AND',
        alias: node.alias ?? '',
        query_location: at,
        children: [lowerSide, upperSide],
      };
    }
    return node;
  };
  visit(tree.statements, false);
  return changed;
}
