// Expressions of resources files, checked the way the server will read them: parsed by DuckDB
// (json_serialize_sql) and bound against an empty table with the view set's columns, in an
// in-memory DuckDB holding Orrery's macros (property_get, the sketches). Nothing is read or run.
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { clockProblem, queryShape } from '../engine/index.js';
import { compatibilityMacros, quoteIdentifier, sketchStatements, type ColumnSpec } from '../views/index.js';

/** What an expression is, once parsed and bound. */
export interface ExpressionFacts {
  /** Why it cannot be used (does not parse, unknown column, …); null when it binds. */
  readonly problem: string | null;
  /** Every column name it reads (lower case), and the qualified ones (`a.b`). */
  readonly columns: readonly string[];
  readonly qualified: readonly string[];
  /** Function names it calls (lower case). */
  readonly functions: readonly string[];
  readonly window: boolean;
  readonly subquery: boolean;
  /** It aggregates: binds as a SELECT over the table grouped by () and not as a row filter. */
  readonly aggregate: boolean;
  /** DuckDB's type of the result, when it binds. */
  readonly type: string | null;
  /** What the expression is at its root, for the stored column's type. */
  readonly root: 'property' | 'string' | 'column' | 'other';
  /** A text equal for equal expressions: `properties->>'k'`, `json_extract_string(properties, 'k')` and `property_get(properties, 'k')` are one. */
  readonly canonical: string;
  /** Aggregates called with DISTINCT. */
  readonly distinctAggregates: readonly string[];
  /** Its outermost aggregate calls, with what each reads and what its FILTER pins. */
  readonly aggregateCalls: readonly AggregateCall[];
  /** Why a rollup may not store it, create_rollup's words: it reads the clock (now(), current_date, age(x), …); null when it does not. */
  readonly clock: string | null;
}

/** An aggregate call of an expression, as the per-series rule reads it (validation.ts, seriesProblem). */
export interface AggregateCall {
  /** Its function name (lower case). */
  readonly function: string;
  /**
   * The columns whose values it reads (lower case), in its arguments and its FILTER: all but count's own column
   * argument and the operand of IS [NOT] NULL, which read only whether there is a value.
   */
  readonly reads: readonly string[];
  /**
   * The columns its FILTER holds to named values (lower case, see pinnedColumns), so it aggregates the rows of those
   * values alone.
   */
  readonly pinned: readonly string[];
}

/** The functions that read a JSON property: `->>` is DuckDB's spelling of json_extract_string, property_get Orrery's macro over it. */
const propertyReads = new Set(['->>', 'json_extract_string', 'property_get']);

type Node = Record<string, unknown>;
const isNode = (value: unknown): value is Node => typeof value === 'object' && value !== null;

/** The key a constant JSON path reads as `$."<key>"`, by the function reading it; null for any other path. */
function keyOfPath(name: string, path: string): string | null {
  // A key holding `"` or `\` is escaped differently by property_get and read as a JSON pointer by
  // json_extract_string; an empty one is the whole document to one and an error to the other.
  const plain = path !== '' && !/["\\]/.test(path);
  // property_get(p, k) is json_extract_string(p, '$."k"'), whatever k starts with.
  if (name === 'property_get') return plain ? path : null;
  // json_extract_string reads a path starting with neither $ nor / as `$."<path>"` (DuckDB's CheckPath).
  if (plain && path[0] !== '$' && path[0] !== '/') return path;
  const quoted = /^\$\."([^"\\]+)"$/.exec(path) ?? /^\$\.([A-Za-z_][A-Za-z0-9_]*)$/.exec(path);
  return quoted ? quoted[1] : null;
}

/**
 * A read of one JSON property by a constant key (`p->>'k'`, `json_extract_string(p, 'k')`,
 * `json_extract_string(p, '$.k')`, `property_get(p, 'k')`): the value read from and the key, when the
 * spelling provably reads the path `$."k"`, so that equal keys are the same expression; null otherwise
 * (a JSONPath or pointer of more than one key, an array index: compared as written).
 */
export function propertyRead(node: Node): { subject: Node; key: string } | null {
  if (node.class !== 'FUNCTION') return null;
  const name = (node.function_name as string).toLowerCase();
  if (!propertyReads.has(name) || node.schema !== '' || node.catalog !== '') return null;
  if (node.filter !== null || node.distinct !== false || node.export_state !== false) return null;
  if (((node.order_bys as Node | undefined)?.orders as unknown[] | undefined)?.length !== 0) return null;
  const [subject, path, ...rest] = node.children as Node[];
  const value = path?.class === 'CONSTANT' ? (path.value as Node) : undefined;
  if (rest.length > 0 || !isNode(subject) || value?.is_null !== false || (value.type as Node).id !== 'VARCHAR')
    return null;
  const key = keyOfPath(name, String(value.value));
  return key === null ? null : { subject, key };
}

/** An in-memory DuckDB to check expressions in; one owner, idempotent close. */
export class ExpressionAnalyzer {
  private closed = false;
  private readonly tables = new Map<string, string>();

  private constructor(
    private readonly instance: DuckDBInstance,
    private readonly connection: DuckDBConnection,
    /** DuckDB's aggregate functions, by lower-case name. */
    private readonly aggregates: ReadonlySet<string>,
  ) {}

  static async open(): Promise<ExpressionAnalyzer> {
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    for (const sql of [...compatibilityMacros, ...sketchStatements(false)]) await connection.run(sql);
    const reader = await connection.runAndReadAll(
      "SELECT DISTINCT lower(function_name) AS name FROM duckdb_functions() WHERE function_type = 'aggregate'",
    );
    const aggregates = new Set(reader.getRowObjects().map((r) => String(r.name)));
    return new ExpressionAnalyzer(instance, connection, aggregates);
  }

  /** Declares a table to bind expressions against; returns null, or why its columns are not usable. */
  async defineTable(name: string, columns: readonly ColumnSpec[]): Promise<string | null> {
    if (this.tables.has(name)) return null;
    const table = quoteIdentifier(`t${this.tables.size}`);
    const list = columns.map((c) => `${quoteIdentifier(c.name)} ${c.type}`).join(', ');
    try {
      await this.connection.run(`CREATE TABLE ${table} (${list})`);
    } catch (error) {
      return (error as Error).message;
    }
    this.tables.set(name, table);
    return null;
  }

  /** Parses and binds `expression` over table `name` (defined first). */
  async analyze(name: string, expression: string): Promise<ExpressionFacts> {
    const table = this.tables.get(name);
    if (!table) throw new Error(`table ${name} was not defined`);
    const empty: ExpressionFacts = {
      problem: null,
      columns: [],
      qualified: [],
      functions: [],
      window: false,
      subquery: false,
      aggregate: false,
      type: null,
      root: 'other',
      canonical: '',
      distinctAggregates: [],
      aggregateCalls: [],
      clock: null,
    };
    const tree = await this.parse(expression);
    if (typeof tree === 'string') return { ...empty, problem: `does not parse: ${tree}` };
    const facts = walk(tree);
    const base = {
      ...empty,
      ...facts,
      canonical: JSON.stringify(canonical(tree)),
      aggregateCalls: aggregateCalls(tree, this.aggregates),
      // The expression's tree walked as a statement's: queryShape reads any subtree.
      clock: clockProblem(queryShape({ statements: [tree] }), 'rollup buckets') ?? null,
    };
    if (facts.subquery) return { ...base, problem: 'holds a subquery' };
    const asRow = await this.bindError(`SELECT 1 FROM ${table} WHERE (${expression}) IS NOT NULL`);
    const grouped = await this.bindError(`SELECT (${expression}) FROM ${table} GROUP BY ()`);
    const described = await this.describe(`SELECT (${expression}) AS v FROM ${table}`);
    if (typeof described !== 'string' || described === '') {
      return { ...base, problem: described instanceof Error ? firstLine(described.message) : 'does not bind' };
    }
    const aggregate = asRow !== null && grouped === null && !facts.window;
    const root = rootKind(tree, described);
    return { ...base, aggregate, type: described, root };
  }

  /** Runs a query (over Parquet files, with Orrery's macros) and answers its rows; values as DuckDB's JSON-able ones. */
  async rows(sql: string): Promise<Array<Record<string, unknown>>> {
    const reader = await this.connection.runAndReadAll(sql);
    return reader.getRowObjectsJson() as Array<Record<string, unknown>>;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.connection.closeSync();
    this.instance.closeSync();
  }

  /** The select item's parse tree, or DuckDB's parse error. */
  private async parse(expression: string): Promise<Node | string> {
    const reader = await this.connection.runAndReadAll('SELECT json_serialize_sql($1::VARCHAR) AS tree', [
      `SELECT (${expression}) FROM __expression_table`,
    ]);
    const parsed = JSON.parse(String(reader.getRowObjects()[0].tree)) as Node;
    if (parsed.error) return firstLine(String(parsed.error_message as string));
    const statements = parsed.statements as Node[];
    const node = statements.length === 1 ? (statements[0].node as Node) : null;
    const from = node?.from_table as Node | undefined;
    const list = node?.select_list as Node[] | undefined;
    const onlyItem =
      node !== null &&
      list?.length === 1 &&
      from?.type === 'BASE_TABLE' &&
      from.table_name === '__expression_table' &&
      !node.where_clause &&
      (node.group_expressions as unknown[]).length === 0 &&
      !node.having &&
      (node.modifiers as unknown[]).length === 0;
    return onlyItem ? list[0] : 'expected one expression';
  }

  private async bindError(sql: string): Promise<Error | null> {
    try {
      await this.connection.prepare(sql);
      return null;
    } catch (error) {
      return error as Error;
    }
  }

  private async describe(sql: string): Promise<string | Error> {
    try {
      const reader = await this.connection.runAndReadAll(`DESCRIBE ${sql}`);
      return String(reader.getRowObjects()[0].column_type);
    } catch (error) {
      return error as Error;
    }
  }
}

/** DuckDB's message without its context lines (they quote the checking query, not the user's text). */
const firstLine = (message: string): string => message.split('\n')[0];

function walk(
  tree: Node,
): Pick<ExpressionFacts, 'columns' | 'qualified' | 'functions' | 'window' | 'subquery' | 'distinctAggregates'> {
  const columns: string[] = [];
  const qualified: string[] = [];
  const functions: string[] = [];
  const distinctAggregates: string[] = [];
  let window = false;
  let subquery = false;
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (!isNode(value)) return;
    if (value.class === 'COLUMN_REF') {
      const names = value.column_names as string[];
      if (names.length > 1) qualified.push(names.join('.'));
      else columns.push(names[0].toLowerCase());
    }
    if (value.class === 'FUNCTION' || value.class === 'WINDOW') {
      const name = String(value.function_name as string).toLowerCase();
      functions.push(name);
      if (value.distinct === true) distinctAggregates.push(name);
    }
    if (value.class === 'WINDOW') window = true;
    if (value.class === 'SUBQUERY') subquery = true;
    for (const [field, child] of Object.entries(value)) if (field !== 'value') visit(child);
  };
  visit(tree);
  return { columns, qualified, functions, window, subquery, distinctAggregates };
}

/** The outermost aggregate calls of a tree (see AggregateCall). */
function aggregateCalls(tree: Node, aggregates: ReadonlySet<string>): AggregateCall[] {
  const out: AggregateCall[] = [];
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (!isNode(value)) return;
    const name = value.class === 'FUNCTION' ? String(value.function_name as string).toLowerCase() : '';
    if (!aggregates.has(name)) {
      for (const [field, child] of Object.entries(value)) if (field !== 'value') visit(child);
      return;
    }
    const filter = isNode(value.filter) ? value.filter : null;
    const counted = name === 'count' ? (value.children as Node[]).filter((c) => c.class === 'COLUMN_REF') : [];
    out.push({
      function: name,
      reads: valueReads([value.children, filter], new Set(counted)),
      pinned: filter === null ? [] : pinnedColumns(filter),
    });
  };
  visit(tree);
  return out;
}

/** The columns an expression reads the values of, less `skipped` nodes and IS [NOT] NULL operands (lower case). */
function valueReads(value: unknown, skipped: ReadonlySet<Node>): string[] {
  if (Array.isArray(value)) return value.flatMap((v) => valueReads(v, skipped));
  if (!isNode(value) || skipped.has(value)) return [];
  if (value.class === 'COLUMN_REF') return [(value.column_names as string[]).at(-1)!.toLowerCase()];
  const children = value.children as Node[] | undefined;
  if (
    (value.type === 'OPERATOR_IS_NULL' || value.type === 'OPERATOR_IS_NOT_NULL') &&
    children?.[0]?.class === 'COLUMN_REF'
  )
    return [];
  return Object.entries(value).flatMap(([field, child]) => (field === 'value' ? [] : valueReads(child, skipped)));
}

/**
 * The columns a condition holds to named values: `c = 'x'` and `c IN ('x', 'y')` hold c, an AND what any of its parts
 * holds, an OR what each of its parts holds.
 */
function pinnedColumns(node: Node): string[] {
  const name = (n: unknown): string | null =>
    isNode(n) && n.class === 'COLUMN_REF' ? (n.column_names as string[]).at(-1)!.toLowerCase() : null;
  const named = (n: unknown): boolean => isNode(n) && n.class === 'CONSTANT' && (n.value as Node).is_null === false;
  const children = (node.children as Node[] | undefined) ?? [];
  if (node.class === 'COMPARISON' && node.type === 'COMPARE_EQUAL') {
    const column = named(node.right) ? name(node.left) : named(node.left) ? name(node.right) : null;
    return column === null ? [] : [column];
  }
  if (node.type === 'COMPARE_IN') {
    const column = name(children[0]);
    return column !== null && children.slice(1).every(named) ? [column] : [];
  }
  if (node.class !== 'CONJUNCTION' || children.length === 0) return [];
  const parts = children.map(pinnedColumns);
  if (node.type === 'CONJUNCTION_AND') return [...new Set(parts.flat())];
  return node.type === 'CONJUNCTION_OR' ? parts[0].filter((c) => parts.every((p) => p.includes(c))) : [];
}

/** The tree without positions and aliases, names in lower case, property reads as one function. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (!isNode(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [field, child] of Object.entries(value)) {
    if (field === 'query_location' || field === 'alias' || field === 'is_operator') continue;
    out[field] = canonical(child);
  }
  if (value.class === 'COLUMN_REF') out.column_names = (value.column_names as string[]).map((n) => n.toLowerCase());
  if (value.class === 'FUNCTION') {
    // A property read keeps its tree with the key as its path (the form stored columns' names were hashed from).
    const read = propertyRead(value);
    out.function_name = read ? 'json property' : String(value.function_name as string).toLowerCase();
    const path = (out.children as Node[])[1];
    if (read) (out.children as Node[])[1] = { ...path, value: { ...(path.value as Node), value: read.key } };
  }
  return out;
}

function rootKind(tree: Node, type: string): ExpressionFacts['root'] {
  if (tree.class === 'COLUMN_REF') return 'column';
  const name = String((tree.function_name as string | undefined) ?? '').toLowerCase();
  if (tree.class === 'FUNCTION' && propertyReads.has(name) && (tree.children as unknown[]).length === 2)
    return 'property';
  if (type === 'VARCHAR' && (tree.class === 'CONSTANT' || tree.class === 'FUNCTION')) return 'string';
  return 'other';
}
