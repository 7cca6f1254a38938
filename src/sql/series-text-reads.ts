// A statement's read of a series table a text index entry is installed on (issue 13): when it searches the indexed
// column for words (ILIKE, LIKE, contains, ...: see PartitionPruning), it reads the table's rows from its data
// files less their delete files (as DuckLake's scan would give them, at one snapshot: rollups' table-files.ts),
// but the files whose statistics (series-text.ts) show that none of the rows it may read holds the words: an admin's
// statement by the statistics of every row, a reader's by its audiences' (public included), so what it skips tells
// nothing of other audiences' rows. Rows the files do not hold as DuckLake gives them (inlined in the catalog, a
// column changed since a file was written), a client's transaction (its own writes, its snapshot) and a statement
// without a search read the table through DuckLake as before.
import { quoteIdentifier } from '../engine/index.js';
import type { ObjectStore } from '../lakehouse/index.js';
import type { MetadataQueries } from '../metadata/index.js';
import { recentIndexes } from '../resources/index.js';
import { fileRows, filesSql } from '../rollups/index.js';
import {
  audienceColumn,
  lakeFileKey,
  scopeFilter,
  tableColumnsSelect,
  type SeriesTable,
  type TableScope,
} from '../tables/index.js';
import type { ViewSet } from '../views/index.js';
import type { PartitionPruning, Tree } from './partition-pruning.js';
import { searchesText } from './partition-pruning.js';

/**
 * A series table as pruning reads a view set: its rows are its files' (no merge), of the audience column's
 * audiences; no event-time bounds (DuckLake skips files by the time column's min and max itself).
 */
export function seriesViewSet(table: SeriesTable): ViewSet {
  return {
    name: table.name,
    updateGroup: 0,
    columns: table.columns.map((c) => ({ name: c.name, type: c.type })),
    minTimeColumn: '',
    maxTimeColumn: '',
    audienceColumn,
    sourceDeltaSeconds: 0,
    mergeDeltaSeconds: 0,
    mergeQuery: 'SELECT * FROM {source}',
    source: { kind: 'sql', extractQuery: '', countQuery: '', reads: [], extractReads: [] },
  };
}

/** What a series table's text-indexed read needs of the statement and the server. */
export interface SeriesTextContext {
  readonly db: MetadataQueries;
  readonly store: ObjectStore;
  readonly tree: Tree;
  readonly pruning: PartitionPruning;
  /** The series tables pruning reads as view sets, by name (the statement's viewOf finds them there). */
  readonly views: Map<string, ViewSet>;
}

/**
 * The view through which the statement reads `table` at DuckLake snapshot `snapshot` from the data files its text
 * indexes leave (see above), replacing tableRows'; null when it reads the table through DuckLake.
 */
export async function seriesTextRead(
  ctx: SeriesTextContext,
  table: SeriesTable,
  scope: TableScope,
  snapshot: bigint,
): Promise<string | null> {
  if (!searchesText(ctx.tree)) return null;
  if (!(await recentIndexes(ctx.db, table.name)).some((i) => i.kind === 'text')) return null;
  const rows = await fileRows(ctx.db, 'main', table.name, table.timeColumn, snapshot, null);
  if (!rows) return null;
  const byKey = new Map(rows.files.map((f) => [lakeFileKey(ctx.store, f.path) ?? f.path, f]));
  const view = seriesViewSet(table);
  ctx.views.set(table.name, view);
  const kept = await ctx.pruning.keepWhole(view, [...byKey.keys()]);
  const source =
    filesSql(
      rows.columns,
      kept.map((k) => byKey.get(k)!),
    ) ??
    // No file left: no row, of the table's columns and types.
    `SELECT ${table.columns.map((c) => `CAST(NULL AS ${c.type}) AS ${quoteIdentifier(c.name)}`).join(', ')} LIMIT 0`;
  return `CREATE OR REPLACE TEMP VIEW ${quoteIdentifier(table.name)} AS SELECT ${tableColumnsSelect} FROM (${source}) AS __orr_files${scopeFilter(scope)}`;
}
