// Newest partitions first for a top-N by time (issue 13): a statement that reads a view set alone and
// is ordered first by the set's latest time descending (its earliest ascending) with a LIMIT reads the
// set's partition files in that order, latest (earliest) event time first, by the bounds Postgres keeps
// of each. DuckDB reads files in the order listed and, once its top-N holds n rows, skips every row
// group whose time statistics cannot beat the n-th: the partitions after those holding the answer are
// not scanned. The same rows are read either way, so answers are the same (rows tied on every ORDER BY
// key may come in another order, as SQL leaves them).
import type { Partition } from '../lakehouse/index.js';
import { ownNames } from '../rollups/index.js';
import type { ViewSet } from '../views/index.js';
import { readsAlone, starMayName, type Node, type Statement } from './partition-pruning.js';

/** A set a statement reads newest first: for the provenance of an admin's result. */
export interface NewestFirstRead {
  readonly table: string;
  readonly partitions: number;
  /** `desc`: latest event time first; `asc`: earliest first. */
  readonly order: 'desc' | 'asc';
  /**
   * A latest-n read bounded by time (see TopNBound): the newest partitions its first run reads, and the n rows it
   * must give (short of them, it runs again over every partition).
   */
  readonly bounded?: { readonly partitions: number; readonly rows: number };
}

/**
 * Whether the statement is a top-N by this set's time, and in which direction: one SELECT reading the set
 * alone (see readsAlone), ordered first by the set's latest time descending (or its earliest ascending),
 * nulls last, with a LIMIT; the ORDER BY names the set's column (qualified, or not renamed by the select list).
 */
function topNOf(statement: Statement, view: ViewSet): 'desc' | 'asc' | null {
  const reader = readsAlone(statement.tree, statement.shape, view, statement.viewOf);
  if (!reader) return null;
  const { node, qualifiers } = reader;
  const modifiers = node.modifiers as Node[];
  const order = modifiers.find((m) => m.type === 'ORDER_MODIFIER');
  if (!order || !modifiers.some((m) => m.type === 'LIMIT_MODIFIER')) return null;
  const [first] = order.orders as Node[];
  const descending = first?.type === 'DESCENDING';
  if (!first || (!descending && first.type !== 'ASCENDING' && first.type !== 'ORDER_DEFAULT')) return null;
  // DuckDB's nulls sort last by default (lock_configuration keeps it so).
  if (!/^(ORDER_DEFAULT|NULLS[ _]LAST)$/.test(String(first.null_order))) return null;
  const column = (descending ? view.maxTimeColumn : view.minTimeColumn).toLowerCase();
  const expression = first.expression as Node;
  const names = expression.class === 'COLUMN_REF' ? (expression.column_names as string[]) : [];
  const own = ownNames(names, qualifiers);
  if (own.length !== 1 || own[0] !== column) return null;
  // An unqualified ORDER BY name means the select list's item of that name first: it must be the column, and no
  // item may name one by a `*` (REPLACE and RENAME too: they give the set's own names to other values).
  const renames = (item: Node): boolean =>
    starMayName(item, qualifiers, true) ||
    (String(item.alias).toLowerCase() === column &&
      !(item.class === 'COLUMN_REF' && (item.column_names as string[]).at(-1)?.toLowerCase() === column));
  if (names.length === 1 && (node.select_list as Node[]).some(renames)) return null;
  return descending ? 'desc' : 'asc';
}

/**
 * The partitions (object keys) a statement reads, in the order it reads them best: newest first for a top-N
 * by the set's time (see topNOf), as given otherwise; and what was done, when they were reordered.
 */
export function newestFirst(
  statement: Statement,
  view: ViewSet,
  partitions: readonly Partition[],
  /** Whether a latest-n top-N may read the newest partitions alone, bounded (see latestBound): not in its rerun. */
  mayBound = false,
): { files: readonly string[]; read?: NewestFirstRead; bound?: TopNBound; left?: readonly string[] } {
  const order = partitions.length > 1 ? topNOf(statement, view) : null;
  const timeOf = (p: Partition): bigint | null => (order === 'desc' ? p.maxEventTime : p.minEventTime);
  if (!order || partitions.some((p) => timeOf(p) === null)) return { files: partitions.map((p) => p.filePath!) };
  const later = (a: bigint, b: bigint): number => (a > b ? -1 : a < b ? 1 : 0);
  const ordered = [...partitions].sort((a, b) =>
    order === 'desc' ? later(timeOf(a)!, timeOf(b)!) : later(timeOf(b)!, timeOf(a)!),
  );
  const read = { table: view.name, partitions: partitions.length, order };
  const limit = order === 'desc' && mayBound ? boundableLimit(statement, view) : null;
  const bound = limit === null ? null : latestBound(ordered, limit);
  if (bound) {
    const left = ordered.slice(bound.files.length).map((p) => p.filePath!);
    const bounded = { partitions: bound.files.length, rows: limit! };
    return { files: bound.files, read: { ...read, bounded }, bound: { after: bound.after, rows: limit! }, left };
  }
  return { files: ordered.map((p) => p.filePath!), read };
}

/**
 * A latest-n read bounded by time: the set's rows with a latest time after `after` alone (ns), from the partitions
 * that may hold them. Its answer is the statement's when it has `rows` rows (each is then later than every row left
 * out); with fewer, the statement is run again unbounded.
 */
export interface TopNBound {
  readonly after: bigint;
  readonly rows: number;
}

/** A top-N's n above which it is not bounded: its rows are held until n came (see TopNBound). */
const boundedRowsAtMost = 10_000;

/**
 * The constant LIMIT of a latest-n top-N whose answer over the rows after a time is its answer over all rows
 * whenever it has n rows: no OFFSET, no DISTINCT, no window function (whose values would be over the rows kept),
 * one grouping set at most. Grouping is allowed: the ORDER BY's time column is then a key, and a group of a later
 * time holds all its rows.
 */
function boundableLimit(statement: Statement, view: ViewSet): number | null {
  const reader = readsAlone(statement.tree, statement.shape, view, statement.viewOf);
  if (!reader) return null;
  const modifiers = reader.node.modifiers as Node[];
  if (modifiers.some((m) => m.type !== 'ORDER_MODIFIER' && m.type !== 'LIMIT_MODIFIER')) return null;
  const limit = modifiers.find((m) => m.type === 'LIMIT_MODIFIER');
  const value = limit?.limit as Node | undefined;
  if (!limit || limit.offset !== null || value?.class !== 'CONSTANT') return null;
  const n = Number((value.value as Node).value);
  if (!Number.isSafeInteger(n) || n < 1 || n > boundedRowsAtMost) return null;
  if (/"class":"WINDOW"/.test(JSON.stringify(reader.node))) return null;
  // ROLLUP, CUBE, GROUPING SETS: a row of a grouping set without the time has a NULL time (sorted last) and the
  // aggregate of the rows read, which could make up n rows.
  if (((reader.node.group_sets as unknown[] | undefined)?.length ?? 0) > 1) return null;
  return n;
}

/**
 * Rows counted per row the statement asks for: partitions' counts are over every audience and every row, and the
 * statement's filters keep some of them only. A guess short of n rows costs the statement a second run.
 */
const rowsPerRowAsked = 100;

/**
 * The newest partitions (latest time first) whose rows after a bound are, by their counts, rowsPerRowAsked times n
 * (a partition's rows taken as spread evenly over its event-time span), and that bound: the latest time of the
 * partitions left out. None when every partition would be read.
 */
function latestBound(ordered: readonly Partition[], n: number): { files: string[]; after: bigint } | null {
  for (let i = 0; i < ordered.length - 1; i++) {
    const after = ordered[i + 1].maxEventTime!;
    // Split only between partitions of other latest times: every partition read ends after the bound.
    if (ordered[i].maxEventTime! <= after) continue;
    const taken = ordered.slice(0, i + 1);
    if (taken.reduce((rows, p) => rows + rowsAfter(p, after), 0) >= n * rowsPerRowAsked)
      return { files: taken.map((p) => p.filePath!), after };
  }
  return null;
}

/** A partition's rows after a time, its rows taken as spread evenly over its event-time span. */
function rowsAfter(p: Partition, after: bigint): number {
  const [min, max] = [p.minEventTime ?? p.maxEventTime!, p.maxEventTime!];
  if (min > after) return p.numRows;
  return max === min ? 0 : p.numRows * (Number(max - after) / Number(max - min));
}
