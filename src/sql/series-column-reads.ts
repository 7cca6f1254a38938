// A statement's read of the stored columns of a series table (issue 13; the columns: src/tables/series-columns.ts):
// when it reads the table alone from its FROM and holds a stored column's expression, outside a client's transaction
// (which reads its own writes, at its own snapshot), the expression is replaced by the column (StoredColumnReads) as
// long as the column's fill holds at the snapshot the statement reads; the table's view then reads the column for
// the rows the fill reached and computes the expression for the rows written since. A table without stored columns
// (the most) costs nothing: DuckLake's listing of its columns, kept per schema version, shows none.
import { recentColumns, type InstalledColumn } from '../resources/index.js';
import type { MetadataQueries } from '../metadata/index.js';
import {
  fillBroken,
  seriesColumnsView,
  seriesFills,
  type SeriesFill,
  type SeriesTable,
  type TableScope,
} from '../tables/index.js';
import type { ViewSet } from '../views/index.js';
import { seriesViewSet } from './series-text-reads.js';
import type { StoredColumnReads } from './stored-column-reads.js';

/** The stored columns a statement reads of one series table, with the fills they were read by. */
export interface SeriesColumnRead {
  readonly table: SeriesTable;
  readonly columns: ReadonlyArray<{ readonly column: InstalledColumn; readonly fill: SeriesFill }>;
  /** The snapshot the fills were checked at. */
  readonly snapshot: bigint;
}

/**
 * Rewrites the statement to read the stored columns of `tables` whose fill holds at DuckLake snapshot `snapshot`
 * (`views`: the series tables read as view sets, which StoredColumnReads finds them in); answers what it reads.
 */
export async function seriesColumnReads(
  db: MetadataQueries,
  stored: StoredColumnReads,
  views: Map<string, ViewSet>,
  tables: readonly SeriesTable[],
  snapshot: bigint,
): Promise<SeriesColumnRead[]> {
  const reads: SeriesColumnRead[] = [];
  for (const table of tables) {
    if (!table.storedColumns) continue;
    // Only those DuckLake holds: a column dropped since the list was read is not read.
    const installed = (await recentColumns(db, table.name)).filter((c) =>
      table.storedColumns!.some((s) => s.name === c.name),
    );
    if (installed.length === 0) continue;
    const view = views.get(table.name) ?? seriesViewSet(table);
    views.set(table.name, view);
    const fills = new Map<string, SeriesFill>();
    const names = await stored.readHeld(view, async () => {
      let why = 'the column is not filled yet (publication under way)';
      for (const [name, fill] of await seriesFills(db, table.name)) {
        const broken = await fillBroken(db, table.name, fill, snapshot);
        if (broken === null) fills.set(name, fill);
        else why = broken;
      }
      return { held: new Set(fills.keys()), why };
    });
    if (names.length === 0) continue;
    const columns = names.map((name) => ({ column: installed.find((c) => c.name === name)!, fill: fills.get(name)! }));
    reads.push({ table, columns, snapshot });
  }
  return reads;
}

/**
 * The views through which the statement reads the tables of `reads` at DuckLake snapshot `snapshot` (they replace
 * tableRows' views): the fills checked again when it is not the one they were read at, a column whose fill no
 * longer holds there computed for every row.
 */
export async function seriesColumnViews(
  db: MetadataQueries,
  reads: readonly SeriesColumnRead[],
  scope: TableScope,
  snapshot: bigint,
): Promise<string[]> {
  const views: string[] = [];
  for (const read of reads) {
    const columns = [];
    for (const { column, fill } of read.columns)
      columns.push({
        column,
        fill:
          snapshot === read.snapshot || (await fillBroken(db, read.table.name, fill, snapshot)) === null ? fill : null,
      });
    views.push(seriesColumnsView(read.table, columns, scope, snapshot));
  }
  return views;
}
