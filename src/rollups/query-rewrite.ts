import {
  clockKeywords,
  clockMacroFunctions,
  clockMacroKeywords,
  queryShape,
  varyingRead,
  type DuckDBEngine,
} from '../engine/index.js';
import type { SeriesTable } from '../tables/index.js';
import {
  approximateWidth,
  ceilBoundary,
  day,
  floorBoundary,
  instantText,
  intervalParts,
  onBoundary,
  timeBucketLadder,
  timestampNanos,
  truncLadder,
  type Ladder,
} from './calendar.js';
import { agoAsClock, clockBoundText } from './clock-bounds.js';
import { clockFree } from './constant-trends.js';
import { argOrderState, mergedBy } from './entry-shape.js';
import type { StoredColumns } from './stored-columns.js';
import {
  answersBucket,
  bucketsOnGrid,
  comparedAs,
  instantTypes,
  isClockWord,
  gridOf,
  threshold,
  timeExpression,
  type TimeExpression,
} from './window-bounds.js';
import {
  call,
  cast,
  coalesce,
  column,
  copy,
  expressions,
  integer,
  isExpression,
  key,
  normal,
  some,
  type Node,
} from './tree.js';

// The rewrite of a statement onto rollups (issue 14): each query level (a SELECT, each subquery
// and CTE) that reads a series table alone and aggregates it reads instead the coarsest ready
// rollup of that table that answers it, through the rollup's never-stale, audience-filtered view;
// otherwise it reads the table. Every rollup considered is reported with the reason it was not
// read. Everything is decided on DuckDB's parse tree; the rewritten level is a tree too.

/** A rollup of a table as the rewrite considers it. */
export interface RollupTarget {
  readonly name: string;
  readonly grain: string;
  /** Refreshed at least once. */
  readonly ready: boolean;
  /** Its base table's columns are those it was created over. */
  readonly sameHash: boolean;
  readonly integer: boolean;
  /** The oldest instant its retention keeps (ns since the epoch); null: every bucket. */
  readonly coveredFrom: bigint | null;
  readonly retention: string | null;
  /** The oldest bucket a rollup still being backfilled holds (ns since the epoch); null: backfilled. */
  readonly backfilledFrom: bigint | null;
  readonly stored: StoredColumns | null;
  /**
   * For a rollup of the table itself, how it reads raw edges: its aggregate statement over `__rollup_source`, and the
   * temporary relation holding the table's rows for them (the caller's audience-filtered view of it, set up with the
   * statement); null otherwise.
   */
  readonly rawEdges: { readonly query: string; readonly rows: string } | null;
}

export interface SkippedRollup {
  readonly name: string;
  readonly grain: string;
  readonly reason: string;
}

export interface RollupRead {
  readonly name: string;
  readonly grain: string;
  /** The range the rollup answers for: from its retention's start (null: every bucket) to now and on. */
  readonly covered: { readonly from: string | null; readonly to: null };
  /** The level's window, as read. */
  readonly window: { readonly from: string; readonly to: string | null };
  /** For a window not on bucket boundaries: the whole buckets read from the rollup, the rest from raw rows. */
  readonly buckets?: { readonly from: string; readonly to: string | null };
}

export interface LevelProvenance {
  readonly level: string;
  readonly table: string;
  readonly rollup: RollupRead | null;
  readonly skipped_rollup: SkippedRollup[];
}

/** What a statement read: one entry per query level that read a table with rollups. */
export interface Provenance {
  readonly resources: LevelProvenance[];
}

export interface RewriteInput {
  readonly engine: DuckDBEngine;
  readonly tables: ReadonlyMap<string, SeriesTable>;
  /** The rollups of each base table. */
  readonly targets: ReadonlyMap<string, readonly RollupTarget[]>;
  readonly aggregates: ReadonlySet<string>;
  /**
   * The expression a statement wrote where a stored column now stands (issue 13's substitution):
   * a level is checked against rollups as written, so a dimension read from a stored column is still one.
   */
  readonly original?: (node: Node) => Node | undefined;
  /**
   * The rows of a statement describing a query over the table's column types (its answer hangs on its text
   * alone: DuckDB's types and names), kept by text; without it, run each time.
   */
  readonly probe?: (sql: string) => Promise<unknown[][]>;
  /**
   * The instant the statement's clock reads as the rewrite evaluated its window's bounds (ns since the epoch): its
   * fixed clock, or now. A bound worked out from it is written as that constant (see constantBounds).
   */
  readonly clockNs?: bigint;
  /** When a window off bucket boundaries reads raw edges (see rawCheaper); without it, whenever it can. */
  readonly rawEdges?: {
    readonly minRows: number;
    /**
     * The table's rows with times in [from, to) (ns; to null: on) that the statement's key reads, estimated; null
     * when not known. A reader's counts its own audiences' rows alone: whether its window read the rollup, and the
     * count its reason quotes, tell nothing of other audiences' rows.
     */
    readonly rowsWithin: (table: SeriesTable, from: bigint, to: bigint | null) => Promise<number | null>;
    /**
     * Whether the window reads whole buckets plus raw edges from `from` (ns: the window's start) however few rows the
     * buckets replace, `minRows` unweighed: when its edges are read from the table's Parquet files (Rollups.edgeRows),
     * with no DuckLake scan, they cost less than a raw read at every size measured. Absent: never.
     */
    readonly unweighed?: (table: SeriesTable, from: bigint) => Promise<boolean>;
  };
}

const zonedType = { id: 'TIMESTAMP WITH TIME ZONE', type_info: null };

/** The alias a rewritten level reads its rollup under; references to the rollup's columns are qualified by it. */
const rollupAlias = '__rollup';

/** Aggregates whose value over the rollup's rows equals their value over the raw rows when their arguments are dimensions. */
const duplicateInsensitive = new Set(['min', 'max', 'bool_and', 'bool_or', 'bit_and', 'bit_or']);
/** How a stored aggregate is merged across buckets and audiences. */
export const mergeOf: Readonly<Record<string, string>> = { ...mergedBy, merge: 'merge' };
const bucketFunctions = new Set(['date_trunc', 'date_bin', 'time_bucket', 'bucket']);

/** Why a rollup does not answer a level; each of `nodes` is quoted as DuckDB writes it in place of a `{}`, in order. */
class Skip extends Error {
  readonly nodes: readonly Node[];
  constructor(
    readonly reason: string,
    ...nodes: Node[]
  ) {
    super(reason);
    this.nodes = nodes;
  }
}

interface Bound {
  readonly op: 'ge' | 'gt' | 'lt' | 'le' | 'eq';
  /** The instant the conjunct compares with, as written. */
  readonly nanos: bigint;
  /** The first value of the time column the bound keeps (lower) or leaves out (upper): see window-bounds.ts. */
  readonly side: 'lower' | 'upper';
  readonly at: bigint;
  readonly conjunct: Node;
  /** Where the conjunct holds the value compared with. */
  readonly valueAt: 'left' | 'right' | 'lower' | 'upper';
  /** The value reads the clock, and is `nanos` at RewriteInput.clockNs: a constant may stand for it. */
  readonly clocked: boolean;
}

/** What one level is: its table and everything the rollup-independent part of the check found. */
interface Level {
  readonly node: Node;
  readonly label: string;
  readonly table: SeriesTable;
  readonly qualifiers: ReadonlySet<string>;
  readonly columns: ReadonlySet<string>;
  readonly aliases: ReadonlySet<string>;
  readonly time: string;
  readonly timeType: Node;
  /** The step between the time column's values (ns). */
  readonly grid: bigint;
  readonly bounds: readonly Bound[];
  /** WHERE conjuncts other than the window's. */
  readonly filters: readonly Node[];
  /** Bucket calls over the time column, by key: their ladder and the step of the values they bucket, or why not understood. */
  readonly buckets: ReadonlyMap<string, { readonly ladder: Ladder; readonly grid: bigint } | string>;
}

interface Rewritten {
  readonly target: RollupTarget;
  readonly width: bigint;
  readonly node: Node;
  /** Casts back to the type the raw aggregate had, to fill in. */
  readonly casts: Array<{ readonly cast: Node; readonly aggregate: Node }>;
  /** Unaliased select items whose text changes, to alias with the name DuckDB gave them. */
  readonly named: Array<{ readonly item: Node; readonly original: Node }>;
  readonly edges: RawEdges | null;
  /** The constants standing for window bounds written with the clock, each with the bound as written. */
  readonly clocked: ReadonlyMap<Node, Node>;
}

/** `n > 0`. */
const positive = (n: Node): Node => ({
  class: 'COMPARISON',
  type: 'COMPARE_GREATERTHAN',
  alias: '',
  left: n,
  right: integer(0),
});

/** The conjuncts of a condition (its ANDed parts), none for none. */
export const conjuncts = (node: Node | null): Node[] =>
  node === null
    ? []
    : node.class === 'CONJUNCTION' && node.type === 'CONJUNCTION_AND'
      ? (node.children as Node[]).flatMap(conjuncts)
      : [node];

const and = (nodes: Node[]): Node | null =>
  nodes.length === 0
    ? null
    : nodes.length === 1
      ? nodes[0]
      : { class: 'CONJUNCTION', type: 'CONJUNCTION_AND', alias: '', children: nodes };

const columnName = (node: Node, qualifiers: ReadonlySet<string>): string | null => {
  if (node.class !== 'COLUMN_REF') return null;
  const names = (node.column_names as string[]).map((n) => n.toLowerCase());
  if (names.length === 1) return names[0];
  return names.length === 2 && qualifiers.has(names[0]) ? names[1] : null;
};

/**
 * An expression of constants; with the table's columns, `current_date` and `current_timestamp` (which
 * DuckDB parses as names) count as constants where the table has no column of that name.
 */
const isConstant = (node: Node, columns?: ReadonlySet<string>): boolean =>
  !some(
    node,
    (n) =>
      (n.class === 'COLUMN_REF' && !(columns && isClockWord(n, columns))) ||
      n.class === 'SUBQUERY' ||
      n.class === 'WINDOW' ||
      n.class === 'STAR',
  );

/** Clocks DuckDB parses as names that the rewrite does not read: local wall-clock time and times of day. */
const localClocks = new Set([...clockKeywords].filter((word) => !clockMacroKeywords.has(word)));

/** The local clock an expression reads (a name no column of the table has), or null. */
const localClock = (node: Node | undefined, columns: ReadonlySet<string>): string | null => {
  let found: string | null = null;
  if (node)
    some(node, (n) => {
      const names = n.class === 'COLUMN_REF' ? (n.column_names as string[]) : [];
      const name = names.length === 1 ? names[0].toLowerCase() : '';
      if (localClocks.has(name) && !columns.has(name)) found = name;
      return found !== null;
    });
  return found;
};

/**
 * A function call over column names and constants, such as count(*) or round(sum(x), 2), or a cast of one
 * (ClickHouse's toFloat64(count()) is DuckDB's `count(*)::DOUBLE`): its name is kept by aliasing it.
 */
const isPlainCall = (node: Node): boolean =>
  (node.class === 'CAST' && isPlainCall(node.child as Node)) ||
  (node.class === 'FUNCTION' &&
    node.is_operator !== true &&
    (node.children as Node[]).every((c) => c.class === 'CONSTANT' || c.class === 'COLUMN_REF' || isPlainCall(c)));

/**
 * Rewrites each level of a parsed SELECT that a rollup answers (in place) and says, for each
 * level that read a table with rollups, which rollup it read and why each other was skipped.
 */
export async function rewriteOntoRollups(
  tree: { statements: Node[] },
  input: RewriteInput,
): Promise<{ provenance: Provenance; rollups: string[]; storedColumnsUnread: string[] }> {
  const ctes = new Set<string>();
  walkNodes(tree, (node) => {
    for (const entry of ((node.cte_map as Node | undefined)?.map as Node[] | undefined) ?? [])
      ctes.add(String(entry.key).toLowerCase());
  });
  const levels: Array<{ node: Node; label: string }> = [];
  tree.statements.forEach((statement, i) =>
    labelLevels(statement.node as Node, tree.statements.length > 1 ? `statement ${i + 1}` : 'main', levels),
  );
  const resources: LevelProvenance[] = [];
  const read = new Set<string>();
  // Tables whose level read stored columns in place of expressions, and now reads a rollup instead.
  const storedColumnsUnread: string[] = [];
  const pendingTexts: Array<{ node: Node; fill: (text: string) => void }> = [];
  const clocked = new Map<Node, Node>();
  for (const { node: parsed, label } of levels) {
    const written = input.original && asWritten(parsed, input.original);
    const node = written ?? parsed;
    const table = tableOf(node.from_table as Node, input, ctes);
    if (table === undefined) {
      for (const joined of joinedTables(node.from_table as Node, input, ctes)) {
        resources.push({
          level: label,
          table: joined,
          rollup: null,
          skipped_rollup: input.targets
            .get(joined)!
            .map((t) => ({ name: t.name, grain: t.grain, reason: 'the level does not read the table alone (joins)' })),
        });
      }
      continue;
    }
    const targets = input.targets.get(table.name)!.filter((t) => !ctes.has(t.name));
    const entry: LevelProvenance = { level: label, table: table.name, rollup: null, skipped_rollup: [] };
    resources.push(entry);
    const skip = (target: RollupTarget, s: Skip): void => {
      const skipped = { name: target.name, grain: target.grain, reason: s.reason };
      entry.skipped_rollup.push(skipped);
      for (const node of s.nodes)
        pendingTexts.push({ node, fill: (text) => (skipped.reason = skipped.reason.replace('{}', text)) });
    };
    let level: Level;
    try {
      level = await analyse(node, label, table, input);
    } catch (error) {
      if (!(error instanceof Skip)) throw error;
      for (const target of targets) skip(target, error);
      continue;
    }
    const answering: Rewritten[] = [];
    for (const target of targets) {
      try {
        answering.push(rewriteFor(level, target, input));
      } catch (error) {
        if (!(error instanceof Skip)) throw error;
        skip(target, error);
      }
    }
    answering.sort((a, b) =>
      a.width === b.width ? a.target.name.localeCompare(b.target.name) : a.width > b.width ? -1 : 1,
    );
    let chosen: Rewritten | undefined;
    for (const candidate of answering) {
      if (chosen) {
        skip(candidate.target, new Skip(`a coarser rollup answers the level (${chosen.target.name})`));
        continue;
      }
      const costlier = await rawCheaper(level, candidate, input);
      if (costlier) {
        skip(candidate.target, costlier);
        continue;
      }
      try {
        await finish(level, candidate, input);
        chosen = candidate;
      } catch {
        // DuckDB's message would quote Orrery's probe, not the caller's SQL: the raw read reports the caller's error.
        skip(candidate.target, new Skip('the level does not bind over the rollup'));
      }
    }
    if (!chosen) continue;
    for (const [literal, written] of chosen.clocked) clocked.set(literal, written);
    Object.assign(parsed, chosen.node);
    read.add(chosen.target.name);
    if (written) storedColumnsUnread.push(table.name);
    const lower = level.bounds.filter((b) => b.side === 'lower').map((b) => b.at);
    const upper = level.bounds.filter((b) => b.side === 'upper').map((b) => b.at);
    const max = (values: bigint[]): bigint => values.reduce((a, b) => (a > b ? a : b));
    const min = (values: bigint[]): bigint => values.reduce((a, b) => (a < b ? a : b));
    (entry as { rollup: RollupRead | null }).rollup = {
      name: chosen.target.name,
      grain: chosen.target.grain,
      covered: { from: coveredStart(chosen.target), to: null },
      window: { from: instantText(max(lower)), to: upper.length > 0 ? instantText(min(upper)) : null },
      ...(chosen.edges
        ? {
            buckets: {
              from: instantText(chosen.edges.from),
              to: chosen.edges.to === null ? null : instantText(chosen.edges.to),
            },
          }
        : {}),
    };
  }
  constantBounds(tree, clocked);
  const texts = await expressionTexts(
    input.engine,
    pendingTexts.map((p) => p.node),
  );
  pendingTexts.forEach((p, i) => p.fill(texts[i]));
  return { provenance: { resources }, rollups: [...read], storedColumnsUnread };
}

/**
 * Keeps the constants that stand for rewritten levels' window bounds written with the clock (`date_trunc('day',
 * now()) - INTERVAL 30 DAY`) when nothing else in the statement reads the clock; else puts the bounds back as
 * written. DuckDB plans a statement that calls now() again at every run (now() is the same within a run only),
 * while one of constants keeps its plan until a bound moves. The constants are the values the rewrite worked out
 * from one instant of the clock, which its stored rows' windows and pending buckets were read with too, so the
 * statement reads one now() throughout, as its raw read does; a clock read elsewhere would be another instant.
 */
function constantBounds(tree: { statements: Node[] }, clocked: ReadonlyMap<Node, Node>): void {
  // A read of the engine's state counts: getvariable() may read the statement's fixed clock.
  if (clocked.size === 0 || varyingRead(queryShape(tree)) === undefined) return;
  const restore = (value: unknown): void => {
    if (value === null || typeof value !== 'object') return;
    const parent = value as Record<string, unknown>;
    for (const [k, child] of Object.entries(parent)) {
      const written = clocked.get(child as Node);
      if (written) parent[k] = written;
      else restore(child);
    }
  };
  restore(tree.statements);
}

/** A level's own expressions as its statement wrote them, where stored columns stand for some; null when none does. */
function asWritten(level: Node, original: (node: Node) => Node | undefined): Node | null {
  // Most levels read no stored column: looked for before copying anything.
  let found = false;
  for (const k of levelPartKeys) walkNodes(level[k], (n) => (found ||= original(n) !== undefined));
  if (!found) return null;
  const restore = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(restore);
    if (value === null || typeof value !== 'object') return value;
    const written = original(value as Node);
    if (written) return copy(written);
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, restore(v)]));
  };
  return { ...level, ...Object.fromEntries(levelPartKeys.map((k) => [k, restore(level[k])])) };
}

/** Every object of a tree. */
function walkNodes(value: unknown, visit: (node: Node) => void): void {
  if (Array.isArray(value)) {
    for (const v of value) walkNodes(v, visit);
    return;
  }
  if (value === null || typeof value !== 'object') return;
  visit(value as Node);
  for (const v of Object.values(value as Node)) walkNodes(v, visit);
}

/** The SELECT nodes of a query node and everything in it, each with a name for provenance. */
function labelLevels(node: Node, label: string, out: Array<{ node: Node; label: string }>): void {
  for (const entry of ((node.cte_map as Node | undefined)?.map as Node[] | undefined) ?? [])
    labelLevels(((entry.value as Node).query as Node).node as Node, `with ${String(entry.key)}`, out);
  if (node.type === 'SET_OPERATION_NODE') {
    labelLevels(node.left as Node, `${label} part 1`, out);
    labelLevels(node.right as Node, `${label} part 2`, out);
    return;
  }
  if (node.type !== 'SELECT_NODE') return;
  out.push({ node, label });
  let subqueries = 0;
  const within = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(within);
    if (value === null || typeof value !== 'object') return;
    const n = value as Node;
    if (n.type === 'SUBQUERY' && n.class === undefined) {
      const alias = String(n.alias);
      labelLevels((n.subquery as Node).node as Node, `${label} from ${alias || `subquery ${++subqueries}`}`, out);
      return;
    }
    if (n.class === 'SUBQUERY') {
      labelLevels((n.subquery as Node).node as Node, `${label} subquery ${++subqueries}`, out);
      return;
    }
    if (n.type === 'SELECT_NODE' || n.type === 'SET_OPERATION_NODE' || n.type === 'CTE_NODE') return;
    for (const [k, v] of Object.entries(n)) if (k !== 'cte_map') within(v);
  };
  for (const [k, v] of Object.entries(node)) if (k !== 'cte_map') within(v);
}

/** The series table with rollups a FROM clause reads alone, if it does. */
function tableOf(from: Node, input: RewriteInput, ctes: ReadonlySet<string>): SeriesTable | undefined {
  if (from.type !== 'BASE_TABLE' || from.catalog_name !== '' || !['', 'main'].includes(String(from.schema_name)))
    return undefined;
  const name = String(from.table_name).toLowerCase();
  if (ctes.has(name) || !input.targets.has(name)) return undefined;
  if (from.at_clause !== null || from.sample !== null || (from.column_name_alias as unknown[]).length > 0)
    return undefined;
  return input.tables.get(name);
}

/** The series tables with rollups a FROM clause joins. */
function joinedTables(from: Node, input: RewriteInput, ctes: ReadonlySet<string>): string[] {
  if (from.type !== 'JOIN') return [];
  return [from.left as Node, from.right as Node].flatMap((side) => {
    if (side.type === 'JOIN') return joinedTables(side, input, ctes);
    if (side.type !== 'BASE_TABLE' || side.catalog_name !== '') return [];
    const name = String(side.table_name).toLowerCase();
    return !ctes.has(name) && input.targets.has(name) ? [name] : [];
  });
}

const levelPartKeys = ['select_list', 'where_clause', 'group_expressions', 'having', 'qualify', 'modifiers'];

/** The parts of a SELECT node holding its own expressions (not its FROM or CTEs). */
export const levelParts = (node: Node): unknown[] => levelPartKeys.map((k) => node[k]);

/** An order by `ALL` (every select item), not by a star of columns. */
const isAllColumns = (order: Node): boolean => {
  const e = order.expression as Node;
  return (
    e.class === 'STAR' &&
    e.relation_name === '' &&
    e.expr === null &&
    [e.exclude_list, e.replace_list, e.qualified_exclude_list, e.rename_list].every(
      (list) => list === undefined || (list as unknown[]).length === 0,
    )
  );
};

/** The checks of a level that hold whatever the rollup; throws Skip. */
async function analyse(node: Node, label: string, table: SeriesTable, input: RewriteInput): Promise<Level> {
  const parts = levelParts(node);
  if (some(parts, (n) => n.class === 'SUBQUERY')) throw new Skip('the level holds a subquery expression');
  if (some(parts, (n) => n.class === 'WINDOW') || node.qualify !== null)
    throw new Skip('the level holds a window function');
  // ORDER BY ALL orders by the select items, which the rewrite keeps (values, names, types).
  const modifiers = (node.modifiers as Node[]).map((m) =>
    m.type === 'ORDER_MODIFIER' ? { ...m, orders: (m.orders as Node[]).filter((o) => !isAllColumns(o)) } : m,
  );
  if (some(levelParts({ ...node, modifiers }), (n) => n.class === 'STAR')) throw new Skip('the level selects *');
  if (node.sample !== null) throw new Skip('the level samples its table');
  const aggregates = some([node.select_list, node.having, node.modifiers], (n) => isAggregate(n, input));
  const distinct = (node.modifiers as Node[]).some((m) => m.type === 'DISTINCT_MODIFIER');
  if (
    !aggregates &&
    !distinct &&
    (node.group_expressions as unknown[]).length === 0 &&
    node.aggregate_handling !== 'FORCE_AGGREGATES'
  )
    throw new Skip('the level reads rows, not aggregates');
  const from = node.from_table as Node;
  const qualifiers = new Set([table.name, String(from.alias).toLowerCase()].filter((q) => q !== ''));
  const time = table.timeColumn.toLowerCase();
  const timeColumnType = table.columns.find((c) => c.name.toLowerCase() === time)!.type;
  const [timeType, nanosType] = await castTypes(input.engine, [timeColumnType, 'TIMESTAMP_NS']);
  const grid = gridOf(timeColumnType);
  const isTime = (n: Node): boolean => columnName(n, qualifiers) === time;
  const over = (n: Node): TimeExpression | null => timeExpression(n, isTime, timeType, grid);

  // The window: conjuncts comparing the time column, or a cast of it, with a constant.
  const candidates: Array<{
    op: Bound['op'];
    value: Node;
    valueAt: Bound['valueAt'];
    conjunct: Node;
    time: TimeExpression;
  }> = [];
  const filters: Node[] = [];
  const flip = { ge: 'le', gt: 'lt', lt: 'gt', le: 'ge', eq: 'eq' } as const;
  const ops: Record<string, Bound['op']> = {
    COMPARE_GREATERTHANOREQUALTO: 'ge',
    COMPARE_GREATERTHAN: 'gt',
    COMPARE_LESSTHAN: 'lt',
    COMPARE_LESSTHANOREQUALTO: 'le',
    COMPARE_EQUAL: 'eq',
  };
  const columns = new Set(table.columns.map((c) => c.name.toLowerCase()));
  const aliases = new Set(
    (node.select_list as Node[]).map((i) => String(i.alias).toLowerCase()).filter((a) => a !== ''),
  );
  // The names DuckDB's WHERE binds before the clock's (`current_date`): the table's columns, then the select aliases.
  const named = new Set([...columns, ...aliases]);
  const isBound = (n: Node): boolean => isConstant(n, named);
  // A bound is worked out once, as the rewrite reads the rollup; what else it reads is read again when the statement
  // runs (another instant, a variable or setting of another connection, another random value): read raw.
  const unread = (n: Node): string | undefined =>
    varyingRead(queryShape({ statements: [n] }), { random: true, read: clockMacroFunctions });
  for (const conjunct of conjuncts(node.where_clause as Node | null)) {
    const op = conjunct.class === 'COMPARISON' ? ops[String(conjunct.type)] : undefined;
    const [leftTime, rightTime, between] = [conjunct.left as Node, conjunct.right as Node, conjunct.input as Node].map(
      (n) => n && over(n),
    );
    // A bound written with ago(), Orrery's clock less an interval, is read as it (agoAsClock), in the statement too.
    const sides = op
      ? leftTime
        ? ['right']
        : rightTime
          ? ['left']
          : []
      : conjunct.class === 'BETWEEN' && between
        ? ['lower', 'upper']
        : [];
    for (const side of sides) conjunct[side] = agoAsClock(conjunct[side] as Node, named);
    const [left, right] = [conjunct.left as Node, conjunct.right as Node];
    if (op && leftTime && isBound(right))
      candidates.push({ op, value: right, valueAt: 'right', conjunct, time: leftTime });
    else if (op && rightTime && isBound(left))
      candidates.push({ op: flip[op], value: left, valueAt: 'left', conjunct, time: rightTime });
    else if (
      conjunct.class === 'BETWEEN' &&
      between &&
      isBound(conjunct.lower as Node) &&
      isBound(conjunct.upper as Node)
    ) {
      candidates.push({ op: 'ge', value: conjunct.lower as Node, valueAt: 'lower', conjunct, time: between });
      candidates.push({ op: 'le', value: conjunct.upper as Node, valueAt: 'upper', conjunct, time: between });
    } else {
      // A local clock read raw: say so, not that the level has no window.
      const [clock, bound] = [localClock(right, named), localClock(left, named)];
      const word = op && leftTime ? clock : op && rightTime ? bound : null;
      if (word)
        throw new Skip(
          `a bound of the window on ${time} reads ${word}, ${word === 'localtimestamp' ? "the wall clock of the session's time zone" : 'a time of day'}, which the rewrite does not read as an instant`,
        );
      // A window written otherwise with the clock (age(ts) < INTERVAL 1 DAY, ts's age on DuckDB's date): say so.
      const read = some(conjunct, (n) => over(n) !== null) ? unread(conjunct) : undefined;
      if (read !== undefined)
        throw new Skip(
          `a condition on ${time} ${read}: the rewrite reads a window written as bounds on ${time} (${time} >= now() - INTERVAL 1 DAY)`,
        );
      filters.push(conjunct);
    }
  }
  for (const { value } of candidates) {
    const read = unread(value);
    if (read !== undefined)
      throw new Skip(
        `a bound of the window on ${time} ${read}: the rewrite works out bounds of constants and of Orrery's clock (now(), current_date and their twins) alone`,
      );
  }
  // The instant each compares with: a string cast to the compared type, another instant as it is.
  // One whose type the parse tree does not tell (make_date(…)) is read as a string where that is the
  // same (a column of microseconds or finer); otherwise DuckDB types it, and only an instant is read
  // (DuckDB casts a string literal to the column's type, no other text): else the level reads raw.
  const told = candidates.map((c) => comparedAs(c.value));
  const untold = candidates.filter((c, i) => told[i] === null && c.time.grid > 1000n);
  let types: Array<string | null> = [];
  try {
    types =
      untold.length > 0 ? await input.engine.constantTexts(untold.map((c) => call('typeof', [copy(c.value)]))) : [];
  } catch {
    throw new Skip(`a bound of the window on ${time} is not a constant instant`);
  }
  const compared = candidates.map((c, i) => {
    const k = untold.indexOf(c);
    const type = k < 0 ? null : (types[k] ?? 'NULL');
    const as = k < 0 ? told[i] : instantTypes.has(type!) ? 'instant' : null;
    if (k >= 0 && as === null)
      throw new Skip(`a bound of the window on ${time} is neither a string nor an instant (${type})`);
    return as === 'instant' ? cast(c.value, nanosType) : cast(cast(c.value, c.time.type), nanosType);
  });
  let values: Array<string | null>;
  try {
    values = await input.engine.constantTexts(compared);
  } catch {
    throw new Skip(`a bound of the window on ${time} is not a constant instant`);
  }
  const bounds = candidates.flatMap((c, i): Bound[] => {
    const nanos = values[i] === null ? null : timestampNanos(values[i]!);
    if (nanos === null) throw new Skip(`a bound of the window on ${time} is not an instant`);
    const { op, conjunct, valueAt } = c;
    const g = c.time.grid;
    // Compared as an instant, and worked out from the clock's instant the rewrite read (not by DuckDB, whose
    // now() is another statement's).
    const clocked =
      compared[i].child === c.value &&
      input.clockNs !== undefined &&
      !clockFree([c.value]) &&
      clockBoundText(compared[i], input.clockNs) === values[i];
    const common = { op, nanos, conjunct, valueAt, clocked };
    if (op === 'eq') {
      // [value, value + step) when the value is one the expression takes; else an instant, read raw.
      const end = threshold('le', nanos, g);
      const on = end - g === nanos;
      return [
        { ...common, side: 'lower', at: nanos },
        { ...common, side: 'upper', at: on ? end : nanos },
      ];
    }
    const side = op === 'ge' || op === 'gt' ? 'lower' : 'upper';
    return [{ ...common, side, at: threshold(op, nanos, g) }];
  });
  if (!bounds.some((b) => b.side === 'lower')) throw new Skip(`the level has no window: no lower bound on ${time}`);

  // Bucket calls over the time column, their constant arguments evaluated once.
  const calls: Node[] = [];
  expressions(parts, (n) => {
    if (isDayCast(n, isTime)) calls.push(n);
    if (n.class !== 'FUNCTION' || !bucketFunctions.has(String(n.function_name).toLowerCase())) return;
    const children = n.children as Node[];
    const source = children[1] && over(children[1]);
    if (source) calls.push(n);
  });
  const buckets = new Map<string, { ladder: Ladder; grid: bigint } | string>();
  for (const n of calls) {
    const k = key(n, qualifiers);
    if (buckets.has(k)) continue;
    if (n.class === 'CAST') {
      buckets.set(k, { ladder: { kind: 'fixed', width: day, origin: 0n }, grid });
      continue;
    }
    const ladder = await ladderOf(n, input.engine, nanosType);
    buckets.set(k, typeof ladder === 'string' ? ladder : { ladder, grid: over((n.children as Node[])[1])!.grid });
  }
  return {
    node,
    label,
    table,
    qualifiers,
    columns,
    aliases,
    time,
    timeType,
    grid,
    bounds,
    filters,
    buckets,
  };
}

/** A cast of the time column to DATE: its day, in UTC. */
const isDayCast = (n: Node, isTime: (n: Node) => boolean): boolean =>
  n.class === 'CAST' && n.try_cast !== true && String((n.cast_type as Node).id) === 'DATE' && isTime(n.child as Node);

/** The bucket boundaries of a bucket call over the time column, or why they are not understood. */
async function ladderOf(n: Node, engine: DuckDBEngine, nanosType: Node): Promise<Ladder | string> {
  const name = String(n.function_name).toLowerCase();
  const children = n.children as Node[];
  const unknown = 'the query buckets time in a way the rewrite does not read ({})';
  if (name === 'date_trunc') {
    const unit = children[0];
    if (children.length !== 2 || unit.class !== 'CONSTANT') return unknown;
    return truncLadder(String((unit.value as { value: unknown }).value)) ?? unknown;
  }
  if (children.length < 2 || children.length > 3) return unknown;
  const constants = [children[0], ...(children.length === 3 ? [children[2]] : [])];
  if (!constants.every((c) => isConstant(c))) return unknown;
  let texts: Array<string | null>;
  try {
    texts = await engine.constantTexts([
      cast(children[0], { id: 'INTERVAL', type_info: null }),
      ...(children.length === 3 ? [cast(children[2], nanosType)] : []),
    ]);
  } catch {
    return unknown;
  }
  const width = texts[0] === null ? null : intervalParts(texts[0]);
  const origin = texts.length > 1 ? (texts[1] === null ? null : timestampNanos(texts[1])) : undefined;
  if (width === null || origin === null) return unknown;
  // date_bin is DataFusion's (engine macros): bins from the Unix epoch unless told otherwise.
  const ladder = timeBucketLadder(width, name === 'date_bin' ? (origin ?? 0n) : origin);
  return ladder ?? unknown;
}

/** Whether a call is an aggregate (DuckDB's or a sketch's). */
const isAggregate = (n: Node, input: RewriteInput): boolean =>
  n.class === 'FUNCTION' && input.aggregates.has(String(n.function_name).toLowerCase());

/** The level as it reads `target`, or Skip with the reason it cannot. */
function rewriteFor(level: Level, target: RollupTarget, input: RewriteInput): Rewritten {
  if (target.integer) throw new Skip('the rollup keeps integer time, which the rewrite does not read');
  if (!target.ready) throw new Skip('not ready: the rollup has not been refreshed yet');
  if (!target.sameHash) throw new Skip('hash changed: the table is not the one the rollup was created over');
  const stored = target.stored;
  if (!stored) throw new Skip('the rollup definition cannot be read back');
  const parts = intervalParts(target.grain);
  const ladder = parts && timeBucketLadder(parts);
  if (!ladder) throw new Skip('the rollup grain is not understood');
  if (!bucketsOnGrid(ladder, level.grid))
    throw new Skip(`the rollup's ${target.grain} buckets do not start on values of ${level.time}`);
  const edges = windowOf(level, target, ladder);
  const casts: Rewritten['casts'] = [];
  const { qualifiers } = level;
  const bucket = cast(column(rollupAlias, 'bucket'), level.timeType);

  type Mode = 'select' | 'where' | 'group' | 'having' | 'order';
  const dimensionOf = (n: Node): Node | null => {
    if (!some(n, (c) => c.class === 'COLUMN_REF')) return null;
    const name = stored.dimensions.get(key(n, qualifiers));
    return name === undefined ? null : column(rollupAlias, name);
  };
  /** An expression over dimensions; throws Skip otherwise. */
  const over = (value: unknown, mode: Mode): unknown => {
    if (Array.isArray(value)) return value.map((v) => over(v, mode));
    if (value === null || typeof value !== 'object') return value;
    if (!isExpression(value)) {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, over(v, mode)]));
    }
    const n = value;
    const dimension = dimensionOf(n);
    if (dimension) return { ...dimension, alias: n.alias };
    if (isAggregate(n, input)) {
      if (mode === 'where' || mode === 'group') throw new Skip('an aggregate in WHERE or GROUP BY');
      // The node itself, not a copy: its cast is filled in once the rollup is chosen.
      return Object.assign(aggregate(n), { alias: n.alias });
    }
    if (n.class === 'FUNCTION' || n.class === 'CAST') {
      const ladderOrReason = level.buckets.get(key(n, qualifiers));
      if (typeof ladderOrReason === 'string') throw new Skip(ladderOrReason, n);
      if (ladderOrReason) {
        if (!answersBucket(ladder, ladderOrReason.ladder, ladderOrReason.grid))
          throw new Skip(`grain ${target.grain} does not divide the query's bucket {}`, n);
        if (n.class === 'CAST') return { ...n, child: bucket };
        const children = (n.children as Node[]).map((c, i) => {
          if (i !== 1) return c;
          return c.class === 'CAST' ? { ...c, child: bucket } : bucket;
        });
        return { ...n, children };
      }
    }
    if (n.class === 'COLUMN_REF') {
      const names = (n.column_names as string[]).map((c) => c.toLowerCase());
      const name = columnName(n, qualifiers);
      if (name === null) throw new Skip(`column ${names.join('.')} is not a column of ${level.table.name}`);
      const alias = names.length === 1 && level.aliases.has(name);
      if (name === level.time) throw new Skip(`${level.time} is read outside a recognised bucket or window`);
      if (name === 'audience' && level.columns.has('audience'))
        return { ...column(rollupAlias, 'audience'), alias: n.alias };
      if (mode === 'order' && alias) return n;
      if (level.columns.has(name)) throw new Skip(`dimension missing: ${name} is not a dimension of the rollup`);
      if (alias && stored.names.has(name)) throw new Skip(`the select alias ${name} is also a column of the rollup`);
      if (alias) return n;
      throw new Skip(`column ${name} is not a column of ${level.table.name}`);
    }
    return Object.fromEntries(Object.entries(n).map(([k, v]) => [k, over(v, mode)]));
  };
  /** A filter of an aggregate, over dimensions. */
  const filterOver = (filter: Node | null): Node | null => (filter === null ? null : (over(filter, 'where') as Node));
  const measure = (aggregate: Node): string | undefined => stored.measureKeys.get(key(aggregate, qualifiers));
  // WHERE conjuncts over columns the rollup does not keep (a metric's `name = 'cpu'`) pin the rows every aggregate
  // reads: the level is answered when each of its aggregates is stored under FILTER (WHERE those conjuncts), as a
  // per-series measure is (database-resources.md, rollup), its groups being those whose stored count(*) under that
  // FILTER is not 0 (the raw read's groups are those with a row the WHERE keeps). Otherwise the reason is the one the
  // level had before: the first such conjunct's, or an aggregate's that is not stored at all.
  const whereFilters: Node[] = [];
  const pinnedBy: Node[] = [];
  let unpinned: Skip | null = null;
  for (const f of level.filters) {
    try {
      whereFilters.push(over(f, 'where') as Node);
    } catch (error) {
      if (!(error instanceof Skip)) throw error;
      unpinned ??= error;
      pinnedBy.push(f);
    }
  }
  const pin = and(pinnedBy.map((f) => copy(f)));
  let pinnedAggregates = 0;
  /** The stored column counting the rows under the pin; throws the level's reason without the pin when none does. */
  const pinnedCount = (): string => {
    const counted = measure(call('count_star', [], { filter: copy(pin) }));
    if (counted === undefined) throw unpinned!;
    return counted;
  };
  /** An inline aggregate read from stored states, under the level's pin if any; throws Skip when none holds what it needs. */
  const aggregate = (n: Node): Node => {
    if (pin === null) return storedAggregate(n, null);
    try {
      const read = storedAggregate(n, pin);
      pinnedAggregates++;
      return read;
    } catch (error) {
      if (!(error instanceof Skip)) throw error;
    }
    storedAggregate(n, null);
    throw unpinned!;
  };
  /**
   * An inline aggregate read from stored states; throws Skip when none holds what it needs. Under a pin, the states
   * are those stored under FILTER (WHERE pin AND the aggregate's own FILTER), or under the pin alone, the own FILTER
   * then applied to the rollup's rows (over dimensions): the raw read's rows are those both keep.
   */
  const storedAggregate = (n: Node, pin: Node | null): Node => {
    const name = String(n.function_name).toLowerCase();
    const ordered = ((n.order_bys as Node).orders as unknown[]).length > 0;
    /** `a` as stored under the pin: its filter ANDed to it. */
    const under = (a: Node): Node =>
      pin === null ? a : { ...a, filter: and([...conjuncts(copy(pin)), ...conjuncts(a.filter as Node | null)]) };
    // Over dimensions, duplicate-insensitive aggregates read the rollup's rows directly; under a pin, the rows whose
    // stored count under it is not 0, which are those holding a row the pin keeps.
    if (!ordered && (n.distinct === true || duplicateInsensitive.has(name)) && (n.children as Node[]).length > 0) {
      try {
        const rows = pin === null ? [] : [positive(column(rollupAlias, pinnedCount()))];
        const own = filterOver(n.filter as Node | null);
        return { ...n, alias: '', children: over(n.children, 'select'), filter: and([...rows, ...conjuncts(own)]) };
      } catch (error) {
        if (!(error instanceof Skip)) throw error;
      }
    }
    const notStored = new Skip('measure not stored: {}', n);
    if (ordered || n.distinct === true) throw notStored;
    /** The stored column holding `a` (as written, or without its filter, which is then applied to the rollup's rows). */
    const find = (a: Node): { name: string; filter: Node | null } => {
      const exact = measure(under(a));
      if (exact !== undefined) return { name: exact, filter: null };
      const bare = a.filter !== null ? measure(under({ ...a, filter: null })) : undefined;
      if (bare !== undefined) return { name: bare, filter: filterOver(a.filter as Node) };
      throw notStored;
    };
    const typed = (merged: Node): Node => {
      const c = cast(merged, null);
      casts.push({ cast: c, aggregate: n });
      return c;
    };
    if (name === 'avg') {
      const sum = find({ ...n, function_name: 'sum' });
      const count = find({ ...n, function_name: 'count' });
      return typed(
        call(
          '/',
          [call('sum', [column(rollupAlias, sum.name)], sum), call('sum', [column(rollupAlias, count.name)], count)],
          {
            operator: true,
          },
        ),
      );
    }
    // arg_max (arg_min) from its stored args and the extremes they were chosen by, merged by arg_max over them.
    const order = argOrderState(n);
    if (order) {
      // Stored with the query's filter, or without one, the filter then applied to the rollup's rows; under any of
      // its names (max_by is arg_max).
      let alone: Node | null = null;
      for (const stored of n.filter === null ? [n] : [n, { ...n, filter: null }]) {
        const extreme = measure(argOrderState(under(stored))!.state);
        const arg = order.names
          .map((name) => measure(under({ ...stored, function_name: name })))
          .find((a) => a !== undefined);
        if (arg !== undefined && extreme === undefined) alone ??= stored;
        if (arg === undefined || extreme === undefined) continue;
        const filter = stored === n ? null : filterOver(n.filter as Node);
        return typed(call(order.merge, [column(rollupAlias, arg), column(rollupAlias, extreme)], { filter }));
      }
      // A rollup made by create_rollup stores what its select_list names: say which state is missing.
      if (alone)
        throw new Skip(
          'measure not stored: {} is stored without {}, the extreme it was chosen by, which merges it across buckets and audiences; store that beside it',
          alone,
          argOrderState(alone)!.state,
        );
      throw notStored;
    }
    const merge = mergeOf[name];
    if (merge === undefined) throw notStored;
    const found = find(n);
    const merged = call(merge, [column(rollupAlias, found.name)], { filter: found.filter });
    if (merge === 'merge') return merged;
    return typed(name === 'count' || name === 'count_star' ? coalesce(merged, integer(0)) : merged);
  };

  const node = level.node;
  const named: Rewritten['named'] = [];
  const selectList = (node.select_list as Node[]).map((item) => {
    const rewritten = over(item, 'select') as Node;
    // Its name is its text: compared as written, not as key reads conditions.
    const text = (n: Node, q: ReadonlySet<string>): string => JSON.stringify(normal(n, q));
    if (item.alias === '' && text(rewritten, new Set([rollupAlias])) !== text(item, qualifiers)) {
      if (some(item, (n) => isAggregate(n, input)) && !isPlainCall(item))
        throw new Skip('the unaliased select item {} would change its name: alias it to read a rollup', item);
      named.push({ item: rewritten, original: item });
    }
    return rewritten;
  });
  /** The level's groups under its pin (see whereFilters): those whose stored count under it is not 0. */
  const pinnedGroups = (): Node[] => {
    if (pin === null) return [];
    // GROUP BY ALL groups by the items that aggregate nothing: with none, it is one row, as with no GROUP BY.
    const grouped =
      (node.group_expressions as Node[]).length > 0 ||
      (node.aggregate_handling === 'FORCE_AGGREGATES' &&
        (node.select_list as Node[]).some((item) => !some(item, (n) => isAggregate(n, input))));
    if (!grouped) {
      // A level reading no aggregate under the pin and grouping nothing (SELECT DISTINCT) has its rows alone.
      if (pinnedAggregates === 0) throw unpinned!;
      return [];
    }
    // A grouping set of no column (ROLLUP, CUBE, GROUPING SETS (…, ())) answers its row even when the WHERE keeps none.
    if ((node.group_sets as unknown[][]).some((set) => set.length === 0)) throw unpinned!;
    return [positive(call('sum', [column(rollupAlias, pinnedCount())]))];
  };
  // An aligned window reads the rollup's buckets by it; one with raw edges reads a union (see finish).
  // Bounds worked out from the clock are written as the constants they were (see constantBounds).
  const clocked = new Map<Node, Node>();
  const window = edges
    ? []
    : [...new Set(level.bounds.map((b) => b.conjunct))].map((conjunct) => {
        const c = copy(conjunct);
        for (const b of level.bounds)
          if (b.conjunct === conjunct && b.clocked) {
            const literal = instantLiteral(b.nanos);
            clocked.set(literal, c[b.valueAt] as Node);
            c[b.valueAt] = literal;
          }
        let zoned = false;
        for (const side of ['left', 'right', 'input'] as const) {
          const n = c[side] as Node | undefined;
          const ofTime = n?.class === 'CAST' && columnName(n.child as Node, qualifiers) === level.time;
          if (!n || (!ofTime && columnName(n, qualifiers) !== level.time)) continue;
          c[side] = ofTime ? { ...n, child: bucket } : bucket;
          zoned = String(((ofTime ? n.cast_type : level.timeType) as Node).id) === 'TIMESTAMP WITH TIME ZONE';
        }
        // DuckDB compares no TIMESTAMPTZ with a TIMESTAMP_NS (Orrery's TIMESTAMP): the raw read casts the
        // column (scanTimeBounds), the rollup's read the instant, the same value at every bucket boundary.
        if (zoned)
          for (const side of ['left', 'right', 'lower', 'upper'] as const) {
            const n = c[side] as Node | undefined;
            if (n && isConstant(n, new Set([...level.columns, ...level.aliases])) && comparedAs(n) === 'instant')
              c[side] = cast(n, zonedType);
          }
        return c;
      });
  // ORDER BY's aggregates are read (under the pin) before pinnedGroups counts them.
  const modifiers = over(node.modifiers, 'order');
  const rewritten: Node = {
    ...node,
    select_list: selectList,
    from_table: {
      type: 'BASE_TABLE',
      alias: rollupAlias,
      sample: null,
      schema_name: 'main',
      table_name: target.name,
      column_name_alias: [],
      catalog_name: 'temp',
      at_clause: null,
    },
    where_clause: and([...window, ...whereFilters]),
    group_expressions: over(node.group_expressions, 'group'),
    having: and([...(node.having === null ? [] : [over(node.having, 'having') as Node]), ...pinnedGroups()]),
    modifiers,
  };
  return { target, width: approximateWidth(ladder), node: rewritten, casts, named, edges, clocked };
}

/** What the rollup reads of an unaligned window: whole buckets [from, to) and raw rows at either end. */
interface RawEdges {
  readonly from: bigint;
  readonly to: bigint | null;
  readonly lower: Bound | null;
  readonly upper: Bound | null;
}

/** The start of the range a rollup answers for (its retention's and its backfill's), or null for every bucket. */
function coveredStart(target: RollupTarget): string | null {
  const starts = [target.coveredFrom, target.backfilledFrom].filter((s): s is bigint => s !== null);
  return starts.length === 0 ? null : instantText(starts.reduce((a, b) => (a > b ? a : b)));
}

/**
 * Checks the window against the rollup's buckets. Aligned, it reads by buckets (null). Otherwise a
 * rollup of the table itself reads the whole buckets inside the window plus the raw rows of the
 * window's ends, when at least one whole bucket is inside (cheaper than reading it all raw);
 * throws Skip when the rollup cannot read the window.
 */
function windowOf(level: Level, target: RollupTarget, ladder: Ladder): RawEdges | null {
  const notAligned = (bound: Bound): string => {
    const at = instantText(bound.nanos);
    if (bound.op === 'gt') return `${level.time} > ${at} leaves out the start of a ${target.grain} bucket`;
    if (bound.op === 'le') return `${level.time} <= ${at} takes in the end of a ${target.grain} bucket`;
    if (bound.op === 'eq') return `${level.time} = ${at} is an instant`;
    return `${at} is not on a ${target.grain} bucket boundary`;
  };
  const aligned = (b: Bound): boolean => onBoundary(ladder, b.at);
  const unaligned = level.bounds.filter((b) => !aligned(b));
  const lowers = level.bounds.filter((b) => b.side === 'lower');
  const uppers = level.bounds.filter((b) => b.side === 'upper');
  const covered = (from: bigint): void => {
    if (target.coveredFrom !== null && from < target.coveredFrom)
      throw new Skip(
        `the window starts at ${instantText(from)}, before the range the rollup covers (its retention keeps ${target.retention})`,
      );
    if (target.backfilledFrom !== null && from < target.backfilledFrom)
      throw new Skip(
        `the window starts at ${instantText(from)}, before the range the rollup covers (backfilled from ${instantText(target.backfilledFrom)} so far)`,
      );
  };
  if (unaligned.length === 0) {
    for (const b of lowers) covered(b.at);
    return null;
  }
  const reason = `window not aligned: ${notAligned(unaligned[0])}`;
  if (target.rawEdges === null) throw new Skip(`${reason} (a rollup of a rollup reads no raw edges)`);
  if (lowers.length !== 1 || uppers.length > 1 || level.bounds.some((b) => b.op === 'eq')) throw new Skip(reason);
  const [lower] = lowers;
  const [upper] = uppers;
  const from = ceilBoundary(ladder, lower.at);
  // A window open at its end reads its buckets through the rollup's never-stale view, up to now: the rows
  // after the watermark come from the view's tail aggregate, which is kept per listing of the tail's files
  // (made when a write through the server commits), where a raw edge of its own would scan the table for
  // them at every read (a second DuckLake scan beside the start's edge: ~30 ms of server CPU per read of
  // bench/rollup-rewrite's open-window panel at 100 M rows, its read 0.65-0.78x the CPU once the view reads them).
  const to = upper ? floorBoundary(ladder, upper.at) : null;
  if (to !== null && from >= to) throw new Skip(`${reason}, and the window holds no whole ${target.grain} bucket`);
  covered(from);
  return {
    from,
    to,
    lower: aligned(lower) ? null : lower,
    upper: upper && !aligned(upper) ? upper : null,
  };
}

/**
 * Why a window off bucket boundaries reads raw rather than whole buckets plus raw edges, or null.
 * Edges read through DuckLake's scan (rows inlined in the catalog at or after the window's start, a view set, ...)
 * cost a DuckLake read besides the rollup's, more than scanning the window's rows raw unless its whole buckets
 * replace at least `minRows` raw rows of those the statement's key reads (estimated: see RewriteInput.rawEdges).
 * Edges read from the table's files cost less than a raw read at every size measured (bench/rollup-rewrite/
 * edges-threshold.mjs: 1.1-3.0x less server CPU from 2,776 to 988,887 rows replaced at 10 M rows).
 */
async function rawCheaper(level: Level, candidate: Rewritten, input: RewriteInput): Promise<Skip | null> {
  const { edges, target } = candidate;
  if (!edges || !input.rawEdges) return null;
  const { minRows, rowsWithin, unweighed } = input.rawEdges;
  if (minRows === 0) return null;
  // Asked first: a reader's answer costs nothing, and spares the count of its own rows.
  if (unweighed && (await unweighed(level.table, edges.lower?.at ?? edges.from))) return null;
  const rows = await rowsWithin(level.table, edges.from, edges.to);
  if (rows === null || rows >= minRows) return null;
  return new Skip(
    `window not aligned, and a raw read costs less than whole ${target.grain} buckets plus raw edges: the buckets would replace about ${Math.round(rows)} raw rows, fewer than ${minRows} (ORRERY_ROLLUP_RAW_EDGES_MIN_ROWS)`,
  );
}

/** Fills in the rewritten level's casts (the raw aggregates' types) and the names of changed unaliased items. */
async function finish(level: Level, rewritten: Rewritten, input: RewriteInput): Promise<void> {
  if (rewritten.edges) rewritten.node.from_table = await withRawEdges(level, rewritten.target, rewritten.edges, input);
  if (rewritten.casts.length === 0 && rewritten.named.length === 0) return;
  // One row of NULLs typed as the table's columns, under the level's own name for it: DuckDB
  // types each raw aggregate and names each item over it as it would over the table.
  const from = level.node.from_table as Node;
  const alias = String(from.alias) || level.table.name;
  const columns = level.table.columns;
  const probe = (await input.engine.parseSelect(
    `SELECT 1 FROM (SELECT ${columns.map((c, i) => `CAST(NULL AS ${c.type}) AS "${i}"`).join(', ')}) AS q GROUP BY ALL`,
  ))!;
  const probeNode = probe.statements[0].node as Node;
  const dummy = probeNode.from_table as Node;
  const inner = (dummy.subquery as Node).node as Node;
  (inner.select_list as Node[]).forEach((item, i) => (item.alias = columns[i].name));
  dummy.alias = alias;
  probeNode.select_list = [
    ...rewritten.casts.map((c) => ({ ...c.aggregate, alias: '' })),
    ...rewritten.named.map((n) => ({ ...n.original, alias: '' })),
  ];
  probeNode.aggregate_handling = 'STANDARD_HANDLING';
  probeNode.group_expressions = columns.map((c) => column(alias, c.name));
  probeNode.group_sets = [columns.map((_, i) => i)];
  // Described, not run: each column's type and the name DuckDB gives it (alias() writes a cast's type
  // unquoted, `CAST(count_star() AS DOUBLE)`, where the column is named `CAST(count_star() AS "DOUBLE")`).
  const sql = `SELECT column_name, column_type FROM (DESCRIBE ${await input.engine.deparse(probe)})`;
  const rows = (input.probe ? await input.probe(sql) : await input.engine.values(sql)).map((r) => r.map(String));
  const types = await castTypes(
    input.engine,
    rows.slice(0, rewritten.casts.length).map((r) => r[1]),
  );
  rewritten.casts.forEach((c, i) => (c.cast.cast_type = types[i]));
  rewritten.named.forEach((n, i) => (n.item.alias = rows[rewritten.casts.length + i][0]));
}

/**
 * What a level with raw edges reads: the rollup's whole buckets inside the window, and the
 * rollup's own aggregate of the table's rows (the caller's audience-filtered view of it: see
 * RollupTarget.rawEdges) at each end of the window, where the window's own bounds still apply.
 * Their rows have the rollup's shape.
 */
async function withRawEdges(level: Level, target: RollupTarget, edges: RawEdges, input: RewriteInput): Promise<Node> {
  const literal = (nanos: bigint): string => `TIMESTAMP '${timestampText(nanos)}'`;
  const q = (name: string): string => `"${name.replaceAll('"', '""')}"`;
  const from = level.node.from_table as Node;
  const alias = String(from.alias) || level.table.name;
  const time = `CAST(${q(alias)}.${q(level.table.timeColumn)} AS TIMESTAMP)`;
  // Each end is a scan of its own time range, bounded by TIMESTAMP literals (its own bound rounded
  // outwards to whole microseconds), so DuckDB skips the row groups outside it: the caller's bound
  // compares the column with a TIMESTAMP_NS constant, which DuckDB does not push into the scan (the
  // start's edge read all 100 M rows of the bench's table, 8.4 s). The ends share no bucket, so the
  // rollup's aggregate runs once over their union.
  // The ends' own bounds are put in the tree, not the text: a window that moves with the clock then
  // parses the same text until it reaches another bucket (the parse is kept by text).
  const micros = 1000n;
  const ends = [
    ...(edges.lower
      ? [`__orrery_lower_edge AND ${time} >= __orrery_lower_start AND ${time} < ${literal(edges.from)}`]
      : []),
    ...(edges.upper
      ? [`__orrery_upper_edge AND ${time} >= ${literal(edges.to!)} AND ${time} < __orrery_upper_end`]
      : []),
  ];
  const scans = ends.map((end) => `SELECT * FROM temp.main.${q(target.rawEdges!.rows)} AS ${q(alias)} WHERE ${end}`);
  const parts = [
    `SELECT * FROM temp.main.${q(target.name)} WHERE bucket >= ${literal(edges.from)}${edges.to === null ? '' : ` AND bucket < ${literal(edges.to)}`}`,
    ...(scans.length > 0
      ? [`SELECT * FROM (WITH __rollup_source AS (${scans.join(' UNION ALL ')}) ${target.rawEdges!.query})`]
      : []),
  ];
  const tree = (await input.engine.parseSelect(`SELECT * FROM (${parts.join(' UNION ALL ')}) AS ${rollupAlias}`))!;
  const table = (tree.statements[0].node as Node).from_table as Node;
  const placeholders = new Map<string, Node>([
    ...(edges.lower
      ? ([
          ['__orrery_lower_edge', edges.lower.conjunct],
          ['__orrery_lower_start', timestampLiteral(edges.lower.at - (((edges.lower.at % micros) + micros) % micros))],
        ] as const)
      : []),
    ...(edges.upper
      ? ([
          ['__orrery_upper_edge', edges.upper.conjunct],
          [
            '__orrery_upper_end',
            timestampLiteral(edges.upper.at + micros - (((edges.upper.at % micros) + micros) % micros)),
          ],
        ] as const)
      : []),
  ]);
  // The parse is this call's own: its placeholders are replaced in place.
  const replace = (value: unknown): void => {
    if (value === null || typeof value !== 'object') return;
    const parent = value as Record<string, unknown>;
    for (const [k, child] of Object.entries(parent)) {
      const node = child as Node | null;
      const name = node?.class === 'COLUMN_REF' ? (node.column_names as string[]).join('.') : '';
      const placed = placeholders.get(name);
      if (placed) parent[k] = copy(placed);
      else replace(child);
    }
  };
  replace(table);
  return table;
}

/** An instant as a TIMESTAMP_NS constant, as DuckDB parses `CAST('…' AS TIMESTAMP_NS)`. */
const instantLiteral = (nanos: bigint): Node =>
  cast(
    {
      class: 'CONSTANT',
      type: 'VALUE_CONSTANT',
      alias: '',
      value: { type: { id: 'VARCHAR', type_info: null }, is_null: false, value: timestampText(nanos) },
    },
    { id: 'TIMESTAMP_NS', type_info: null },
  );

/** An instant as the text of a TIMESTAMP literal. */
const timestampText = (nanos: bigint): string => instantText(nanos).replace('T', ' ').replace('Z', '');

/** `TIMESTAMP '…'` of an instant (whole microseconds), as DuckDB parses it. */
const timestampLiteral = (nanos: bigint): Node =>
  cast(
    {
      class: 'CONSTANT',
      type: 'VALUE_CONSTANT',
      alias: '',
      value: {
        type: { id: 'VARCHAR', type_info: null },
        is_null: false,
        value: timestampText(nanos),
      },
    },
    { id: 'TIMESTAMP', type_info: null },
  );

/** The parse trees of DuckDB types named as text. */
async function castTypes(engine: DuckDBEngine, types: readonly string[]): Promise<Node[]> {
  if (types.length === 0) return [];
  const tree = await engine.parseSelect(`SELECT ${types.map((t) => `CAST(x AS ${t})`).join(', ')}`);
  return ((tree!.statements[0].node as Node).select_list as Node[]).map((c) => c.cast_type as Node);
}

/** Expressions as DuckDB writes them, for reasons. */
async function expressionTexts(engine: DuckDBEngine, nodes: readonly Node[]): Promise<string[]> {
  const out: string[] = [];
  for (const n of nodes) {
    const tree = (await engine.parseSelect('SELECT 1'))!;
    (tree.statements[0].node as Node).select_list = [{ ...n, alias: '' }];
    out.push((await engine.deparse(tree)).replace(/^SELECT\s+/i, ''));
  }
  return out;
}
