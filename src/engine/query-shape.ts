// What a SELECT reads, from DuckDB's own parse tree (json_serialize_sql): the relations it
// names, the table functions it calls (with their literal arguments) and the scalar and
// aggregate functions it uses. Statement routing and permission checks look at this,
// never at the SQL text.

/** A relation named in FROM: a table, a view, a CTE, or a file path (a replacement scan). */
export interface RelationRef {
  readonly catalog: string;
  readonly schema: string;
  readonly name: string;
  /** True when the name is a CTE in scope where it appears (a CTE shadows tables and views). */
  readonly cte: boolean;
}

/** A scalar or aggregate function call, with its qualifier as written. */
export interface FunctionCall {
  readonly name: string;
  readonly catalog: string;
  readonly schema: string;
  /** How many arguments it is called with, a method call's receiver included: age(x) reads the clock, age(a, b) does not. */
  readonly arguments: number;
  /** A method call's receiver (`ts` of `ts.age()`, which is age(ts)), as written; '' for any other call. */
  readonly receiver: string;
}

export interface TableFunctionCall {
  readonly name: string;
  /** Qualifier as written (`micromegas.admin.f` gives catalog micromegas, schema admin). */
  readonly catalog: string;
  readonly schema: string;
  /** Literal arguments, as DuckDB parsed them; null where an argument is not a constant. */
  readonly args: unknown[];
  /** The arguments' parse trees, for evaluating those that are constant expressions. */
  readonly argTrees: readonly Record<string, unknown>[];
}

/** A statement that is one scalar function call and nothing else: `SELECT f(...) [AS alias]`. */
export interface LoneCall extends TableFunctionCall {
  readonly alias: string;
}

export interface QueryShape {
  /** Number of statements in the text. */
  readonly statements: number;
  readonly relations: RelationRef[];
  readonly tableFunctions: TableFunctionCall[];
  /** Names of scalar and aggregate functions called anywhere. */
  readonly functions: Set<string>;
  /** The same calls with their qualifiers. */
  readonly functionCalls: FunctionCall[];
  /** SHOW statements that name no query (`SHOW TABLES`, `SHOW DATABASES`): what they list. */
  readonly catalogListings: string[];
  /** Bare column references (`current_timestamp` parses as one). */
  readonly columnNames: Set<string>;
  /**
   * For a statement that only selects columns from one table function (`SELECT * FROM f(...)`,
   * `SELECT msg FROM f(...)`: no WHERE, GROUP BY, ORDER BY, LIMIT, alias or CTE), its select list:
   * '*' or the column names. Undefined for any other statement.
   */
  readonly plainSelectList: '*' | readonly string[] | undefined;
  /** Set when the statement is a lone scalar call (micromegas's form of its admin functions). */
  readonly loneCall?: LoneCall;
}

type Node = Record<string, unknown>;

/**
 * Whether a call's qualifier is where DuckDB finds its own functions (`main.f()`, `system.f()`, `system.main.f()`),
 * or none. DuckDB binds another qualified call whose qualifier names a column as a method call of that column:
 * `ts.age()` is age(ts), `t.ts.age(x)` is age(t.ts, x). So is `pg_catalog.age()` over a column pg_catalog: that schema
 * holds only DuckDB's Postgres-compatibility functions, age not among them. (A macro an admin made in a schema of
 * their own is judged by its body: varying-functions.ts, withMacros.)
 */
export function builtInQualifier(catalog: string, schema: string): boolean {
  const [c, s] = [catalog.toLowerCase(), schema.toLowerCase()];
  if (s === '') return true;
  if (c === '') return s === 'main' || s === 'system';
  return c === 'system' && s === 'main';
}

/** Walks a json_serialize_sql tree. */
export function queryShape(tree: { statements: Node[] }): QueryShape {
  const shape: QueryShape = {
    statements: tree.statements.length,
    relations: [],
    tableFunctions: [],
    functions: new Set(),
    functionCalls: [],
    catalogListings: [],
    columnNames: new Set(),
    plainSelectList:
      tree.statements.length === 1 ? plainSelectList(tree.statements[0].node as Node | undefined) : undefined,
  };
  // CTE names in scope: a WITH's main query sees all its CTEs; each CTE's body sees those before
  // it, and itself only when it is recursive (otherwise its own name means the table).
  const visit = (value: unknown, ctes: ReadonlySet<string>): void => {
    if (Array.isArray(value)) {
      for (const item of value) visit(item, ctes);
      return;
    }
    if (value === null || typeof value !== 'object') return;
    const node = value as Node;
    const entries = ((node.cte_map as Node | undefined)?.map as Array<{ key: string; value: Node }> | undefined) ?? [];
    if (entries.length > 0) {
      const inScope = new Set(ctes);
      for (const entry of entries) {
        const body = (entry.value?.query as Node | undefined)?.node as Node | undefined;
        const recursive = body?.type === 'RECURSIVE_CTE_NODE';
        visit(entry.value, recursive ? new Set([...inScope, entry.key]) : inScope);
        inScope.add(entry.key);
      }
      const { cte_map: _definitions, ...rest } = node;
      visit(Object.values(rest), inScope);
      return;
    }
    if (node.type === 'BASE_TABLE') {
      const name = (node.table_name as string | undefined) ?? '';
      const catalog = (node.catalog_name as string | undefined) ?? '';
      const schema = (node.schema_name as string | undefined) ?? '';
      shape.relations.push({ catalog, schema, name, cte: catalog === '' && schema === '' && ctes.has(name) });
    } else if (node.type === 'SHOW_REF' && !node.query) {
      shape.catalogListings.push((node.table_name as string | undefined) ?? '');
    } else if (node.type === 'TABLE_FUNCTION') {
      const fn = node.function as Node;
      shape.tableFunctions.push({
        name: String(fn.function_name),
        catalog: (fn.catalog as string | undefined) ?? '',
        schema: (fn.schema as string | undefined) ?? '',
        args: ((fn.children as Node[]) ?? []).map(constantValue),
        argTrees: (fn.children as Node[]) ?? [],
      });
      visit(fn.children, ctes);
      return;
    } else if (node.class === 'FUNCTION') {
      shape.functions.add(String(node.function_name));
      const catalog = (node.catalog as string | undefined) ?? '';
      const schema = (node.schema as string | undefined) ?? '';
      const receiver = builtInQualifier(catalog, schema) ? '' : [catalog, schema].filter((q) => q !== '').join('.');
      shape.functionCalls.push({
        name: String(node.function_name),
        catalog,
        schema,
        arguments: ((node.children as unknown[] | undefined) ?? []).length + (receiver === '' ? 0 : 1),
        receiver,
      });
    } else if (node.class === 'COLUMN_REF') {
      const names = node.column_names as string[];
      if (names.length === 1) shape.columnNames.add(names[0].toLowerCase());
    }
    for (const child of Object.values(node)) visit(child, ctes);
  };
  visit(tree.statements, new Set());
  const loneCall = tree.statements.length === 1 ? loneCallOf(tree.statements[0]) : undefined;
  return loneCall ? { ...shape, loneCall } : shape;
}

function loneCallOf(statement: Node): LoneCall | undefined {
  const node = statement.node as Node | undefined;
  if (node?.type !== 'SELECT_NODE' || (node.from_table as Node | undefined)?.type !== 'EMPTY') return undefined;
  const list = node.select_list as Node[];
  if (
    list.length !== 1 ||
    list[0].class !== 'FUNCTION' ||
    node.where_clause ||
    (node.modifiers as unknown[]).length > 0
  )
    return undefined;
  const [call] = list;
  const children = (call.children as Node[]) ?? [];
  return {
    name: String(call.function_name),
    catalog: (call.catalog as string | undefined) ?? '',
    schema: (call.schema as string | undefined) ?? '',
    args: children.map(constantValue),
    argTrees: children,
    alias: (call.alias as string | undefined) ?? '',
  };
}

function plainSelectList(node: Node | undefined): '*' | string[] | undefined {
  if (node?.type !== 'SELECT_NODE' || (node.from_table as Node | undefined)?.type !== 'TABLE_FUNCTION')
    return undefined;
  const bare =
    node.where_clause === null &&
    node.having === null &&
    node.qualify === null &&
    node.sample === null &&
    (node.modifiers as unknown[]).length === 0 &&
    (node.group_expressions as unknown[]).length === 0 &&
    ((node.cte_map as Node).map as unknown[]).length === 0 &&
    (node.from_table as Node).alias === '';
  if (!bare) return undefined;
  const list = node.select_list as Node[];
  const isPlainStar = (e: Node): boolean =>
    e.class === 'STAR' &&
    e.relation_name === '' &&
    e.expr === null &&
    e.columns === false &&
    [e.exclude_list, e.replace_list, e.qualified_exclude_list, e.rename_list].every(
      (l) => (l as unknown[] | undefined)?.length !== undefined && (l as unknown[]).length === 0,
    );
  if (list.length === 1 && isPlainStar(list[0])) return '*';
  if (!list.every((e) => e.class === 'COLUMN_REF' && e.alias === '' && (e.column_names as string[]).length === 1))
    return undefined;
  return list.map((e) => (e.column_names as string[])[0].toLowerCase());
}

function constantValue(node: Node): unknown {
  // A literal with a cast (TIMESTAMP '2024-01-01', 3::BIGINT) counts as the literal.
  if (node.class === 'CAST') return constantValue(node.child as Node);
  if (node.class !== 'CONSTANT') return null;
  const value = node.value as { is_null: boolean; value: unknown };
  return value.is_null ? null : value.value;
}
