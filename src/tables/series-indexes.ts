// Index entries of resources files on series tables (issue 13), as DuckLake can keep them. DuckLake keeps each data
// file's min and max of every column (ducklake_file_column_stats) and its scan opens no file whose range a filter
// misses; DuckDB's Parquet reader then skips row groups by their own min/max, and by the Parquet bloom filters its
// writer makes for dictionary-encoded chunks only. DuckLake has no option for the dictionary's size nor for bloom
// filters (ducklake_options(): compression, row group size, file size, sort on insert, ...), so a column of ids, the
// one a bloom_filter index is for, gets none, and no file can be rewritten alone (ducklake_merge_adjacent_files
// merges files into one of the target size, ducklake_rewrite_data_files rewrites only files with deletes). Hence:
// - minmax: satisfied by DuckLake's statistics of every file; nothing is installed.
// - bloom_filter and set: the table's sort order (SET SORTED BY: a bucket of its time column, then the column of the
//   first such entry on the table, a later one on another column omitted with why, see sortingEntry; retired ones
//   after it) in row groups of sortedRowGroupRows rows: DuckLake sorts each INSERT's rows by it, so each row group of
//   the files written from then on holds one bucket's narrow range of the column, and its min/max skip what an
//   equality misses, while a time range reads the buckets it covers (timeBucket: each about an unsorted row group's
//   rows). Sorted by the column alone, every row group spanned its file's whole time range, which a one-hour range of
//   a 1 M-row file then read whole (9.1x the bytes). bench/series-indexes, 1 M rows an INSERT (3-hour buckets): an
//   id reads 4.3x fewer bytes with 3x less CPU (the column alone: 51-64x), an hour 1.3x the bytes; writes take
//   1.3-1.6x as long, a filter on another column up to 4x the CPU, from the small row groups (row groups of 8,192 rows:
//   the id 8.5x fewer bytes, that filter 6.5x the CPU; 4,096: 16.5x, 12x). Files written before keep their order:
//   DuckLake's merge of a table's files makes one file of them all (every day in it), which would cost time ranges
//   the files they skip now.
// - text: omitted: a `%word%` search is no range, DuckLake keeps no per-file token index and runs the scan itself,
//   so nothing Orrery keeps beside it could skip a file.
import { quoteIdentifier, type DuckDBEngine } from '../engine/index.js';
import type { MetadataQueries } from '../metadata/index.js';
import { ledgerRows, type ResourceInstaller, type ValidEntry } from '../resources/index.js';
import { lakeCatalog, lakeCatalogWrites } from './lake-catalog.js';
import { lakeTable, type SeriesTable, type SeriesTables } from './series-tables.js';

/** Rows per row group of a series table sorted for index entries (bench/series-indexes), and DuckDB's default. */
const sortedRowGroupRows = 16_384;
const defaultRowGroupRows = 122_880;
/** The rows a time bucket is chosen to hold at most: about one default row group (see timeBucket). */
const bucketRows = 1.25 * defaultRowGroupRows;
/** The widths a time bucket may take, in seconds, with DuckDB's name of each. */
const bucketWidths: ReadonlyArray<readonly [number, string]> = [
  [1, '1 second'],
  [10, '10 seconds'],
  [60, '1 minute'],
  [300, '5 minutes'],
  [900, '15 minutes'],
  [3_600, '1 hour'],
  [10_800, '3 hours'],
  [21_600, '6 hours'],
  [43_200, '12 hours'],
  [86_400, '1 day'],
  [604_800, '7 days'],
];
/** The bucket of a table without rows to tell its rate by. */
const defaultBucket = 3_600;

/**
 * The sort key a series table's rows are bucketed by before the index's column, over its time column: the widest of
 * bucketWidths (for an integer time column, a power of ten of its units) in which the table's rows so far, spread
 * evenly over their time range, put at most bucketRows rows. A time range then reads, in a file sorted so, whole
 * buckets of about an unsorted file's row group each (what the unsorted file read), and an equality on the column
 * one row group of sortedRowGroupRows rows of each bucket the file spans.
 */
async function timeBucket(tables: SeriesTables, table: SeriesTable): Promise<string> {
  const time = quoteIdentifier(table.timeColumn);
  const type = table.columns.find((c) => c.name === table.timeColumn)?.type ?? '';
  const extent = await tables.extent(table);
  const perUnit = extent && extent.span > 0 ? extent.rows / extent.span : undefined;
  if (/INT/i.test(type)) {
    let width = 1;
    while (perUnit !== undefined && perUnit * width * 10 <= bucketRows) width *= 10;
    return `(${time} // ${width})`;
  }
  const widths = bucketWidths.filter(([seconds]) => type.toUpperCase() !== 'DATE' || seconds >= 86_400);
  const fitting = widths.filter(([seconds]) =>
    perUnit === undefined ? seconds <= defaultBucket : perUnit * seconds <= bucketRows,
  );
  const [, name] = fitting.at(-1) ?? widths[0];
  return `time_bucket(INTERVAL '${name}', ${time})`;
}

/** A sort key as DuckLake keeps it that is not one of the table's columns: the time bucket. */
const isBucket = (table: SeriesTable, key: string): boolean => !table.columns.some((c) => c.name === key);

type IndexEntry = ValidEntry & { readonly kind: 'index' };

const sortsBy = (e: { kind: string; indexKind?: string; indexedExpression?: string }): boolean =>
  e.kind === 'index' && (e.indexKind === 'bloom_filter' || e.indexKind === 'set') && e.indexedExpression === undefined;

/**
 * The first entry of `entries` sorting series table `table` by one of its columns (the one a publication sorts it
 * by): DuckLake sorts by one order, in which a second column is sorted only within rows of equal values of the first,
 * so each of its row groups spans nearly all of the second's values (a column of ids first: every one), and an
 * equality on it skips none.
 */
const sortingEntry = (entries: readonly ValidEntry[], table: SeriesTable): IndexEntry | undefined =>
  entries.find(
    (e): e is IndexEntry =>
      e.physical === table.name && sortsBy(e) && table.columns.some((c) => c.name === (e as IndexEntry).column),
  );

/** The installer of index entries: on a series table as above, on anything else `viewSets`' (partition statistics). */
export function seriesIndexInstaller(
  tables: SeriesTables,
  engine: DuckDBEngine,
  viewSets: ResourceInstaller,
): ResourceInstaller {
  const tableOf = async (name: string) => (await tables.list()).get(name);

  /**
   * The table's sort columns: that of the first sorting entry a publication declares (`declared`; the others on
   * another column are omitted, see sortingEntry), then those of every ledger row on the table not pruned (retired
   * entries keep sorting for their seven days) but `dropped`'s.
   */
  async function sortColumns(db: MetadataQueries, table: string, declared: readonly ValidEntry[], dropped?: string) {
    const kept = (await ledgerRows(db)).filter(
      (r) => r.physicalTable === table && r.prunedAt === null && r.hash !== dropped,
    );
    const series = await tableOf(table);
    const first = series && sortingEntry(declared, series);
    const columns: string[] = [];
    for (const e of [...(first ? [first] : []), ...kept.map((r) => r.declaration)])
      if (sortsBy(e) && !columns.includes((e as IndexEntry).column)) columns.push((e as IndexEntry).column);
    return columns;
  }

  /**
   * Sorts the table by a bucket of its time column then `columns` (none: unsorted, DuckLake's default row groups);
   * answers what it did. Only when its sort differs (a bucket of another width, chosen by the rows since, does not):
   * the ALTER fails every INSERT into the table then in flight (DuckLake: "another transaction has altered it"; the
   * engine runs a client's statement once more for it), so a publication that changes nothing must not make one.
   */
  async function applySort(table: SeriesTable, columns: readonly string[]): Promise<string> {
    const target = lakeTable(table.name);
    const rows = columns.length === 0 ? defaultRowGroupRows : sortedRowGroupRows;
    const sorted = await tables.sortedBy(table.name);
    const keys = sorted.filter((k) => !isBucket(table, k));
    const bucketed = sorted.length > 0 && isBucket(table, sorted[0]);
    if (keys.length === columns.length && keys.every((c, i) => c === columns[i]) && bucketed === columns.length > 0)
      return `${table.name} already ${columns.length === 0 ? 'unsorted' : `sorted by (${sorted.join(', ')})`}`;
    const bucket = columns.length === 0 ? '' : await timeBucket(tables, table);
    await engine.execute(
      columns.length === 0
        ? `ALTER TABLE ${target} RESET SORTED BY`
        : `ALTER TABLE ${target} SET SORTED BY (${[bucket, ...columns.map(quoteIdentifier)].join(', ')})`,
    );
    await engine.execute(
      `CALL ${lakeCatalog}.set_option('parquet_row_group_size', ${rows}, table_name => '${table.name.replaceAll("'", "''")}')`,
    );
    return columns.length === 0
      ? `${table.name} unsorted again (row groups of ${rows} rows)`
      : `${table.name} sorted by (${[bucket, ...columns].join(', ')}) in row groups of ${rows} rows`;
  }

  return {
    // A sort changes the table in DuckLake's catalog; index entries on view sets write what `viewSets` says.
    async writes(db, entries) {
      for (const e of entries)
        if (e.kind === 'index' && sortsBy(e) && (await tableOf(e.table.toLowerCase()))) return lakeCatalogWrites(db);
      return (await viewSets.writes?.(db, entries)) ?? { tables: [], schemas: [] };
    },
    satisfied: async (entry) => {
      if (entry.kind !== 'index' || !(await tableOf(entry.physical)))
        return (await viewSets.satisfied?.(entry)) ?? null;
      return entry.indexKind === 'minmax' && entry.indexedExpression === undefined
        ? `DuckLake keeps every data file's min and max of ${entry.column}, and a read skips the files a filter's range misses`
        : null;
    },
    async unsupported(entry, entries) {
      const table = entry.kind === 'index' ? await tableOf(entry.physical) : undefined;
      if (!table) return (await viewSets.unsupported?.(entry, entries)) ?? null;
      if (entry.kind !== 'index') return null;
      if (entry.indexedExpression !== undefined)
        return `${entry.physical} is a series table, which stores no column entries: index one of its columns`;
      if (entry.indexKind === 'text')
        return `${entry.physical} is a series table: DuckLake skips files by each column's min and max only, which a '%word%' search does not narrow, and keeps no token index`;
      if (!table.columns.some((c) => c.name === entry.column))
        return `${entry.column} is not a column of series table ${entry.physical}`;
      const first = sortsBy(entry) ? sortingEntry(entries, table) : undefined;
      return first && first.column !== entry.column
        ? `${entry.physical} is sorted by ${first.column} (index ${first.key}): DuckLake sorts a table in one order, in which ${entry.column} would be sorted only within rows of equal ${first.column}, so every row group would span its values and an equality on it would skip none; declare one bloom_filter or set column per series table`
        : null;
    },
    async *install(entry, ctx) {
      if (entry.kind !== 'index' || !(await tableOf(entry.physical))) {
        yield* viewSets.install(entry, ctx);
        return;
      }
      const table = await tableOf(entry.physical);
      if (!sortsBy(entry) || !table) return;
      const columns = await sortColumns(ctx.db, entry.physical, ctx.entries);
      const [[files]] = await engine.values(
        `SELECT count(*)::INTEGER FROM ducklake_list_files('${lakeCatalog}', '${entry.physical.replaceAll("'", "''")}')`,
      );
      const done = await applySort(table, columns);
      yield `  ${entry.key}: ${done}: DuckLake sorts each INSERT's rows by ${table.timeColumn}'s bucket then ${entry.column}, so a row group's min/max of ${entry.column} skip what an equality misses and a time range reads the buckets it covers; ${String(files)} file(s) written before keep their order`;
    },
    serve: viewSets.serve && ((entry, ctx) => viewSets.serve!(entry, ctx)),
    async drop(row, ctx) {
      if (row.kind !== 'index' || !(await tableOf(row.physicalTable))) return viewSets.drop(row, ctx);
      const table = await tableOf(row.physicalTable);
      if (!sortsBy(row.declaration) || !table) return 'nothing (DuckLake keeps the statistics itself)';
      return applySort(table, await sortColumns(ctx.db, row.physicalTable, [], row.hash));
    },
    async drift(row) {
      const table = row.kind === 'index' && sortsBy(row.declaration) ? await tableOf(row.physicalTable) : undefined;
      if (!table) return undefined;
      const column = (row.declaration as IndexEntry).column;
      const sorted = await tables.sortedBy(table.name);
      if (!sorted.includes(column)) return `${table.name} is not sorted by ${column} (publish again to repair)`;
      return isBucket(table, sorted[0])
        ? null
        : `${table.name} is sorted by ${column} across each file's whole time range, which a time range then reads whole (publish again to sort within buckets of ${table.timeColumn})`;
    },
  };
}
