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
import { readsAlone, type Node, type Statement } from './partition-pruning.js';

/** A set a statement reads newest first: for the provenance of an admin's result. */
export interface NewestFirstRead {
  readonly table: string;
  readonly partitions: number;
  /** `desc`: latest event time first; `asc`: earliest first. */
  readonly order: 'desc' | 'asc';
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
  // An unqualified ORDER BY name means the select list's item of that name first: it must be the column.
  const renames = (item: Node): boolean =>
    String(item.alias).toLowerCase() === column &&
    !(item.class === 'COLUMN_REF' && (item.column_names as string[]).at(-1)?.toLowerCase() === column);
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
): { files: readonly string[]; read?: NewestFirstRead } {
  const order = partitions.length > 1 ? topNOf(statement, view) : null;
  const timeOf = (p: Partition): bigint | null => (order === 'desc' ? p.maxEventTime : p.minEventTime);
  if (!order || partitions.some((p) => timeOf(p) === null)) return { files: partitions.map((p) => p.filePath!) };
  const later = (a: bigint, b: bigint): number => (a > b ? -1 : a < b ? 1 : 0);
  const ordered = [...partitions].sort((a, b) =>
    order === 'desc' ? later(timeOf(a)!, timeOf(b)!) : later(timeOf(b)!, timeOf(a)!),
  );
  return { files: ordered.map((p) => p.filePath!), read: { table: view.name, partitions: partitions.length, order } };
}
