// Skipping partitions by the indexes installed on a view set (issue 13), before any of their files is
// opened: a statement that reads a view set from a FROM (alone, or as a side of joins: then by the conjuncts
// of the WHERE and ON conditions that filter its rows naming its columns alone, qualified), and compares an indexed
// expression with constants in its WHERE (=, IN, <, <=, >, >=, BETWEEN, ANDed, or ORed: see conjunctionOf)
// or searches it for a constant text (ILIKE, LIKE, contains, starts_with, ends_with: a text index)
// does not read a partition whose statistics show none of its rows can pass. The comparisons are
// DuckDB's own, run over the statistics cast back to the indexed type, so a partition is skipped only
// when the statement's WHERE would drop every one of its rows: answers never change. Audience
// filtering is untouched (it filters the rows of the partitions that remain), and a reader's statement
// decides by the statistics of its audiences' rows alone (see statisticsOf): what it skips and reads,
// and so its time, tell nothing of another audience's rows. A set's event-time column (log_entries' time; a
// span's begin from above and end from below) is decided so without an index, by the event-time bounds the
// catalog keeps of each partition (see
// eventTimeIndexes), as the request's event range is for every key. The set may be read in a
// CTE or a subquery (the WHEREs of the SELECTs enclosing it count too while the subqueries pass its rows
// through: see passesThrough), the constants may be the statement's bound parameters, and a bound may be
// written with the clock (`time > now() - INTERVAL 1 day`, `time < now()`): in a statement that runs in a
// transaction of its own, now() is fixed once per statement, the value pruning compared, and the statement
// runs with it (see fixedClock: Orrery's clock macros read it, the statement's text unchanged); otherwise only a
// lower bound is read, its value when pruning no later than when running. A bound of the fixed clock on the event time is compared in JS (see byStatistics): its value, and
// so DuckDB's condition, is new at each statement.
import type { Table } from 'apache-arrow';
import {
  boundTexts,
  clockMacroFunctions,
  clockMacroKeywords,
  clockWordMacros,
  nanosecondTimestamps,
  queryShape,
  varyingRead,
  type DuckDBEngine,
  type QueryShape,
} from '../engine/index.js';
import {
  projectionCopies,
  recentColumns,
  recentIndexes,
  recentProjections,
  bothOf,
  copyRange,
  decodePostings,
  eitherOf,
  mayContain,
  mayHold,
  partitionStatistics,
  audienceStatistics,
  rowCount,
  rowsMatching,
  asciiRuns,
  searchedTrigrams,
  tokensOf,
  storedBy,
  type Postings,
  type InstalledIndex,
  type PartitionStatistics,
} from '../resources/index.js';
import { callNode, castNode, expressionKey, isClock, isCurrentDate, ownNames, qualifierOf } from '../rollups/index.js';
import {
  passesRowsThrough,
  quoteIdentifier,
  quoteLiteral,
  type CopyRead,
  type RowsToRead,
  type ViewSet,
} from '../views/index.js';
import type { MetadataQueries } from '../metadata/index.js';
import { nanosToPg, type Partition } from '../lakehouse/index.js';
import { newestFirst, type NewestFirstRead, type TopNBound } from './newest-first.js';

export type Node = Record<string, unknown>;
export type Tree = { statements: Node[] };

/** One statement as the readers of installed resources see it: its parse tree and shape, and where to look. */
export interface Statement {
  readonly db: MetadataQueries;
  readonly engine: DuckDBEngine;
  readonly tree: Tree;
  /** The SQL the tree was parsed from (its nodes' query_location are UTF-8 offsets into it). */
  readonly text?: string;
  readonly shape: QueryShape;
  readonly viewOf: (name: string) => ViewSet | undefined;
  /** The statement's bound parameters (each row is one run over the same files). */
  readonly parameters?: Table;
  /** Whether the statement runs in a transaction of its own, begun after pruning (its now() is no earlier). */
  readonly ownTransaction?: boolean;
  /** The audiences whose rows the statement may read (a reader's); undefined: every row (an admin's). */
  readonly audiences?: readonly string[];
  /** Whether a latest-n top-N may read its newest partitions alone, bounded (see TopNBound): a run's first plan. */
  readonly boundTopN?: boolean;
}

/** What pruning did for one view set: for the provenance of an admin's result. */
export interface PartitionsRead {
  readonly table: string;
  readonly partitions: number;
  readonly skipped: number;
  /** The index entries that decided, by key. */
  readonly indexes: string[];
}

/** A partition an index's statistics skipped: for explain_resources, an admin's. */
export interface PrunedPartition {
  readonly table: string;
  /** The partition's object key, as list_partitions() names it. */
  readonly partition: string;
  /** The index entry that skipped it (the first that did). */
  readonly index: string;
}

/** The rows a text index's postings left a statement to read of a set's partitions: for the provenance of an admin's result. */
export interface RowsRead {
  readonly table: string;
  /** The partitions read in part, their rows, and the rows read of them. */
  readonly partitions: number;
  readonly rows: number;
  readonly read: number;
  readonly index: string;
  /** Of those partitions, the ones whose rows were read from the text index's copies (see copyReads). */
  readonly copies: number;
}

/**
 * The rows of a file that may pass, as a bitmap of its `total` rows, by the text index `index` (see matching),
 * and statistics of one text index whose postings list each of them (one per audience read), or null.
 */
interface Matching {
  readonly rows: Uint8Array;
  readonly index: string;
  readonly total: number;
  readonly listedBy: readonly PartitionStatistics[] | null;
  /** The searches' runs the rows were found by (their tokens list every row). */
  readonly runs: readonly string[];
}

/**
 * Where a file's rows (`count` of them) are in the copies of the text index statistics listing them (see
 * copyRange): null when one of them has no copy, or lists not every row.
 */
function copyReads(
  listedBy: readonly PartitionStatistics[],
  rows: Uint8Array,
  count: number,
  runs: readonly string[],
): CopyRead[] | null {
  const left = rows.slice();
  const reads: CopyRead[] = [];
  // Each row found is cleared from `left`, so every row is found when as many are as there were.
  let found = 0;
  for (const { postings, copy } of listedBy) {
    const decoded = postings && postingsOf(postings);
    if (!decoded || copy === null) return null;
    const range = copyRange(decoded, left, runs);
    if (!range) continue;
    reads.push({ file: copy, ...range });
    found += range.bits ? rowCount(range.bits) : range.to - range.from + 1;
  }
  return found === count ? reads : null;
}

/** A projection a statement read in place of a set's partition files: for the provenance of an admin's result. */
export interface ProjectionRead {
  readonly table: string;
  readonly projection: string;
}

/** A WHERE conjunct an index can decide: the indexed side and the conjunct with it on the left. */
interface Restriction {
  readonly expression: Node;
  /** `=`, `<`, `<=`, `>`, `>=` (COMPARE_* types), `between` or `in`, over constants. */
  readonly op: string;
  readonly constants: Node[];
  readonly conjunct: Node;
}

/** A WHERE conjunct a text index can decide: a substring search of the indexed side, by the trigrams a match holds. */
interface Search {
  readonly expression: Node;
  /** Its runs of letters, digits and marks (see asciiRuns), and their trigrams. */
  readonly runs: string[];
  readonly trigrams: string[];
}

/** The functions (and LIKE's, ILIKE's operators) true only of a value holding their constant's text, or a match of it. */
const substringSearches = new Set(['~~', '~~*', 'contains', 'starts_with', 'ends_with', 'prefix', 'suffix']);

/** Whether a statement calls a substring search anywhere (what a text index may decide: see searchOf). */
export function searchesText(tree: Tree): boolean {
  const visit = (value: unknown): boolean => {
    if (Array.isArray(value)) return value.some(visit);
    if (value === null || typeof value !== 'object') return false;
    const node = value as Node;
    if (node.class === 'FUNCTION' && substringSearches.has(node.function_name as string)) return true;
    return Object.values(node).some(visit);
  };
  return visit(tree.statements);
}

function searchOf(conjunct: Node, bindings: Bindings): Search | null {
  if (
    conjunct.class !== 'FUNCTION' ||
    conjunct.schema !== '' ||
    !substringSearches.has(conjunct.function_name as string)
  )
    return null;
  const [subject, searched, ...rest] = conjunct.children as Node[];
  const text =
    searched?.class === 'PARAMETER'
      ? bindings.texts.get(String(searched.identifier))
      : searched?.class === 'CONSTANT' && (searched.value as Node).is_null === false
        ? ((searched.value as Node).type as Node).id === 'VARCHAR' && String((searched.value as Node).value)
        : undefined;
  if (rest.length > 0 || typeof text !== 'string' || isConstant(subject) || subject.class === 'PARAMETER') return null;
  const runs = asciiRuns(text) ?? searchedRuns.get(text);
  if (!runs) bindings.untokenized?.add(text);
  return runs && runs.length > 0 ? { expression: subject, runs, trigrams: searchedTrigrams(runs) } : null;
}

const flipped: Record<string, string> = {
  COMPARE_EQUAL: 'COMPARE_EQUAL',
  COMPARE_LESSTHAN: 'COMPARE_GREATERTHAN',
  COMPARE_LESSTHANOREQUALTO: 'COMPARE_GREATERTHANOREQUALTO',
  COMPARE_GREATERTHAN: 'COMPARE_LESSTHAN',
  COMPARE_GREATERTHANOREQUALTO: 'COMPARE_LESSTHANOREQUALTO',
};

/** A literal, or casts of one: the same value whenever it is evaluated (no now(), no random()). */
const isConstant = (node: Node | undefined): boolean =>
  node?.class === 'CONSTANT' || (node?.class === 'CAST' && isConstant(node.child as Node));

/** Deterministic functions of constants an interval is written with (`INTERVAL 1 DAY` is to_days(...)). */
const constantFunctions = new Set([
  'to_years',
  'to_months',
  'to_weeks',
  'to_days',
  'to_hours',
  'to_minutes',
  'to_seconds',
  'to_milliseconds',
  'to_microseconds',
  'trunc',
  '+',
  '-',
  '*',
]);
const isCall = (node: Node, names: ReadonlySet<string>): boolean =>
  node.class === 'FUNCTION' &&
  node.schema === '' &&
  node.catalog === '' &&
  node.filter === null &&
  names.has(String(node.function_name));
const isFixed = (node: Node): boolean =>
  isConstant(node) ||
  (node.class === 'CAST' && isFixed(node.child as Node)) ||
  (isCall(node, constantFunctions) && (node.children as Node[]).every(isFixed));

/**
 * The clock functions that read the statement's fixed clock, called by their names: Orrery's clock macros, and
 * DuckDB's macros of `current_timestamp` (ago()), which DuckDB binds to Orrery's get_current_timestamp(). Any other
 * read of the clock is DuckDB's (its own functions and bare words, a macro's name called in a catalog such as
 * `system.main.now()`, age(x), x's age on DuckDB's date, which the fixed clock's date may not be: a statement
 * planned before midnight and run after it): a statement making one keeps its clock as DuckDB reads it (fixing now()
 * alone would give it two nows).
 */
const fixedClockFunctions: ReadonlySet<string> = new Set([...clockMacroFunctions, ...clockWordMacros]);

/** The bare names DuckDB binds to the clock when nothing else has them (Orrery's get_current_timestamp(), current_date()). */
const clockNames = clockMacroKeywords;

/** Whether the bare clock names may be the statement's own (see clockNamesShadowed), by tree. */
const shadowedNames = new WeakMap<Tree, boolean>();

/**
 * Whether `current_timestamp` or `current_date` may bind to something other than the clock in a statement. DuckDB
 * binds a bare name to the clock only when the SELECT it is in has nothing of that name: a column of a relation of
 * its FROM, a select alias, a table alias, an enclosing lambda's parameter; the clock comes before a column of an
 * enclosing SELECT's (a correlated name). So the names are the clock only when: no name or alias of that spelling is
 * anywhere but as a bare name (a lambda's parameter even so), no relation read has such a column (nor is a series
 * table or a table function, whose columns are not known here), and each bare name is in a SELECT whose FROM is none
 * or view sets alone (`inKnownScope`): a subquery's, a CTE's or a set operation's columns may be named by data (a
 * struct's fields from json_transform's text, COLUMNS(…) renamed by a pattern), which only DuckDB's binder knows.
 */
function clockNamesShadowed(statement: Statement): boolean {
  const { tree, shape, viewOf } = statement;
  if (!shadowedNames.has(tree)) {
    let shadowed =
      shape.tableFunctions.length > 0 ||
      shape.relations.some((r) => {
        if (r.cte) return false;
        const view = viewOf(r.name);
        return !view || view.columns.some((c) => clockNames.has(c.name.toLowerCase()));
      });
    // The query nodes (SELECT, set operation, CTE) each bare name is in, and the statement's CTE names.
    const [scopes, ctes] = [new Set<Node>(), new Set<string>()];
    // `parameter`: under a lambda's parameters (`lambda current_date: ...`), whose bare names bind those of its body.
    const visit = (value: unknown, key: string, parameter: boolean, scope: Node | null): void => {
      if (shadowed || value === null || typeof value !== 'object') {
        shadowed ||= typeof value === 'string' && key !== 'function_name' && clockNames.has(value.toLowerCase());
        return;
      }
      if (Array.isArray(value)) return value.forEach((v) => visit(v, key, parameter, scope));
      const node = value as Node;
      const bare = !parameter && node.class === 'COLUMN_REF' && (node.column_names as string[]).length === 1;
      if (bare && clockNames.has((node.column_names as string[])[0].toLowerCase())) scopes.add(scope ?? node);
      for (const { key: name } of ((node.cte_map as Node | undefined)?.map as Array<{ key: string }> | undefined) ?? [])
        ctes.add(name.toLowerCase());
      const within = node.class === undefined && queryNodes.has(String(node.type)) ? node : scope;
      for (const [k, v] of Object.entries(node))
        if (!(bare && k === 'column_names')) visit(v, k, parameter || (node.class === 'LAMBDA' && k === 'lhs'), within);
    };
    visit(tree.statements, '', false, null);
    shadowed ||= [...scopes].some((scope) => !inKnownScope(scope, ctes, viewOf));
    shadowedNames.set(tree, shadowed);
  }
  return shadowedNames.get(tree)!;
}

/** The parse tree's query nodes: each binds the bare names of its clauses in a scope of its own. */
const queryNodes = new Set(['SELECT_NODE', 'SET_OPERATION_NODE', 'RECURSIVE_CTE_NODE', 'CTE_NODE']);

/**
 * Whether a query node is a SELECT whose FROM is none, or view sets alone (joined or not) as the session's views
 * name them, under no column aliases and no CTE's name, with no column of a clock name, or subqueries such a SELECT
 * is of, listing columns and `*` alone (COLUMN_REF: its name, or its alias); and whose list expands no
 * `*` but the FROM's relations' (COLUMNS(…) may rename what it expands by a pattern, `s.*` expands a struct's fields,
 * and the WHERE reads those names as aliases): the names it binds are then the sets' columns and visible aliases.
 */
function inKnownScope(scope: Node, ctes: ReadonlySet<string>, viewOf: (name: string) => ViewSet | undefined): boolean {
  if (scope.type !== 'SELECT_NODE') return false;
  const qualifiers = new Set<string>();
  const known = (from: Node): boolean => {
    if (from.type === 'EMPTY') return true;
    if (from.type === 'JOIN') return known(from.left as Node) && known(from.right as Node);
    if ((from.column_name_alias as unknown[] | undefined)?.length) return false;
    // A subquery listing its FROM's columns and `*` alone hands on names of the sets' columns (or aliases).
    if (from.type === 'SUBQUERY') {
      const node = (from.subquery as Node).node as Node;
      if (typeof from.alias === 'string' && from.alias) qualifiers.add(from.alias.toLowerCase());
      return (
        inKnownScope(node, ctes, viewOf) &&
        (node.select_list as Node[]).every((item) => item.class === 'STAR' || item.class === 'COLUMN_REF')
      );
    }
    if (from.type !== 'BASE_TABLE' || !namesSessionView(from)) return false;
    const view = ctes.has(String(from.table_name).toLowerCase()) ? undefined : viewOf(String(from.table_name));
    qualifiersOf(from).forEach((q) => qualifiers.add(q));
    return view !== undefined && !view.columns.some((c) => clockNames.has(c.name.toLowerCase()));
  };
  // A `*` anywhere in an item (`max(COLUMNS(…)) AS '…'` renames too). REPLACE and RENAME name what the statement
  // writes, which the bare names' search reads (clockNamesShadowed).
  return known(scope.from_table as Node) && !starMayName(scope.select_list, qualifiers, false);
}

/**
 * Whether an expression holds a `*` that may name something other than its FROM's relations' columns (those of
 * `qualifiers`, or all for a bare `*`): COLUMNS(…) (renamed by a pattern, `COLUMNS('^(t)arget$') AS '\1ime'`), a
 * struct's fields (`s.*`), and with `replaces` REPLACE and RENAME (another value under a column's name, a column
 * under another). Only DuckDB's binder knows those names; a WHERE or an ORDER BY may read one.
 */
export function starMayName(value: unknown, qualifiers: ReadonlySet<string>, replaces: boolean): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (Array.isArray(value)) return value.some((v) => starMayName(v, qualifiers, replaces));
  const node = value as Node;
  if (node.class !== 'STAR') return Object.values(node).some((v) => starMayName(v, qualifiers, replaces));
  const relation = String(node.relation_name).toLowerCase();
  return (
    node.columns !== false ||
    node.expr !== null ||
    (relation !== '' && !qualifiers.has(relation)) ||
    (replaces && ((node.replace_list as unknown[]).length > 0 || (node.rename_list as unknown[]).length > 0))
  );
}

/**
 * A read of the clock the statement's now() is fixed for: now(), get_current_timestamp(), transaction_timestamp()
 * and, unless the statement may bind the name otherwise (`names` false: see clockNamesShadowed), a bare
 * `current_timestamp`, Orrery's get_current_timestamp() (a UTC TIMESTAMP_NS, as now()).
 */
const readsClock = (node: Node, names = true): boolean => isClock(node) && (names || node.class === 'FUNCTION');

/** The clock's UTC date (current_date, current_date(), today()), as readsClock the bare name: its DATE. */
const readsDate = (node: Node, names = true): boolean => isCurrentDate(node) && (names || node.class === 'FUNCTION');

/**
 * The constant now() is read as in a statement that runs in a transaction of its own, when nothing else in
 * it reads the clock: now() at planning (a statement's now() is one value, the start of its transaction,
 * which follows its planning by the time to its run). Null otherwise. Orrery's now() is a UTC TIMESTAMP_NS.
 * Fixed, it is the value of every read of the clock DuckDB binds to Orrery's clock macros (a bare current_date
 * too, where DuckDB binds it so; a column of that name stays a column): the statement runs as written.
 */
function fixedClock(statement: Statement): Node | null {
  if (statement.ownTransaction !== true) return null;
  if (varyingRead(queryShape(statement.tree), { state: false, read: fixedClockFunctions }) !== undefined) return null;
  const now = new Date().toISOString().replace('T', ' ').replace('Z', '');
  const text = { type: { id: 'VARCHAR', type_info: null }, is_null: false, value: now };
  return castNode(
    { class: 'CONSTANT', type: 'VALUE_CONSTANT', alias: '', value: text },
    { id: 'TIMESTAMP_NS', type_info: null },
  );
}

/** Constants written with the statement's fixed clock: never kept as decisions (the next statement's clock differs). */
const clockConstants = new WeakSet<Node>();

/** A copy of an expression with each read of the clock replaced by `clock` (the date by its DATE): its value. */
function withClock(value: unknown, clock: Node): unknown {
  if (Array.isArray(value)) return value.map((v) => withClock(v, clock));
  if (value === null || typeof value !== 'object') return value;
  const node = value as Node;
  if (readsClock(node) || readsDate(node)) {
    const fixed = structuredClone(clock);
    clockConstants.add(fixed);
    const read = readsClock(node) ? fixed : castNode(fixed, { id: 'DATE', type_info: null });
    clockConstants.add(read);
    return read;
  }
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withClock(v, clock)]));
}

/** Whether a fixed expression holds the fixed clock (withClock's constants). */
const holdsClock = (node: Node): boolean =>
  clockConstants.has(node) ||
  (node.class === 'CAST' && holdsClock(node.child as Node)) ||
  ((node.children as Node[] | undefined) ?? []).some(holdsClock);

/** The types a cast of a rising value to keeps it rising: timestamps without a zone, coarser ones rounding alike. */
const risingCasts = /^(TIMESTAMP_NS|TIMESTAMP|TIMESTAMP_MS|TIMESTAMP_S|DATE)$/;

/**
 * An expression of the clock that never falls as the clock rises: now() (or the date: see readsClock, readsDate),
 * now() plus or minus a fixed value, and a cast of one to a timestamp type (`(now() - INTERVAL 5
 * MINUTE)::TIMESTAMP_NS`, as dashboards write). `names`: whether the bare clock names are the clock.
 */
function rises(node: Node, names: boolean): boolean {
  if (node.class === 'CAST') {
    const type = node.cast_type as Node;
    return node.try_cast !== true && risingCasts.test(String(type.id)) && rises(node.child as Node, names);
  }
  if (readsClock(node, names) || readsDate(node, names)) return true;
  const [left, right, ...rest] = (node.children as Node[] | undefined) ?? [];
  if (rest.length > 0 || right === undefined) return false;
  if (isCall(node, new Set(['-']))) return rises(left, names) && isFixed(right);
  if (isCall(node, new Set(['+'])))
    return (rises(left, names) && isFixed(right)) || (isFixed(left) && rises(right, names));
  return false;
}

/** What a statement's WHERE is read with: its bound parameters, and whether its clock is read at or after pruning. */
interface Bindings {
  /** `$n`'s value as a constant node (its text cast to the type it is bound as), by n. */
  readonly parameters: ReadonlyMap<string, Node>;
  /** `$n`'s value when it is bound as text. */
  readonly texts: ReadonlyMap<string, string>;
  readonly risingClock: boolean;
  /** Whether the bare names `current_timestamp` and `current_date` read the clock (see clockNamesShadowed). */
  readonly clockNames: boolean;
  /** The constant the statement's now() is fixed to (see fixedClock), or null. */
  readonly clock: Node | null;
  /** Where the searched texts whose runs DuckDB has not found yet are listed (see searchedRuns); such a search decides nothing. */
  readonly untokenized?: Set<string>;
}

/** The type each parameter's constant node is bound as (see compatible). */
const boundTypes = new WeakMap<Node, string>();

/**
 * One row of a statement's bound parameters (a run): `$n`'s value as a constant node (its text cast to the type it
 * is bound as, which compares as the bound parameter does) and, bound as text, its text, by n. NULL or a blob is
 * left out.
 */
export function boundParameters(
  parameters: Table | undefined,
  row: number,
): { nodes: Map<string, Node>; texts: Map<string, string> } {
  const [nodes, texts] = [new Map<string, Node>(), new Map<string, string>()];
  if (parameters && row < parameters.numRows)
    for (const [i, bound] of boundTexts(parameters, row).entries()) {
      if (!bound) continue;
      const value = { type: { id: 'VARCHAR', type_info: null }, is_null: false, value: bound.text };
      const node = castNode(
        { class: 'CONSTANT', type: 'VALUE_CONSTANT', alias: '', value },
        { id: bound.type, type_info: null },
      );
      boundTypes.set(node, bound.type);
      nodes.set(String(i + 1), node);
      if (bound.type === 'VARCHAR') texts.set(String(i + 1), bound.text);
    }
  return { nodes, texts };
}

/** A statement's bindings for one row of its parameters (a run); NULL or a blob is not bound here. */
function bindingsOf(statement: Statement, row: number, clock: Node | null, untokenized?: Set<string>): Bindings {
  const { nodes: parameters, texts } = boundParameters(statement.parameters, row);
  const clockNames = !clockNamesShadowed(statement);
  return { parameters, texts, risingClock: statement.ownTransaction === true, clockNames, clock, untokenized };
}

/**
 * Whether a parameter bound as `bound` compares with an indexed value of type `indexed` as its text cast to
 * `bound` does: DuckDB casts a parameter to the type the comparison gives it (the indexed one), which keeps
 * the value only for the same type, or an integer for an integer type.
 */
const compatible = (bound: string, indexed: string): boolean =>
  bound === indexed || (bound === 'BIGINT' && integerTypes.test(indexed));

/**
 * A restriction's constant side: a constant, a deterministic function of constants (`TIMESTAMP '…' + INTERVAL 1
 * HOUR`: the same value when pruning and when running), or a bound parameter's value; null otherwise (a value of
 * the fixed clock is clockBound's).
 */
function constantOf(node: Node, bindings: Bindings): Node | null {
  if (node.class === 'PARAMETER') return bindings.parameters.get(String(node.identifier)) ?? null;
  return isFixed(node) && !holdsClock(node) ? node : null;
}

function conjuncts(node: Node): Node[] {
  return node.class === 'CONJUNCTION' && node.type === 'CONJUNCTION_AND'
    ? (node.children as Node[]).flatMap(conjuncts)
    : [node];
}

/** Lower bounds: a value that rises with the clock bounds them no higher when pruning than when running. */
const lowerBounds = new Set(['COMPARE_GREATERTHAN', 'COMPARE_GREATERTHANOREQUALTO']);

/** The side a restriction restricts: not a constant, not a parameter. */
const isSubject = (node: Node): boolean => !isConstant(node) && node.class !== 'PARAMETER';

/** A restriction, its conjunct written with the constants (bound parameters' values) it is decided by. */
function restrictionOf(conjunct: Node, bindings: Bindings): Restriction | null {
  if (conjunct.class === 'COMPARISON' && (conjunct.type as string) in flipped) {
    const sides: Array<[Node, Node, string]> = [
      [conjunct.left as Node, conjunct.right as Node, conjunct.type as string],
      [conjunct.right as Node, conjunct.left as Node, flipped[conjunct.type as string]],
    ];
    for (const [expression, other, op] of sides) {
      if (!isSubject(expression)) continue;
      const constant = constantOf(other, bindings) ?? clockBound(other, op, bindings);
      if (constant) return { expression, op, constants: [constant], conjunct };
    }
    return null;
  }
  if (conjunct.class === 'BETWEEN') {
    const [lower, upper] = [
      constantOf(conjunct.lower as Node, bindings) ??
        clockBound(conjunct.lower as Node, 'COMPARE_GREATERTHANOREQUALTO', bindings),
      constantOf(conjunct.upper as Node, bindings) ??
        clockBound(conjunct.upper as Node, 'COMPARE_LESSTHANOREQUALTO', bindings),
    ];
    return lower && upper && isSubject(conjunct.input as Node)
      ? { expression: conjunct.input as Node, op: 'between', constants: [lower, upper], conjunct }
      : null;
  }
  if (conjunct.class === 'OPERATOR' && conjunct.type === 'COMPARE_IN') {
    const [first, ...rest] = conjunct.children as Node[];
    const constants = rest.map((c) => constantOf(c, bindings));
    return constants.every((c) => c !== null) && isSubject(first)
      ? { expression: first, op: 'in', constants, conjunct }
      : null;
  }
  return null;
}

/**
 * A bound written with the clock (now() plus or minus a fixed value) as pruning reads it: with the statement's
 * clock fixed, that value (a constant); otherwise, as a lower bound only, the expression itself (its value when
 * pruning is no later than when running). Null when it cannot be read.
 */
function clockBound(node: Node, op: string, bindings: Bindings): Node | null {
  if (bindings.clock && isFixed(node) && holdsClock(node)) {
    clockConstants.add(node);
    return node;
  }
  if (!rises(node, bindings.clockNames)) return null;
  if (bindings.clock) {
    const fixed = withClock(node, bindings.clock) as Node;
    clockConstants.add(fixed);
    return fixed;
  }
  return bindings.risingClock && lowerBounds.has(op) ? node : null;
}

/**
 * The SELECT node of a statement that reads a view set's rows as its partitions hold them: one SELECT
 * whose FROM is the set alone (no join, sample or time travel), the set named nowhere else in the
 * statement (every reference reads the same partitions), and a merge query that passes rows through
 * (a merging set's rows are not its partitions' rows). With the name its columns are qualified by.
 */
export function readsAlone(
  tree: Tree,
  shape: QueryShape,
  view: ViewSet,
  viewOf: (name: string) => ViewSet | undefined,
): { node: Node; qualifiers: ReadonlySet<string> } | null {
  if (!readOnce(tree, shape, view, viewOf)) return null;
  const node = tree.statements[0].node as Node;
  const ctes = ((node.cte_map as Node | undefined)?.map as Array<{ key: string }> | undefined) ?? [];
  const reader = readerOf(node, view, viewOf);
  return reader && !ctes.some((c) => viewOf(c.key) === view) ? reader : null;
}

/** One statement that names a set whose merge query passes rows through once (see readsAlone). */
const readOnce = (tree: Tree, shape: QueryShape, view: ViewSet, viewOf: (name: string) => ViewSet | undefined) =>
  tree.statements.length === 1 &&
  passesRowsThrough(view) &&
  shape.relations.filter((r) => !r.cte && viewOf(r.name) === view).length === 1;

/**
 * Whether a table reference's catalog and schema are where DuckDB finds a set's session view (a temporary view):
 * none, `main`, `temp` or `temp.main` (`orrery.main` is the user catalog's, where no set is).
 */
const namesSessionView = (table: Node): boolean =>
  sessionQualifiers.has(`${String(table.catalog_name)}.${String(table.schema_name)}`.toLowerCase());
const sessionQualifiers = new Set(['.', '.main', '.temp', 'temp.main']);

/**
 * The qualifiers of a session view's table reference in column names (see ownNames): its alias, or its name and
 * each longer spelling of it (`main.log_entries.msg`, `temp.log_entries.msg`, `temp.main.log_entries.msg`): DuckDB
 * binds a name to the reference of that catalog, schema and table before it reads one as a column's struct field,
 * so such a name is the set's column wherever a name qualified by the table's is.
 */
function qualifiersOf(table: Node): ReadonlySet<string> {
  if (typeof table.alias === 'string' && table.alias) return new Set([table.alias.toLowerCase()]);
  const name = String(table.table_name).toLowerCase();
  return new Set([name, ...[['main'], ['temp'], ['temp', 'main']].map((q) => qualifierOf([...q, name]))]);
}

/** A SELECT whose FROM is the set alone (no join, sample, time travel or column aliases), with the name its columns are qualified by. */
function readerOf(node: Node | undefined, view: ViewSet, viewOf: (name: string) => ViewSet | undefined): Level | null {
  const from = node?.from_table as Node | undefined;
  if (node?.type !== 'SELECT_NODE' || node.sample || from?.type !== 'BASE_TABLE') return null;
  if (!namesSessionView(from) || from.sample || from.at_clause) return null;
  // Column aliases (`FROM log_entries AS l(a, b)`) rename the set's columns: a name no longer means its column.
  if ((from.column_name_alias as unknown[] | undefined)?.length) return null;
  const name = String(from.table_name);
  if (viewOf(name) !== view) return null;
  return { node, qualifiers: qualifiersOf(from) };
}

/**
 * The SELECTs that read a set, wherever they are in the statement (its body, a CTE's, a subquery), one per
 * table reference naming it: as readsAlone, but each reference may be in any SELECT, whose WHERE then filters
 * every row the statement reads of it through that reference, or a side of a SELECT's joins, whose rows its
 * WHERE (when the joins keep them whole) and ON conditions filter (see joinedReader; nothing filters the right
 * of an ASOF join). None when a reference is neither (a POSITIONAL join's), or a CTE anywhere has the set's name
 * (a reference might mean either).
 */
function readingSelects(
  tree: Tree,
  shape: QueryShape,
  view: ViewSet,
  viewOf: (name: string) => ViewSet | undefined,
): Array<Level & { outer: Level[] }> | null {
  const named = shape.relations.filter((r) => !r.cte && viewOf(r.name) === view).length;
  if (tree.statements.length !== 1 || !passesRowsThrough(view) || named === 0) return null;
  const [tables, selects] = [[] as Node[], [] as Node[]];
  // Each SELECT whose FROM is a subquery alone, or the one reference of a CTE, by the subquery's (CTE's) SELECT.
  const enclosing = new Map<Node, Node>();
  // Each CTE's SELECT by its name (null: named twice, or renaming its columns), and how often each name is read.
  const [ctesByName, references] = [new Map<string, Node | null>(), new Map<string, number>()];
  let shadowed = false;
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (value === null || typeof value !== 'object') return;
    const node = value as Node;
    if (node.type === 'BASE_TABLE' && viewOf(String(node.table_name)) === view) tables.push(node);
    if (node.type === 'BASE_TABLE' && node.schema_name === '' && node.catalog_name === '') {
      const name = String(node.table_name).toLowerCase();
      references.set(name, (references.get(name) ?? 0) + 1);
    }
    if (node.type === 'SELECT_NODE') selects.push(node);
    const from = node.from_table as Node | undefined;
    if (node.type === 'SELECT_NODE' && from?.type === 'SUBQUERY')
      enclosing.set((from.subquery as Node).node as Node, node);
    const ctes = ((node.cte_map as Node | undefined)?.map as Array<{ key: string; value: Node }> | undefined) ?? [];
    shadowed ||= ctes.some((c) => viewOf(c.key) === view);
    for (const { key, value: cte } of ctes) {
      const renames = (cte.aliases as unknown[] | undefined)?.length !== 0;
      ctesByName.set(
        key.toLowerCase(),
        ctesByName.has(key.toLowerCase()) || renames ? null : ((cte.query as Node).node as Node),
      );
    }
    Object.values(node).forEach(visit);
  };
  visit(tree.statements[0]);
  if (shadowed || tables.length !== named) return null;
  // A CTE read once, by a SELECT whose FROM is it alone: that SELECT's WHERE filters every row the CTE hands on.
  for (const select of selects) {
    const from = select.from_table as Node;
    const name = from?.type === 'BASE_TABLE' ? String(from.table_name).toLowerCase() : '';
    const cte = ctesByName.get(name);
    if (cte && references.get(name) === 1 && from.schema_name === '' && from.catalog_name === '' && !from.at_clause)
      enclosing.set(cte, select);
  }
  const readers = tables.map((table) => {
    const alone = selects.find((s) => s.from_table === table);
    return alone ? readerOf(alone, view, viewOf) : joinedReader(selects, table, view, viewOf);
  });
  if (readers.some((r) => r === null)) return null;
  return readers.map((reader) => {
    const outer: Level[] = [];
    // A join's SELECT hands on other relations' columns too: an outer WHERE's names may be theirs.
    for (let inner = reader!; !inner.joined && passesThrough(inner);) {
      const node = enclosing.get(inner.node);
      const from = node?.from_table as Node | undefined;
      if (!node || !from || from.sample || (from.column_name_alias as unknown[]).length > 0) break;
      // A CTE's rows are qualified by its reference's alias, else by its name.
      const [alias, name] = [from.alias, from.type === 'BASE_TABLE' ? from.table_name : ''];
      inner = {
        node,
        qualifiers: new Set([(typeof alias === 'string' && alias ? alias : String(name)).toLowerCase()]),
      };
      outer.push(inner);
    }
    return { ...reader!, outer };
  });
}

/** A SELECT, and the qualifiers its columns of the set (or of the relation handing its rows on) are named by (see ownNames). */
interface Level {
  readonly node: Node;
  readonly qualifiers: ReadonlySet<string>;
  /** Whether the set is one side of the SELECT's joins, filtered by `conditions` (see joinedReader) and not its WHERE. */
  readonly joined?: boolean;
  readonly conditions?: Node | null;
}

/**
 * The joins whose sides' rows are each row's of a relation: not POSITIONAL's, which pairs rows by their
 * positions (a partition skipped on either side pairs the rest otherwise), nor ASOF's right side, whose row a
 * left row is given is the nearest of all (a partition skipped there gives it another, which a WHERE may pass).
 * ASOF's left side is: each of its rows gives at most one row, made of it (see keptWhole).
 */
const joinRefs = new Set(['REGULAR', 'CROSS', 'NATURAL']);

/**
 * Whether a table reference is in a FROM (`from`) through joins alone, never the side an outer join extends with
 * NULLs (the right of LEFT, the left of RIGHT, either of FULL) nor the right of SEMI or ANTI (which the WHERE
 * does not see): every row of the join is then one of its rows with others, so a WHERE conjunct naming its
 * columns alone is false of a row whenever it is false of that row of the set. A WHERE conjunct on the side an
 * outer join extends may be true of the NULLs (`coalesce(l.x, 'none') = 'none'`), which a skipped partition
 * would make of rows that matched. The left of an ASOF join (INNER or LEFT) is kept whole too, never its right.
 */
function keptWhole(from: Node, table: Node): boolean {
  if (from === table) return true;
  if (from.type !== 'JOIN') return false;
  const type = String(from.join_type);
  if (from.ref_type === 'ASOF') return ['INNER', 'LEFT'].includes(type) && keptWhole(from.left as Node, table);
  if (!joinRefs.has(String(from.ref_type))) return false;
  if (keptWhole(from.left as Node, table)) return ['INNER', 'LEFT', 'SEMI', 'ANTI'].includes(type);
  return type === 'INNER' || type === 'RIGHT' ? keptWhole(from.right as Node, table) : false;
}

/**
 * The ON conditions that filter a table reference's rows in a FROM (`from`) through joins alone (null when it is
 * not there so): each join's whose side holding the reference keeps its rows whole (keptWhole) and gives rows only
 * when they match (either side of INNER, the right of LEFT, SEMI and ANTI, the left of RIGHT). A row of the set
 * failing such a condition matches no row, so the join gives the same rows without it. An ON condition of the
 * side a join keeps whatever matches (the left of LEFT) filters none of its rows.
 */
function onConditions(from: Node, table: Node): Node[] | null {
  if (from === table) return [];
  const asof = from.ref_type === 'ASOF';
  if (from.type !== 'JOIN' || !(asof || joinRefs.has(String(from.ref_type)))) return null;
  const type = String(from.join_type);
  const sides: Array<[Node, string[]]> = [
    [from.left as Node, ['INNER', 'RIGHT']],
    [from.right as Node, ['INNER', 'LEFT', 'SEMI', 'ANTI']],
  ];
  for (const [side, matching] of sides) {
    const below = onConditions(side, table);
    if (below === null) continue;
    // An ASOF join's ON condition picks the nearest row: it filters neither side's rows alone.
    const filters = from.condition && !asof && matching.includes(type) && keptWhole(side, table);
    return filters ? [...below, from.condition as Node] : below;
  }
  return null;
}

/**
 * The SELECT whose FROM joins the set's table reference (see onConditions), with the name its columns are
 * qualified by, and the conditions filtering its rows: the WHERE when the joins keep them whole (keptWhole), and
 * the ON conditions that filter them, of each only the conjuncts naming its columns alone (see ownConjuncts).
 */
function joinedReader(
  selects: readonly Node[],
  table: Node,
  view: ViewSet,
  viewOf: (name: string) => ViewSet | undefined,
): Level | null {
  const node = selects.find(
    (s) => (s.from_table as Node | undefined)?.type === 'JOIN' && onConditions(s.from_table as Node, table) !== null,
  );
  if (!node || node.sample || !namesSessionView(table) || table.sample || table.at_clause) return null;
  if ((table.column_name_alias as unknown[] | undefined)?.length || viewOf(String(table.table_name)) !== view)
    return null;
  const qualifiers = qualifiersOf(table);
  const from = node.from_table as Node;
  const where = node.where_clause && keptWhole(from, table) ? [node.where_clause as Node] : [];
  const conditions = [...where, ...onConditions(from, table)!];
  const own =
    conditions.length > 0
      ? ownConjuncts(junction('CONJUNCTION_AND', conditions), qualifiers, unqualifiedOwn(from, view))
      : null;
  return { node, qualifiers, joined: true, conditions: own };
}

/**
 * The set's columns that its unqualified name means in a join's conditions (lowercased): DuckDB binds a name to
 * the one relation in scope that has such a column, and fails the statement when several do ("Ambiguous
 * reference"), so the set's column name is its column or an error; a column of the SELECT's list of that name
 * is read only when no relation has it. Not a name of a USING list or of a NATURAL join anywhere in the FROM:
 * it is the join's merged column then (the right side's in a RIGHT join, either side's in a FULL one).
 */
function unqualifiedOwn(from: Node, view: ViewSet): ReadonlySet<string> {
  const merged = new Set<string>();
  let natural = false;
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (value === null || typeof value !== 'object') return;
    const node = value as Node;
    if (node.type === 'JOIN') {
      natural ||= node.ref_type === 'NATURAL';
      for (const name of (node.using_columns as string[] | undefined) ?? []) merged.add(name.toLowerCase());
    }
    Object.values(node).forEach(visit);
  };
  visit(from);
  if (natural) return new Set();
  return new Set(view.columns.map((c) => c.name.toLowerCase()).filter((name) => !merged.has(name)));
}

/**
 * The conjuncts of a joined set's conditions that name its columns alone, each qualified by its name or
 * unqualified and one of `unqualified` (see unqualifiedOwn), with no subquery; ANDed, or null for none.
 */
function ownConjuncts(where: Node, qualifiers: ReadonlySet<string>, unqualified: ReadonlySet<string>): Node | null {
  const own = (value: unknown): boolean => {
    if (value === null || typeof value !== 'object') return true;
    if (Array.isArray(value)) return value.every(own);
    const node = value as Node;
    if (node.class === 'SUBQUERY' || node.class === 'STAR' || node.class === 'LAMBDA') return false;
    if (node.class === 'COLUMN_REF') {
      const names = node.column_names as string[];
      return names.length > 1 ? ownNames(names, qualifiers).length === 1 : unqualified.has(names[0].toLowerCase());
    }
    return Object.values(node).every(own);
  };
  const kept = conjuncts(where).filter(own);
  return kept.length > 0 ? junction('CONJUNCTION_AND', kept) : null;
}

/**
 * Whether a SELECT hands on each row it reads, once, with the columns it reads under their own names:
 * a list of `*` (no EXCLUDE, REPLACE, RENAME) and unrenamed columns, no grouping, DISTINCT, LIMIT,
 * window or sample. The WHERE of a SELECT reading it then filters the set's rows as its own would.
 */
function passesThrough({ node, qualifiers }: Level): boolean {
  if ((node.group_expressions as unknown[]).length > 0 || (node.group_sets as unknown[]).length > 0) return false;
  if (node.having || node.qualify || node.sample || node.aggregate_handling !== 'STANDARD_HANDLING') return false;
  if (!(node.modifiers as Node[]).every((m) => m.type === 'ORDER_MODIFIER')) return false;
  return (node.select_list as Node[]).every((item) => {
    if (item.class === 'STAR')
      return (
        (item.relation_name === '' || qualifiers.has(String(item.relation_name).toLowerCase())) &&
        item.columns === false &&
        item.expr === null &&
        ['exclude_list', 'replace_list', 'qualified_exclude_list', 'rename_list'].every(
          (list) => (item[list] as unknown[] | undefined)?.length === 0,
        )
      );
    const names = ownNames((item.column_names as string[] | undefined) ?? [], qualifiers);
    return (
      item.class === 'COLUMN_REF' &&
      names.length === 1 &&
      (item.alias === '' || String(item.alias).toLowerCase() === names[0])
    );
  });
}

/**
 * Whether a statement reads no column of a set but `held` (lowercased; a stored column `__orr_…` is held by
 * every copy): each part of a name it binds that spells one of the set's columns is held (an alias spelling
 * one counts as the column: never less than what is read), and it has no `*`, COLUMNS(…), positional
 * reference, or name of a relation read as a value (`SELECT l FROM log_entries l` is a row of every column).
 */
function readsOnly(tree: Tree, view: ViewSet, held: ReadonlySet<string>): boolean {
  const columns = new Set(view.columns.map((c) => c.name.toLowerCase()));
  const relations = new Set([view.name.toLowerCase()]);
  const names: string[][] = [];
  let whole = false;
  const visit = (value: unknown): void => {
    if (whole || value === null || typeof value !== 'object') return;
    if (Array.isArray(value)) return value.forEach(visit);
    const node = value as Node;
    whole ||= node.class === 'STAR' || node.class === 'POSITIONAL_REFERENCE';
    if (node.class === 'COLUMN_REF') names.push((node.column_names as string[]).map((n) => n.toLowerCase()));
    // A table reference (no expression class): its name and alias name a relation.
    if (node.class === undefined && typeof node.type === 'string') {
      if (typeof node.alias === 'string' && node.alias) relations.add(node.alias.toLowerCase());
      if (typeof node.table_name === 'string') relations.add(node.table_name.toLowerCase());
    }
    for (const cte of ((node.cte_map as Node | undefined)?.map as Array<{ key: string }> | undefined) ?? [])
      relations.add(cte.key.toLowerCase());
    Object.values(node).forEach(visit);
  };
  visit(tree.statements);
  if (whole) return false;
  return names.every(
    (parts) =>
      !(parts.length === 1 && relations.has(parts[0])) &&
      parts.every((p) => !columns.has(p) || held.has(p) || p.startsWith('__orr_')),
  );
}

/** What an index can decide of a WHERE: its restrictions and searches, ANDed, and ORs of such conjunctions. */
interface Conjunction {
  /** The qualifiers the set's columns in its conditions are named by (see ownNames). */
  readonly qualifiers: ReadonlySet<string>;
  readonly restrictions: Restriction[];
  readonly searches: Search[];
  /** Each an OR: a row passes it only when it passes one of its conjunctions. */
  readonly alternatives: Conjunction[][];
  /** The WHEREs of the SELECTs reading the set's rows through subqueries that pass them through (ANDed). */
  readonly outer: Conjunction[];
}

/** The conditions of ORs a statement is pruned by, at the most (each may cost a DuckDB query): more are read whole. */
const alternativeLimit = 64;

const disjuncts = (node: Node): Node[] =>
  node.class === 'CONJUNCTION' && node.type === 'CONJUNCTION_OR'
    ? (node.children as Node[]).flatMap(disjuncts)
    : [node];

const decides = (c: Conjunction): boolean =>
  c.restrictions.length + c.searches.length + c.alternatives.length > 0 || c.outer.some(decides);

/**
 * The conjunction a condition is, as far as indexes decide it. Sound under AND and OR alone: a partition
 * none of whose rows makes a part TRUE has none making the whole TRUE. A conjunct it cannot decide (NOT,
 * IS NULL, a function) is left out, and so is an OR with such an alternative: the WHERE still filters by them.
 */
function conjunctionOf(
  node: Node,
  qualifiers: ReadonlySet<string>,
  bindings: Bindings,
  budget: { left: number },
): Conjunction {
  const out: Conjunction = { qualifiers, restrictions: [], searches: [], alternatives: [], outer: [] };
  for (const conjunct of conjuncts(node)) {
    const restriction = restrictionOf(conjunct, bindings);
    const search = searchOf(conjunct, bindings);
    if (restriction) out.restrictions.push(restriction);
    if (search) out.searches.push(search);
    const options = disjuncts(conjunct);
    if (options.length < 2 || (budget.left -= options.length) < 0) continue;
    const alternatives = options.map((o) => conjunctionOf(o, qualifiers, bindings, budget));
    if (alternatives.every(decides)) out.alternatives.push(alternatives);
  }
  return out;
}

/**
 * What an index can decide of the WHEREs on a view set's rows, when the statement reads them alone (see
 * readsAlone): the reading SELECT's, and those of the SELECTs reading it through subqueries that pass rows through.
 */
function restrictionsOn(
  statement: Statement,
  view: ViewSet,
  clock: Node | null,
  untokenized?: Set<string>,
): Conjunction | null {
  const readers = readingSelects(statement.tree, statement.shape, view, statement.viewOf);
  if (!readers) return null;
  const budget = { left: alternativeLimit };
  const qualifiers = readers[0].qualifiers;
  const none = () => ({ restrictions: [], searches: [], alternatives: [], outer: [] });
  const run = (row: number): Conjunction => {
    const bindings = bindingsOf(statement, row, clock, untokenized);
    const each = readers.map((reader) => {
      const [first, ...outer] = [reader, ...reader.outer].map(({ node, qualifiers, joined, conditions }) => {
        const where = joined ? conditions : (node.where_clause as Node | null);
        return where ? conjunctionOf(where, qualifiers, bindings, budget) : { qualifiers, ...none() };
      });
      return { ...first, outer };
    });
    // Every reference reads the same files: a file is skipped only when each one's WHEREs exclude it (an OR).
    if (each.length === 1) return each[0];
    return { qualifiers, ...none(), alternatives: each.every(decides) ? [each] : [] };
  };
  const rows = statement.parameters?.numRows ?? 0;
  if (rows <= 1) return run(0);
  // Several parameter rows are runs of the statement over the same files: a file is skipped only when
  // every run's WHERE excludes it (an OR of the runs).
  if ((budget.left -= rows) < 0) return null;
  const runs = Array.from({ length: rows }, (_, row) => run(row));
  return { qualifiers, ...none(), alternatives: runs.every(decides) ? [runs] : [] };
}

const columnRef = (name: string): Node => ({
  class: 'COLUMN_REF',
  type: 'COLUMN_REF',
  alias: '',
  column_names: [name],
});
const compare = (type: string, left: Node, right: Node): Node => ({
  class: 'COMPARISON',
  type,
  alias: '',
  left,
  right,
});
const junction = (type: 'CONJUNCTION_AND' | 'CONJUNCTION_OR', children: Node[]): Node =>
  children.length === 1 ? children[0] : { class: 'CONJUNCTION', type, alias: '', children };

const [minRef, maxRef, valueRef] = ['__orr_min', '__orr_max', '__orr_value'].map(columnRef);

/** Whether a partition whose values lie in [min, max] may hold a row passing the restriction. */
function rangeMeets(r: Restriction): Node {
  const within = (c: Node) =>
    junction('CONJUNCTION_AND', [
      compare('COMPARE_LESSTHANOREQUALTO', minRef, c),
      compare('COMPARE_GREATERTHANOREQUALTO', maxRef, c),
    ]);
  switch (r.op) {
    case 'COMPARE_EQUAL':
      return within(r.constants[0]);
    case 'COMPARE_LESSTHAN':
    case 'COMPARE_LESSTHANOREQUALTO':
      return compare(r.op, minRef, r.constants[0]);
    case 'COMPARE_GREATERTHAN':
    case 'COMPARE_GREATERTHANOREQUALTO':
      return compare(r.op, maxRef, r.constants[0]);
    case 'between':
      return junction('CONJUNCTION_AND', [
        compare('COMPARE_GREATERTHANOREQUALTO', maxRef, r.constants[0]),
        compare('COMPARE_LESSTHANOREQUALTO', minRef, r.constants[1]),
      ]);
    default:
      return junction('CONJUNCTION_OR', r.constants.map(within));
  }
}

/**
 * How far a value of the fixed clock JS computed (see clockNanos) may be from DuckDB's, at the most: DuckDB rounds
 * to microseconds, and the catalog's bounds are rounded outwards to them, never by a second.
 */
const clockMargin = 1_000_000_000n;

/** Decided: true or false; undefined when a value is within clockMargin of a bound it is compared with. */
type Decided = boolean | undefined;
const atLeast = (x: bigint, value: bigint): Decided =>
  x > value + clockMargin ? true : x < value - clockMargin ? false : undefined;
const atMost = (x: bigint, value: bigint): Decided =>
  x < value - clockMargin ? true : x > value + clockMargin ? false : undefined;
const allOf = (each: Decided[]): Decided =>
  each.includes(false) ? false : each.every((d) => d === true) ? true : undefined;
const anyOf = (each: Decided[]): Decided =>
  each.includes(true) ? true : each.every((d) => d === false) ? false : undefined;

/** rangeMeets over a partition's bounds and the restriction's values, in ns (see clockMargin). */
function rangeMeetsNear(op: string, { min, max }: { min: bigint; max: bigint }, values: bigint[]): Decided {
  const within = (v: bigint) => allOf([atMost(min, v), atLeast(max, v)]);
  switch (op) {
    case 'COMPARE_EQUAL':
      return within(values[0]);
    case 'COMPARE_LESSTHAN':
    case 'COMPARE_LESSTHANOREQUALTO':
      return atMost(min, values[0]);
    case 'COMPARE_GREATERTHAN':
    case 'COMPARE_GREATERTHANOREQUALTO':
      return atLeast(max, values[0]);
    case 'between':
      return allOf([atLeast(max, values[0]), atMost(min, values[1])]);
    default:
      return anyOf(values.map(within));
  }
}

/** The units a cast of a timestamp to a rising type (see risingCasts) rounds it down to, in ns. */
const castUnits: Record<string, bigint> = {
  TIMESTAMP_NS: 1n,
  TIMESTAMP: 1000n,
  TIMESTAMP_MS: 1_000_000n,
  TIMESTAMP_S: 1_000_000_000n,
  DATE: 86_400_000_000_000n,
};
const floorTo = (value: bigint, unit: bigint): bigint => value - (((value % unit) + unit) % unit);

/**
 * The value of an expression of the fixed clock in ns since the epoch (as a timestamp without a zone), when it is
 * the clock (see withClock), a cast of one to a rising type, or one plus or minus an interval of no months
 * (`intervalOf`); null otherwise.
 */
async function clockNanos(node: Node, intervalOf: (fixed: Node) => Promise<bigint | null>): Promise<bigint | null> {
  const child = node.child as Node | undefined;
  if (node.class === 'CAST' && clockConstants.has(node) && child?.class === 'CONSTANT') {
    const text = String((child.value as Node).value);
    const ms = Date.parse(`${text.replace(' ', 'T')}Z`);
    return (node.cast_type as Node).id === 'TIMESTAMP_NS' && Number.isFinite(ms) ? BigInt(ms) * 1_000_000n : null;
  }
  if (node.class === 'CAST') {
    const unit = node.try_cast === true ? undefined : castUnits[String((node.cast_type as Node).id)];
    const value = unit && (await clockNanos(child!, intervalOf));
    return unit && typeof value === 'bigint' ? floorTo(value, unit) : null;
  }
  const [left, right, ...rest] = (node.children as Node[] | undefined) ?? [];
  if (!isCall(node, plusMinus) || rest.length > 0 || right === undefined) return null;
  const minus = node.function_name === '-';
  const [clocked, fixed] = holdsClock(left) || minus ? [left, right] : [right, left];
  if (holdsClock(fixed)) return null;
  const [value, interval] = [await clockNanos(clocked, intervalOf), await intervalOf(fixed)];
  return value === null || interval === null ? null : minus ? value - interval : value + interval;
}
const plusMinus = new Set(['+', '-']);

/** The restriction itself over one of a partition's distinct values. */
function valueMeets(r: Restriction): Node {
  switch (r.conjunct.class) {
    case 'COMPARISON':
      return compare(r.op, valueRef, r.constants[0]);
    case 'BETWEEN':
      return { ...r.conjunct, input: valueRef, lower: r.constants[0], upper: r.constants[1] };
    default:
      return { ...r.conjunct, children: [valueRef, ...r.constants] };
  }
}

/** Types whose text (the statistics) casts back to the same value whatever the session's settings. */
const exactText =
  /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|FLOAT|DOUBLE|DECIMAL\(\d+,\d+\)|VARCHAR|BOOLEAN|DATE|TIMESTAMP|TIMESTAMP_NS|TIMESTAMP_MS|TIMESTAMP_S|UUID)$/;

const integerTypes = /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT)$/;

/** Types a bloom filter serves: equal values of them have one hash (no -0.0 and 0.0, no collations). */
const hashedTypes =
  /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|VARCHAR|BOOLEAN|DATE|TIMESTAMP|TIMESTAMP_NS|TIMESTAMP_MS|TIMESTAMP_S|UUID)$/;

const isNull = (c: Node): boolean =>
  c.class === 'CONSTANT' ? (c.value as Node).is_null === true : c.class === 'CAST' && isNull(c.child as Node);

/** What statements compute again and again, bounded: kept while fewer than the limit, then started over. */
const conditions = new Map<string, string | null>();
/** The ns of an interval a clock bound is written with (see intervalNanos), by its expression. */
const intervals = new Map<string, bigint | null>();
const hashes = new Map<string, bigint[] | null>();
/** The runs of searched texts other than ASCII ones, as DuckDB's tokensOf finds them (see asciiRuns), by text. */
const searchedRuns = new Map<string, string[]>();
/** Whether a file's statistics meet a condition of constants, by index, condition and file. */
const decisions = new Map<string, boolean>();
function remember<T>(cache: Map<string, T>, key: string, value: T, limit = 1000): void {
  if (cache.size >= limit) cache.clear();
  cache.set(key, value);
}

/** The bytes of row bitmaps one statement reads its files with, at the most (see kept): 16 M rows of partitions. */
const bitmapLimit = 2 * 1024 * 1024;

/** Each file's postings decoded, once per stored value (kept as long as the statistics are). */
const decodedPostings = new WeakMap<Buffer, Postings | null>();
function postingsOf(stored: Buffer): Postings | null {
  if (!decodedPostings.has(stored)) decodedPostings.set(stored, decodePostings(stored));
  return decodedPostings.get(stored)!;
}

/** The rows of a file matching searches, by its postings and the searches' runs: a dashboard repeats its searches. */
const matched = new WeakMap<Postings, Map<string, Uint8Array | null>>();
function matchingRows(postings: Postings, runs: string[][]): Uint8Array | null {
  const known = matched.get(postings) ?? new Map<string, Uint8Array | null>();
  matched.set(postings, known);
  const key = JSON.stringify(runs);
  if (!known.has(key)) remember(known, key, rowsMatching(postings, runs), 16);
  return known.get(key)!;
}

/**
 * What statements work out of a bitmap of a file's rows: its count, and where its rows are in copies (by the
 * searches' runs and the copies). The bitmaps matchingRows keeps come back at each statement repeating a search
 * (a dashboard's) and are never changed (copyReads clears rows in a copy of its own).
 */
const ofBitmap = new WeakMap<Uint8Array, { count: number; copies: Map<string, CopyRead[] | null> }>();
function bitmapFacts(rows: Uint8Array): { count: number; copies: Map<string, CopyRead[] | null> } {
  let facts = ofBitmap.get(rows);
  if (!facts) ofBitmap.set(rows, (facts = { count: rowCount(rows), copies: new Map() }));
  return facts;
}

/** copyReads, once per bitmap, runs and copies. */
function keptCopyReads(
  listedBy: readonly PartitionStatistics[],
  rows: Uint8Array,
  runs: readonly string[],
): CopyRead[] | null {
  const { count, copies } = bitmapFacts(rows);
  const key = JSON.stringify([runs, listedBy.map((s) => s.copy)]);
  if (!copies.has(key)) remember(copies, key, copyReads(listedBy, rows, count, runs), 16);
  return copies.get(key)!;
}

/**
 * The types of an event-time column whose partition bounds cast back exactly: Postgres keeps them rounded outwards
 * to whole microseconds, which are values of both (a coarser type would round them, a zoned one shift them).
 */
const eventTimeTypes = /^(TIMESTAMP_NS|TIMESTAMP)$/;

/** The name explain_resources and a result's provenance give the event-time bounds (no entry key is spelled so: see entryKeyPattern). */
const eventTimeEntry = '(event time)';

/**
 * A set's event-time columns as minmax indexes whose statistics are each partition's event-time bounds (see
 * PartitionPruning.eventTime), with the sides each is bounded on: one column (log_entries' time) has every row's
 * time within them; a span's two (begin and end) are bounded each on one side only, the earliest begin and the
 * latest end (what materialization keeps of a partition), since a begin may follow an end. None when a column is
 * of another type.
 */
function eventTimeIndexes(view: ViewSet): Array<{ index: InstalledIndex; lower: boolean; upper: boolean }> {
  const [earliest, latest] = [view.minTimeColumn.toLowerCase(), view.maxTimeColumn.toLowerCase()];
  const names = earliest === latest ? [earliest] : [earliest, latest];
  const columns = names.map((name) => view.columns.find((c) => c.name.toLowerCase() === name));
  if (columns.some((c) => !c || !eventTimeTypes.test(c.type.toUpperCase()))) return [];
  return columns.map((column) => ({
    index: {
      hash: `event time\u0000${view.name}\u0000${column!.name}`,
      viewSet: view.name,
      entryKey: eventTimeEntry,
      kind: 'minmax',
      expression: quoteIdentifier(column!.name),
      valueType: column!.type.toUpperCase(),
      generation: 0,
    },
    lower: column!.name.toLowerCase() === earliest,
    upper: column!.name.toLowerCase() === latest,
  }));
}

/** A side a span's column is not bounded on (see eventTimeIndexes): beyond any timestamp, in ns and as DuckDB's text. */
const unbounded = 1n << 64n;

/** A partition's event-time bound as DuckDB's text of a timestamp, rounded outwards to whole microseconds. */
const boundText = (ns: bigint, round: 'floor' | 'ceil'): string =>
  nanosToPg(ns, round).replace('T', ' ').replace('Z', '');

/** A partition's event-time bounds as one event-time index's statistics (see eventTimeIndexes), and in ns. */
interface EventBound {
  readonly statistics: PartitionStatistics;
  readonly nanos: { readonly min: bigint; readonly max: bigint };
}

/**
 * The event-time bounds of each partition, by partition, event-time index and sides: the partition lists kept between
 * statements (PartitionCache) hold the same partitions, so a repeated statement turns no bound to text again (two
 * timestamps a partition, 0.22 ms of CPU a statement at 121 partitions, growing with them).
 */
const eventBounds = new WeakMap<Partition, Map<string, EventBound | null>>();

/** A partition's bounds on the sides an event-time index is bounded on (see eventTimeIndexes), once; null: none kept. */
function eventBound(partition: Partition, index: InstalledIndex, lower: boolean, upper: boolean): EventBound | null {
  let byIndex = eventBounds.get(partition);
  if (!byIndex) eventBounds.set(partition, (byIndex = new Map()));
  const key = `${index.hash}\u0000${lower}\u0000${upper}`;
  if (!byIndex.has(key)) {
    const { filePath, minEventTime: min, maxEventTime: max } = partition;
    byIndex.set(
      key,
      filePath === null || min === null || max === null
        ? null
        : {
            nanos: { min: lower ? min : -unbounded, max: upper ? max : unbounded },
            statistics: {
              hash: index.hash,
              filePath,
              min: lower ? boundText(min, 'floor') : '-infinity',
              max: upper ? boundText(max, 'ceil') : 'infinity',
              distinct: null,
              bloom: null,
              postings: null,
              copy: null,
            },
          },
    );
  }
  return byIndex.get(key)!;
}

/** The json_serialize_sql form of each index's expression, parsed once. */
const parsedExpressions = new Map<string, Node | null>();

export async function expressionTree(engine: DuckDBEngine, expression: string): Promise<Node | null> {
  if (!parsedExpressions.has(expression)) {
    const tree = await engine.parseSelect(`SELECT ${expression}`).catch(() => null);
    const list = (tree?.statements[0]?.node as Node | undefined)?.select_list as Node[] | undefined;
    parsedExpressions.set(expression, list?.length === 1 ? list[0] : null);
  }
  return parsedExpressions.get(expression)!;
}

/** An expression as compared with an installed resource's (no alias or position, the table's qualifier dropped). */
export const keyOf = (node: Node, qualifiers: ReadonlySet<string>): string => expressionKey(node, qualifiers);

/**
 * Prunes the partitions of the view sets one statement reads and remembers what it skipped. One per
 * statement; `keep` is called with each set's partition object keys.
 */
export class PartitionPruning {
  readonly reads: PartitionsRead[] = [];
  readonly pruned: PrunedPartition[] = [];
  readonly projections: ProjectionRead[] = [];
  readonly newestFirst: NewestFirstRead[] = [];
  /** A latest-n top-N read bounded by time: its run must give n rows, or the statement runs again unbounded. */
  bounded: TopNBound | undefined;
  /** The partitions a bounded latest-n read leaves out of its first run (see TopNBound): for explain_resources. */
  readonly leftOut: Array<{ readonly table: string; readonly partition: string }> = [];
  readonly rowsRead: RowsRead[] = [];
  /** The rows to read of a partition (object key; see rowsMatching), its copies' too, and how many; absent: every row. */
  readonly rows = new Map<string, RowsToRead & { readonly count: number }>();
  /** The rows of the sets' partitions the statement reads, as they are read (whole, or the rows kept). */
  partitionRows = 0;
  private bitmapBytes = 0;
  /** The event-time bounds of each set's partitions, as the statistics of its eventTimeIndexes (by hash), by file. */
  private readonly eventBounds = new Map<string, ReadonlyMap<string, PartitionStatistics>>();
  /** The same bounds in ns, as the catalog holds them (not rounded), by its hash and file. */
  private readonly eventNanos = new Map<string, ReadonlyMap<string, { min: bigint; max: bigint }>>();

  private readonly db: MetadataQueries;
  private readonly engine: DuckDBEngine;
  /** The constant the statement's now() is fixed to, when it can be (see fixedClock). */
  private readonly clock: Node | null;
  /** Whether an index skipped a partition by a bound of the fixed clock. */
  private clockUsed = false;
  /** Whether the statement must run with the fixed clock (its fixedClock's text: RunOptions.clock). */
  private clockFixed = false;

  constructor(private readonly statement: Statement) {
    ({ db: this.db, engine: this.engine } = statement);
    this.clock = fixedClock(statement);
  }

  /** The partitions (object keys) of `view` the statement must read of these, in their order. */
  async keep(view: ViewSet, partitions: readonly Partition[]): Promise<readonly string[]> {
    const kept = await this.kept(
      view,
      partitions.map((p) => p.filePath!),
      partitions,
    );
    // The statement runs with the clock pruning compared: every now() of it is to be the fixed value.
    if (this.clockUsed && this.clock) this.clockFixed = true;
    return kept;
  }

  /**
   * The value the statement's now() is fixed to, when it is: as a constant, its text (the statement runs with it:
   * RunOptions.clock) and in ms since the epoch. Other rewrites of the statement read its clock calls with it, and
   * key what they keep on the calls.
   */
  get fixedClock(): { readonly node: Node; readonly text: string; readonly ms: number } | null {
    if (!this.clockFixed || !this.clock) return null;
    const text = String(((this.clock.child as Node).value as Node).value);
    return { node: this.clock, text, ms: Date.parse(`${text.replace(' ', 'T')}Z`) };
  }

  /**
   * The constant the statement's now() may be fixed to (see fixedClock) while it is not: a rollup read's set-up
   * may read its window with it (bucket-windows.ts), and then fix it (useClock).
   */
  get fixableClock(): Node | undefined {
    return this.clockFixed ? undefined : (this.clock ?? undefined);
  }

  /** Fixes the statement's clock: a rollup read's set-up left out buckets by it. */
  useClock(): void {
    if (this.clock) this.clockFixed = true;
  }

  /**
   * The set's event-time columns as indexes (see eventTimeIndexes), with these partitions' bounds from the catalog:
   * a WHERE bounding the time skips partitions whose rows all fall outside, without a resource declared. The
   * bounds are of every audience's rows, never fewer than a reader's: what a reader's statement skips by them
   * tells what the request's event range already does (which skips partitions by the same bounds).
   */
  private async eventTime(
    view: ViewSet,
    partitions: readonly Partition[],
  ): Promise<Array<{ index: InstalledIndex; key: string }>> {
    const indexes: Array<{ index: InstalledIndex; key: string }> = [];
    for (const { index, lower, upper } of eventTimeIndexes(view)) {
      const tree = await expressionTree(this.engine, index.expression);
      if (!tree) continue;
      const bounds = new Map<string, PartitionStatistics>();
      const nanos = new Map<string, { min: bigint; max: bigint }>();
      for (const partition of partitions) {
        const bound = eventBound(partition, index, lower, upper);
        if (!bound) continue;
        nanos.set(partition.filePath!, bound.nanos);
        bounds.set(partition.filePath!, bound.statistics);
      }
      this.eventBounds.set(index.hash, bounds);
      this.eventNanos.set(index.hash, nanos);
      indexes.push({ index, key: keyOf(tree, new Set()) });
    }
    return indexes;
  }

  /**
   * The partitions kept (object keys), in the order the statement reads them best (see newestFirst), and the time
   * after which alone a latest-n top-N reads the rows, when it is bounded (see TopNBound).
   */
  newest(view: ViewSet, partitions: readonly Partition[]): { files: readonly string[]; after?: bigint } {
    const mayBound = this.statement.boundTopN === true && !this.statement.parameters;
    const { files, read, bound, left } = newestFirst(this.statement, view, partitions, mayBound);
    if (read) this.newestFirst.push(read);
    if (bound) this.bounded = bound;
    for (const partition of left ?? []) this.leftOut.push({ table: view.name, partition });
    return { files, after: bound?.after };
  }

  /**
   * The files (object keys) of a series table read from its data files (see series-text-reads.ts) the statement
   * must read of these, each whole: the rows a text index's postings leave are not read apart there.
   */
  async keepWhole(view: ViewSet, files: readonly string[]): Promise<readonly string[]> {
    const kept = await this.kept(view, files, []);
    for (const file of kept) this.rows.delete(file);
    const read = this.rowsRead.findIndex((r) => r.table === view.name);
    if (read >= 0) this.rowsRead.splice(read, 1);
    return kept;
  }

  /** The files kept of a set's (see keep); `partitions`: those of them the catalog keeps event-time bounds of. */
  private async kept(
    view: ViewSet,
    files: readonly string[],
    partitions: readonly Partition[],
  ): Promise<readonly string[]> {
    const untokenized = new Set<string>();
    let on = files.length > 0 ? restrictionsOn(this.statement, view, this.clock, untokenized) : null;
    if (on && untokenized.size > 0) {
      await this.tokenize(untokenized);
      on = restrictionsOn(this.statement, view, this.clock);
    }
    if (!on || !decides(on)) return files;
    const indexes: Array<{ index: InstalledIndex; key: string }> = [];
    for (const index of await recentIndexes(this.db, view.name)) {
      const indexed = await expressionTree(this.engine, index.expression);
      if (indexed) indexes.push({ index, key: keyOf(indexed, new Set()) });
    }
    // The event-time bounds last: an index declared on the time column decides first (a reader's statement by its
    // audiences' rows), and they decide what it left.
    indexes.push(...(await this.eventTime(view, partitions)));
    const skipped = await this.excluded(view, on, files, indexes);
    // Of the files left, the rows a text index's postings show may pass: none (the file is skipped too), or few.
    const matching = await this.matching(
      view,
      on,
      files.filter((f) => !skipped.has(f)),
      indexes,
    );
    const read = { partitions: 0, rows: 0, read: 0, index: '', copies: 0 };
    for (const [file, { rows, index, total, listedBy, runs }] of matching) {
      const { count } = bitmapFacts(rows);
      if (count === 0) {
        skipped.set(file, index);
        continue;
      }
      // The rows kept together in the index's copies are read there: the file's rows are spread over all of
      // its pages, which a search would decode whole.
      const copies = listedBy && keptCopyReads(listedBy, rows, runs);
      const bytes = copies ? copies.reduce((n, c) => n + (c.bits?.length ?? 0), 0) : rows.length;
      // Reading a bitmap costs its text in the statement (a sixth of a byte per row): worth it for at most
      // half the rows, up to a bound per statement (the files after it are read whole).
      if (count <= total / 2 && (this.bitmapBytes += bytes) <= bitmapLimit) {
        this.rows.set(file, { bitmap: rows, copies, count });
        Object.assign(read, {
          partitions: read.partitions + 1,
          rows: read.rows + total,
          read: read.read + count,
          index: read.index || index,
          copies: read.copies + (copies ? 1 : 0),
        });
      }
    }
    if (read.partitions > 0) this.rowsRead.push({ table: view.name, ...read });
    if (skipped.size === 0) return files;
    const used = [...new Set(skipped.values())];
    this.reads.push({ table: view.name, partitions: files.length, skipped: skipped.size, indexes: used });
    for (const partition of files.filter((f) => skipped.has(f)))
      this.pruned.push({ table: view.name, partition, index: skipped.get(partition)! });
    return files.filter((f) => !skipped.has(f));
  }

  /** Finds the runs of searched texts by DuckDB's own lower() and tokenizing (see asciiRuns), into searchedRuns. */
  private async tokenize(texts: ReadonlySet<string>): Promise<void> {
    const list = [...texts];
    const values = list.map((t, i) => `(${i}, ${quoteLiteral(t)})`).join(', ');
    for (const [i, runs] of await this.engine.values(
      `SELECT i, to_json(${tokensOf('t')})::VARCHAR FROM (VALUES ${values}) AS v(i, t)`,
    ))
      remember(searchedRuns, list[Number(i)], JSON.parse(String(runs)) as string[]);
  }

  /**
   * The rows of each file that may pass a conjunction, by the postings of the text indexes (see rowsMatching),
   * with the index that told: within a conjunction a row must hold every search's words, of an OR one
   * alternative's (a file is restricted only when every alternative restricts it), and pass every outer level.
   * Files absent: every row may pass.
   */
  private async matching(
    view: ViewSet,
    on: Conjunction,
    files: readonly string[],
    indexes: ReadonlyArray<{ index: InstalledIndex; key: string }>,
  ): Promise<Map<string, Matching>> {
    const found = new Map<string, Matching>();
    // Rows both sides keep are listed by either's statistics.
    const restrict = (file: string, matching: Matching) => {
      const before = found.get(file);
      found.set(
        file,
        before
          ? {
              ...before,
              rows: bothOf(matching.rows, before.rows),
              listedBy: before.listedBy ?? matching.listedBy,
              runs: [...before.runs, ...matching.runs],
            }
          : matching,
      );
    };
    if (files.length === 0) return found;
    const { qualifiers } = on;
    for (const { index, key } of indexes) {
      const searches = index.kind === 'text' ? on.searches.filter((s) => keyOf(s.expression, qualifiers) === key) : [];
      if (searches.length === 0) continue;
      // A reader's statement reads, of the rows of each of its audiences, those holding the words: a file is
      // restricted when the postings of every audience it holds of the reader's tell.
      for (const [filePath, stats] of await this.statisticsOf(view, index, files)) {
        const each = stats.map(({ postings }) => {
          const decoded = postings && postingsOf(postings);
          const rows =
            decoded &&
            matchingRows(
              decoded,
              searches.map((s) => s.runs),
            );
          return rows && { rows, total: decoded.rows };
        });
        if (each.length === 0 || !each.every((e) => e !== null)) continue;
        const rows = each.map((e) => e.rows).reduce(eitherOf);
        const runs = searches.flatMap((s) => s.runs);
        restrict(filePath, { rows, index: index.entryKey, total: each[0].total, listedBy: stats, runs });
      }
    }
    for (const alternatives of on.alternatives) {
      const each = [];
      for (const alternative of alternatives) each.push(await this.matching(view, alternative, files, indexes));
      for (const file of files)
        if (each.every((m) => m.has(file))) {
          // Every alternative's rows are listed by one index's statistics when they all name the same.
          const [first, ...others] = each.map((m) => m.get(file)!);
          const same = (m: Matching) =>
            m.listedBy?.length === first.listedBy?.length && m.listedBy?.every((s, i) => s === first.listedBy![i]);
          const listedBy = others.every(same) ? first.listedBy : null;
          const rows = each.map((m) => m.get(file)!.rows).reduce(eitherOf);
          restrict(file, { ...first, rows, listedBy, runs: each.flatMap((m) => m.get(file)!.runs) });
        }
    }
    for (const level of on.outer)
      for (const [file, rows] of await this.matching(view, level, files, indexes)) restrict(file, rows);
    return found;
  }

  /**
   * The files none of whose rows can pass a conjunction, each by the index that excluded it (the first that
   * did): each index decides every restriction or search of its expression at once, then each OR excludes
   * the files that every one of its alternatives excludes (by its first alternative's index).
   */
  private async excluded(
    view: ViewSet,
    on: Conjunction,
    files: readonly string[],
    indexes: ReadonlyArray<{ index: InstalledIndex; key: string }>,
  ): Promise<Map<string, string>> {
    const { qualifiers } = on;
    const skipped = new Map<string, string>();
    for (const { index, key } of indexes) {
      const remaining = files.filter((f) => !skipped.has(f));
      let kept: Set<string> | null;
      if (index.kind === 'text') {
        const searches = on.searches.filter((s) => keyOf(s.expression, qualifiers) === key);
        if (searches.length === 0) continue;
        kept = await this.containing(view, index, searches, remaining);
      } else {
        // No type yet: installed on an empty set, no statistics recorded.
        const { valueType } = index;
        if (valueType === null || !exactText.test(valueType)) continue;
        const applicable = on.restrictions.filter(
          (r) =>
            keyOf(r.expression, qualifiers) === key &&
            r.constants.every((c) => compatible(boundTypes.get(c) ?? valueType, valueType)),
        );
        if (applicable.length === 0) continue;
        const byStatistics = await this.byStatistics(view, { ...index, valueType }, applicable, remaining);
        if (byStatistics && remaining.some((f) => !byStatistics.has(f)))
          this.clockUsed ||= applicable.some((r) => r.constants.some((c) => clockConstants.has(c)));
        kept = byStatistics;
      }
      for (const file of remaining) if (kept && !kept.has(file)) skipped.set(file, index.entryKey);
    }
    for (const alternatives of on.alternatives) {
      // The files the alternatives so far all exclude, by the first one's index.
      let common = new Map(files.filter((f) => !skipped.has(f)).map((f) => [f, '']));
      for (const alternative of alternatives) {
        if (common.size === 0) break;
        const out = await this.excluded(view, alternative, [...common.keys()], indexes);
        const first = alternative === alternatives[0];
        common = new Map([...common].filter(([f]) => out.has(f)).map(([f, by]) => [f, first ? out.get(f)! : by]));
      }
      for (const [file, index] of common) skipped.set(file, index);
    }
    for (const level of on.outer)
      for (const [file, index] of await this.excluded(
        view,
        level,
        files.filter((f) => !skipped.has(f)),
        indexes,
      ))
        skipped.set(file, index);
    return skipped;
  }

  /**
   * The files to read in place of these partition files (object keys): the copies of the first projection
   * whose leading sort column the statement's WHERE restricts as an index could (=, IN, <, BETWEEN, ...),
   * when it holds a copy of every one of them; otherwise the files themselves. A copy holds the same rows
   * and columns, sorted, so only its row groups whose min/max meet the restriction are read. The files are
   * those keep left (a time window skipped the others' copies too).
   */
  async projected(
    view: ViewSet,
    files: readonly string[],
  ): Promise<{ files: readonly string[]; absent: readonly string[] }> {
    const unchanged = { files, absent: [] };
    // A top-N by the set's time reads the latest partitions first and stops there (see newestFirst): copies sorted
    // by another column keep no partition's latest rows together, so DuckDB would open every copy's row groups.
    if (this.newestFirst.some((read) => read.table === view.name)) return unchanged;
    const on = files.length > 0 ? restrictionsOn(this.statement, view, this.clock) : null;
    if (!on || on.restrictions.length === 0) return unchanged;
    const { qualifiers } = on;
    // The narrowest first: a projection storing fewer columns reads fewer bytes.
    const narrowest = (await recentProjections(this.db, view.name))
      .map((projection) => ({ projection, held: storedBy(projection, view) }))
      .sort((a, b) => (a.held?.size ?? Infinity) - (b.held?.size ?? Infinity));
    for (const { projection, held } of narrowest) {
      const [first] = projection.orderBy;
      // Sorted by a stored column: the statement restricts it, or its expression where it was left as written.
      const stored = first.startsWith('__orr_')
        ? (await recentColumns(this.db, view.name)).find((c) => c.name === first)
        : undefined;
      const keys = new Set<string>();
      for (const sorted of [`"${first.replace(/"/g, '""')}"`, ...(stored ? [`(${stored.expression})`] : [])]) {
        const tree = await expressionTree(this.engine, sorted);
        if (tree) keys.add(keyOf(tree, new Set()));
      }
      if (!on.restrictions.some((r) => keys.has(keyOf(r.expression, qualifiers)))) continue;
      // A projection storing some columns serves a statement reading those alone.
      if (held && !readsOnly(this.statement.tree, view, held)) continue;
      const copies = await projectionCopies(this.db, projection.hash, files);
      if (files.some((f) => !copies.has(f))) continue;
      this.projections.push({ table: view.name, projection: projection.entryKey });
      const absent = held ? view.columns.map((c) => c.name).filter((n) => !held.has(n.toLowerCase())) : [];
      return { files: files.map((f) => copies.get(f)!), absent };
    }
    return unchanged;
  }

  /**
   * The files that may hold a passing row, by one index: those without statistics, and those whose
   * statistics meet every restriction. Null when DuckDB cannot compare them (the statement then
   * reads every partition and reports its own error, if any).
   *
   * The event-time bounds' restrictions by the fixed clock (`time >= now() - INTERVAL 1 HOUR`) are decided here,
   * in JS, by the bounds' nanoseconds: DuckDB compares a condition of constants once per file and keeps what it
   * decided, but the clock's value, and so the condition, is new at each statement, which would cost a dashboard's
   * statement a deparse and a query of its own. A partition within clockMargin of such a bound is left to DuckDB,
   * with every restriction; one meeting each is decided by the others alone (constants: kept decisions), one
   * failing one is skipped. A file's decision by the clock is never kept: the next statement's clock differs.
   */
  private async byStatistics(
    view: ViewSet,
    index: InstalledIndex & { valueType: string },
    restrictions: Restriction[],
    files: string[],
  ): Promise<Set<string> | null> {
    const bounds = this.eventNanos.get(index.hash);
    const valued = bounds ? await this.clockValues(restrictions) : null;
    if (!bounds || !valued || valued.size === 0) return this.compared(view, index, restrictions, files);
    const others = restrictions.filter((r) => !valued.has(r));
    const [near, within, kept] = [[], [], new Set<string>()] as [string[], string[], Set<string>];
    for (const file of files) {
      const bound = bounds.get(file);
      const meets = bound && allOf([...valued].map(([r, values]) => rangeMeetsNear(r.op, bound, values)));
      // Without bounds nothing is known (read whole); false: a bound of the clock excludes every row.
      if (!bound) kept.add(file);
      else if (meets === undefined) near.push(file);
      else if (meets) within.push(file);
    }
    for (const [files, by] of [
      [near, restrictions],
      [within, others],
    ] as const) {
      const decided = files.length > 0 && by.length > 0 ? await this.compared(view, index, by, files) : files;
      if (decided === null) return null;
      for (const file of decided) kept.add(file);
    }
    return kept;
  }

  /**
   * The nanoseconds of each restriction's constants when each is an expression of the fixed clock JS can value
   * (see clockNanos), by restriction; the others are absent.
   */
  private async clockValues(restrictions: readonly Restriction[]): Promise<Map<Restriction, bigint[]>> {
    const valued = new Map<Restriction, bigint[]>();
    for (const r of restrictions) {
      if (!r.constants.every(holdsClock)) continue;
      const values: bigint[] = [];
      for (const c of r.constants) {
        const value = await clockNanos(c, (fixed) => this.intervalNanos(fixed));
        if (value === null) break;
        values.push(value);
      }
      if (values.length === r.constants.length) valued.set(r, values);
    }
    return valued;
  }

  /**
   * A constant expression's value as an interval of no months (days of 24 hours in a timestamp without a zone), in
   * ns; null for another type or an interval of months (whose length depends on the date). DuckDB's, once per
   * expression.
   */
  private async intervalNanos(fixed: Node): Promise<bigint | null> {
    const key = keyOf(fixed, new Set());
    if (!intervals.has(key)) {
      const tree = (await this.engine.parseSelect('SELECT 1'))!;
      (tree.statements[0].node as Node).select_list = [{ ...structuredClone(fixed), alias: 'v' }];
      let value: bigint | null = null;
      try {
        const [[type, months, days, micros]] = await this.engine.values(
          "SELECT typeof(v), date_part('year', i) * 12 + date_part('month', i), date_part('day', i), " +
            "date_part('hour', i) * 3600000000 + date_part('minute', i) * 60000000 + date_part('microseconds', i) " +
            `FROM (SELECT v, CAST(v AS INTERVAL) AS i FROM (${await this.engine.deparse(tree)}))`,
        );
        if (type === 'INTERVAL' && BigInt(months as bigint) === 0n)
          value = BigInt(days as bigint) * 86_400_000_000_000n + BigInt(micros as bigint) * 1000n;
      } catch {
        value = null;
      }
      remember(intervals, key, value);
    }
    return intervals.get(key)!;
  }

  /** byStatistics by DuckDB's comparisons. */
  private async compared(
    view: ViewSet,
    index: InstalledIndex & { valueType: string },
    restrictions: Restriction[],
    files: string[],
  ): Promise<Set<string> | null> {
    const byFile = await this.statisticsOf(view, index, files);
    const kept = new Set(files);
    if (byFile.size === 0) return kept;
    const meets = junction('CONJUNCTION_OR', [
      junction('CONJUNCTION_AND', [columnRef('__orr_listed'), ...restrictions.map(valueMeets)]),
      junction('CONJUNCTION_AND', [columnRef('__orr_unlisted'), ...restrictions.map(rangeMeets)]),
    ]);
    let condition: string | null;
    try {
      condition = await this.condition(meets);
    } catch {
      return null;
    }
    if (condition === null) return null;
    // A file's statistics never change, so neither does a condition of constants over them: a repeated
    // statement asks DuckDB only of files it has not decided yet (not a bound rising with the clock).
    const fixed = restrictions.every((r) => r.constants.every((c) => isFixed(c) && !holdsClock(c)));
    const audiences = JSON.stringify(this.statement.audiences ?? null);
    const decisionOf = (file: string): string => `${index.hash}\u0000${condition}\u0000${file}\u0000${audiences}`;
    const undecided: PartitionStatistics[] = [];
    for (const [file, stats] of byFile) {
      const known = fixed ? decisions.get(decisionOf(file)) : undefined;
      // A file holding none of a reader's rows: nothing of it can pass.
      if (known === false || stats.length === 0) kept.delete(file);
      else if (known === undefined) undecided.push(...stats);
    }
    if (undecided.length > 0) {
      // The statistics as one JSON text per column, unnested: DuckDB binds a VALUES list row by row (some 0.3 s for
      // 1,000 files), and a string literal at once (a WHERE on the event time decides every partition of a set).
      const [files, values, mins, maxes] = [[], [], [], []] as Array<Array<string | null>>;
      const listed: boolean[] = [];
      for (const s of undecided)
        for (const value of s.distinct === null || index.kind !== 'set' ? [undefined] : s.distinct) {
          files.push(s.filePath);
          listed.push(value !== undefined);
          values.push(value ?? null);
          mins.push(s.min);
          maxes.push(s.max);
        }
      const column = (list: unknown[], type: string, name: string) =>
        `unnest(from_json(${quoteLiteral(JSON.stringify(list))}, '["${type}"]')) AS ${name}`;
      const type = index.valueType;
      const relation =
        `SELECT __orr_file, __orr_listed, NOT __orr_listed AS __orr_unlisted, CAST(__orr_value AS ${type}) AS __orr_value, ` +
        `CAST(__orr_min AS ${type}) AS __orr_min, CAST(__orr_max AS ${type}) AS __orr_max FROM (SELECT ` +
        [
          column(files, 'VARCHAR', '__orr_file'),
          column(listed, 'BOOLEAN', '__orr_listed'),
          column(values, 'VARCHAR', '__orr_value'),
          column(mins, 'VARCHAR', '__orr_min'),
          column(maxes, 'VARCHAR', '__orr_max'),
        ].join(', ') +
        ')';
      const passed = new Set<string>();
      try {
        for (const [file] of await this.engine.values(`SELECT DISTINCT __orr_file FROM (${relation}) ${condition}`))
          passed.add(String(file));
      } catch {
        return null;
      }
      for (const filePath of new Set(undecided.map((s) => s.filePath))) {
        if (!passed.has(filePath)) kept.delete(filePath);
        if (fixed) remember(decisions, decisionOf(filePath), passed.has(filePath), 100_000);
      }
    }
    if (index.kind !== 'bloom_filter') return kept;
    for (const r of restrictions.filter((r) => r.op === 'COMPARE_EQUAL' || r.op === 'in')) {
      const hashes = await this.valueHashes(r.constants, index.valueType);
      if (!hashes) continue;
      for (const [filePath, stats] of byFile)
        if (kept.has(filePath) && !stats.some(({ bloom }) => !bloom || hashes.some((h) => mayHold(bloom, h))))
          kept.delete(filePath);
    }
    return kept;
  }

  /** The files that may hold a value matching every search, by a text index: those without one, and those whose trigrams hold the searches'. */
  private async containing(
    view: ViewSet,
    index: InstalledIndex,
    searches: Search[],
    files: string[],
  ): Promise<Set<string>> {
    const kept = new Set(files);
    for (const [filePath, stats] of await this.statisticsOf(view, index, files))
      if (!stats.some(({ bloom }) => !bloom || searches.every((s) => mayContain(bloom, s.trigrams))))
        kept.delete(filePath);
    return kept;
  }

  /**
   * An index's statistics of what the statement may read of each file, by file: for an admin, of the file's
   * rows; for a reader, of its audiences' rows, one per audience the file holds (none: it holds none of
   * them), so what a reader's statement skips and reads depends on rows it may read alone. Files absent:
   * nothing is known (read whole).
   */
  private async statisticsOf(
    view: ViewSet,
    index: InstalledIndex,
    files: readonly string[],
  ): Promise<Map<string, PartitionStatistics[]>> {
    const bounds = this.eventBounds.get(index.hash);
    if (bounds) return new Map(files.flatMap((f) => (bounds.has(f) ? [[f, [bounds.get(f)!]]] : [])));
    const { audiences } = this.statement;
    if (!audiences) return new Map((await partitionStatistics(this.db, index, files)).map((s) => [s.filePath, [s]]));
    // A set keyed by process: a row's audience is its process's, which no statistics were kept by.
    if (view.audienceColumn !== 'audience') return new Map();
    return audienceStatistics(this.db, index, files, audiences);
  }

  /**
   * `WHERE <meets>` as DuckDB writes it (the statement's constants as it reads them, timestamps as
   * nanoseconds), kept per condition: a dashboard's repeated statement costs no parse again.
   */
  private async condition(meets: Node): Promise<string | null> {
    const key = JSON.stringify(meets);
    if (!conditions.has(key)) {
      const skeleton = 'SELECT DISTINCT __orr_file FROM __orr_stats';
      const statement = (await this.engine.parseSelect(skeleton))!;
      (statement.statements[0].node as Node).where_clause = structuredClone(meets);
      nanosecondTimestamps(statement);
      const sql = await this.engine.deparse(statement);
      remember(conditions, key, sql.startsWith(`${skeleton} WHERE `) ? sql.slice(skeleton.length + 1) : null);
    }
    return conditions.get(key)!;
  }

  /**
   * DuckDB's hash() of each constant as a value of the indexed type, which is what a bloom filter
   * holds; null unless each constant is one the statement's comparison casts to that type (a string
   * literal, an integer literal against an integer column, a cast to exactly that type), so equal
   * values hash alike. A NULL constant equals nothing and has no hash.
   */
  private async valueHashes(constants: readonly Node[], type: string): Promise<bigint[] | null> {
    const key = JSON.stringify([type, constants]);
    if (!hashes.has(key)) remember(hashes, key, await this.hashesOf(constants, type));
    return hashes.get(key)!;
  }

  private async hashesOf(constants: readonly Node[], type: string): Promise<bigint[] | null> {
    if (!hashedTypes.test(type)) return null;
    const tree = (await this.engine.parseSelect('SELECT 1'))!;
    const values = structuredClone(constants).filter((c) => !isNull(c));
    nanosecondTimestamps({ statements: [{ node: { select_list: values } }] });
    const castsAlike = (c: Node): boolean => {
      if (c.class === 'CAST') return (c.cast_type as Node).id === type && (c.cast_type as Node).type_info === null;
      const id = ((c.value as Node).type as Node).id as string;
      return id === 'VARCHAR' || (integerTypes.test(type) && integerTypes.test(id));
    };
    if (!values.every(castsAlike)) return null;
    if (values.length === 0) return [];
    const node = tree.statements[0].node as Node;
    node.select_list = values.map((c) => callNode('hash', [castNode(c, { id: type, type_info: null })]));
    try {
      const [row] = await this.engine.values(await this.engine.deparse(tree));
      return row.map((h) => BigInt(h as bigint));
    } catch {
      return null;
    }
  }
}
