import type { Field } from 'apache-arrow';
import {
  clockProblem,
  queryShape,
  withMacros,
  type DuckDBEngine,
  type QueryShape,
  type Varying,
} from '../engine/index.js';
import { viewErrors } from './errors.js';
import { orreryFunctionKind } from './orrery-functions.js';
import type { ViewDefinition } from './view-definition.js';
import { mergeKeysOf } from './merge-keys.js';
import { emptyRelation, sessionStatements, withSource } from './view-session.js';
import { integerTypes, parseDelta, type ColumnSpec, type ViewSet } from './view-set.js';

// Everything CREATE MATERIALIZED VIEW checks before a definition is written, and what a
// server checks again when it loads one: the three queries are planned by DuckDB and
// inspected through DuckDB's own parse tree.

const fail = (message: string): never => {
  throw viewErrors.error('VIEW_DEFINITION_INVALID', message);
};

/** Placeholder values used when planning a query (any valid range will do). */
const sampleRange = (query: string): string =>
  query.replaceAll('{begin}', '2000-01-01T00:00:00.000000000Z').replaceAll('{end}', '2000-01-02T00:00:00.000000000Z');

const typeName = (field: Field): string => field.metadata.get('ARROW:FLIGHT:SQL:TYPE_NAME') ?? 'NULL';

/**
 * Checks a definition against DuckDB and the view sets it reads (`lookup`), and returns the
 * view set it defines, its schema inferred from the extract query.
 */
export async function buildViewSet(
  engine: DuckDBEngine,
  definition: ViewDefinition,
  lookup: (name: string) => ViewSet | undefined,
): Promise<ViewSet> {
  const { name } = definition;
  const extract = await inspect(engine, 'extract_query', definition.extractQuery);
  const count = await inspect(engine, 'count_src_query', definition.countQuery);
  const merge = await inspect(
    engine,
    'merge_partitions_query',
    definition.mergeQuery.replaceAll('{source}', '__source'),
  );
  if (!definition.countQuery.includes('{begin}') || !definition.countQuery.includes('{end}')) {
    fail('count_src_query must reference both {begin} and {end}');
  }
  if (!definition.mergeQuery.includes('{source}')) fail('merge_partitions_query must reference {source}');
  // The engine's macros are judged by what they call: an admin's may read the clock under any name.
  const varying = withMacros(await engine.functions());
  for (const [label, shape] of [
    ['extract_query', extract],
    ['count_src_query', count],
    ['merge_partitions_query', merge],
  ] as const) {
    checkFunctions(label, shape, varying);
  }

  const reads = readViews([extract, count], lookup);
  for (const view of reads) {
    if (view.name === name) fail(`${name} may not read itself`);
    if (definition.updateGroup <= view.updateGroup) {
      fail(
        `update_group ${definition.updateGroup} must be greater than the update_group of ${view.name} (${view.updateGroup}), which this definition reads`,
      );
    }
  }
  for (const view of readViews([count], lookup)) {
    if (view.source.kind === 'sql')
      fail(`count_src_query must count a raw source table such as blocks, not the materialized view ${view.name}`);
  }

  const setup = sessionStatements(
    reads.map((view) => ({ view, files: [] })),
    { kind: 'all' },
  );
  const columns = await plannedColumns(engine, 'extract_query', sampleRange(definition.extractQuery), setup);
  const countColumns = await plannedColumns(engine, 'count_src_query', sampleRange(definition.countQuery), setup);
  if (countColumns.length !== 1 || countColumns[0].name !== 'count' || !integerTypes.test(countColumns[0].type)) {
    fail(`count_src_query must return a single integer column named count, not (${describe(countColumns)})`);
  }
  const mergeColumns = await plannedColumns(
    engine,
    'merge_partitions_query',
    withSource(definition.mergeQuery, `(${emptyRelation(columns)})`),
    [],
  );
  checkMergeAgrees(columns, mergeColumns);
  const mergeKeys = await mergeKeysOf(engine, columns, merge.tree, extract.tree, setup);

  const audienceColumn = audienceColumnOf(columns);
  for (const [option, column] of [
    ['min_time_column', definition.minTimeColumn],
    ['max_time_column', definition.maxTimeColumn],
  ] as const) {
    const spec = columns.find((c) => c.name === column);
    if (!spec) fail(`${option} '${column}' is not a column of the extract query (${describe(columns)})`);
    if (spec!.type !== 'TIMESTAMP_NS')
      fail(`${option} '${column}' must be a nanosecond timestamp (TIMESTAMP_NS), not ${spec!.type}`);
  }
  for (const column of definition.mergeSortOrder ?? []) {
    if (!columns.some((c) => c.name === column))
      fail(`merge_sort_order column '${column}' is not a column of the extract query (${describe(columns)})`);
  }
  const sourceDelta =
    parseDelta(definition.sourcePartitionDelta) ??
    fail(`source_partition_delta '${definition.sourcePartitionDelta}' is not '<n> <unit>'`);
  const mergeDelta =
    parseDelta(definition.mergePartitionDelta) ??
    fail(`merge_partition_delta '${definition.mergePartitionDelta}' is not '<n> <unit>'`);
  return {
    name,
    updateGroup: definition.updateGroup,
    columns,
    minTimeColumn: definition.minTimeColumn,
    maxTimeColumn: definition.maxTimeColumn,
    audienceColumn,
    sourceDeltaSeconds: sourceDelta,
    mergeDeltaSeconds: mergeDelta,
    mergeQuery: definition.mergeQuery,
    mergeSortOrder: definition.mergeSortOrder,
    ...(mergeKeys ? { mergeKeys } : {}),
    source: {
      kind: 'sql',
      extractQuery: definition.extractQuery,
      countQuery: definition.countQuery,
      reads: reads.map((v) => v.name),
      extractReads: readViews([extract], lookup).map((v) => v.name),
    },
  };
}

/** The view sets a definition reads, for dependency checks on REPLACE and DROP. */
export function viewSetsRead(view: ViewSet): readonly string[] {
  return view.source.kind === 'sql' ? view.source.reads : [];
}

async function inspect(engine: DuckDBEngine, label: string, query: string): Promise<Inspected> {
  if (query.trim() === '') fail(`${label} is empty`);
  let tree;
  try {
    tree = await engine.parseSelect(sampleRange(query));
  } catch (error) {
    fail(`${label} does not parse: ${(error as Error).message}`);
  }
  if (!tree)
    fail(`${label} must be a SELECT: no DDL or DML (CREATE, COPY ... TO, INSERT, ...) inside a view definition`);
  const shape = queryShape(tree!);
  if (shape.statements !== 1) fail(`${label} must be a single SELECT statement`);
  return Object.assign(shape, { tree: tree! });
}

/** A query's shape and its parse tree. */
type Inspected = QueryShape & { tree: { statements: Record<string, unknown>[] } };

function checkFunctions(label: string, shape: QueryShape, varying: ReadonlyMap<string, Varying>): void {
  for (const fn of shape.functions) {
    // A random source or a sequence (clockProblem names the clock and the engine's state).
    if (varying.get(fn.toLowerCase()) === 'random')
      fail(`${label} calls ${fn}(), a volatile function: its result would be frozen into partitions`);
  }
  const clock = clockProblem(shape, 'partitions', varying);
  if (clock !== undefined) fail(`${label} ${clock}`);
  for (const call of shape.tableFunctions) {
    const kind = orreryFunctionKind(call.name);
    if (kind !== undefined && kind !== 'macro') {
      fail(
        `${label} calls ${call.name}(), an Orrery function answered per statement, which may not be stored in a view definition`,
      );
    }
  }
}

function readViews(shapes: readonly QueryShape[], lookup: (name: string) => ViewSet | undefined): ViewSet[] {
  const found = new Map<string, ViewSet>();
  for (const shape of shapes) {
    for (const relation of shape.relations) {
      if (relation.cte) continue;
      const view = lookup(relation.name);
      if (view) found.set(view.name, view);
    }
  }
  return [...found.values()];
}

async function plannedColumns(
  engine: DuckDBEngine,
  label: string,
  query: string,
  setup: string[],
): Promise<ColumnSpec[]> {
  try {
    const { schema } = await engine.describe(query, { setup });
    return schema.fields.map((field) => ({ name: field.name, type: typeName(field) }));
  } catch (error) {
    return fail(`${label} does not plan: ${(error as Error).message}`);
  }
}

/**
 * The merge output must match the extract schema in names, order and types. An integer
 * column summed back to a wider integer (DuckDB makes sum(BIGINT) a HUGEINT) is accepted:
 * users read it in the extract's type.
 */
function checkMergeAgrees(extract: ColumnSpec[], merge: ColumnSpec[]): void {
  const mismatch = (): never =>
    fail(
      `merge_partitions_query must return the extract query's columns in order (${describe(extract)}), not (${describe(merge)})`,
    );
  if (extract.length !== merge.length) mismatch();
  extract.forEach((column, i) => {
    const other = merge[i];
    if (column.name !== other.name) mismatch();
    if (column.type !== other.type && !(integerTypes.test(column.type) && integerTypes.test(other.type))) mismatch();
  });
}

function audienceColumnOf(columns: ColumnSpec[]): 'audience' | 'process_id' {
  for (const candidate of ['audience', 'process_id'] as const) {
    const column = columns.find((c) => c.name === candidate);
    if (!column) continue;
    if (column.type !== 'VARCHAR') fail(`column ${candidate} must be a string (VARCHAR), not ${column.type}`);
    return candidate;
  }
  return fail(
    `the extract query must return an audience or process_id column of a string type, so rows can be filtered by audience (columns: ${describe(columns)})`,
  );
}

const describe = (columns: readonly ColumnSpec[]): string => columns.map((c) => `${c.name} ${c.type}`).join(', ');
