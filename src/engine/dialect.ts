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
