// The rows and bytes of a kept table (tail-values.ts), measured by its name: DuckDB reports no bytes for one in-memory
// table (pragma_storage_info lists its segments, not the long strings kept apart from them; duckdb_memory() sums every
// table, so its growth over a table's making counts the tables made and dropped meanwhile, and leaves out what DuckDB
// wrote out to temp_directory to make room). The measure is its values' bytes: what the table holds wherever DuckDB
// keeps it, in memory or on disk, about what it takes (200 strings of 400 KB: 80.0 MB of values, 80.3 MB in
// OVERFLOW_STRINGS) or more (DuckDB compresses some columns: 27,000 strings of 3 KB, 81 MB of values, took 53 MB).

/** The bytes of one fixed-width value of a DuckDB type; null for a type of varying width. */
function fixedWidth(type: string): number | null {
  if (/^(?:BOOLEAN|TINYINT|UTINYINT)$/.test(type)) return 1;
  if (/^(?:SMALLINT|USMALLINT)$/.test(type)) return 2;
  if (/^(?:INTEGER|UINTEGER|FLOAT|DATE)$/.test(type)) return 4;
  if (
    /^(?:BIGINT|UBIGINT|DOUBLE|TIME|TIMESTAMP(?:_S|_MS|_NS)?|TIMESTAMP WITH TIME ZONE|TIME WITH TIME ZONE)$/.test(type)
  )
    return 8;
  if (/^(?:HUGEINT|UHUGEINT|UUID|INTERVAL|DECIMAL\(\d+,\d+\))$/.test(type)) return 16;
  return null;
}

/** `types` split at its top-level commas (a MAP's key and value types, a STRUCT's fields). */
function splitTop(types: string): string[] {
  const parts: string[] = [];
  let [depth, quoted, from] = [0, false, 0];
  for (let i = 0; i < types.length; i++) {
    const c = types[i];
    if (c === '"') quoted = !quoted;
    else if (quoted) continue;
    else if (c === '(' || c === '[') depth++;
    else if (c === ')' || c === ']') depth--;
    else if (c === ',' && depth === 0) {
      parts.push(types.slice(from, i).trim());
      from = i + 1;
    }
  }
  return [...parts, types.slice(from).trim()];
}

/** A STRUCT field as pragma_table_info writes it (`name TYPE`, `"a name" TYPE`): its name and type. */
function field(text: string): [name: string, type: string] | null {
  const [, quoted, plain, type] = /^(?:"((?:[^"]|"")*)"|(\S+)) (.+)$/s.exec(text) ?? [];
  return type ? [quoted?.replaceAll('""', '"') ?? plain, type] : null;
}

const literal = (text: string): string => `'${text.replaceAll("'", "''")}'`;

/**
 * An expression of the bytes of `value`, of DuckDB type `type` (as pragma_table_info writes it): a string's or a
 * blob's length, a list's elements', a map's keys' and values', a struct's fields'; a fixed-width value's width; any other (an
 * array, a union) its text's length, near enough to the bytes it holds.
 */
export function valueBytes(value: string, type: string): string {
  const width = fixedWidth(type);
  if (width !== null) return `${width}`;
  if (type === 'VARCHAR') return `coalesce(strlen(${value}), 0)`;
  if (type === 'BLOB' || type === 'BIT') return `coalesce(octet_length(${value}), 0)`;
  if (type.endsWith('[]')) {
    const element = type.slice(0, -2);
    const each = fixedWidth(element);
    return each !== null
      ? `coalesce(len(${value}), 0) * ${each}`
      : `coalesce(list_sum(list_transform(${value}, __v -> ${valueBytes('__v', element)})), 0)`;
  }
  const map = /^MAP\((.*)\)$/s.exec(type);
  const pair = map && splitTop(map[1]);
  if (pair?.length === 2)
    return `(${valueBytes(`map_keys(${value})`, `${pair[0]}[]`)} + ${valueBytes(`map_values(${value})`, `${pair[1]}[]`)})`;
  const struct = /^STRUCT\((.*)\)$/s.exec(type);
  const fields = struct && splitTop(struct[1]).map(field);
  if (fields && !fields.includes(null))
    return `(${fields.map((f) => valueBytes(`struct_extract(${value}, ${literal(f![0])})`, f![1])).join(' + ')})`;
  return `coalesce(strlen(CAST(${value} AS VARCHAR)), 0)`;
}

/** The bytes of a row's value (a list, a struct) beside its fixed cost: a validity bit, an offset, a string's header. */
const perValue = 16;

/**
 * The statement listing the columns (name, type) of kept table `table` (`<db>.main.<db>`): pragma_table_info binds
 * that one table, where duckdb_columns() lists every attached catalog's, the lake's included (its schemas read from
 * Postgres at the transaction's snapshot).
 */
export const keptColumnsSql = (table: string): string =>
  `SELECT name, type FROM pragma_table_info('${table}') ORDER BY cid`;

/**
 * An expression of the bytes of a row of a kept table of `columns` (keptColumnsSql's answer), over its columns by name:
 * what keptSizeSql sums, and what a ring's row answers as it is put in (keepTailRowSql's RETURNING).
 */
export function keptRowBytes(columns: ReadonlyArray<readonly [name: string, type: string]>): string {
  const quoted = (name: string): string => `"${name.replaceAll('"', '""')}"`;
  const terms = columns.map(([name, type]) => `${perValue} + ${valueBytes(quoted(name), type)}`);
  return `(${terms.join(' + ') || '0'})::BIGINT`;
}

/**
 * The statement measuring kept table `table` (its `columns`, keptColumnsSql's answer): its rows and their bytes, or of
 * its rows `where` alone.
 */
export function keptSizeSql(
  table: string,
  columns: ReadonlyArray<readonly [name: string, type: string]>,
  where = 'TRUE',
): string {
  return `SELECT count(*), coalesce(sum(${keptRowBytes(columns)}), 0)::BIGINT FROM ${table} WHERE ${where}`;
}
