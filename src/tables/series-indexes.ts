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
//   equality misses, while a time range reads the buckets it covers (pickRung: each about an unsorted row group's
//   rows at the rate the table's rows come, which the daemon follows: rebucketSeriesTables). Sorted by the column
//   alone, every row group spanned its file's whole time range, which a one-hour range of a 1 M-row file then read
//   whole (9.1x the bytes). bench/series-indexes, 1 M rows an INSERT (3-hour buckets): an id reads 4.3x fewer bytes
//   with 3x less CPU (the column alone: 51-64x), an hour 1.3x the bytes; writes take 1.3-1.6x as long, a filter on
//   another column up to 4x the CPU, from the small row groups (row groups of 8,192 rows: the id 8.5x fewer bytes,
//   that filter 6.5x the CPU; 4,096: 16.5x, 12x). Files written before keep their order: DuckLake's merge of a
//   table's files makes one file of them all (every day in it), which would cost time ranges the files they skip now.
// - text: a `%word%` search is no range and DuckLake keeps no per-file token index: the statistics a text index keeps
//   of a view set's partition files are kept of the table's data files instead, and a search reads the table from
//   the files that may hold its words (series-text.ts).
import { quoteIdentifier, type DuckDBEngine } from '../engine/index.js';
import type { MetadataQueries } from '../metadata/index.js';
import { isErrorOf } from '../errors/index.js';
import {
  installStatistics,
  ledgerRows,
  resourcesErrors,
  takeLock,
  type ResourceInstaller,
  type ValidEntry,
} from '../resources/index.js';
import { lakeCatalog, lakeCatalogWrites } from './lake-catalog.js';
import { lakeTable, type SeriesTable, type SeriesTables } from './series-tables.js';
import { lostColumn, seriesDataFiles } from './series-text.js';

/** Rows per row group of a series table sorted for index entries (bench/series-indexes), and DuckDB's default. */
const sortedRowGroupRows = 16_384;
const defaultRowGroupRows = 122_880;
/** The rows a time bucket is chosen to hold at most: about one default row group (see pickRung). */
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
/** The bucket of a table without rows to tell its rate by (a time column's; an integer one's is one unit). */
const defaultBucket = 3_600;
/**
 * How far the table's rate may move past the rates that pick its bucket before the bucket is picked again (see
 * outgrown): a re-sort fails the INSERTs into the table then running (see applySort), which is worth it for buckets
 * holding 4x too many or too few rows, not for a rate wavering across the edge between two widths.
 */
const rateSlack = 4;

/** A width a time bucket of a table may take, in its time column's units (seconds for a time), and its sort key. */
interface Rung {
  readonly width: number;
  readonly key: string;
}

/** The buckets a table's rows may be sorted by, narrowest first, and the one of a table without a rate. */
interface Ladder {
  readonly rungs: readonly Rung[];
  readonly unrated: number;
}

/**
 * The buckets `table`'s rows may be sorted by: bucketWidths (from a day for a DATE) over a time column, powers of ten
 * of its units over an integer one.
 */
function bucketLadder(table: SeriesTable): Ladder {
  const time = quoteIdentifier(table.timeColumn);
  const type = (table.columns.find((c) => c.name === table.timeColumn)?.type ?? '').toUpperCase();
  if (type.includes('INT'))
    return {
      rungs: Array.from({ length: 19 }, (_, i) => ({ width: 10 ** i, key: `(${time} // ${String(10 ** i)})` })),
      unrated: 0,
    };
  const rungs = bucketWidths
    .filter(([seconds]) => type !== 'DATE' || seconds >= 86_400)
    .map(([width, name]) => ({ width, key: `time_bucket(INTERVAL '${name}', ${time})` }));
  return { rungs, unrated: Math.max(0, rungs.filter((r) => r.width <= defaultBucket).length - 1) };
}

/**
 * The rung at `rate` (rows per unit, see SeriesTables.rate): the widest in which the rows, spread evenly, put at most
 * bucketRows rows (the narrowest when none does). A time range then reads, in a file sorted so, whole buckets of
 * about an unsorted file's row group each (what the unsorted file read), and an equality on the column one row group
 * of sortedRowGroupRows rows of each bucket the file spans.
 */
function pickRung({ rungs, unrated }: Ladder, rate: number | undefined): number {
  // Widths grow along the ladder: those that fit are the first ones.
  return rate === undefined ? unrated : Math.max(0, rungs.filter((r) => rate * r.width <= bucketRows).length - 1);
}

/**
 * Whether `rate` moved more than rateSlack times past the rates that pick rung `i` (from bucketRows over the next
 * rung's width, up to bucketRows over its own; without bound past the ends of the ladder).
 */
function outgrown({ rungs }: Ladder, i: number, rate: number): boolean {
  const highest = i === 0 ? Infinity : bucketRows / rungs[i].width;
  const lowest = i + 1 < rungs.length ? bucketRows / rungs[i + 1].width : 0;
  return rate > rateSlack * highest || rate < lowest / rateSlack;
}

/**
 * The rung of a bucket as DuckLake keeps it (`time_bucket(CAST('1 hour' AS INTERVAL), ts)`, `(ts // 10)`; lowered by
 * SeriesTables.sortedBy); -1: none.
 */
function keptRung({ rungs }: Ladder, kept: string): number {
  const units = /^\(.* \/\/ (\d+)\)$/.exec(kept)?.[1];
  const name = /^time_bucket\(CAST\('([^']+)' AS INTERVAL\),/i.exec(kept)?.[1];
  const width = units === undefined ? bucketWidths.find(([, n]) => n === name)?.[0] : Number(units);
  return rungs.findIndex((r) => r.width === width);
}

/** A sort key as DuckLake keeps it that is not one of the table's columns: the time bucket. */
const isBucket = (table: SeriesTable, key: string): boolean => !table.columns.some((c) => c.name === key);

/**
 * The bucket `table`, sorted by `sorted` (as DuckLake keeps it), is to be sorted by instead: the one its rate picks
 * now, once the rate moved more than rateSlack times past the rates that picked its bucket (see outgrown);
 * undefined while it did not (or the table is not sorted by a bucket, or has no rate to tell).
 */
async function repicked(tables: SeriesTables, table: SeriesTable, sorted: readonly string[]) {
  if (sorted.length === 0 || !isBucket(table, sorted[0])) return undefined;
  const ladder = bucketLadder(table);
  const kept = keptRung(ladder, sorted[0]);
  const rate = await tables.rate(table);
  if (rate === undefined || kept < 0 || !outgrown(ladder, kept, rate)) return undefined;
  const rung = pickRung(ladder, rate);
  return rung === kept ? undefined : ladder.rungs[rung].key;
}

const setRowGroupRows = (engine: DuckDBEngine, table: SeriesTable, rows: number) =>
  engine.execute(
    `CALL ${lakeCatalog}.set_option('parquet_row_group_size', ${rows}, table_name => '${table.name.replaceAll("'", "''")}')`,
  );

/** Sorts the table's new files by `bucket` then `columns` (DuckLake's SET SORTED BY) in sortedRowGroupRows. */
async function sortBy(engine: DuckDBEngine, table: SeriesTable, bucket: string, columns: readonly string[]) {
  await engine.execute(
    `ALTER TABLE ${lakeTable(table.name)} SET SORTED BY (${[bucket, ...columns.map(quoteIdentifier)].join(', ')})`,
  );
  await setRowGroupRows(engine, table, sortedRowGroupRows);
  return `${table.name} sorted by (${[bucket, ...columns].join(', ')}) in row groups of ${sortedRowGroupRows} rows`;
}

/**
 * The maintenance daemon's look at series tables sorted for index entries (each housekeeping run): one whose rate
 * moved more than rateSlack times past the rates that picked its bucket is sorted by the bucket its rate picks now,
 * as a publication would (its files written before keep their order). Under the resources lock, so that a
 * publication or prune changing the sort meanwhile is not undone; a table is left to the next run while another
 * holds it. Answers a line for each table sorted again.
 */
export async function rebucketSeriesTables(
  tables: SeriesTables,
  engine: DuckDBEngine,
  db: MetadataQueries,
): Promise<string[]> {
  const done: string[] = [];
  for (const [name, table] of await tables.list()) {
    if (!(await repicked(tables, table, await tables.sortedBy(name)))) continue;
    const lock = await takeLock(db, `re-bucketing series table ${name}`).catch((error: unknown) => {
      if (isErrorOf(error, resourcesErrors, 'RESOURCES_LOCKED')) return undefined;
      throw error;
    });
    if (!lock) continue;
    try {
      // As they are under the lock.
      const now = (await tables.list()).get(name);
      const sorted = await tables.sortedBy(name);
      const bucket = now && (await repicked(tables, now, sorted));
      if (now && bucket)
        done.push(
          `${await sortBy(engine, now, bucket, sorted.slice(1))}: its rows now come at ${(await tables.rate(now))!.toPrecision(3)} per unit of ${now.timeColumn}, past what ${sorted[0]} was picked for`,
        );
    } finally {
      await lock.release();
    }
  }
  return done;
}

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
   * answers what it did. Only when its sort differs, or its bucket no longer fits its rate (see repicked): the ALTER
   * fails every INSERT into the table then in flight (DuckLake: "another transaction has altered it"; the engine runs
   * a client's statement once more for it), so a publication that changes nothing must not make one.
   */
  async function applySort(table: SeriesTable, columns: readonly string[]): Promise<string> {
    const sorted = await tables.sortedBy(table.name);
    const keys = sorted.filter((k) => !isBucket(table, k));
    const bucketed = sorted.length > 0 && isBucket(table, sorted[0]);
    if (keys.length === columns.length && keys.every((c, i) => c === columns[i]) && bucketed === columns.length > 0) {
      const bucket = await repicked(tables, table, sorted);
      return bucket === undefined
        ? `${table.name} already ${columns.length === 0 ? 'unsorted' : `sorted by (${sorted.join(', ')})`}`
        : sortBy(engine, table, bucket, columns);
    }
    if (columns.length > 0) {
      const ladder = bucketLadder(table);
      return sortBy(engine, table, ladder.rungs[pickRung(ladder, await tables.rate(table))].key, columns);
    }
    await engine.execute(`ALTER TABLE ${lakeTable(table.name)} RESET SORTED BY`);
    await setRowGroupRows(engine, table, defaultRowGroupRows);
    return `${table.name} unsorted again (row groups of ${defaultRowGroupRows} rows)`;
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
        return `${entry.physical} is a series table, whose stored columns hold no value in the rows clients write after a publication fills them (those are computed when read): index one of its columns`;
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
      if (entry.indexKind === 'text' && table) {
        yield* installStatistics(
          entry,
          ctx,
          async (doneSql, hash) => {
            const files = await seriesDataFiles(ctx.db, table.name);
            const { rows } = await ctx.db.query<{ file_path: string }>(doneSql, [hash]);
            const done = new Set(rows.map((r) => r.file_path));
            return { files, todo: files.filter((f) => !done.has(f.filePath)), done: done.size, past: 0 };
          },
          'none',
        );
        return;
      }
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
      if ((row.declaration as IndexEntry).indexKind === 'text') return viewSets.drop(row, ctx);
      if (!sortsBy(row.declaration) || !table) return 'nothing (DuckLake keeps the statistics itself)';
      return applySort(table, await sortColumns(ctx.db, row.physicalTable, [], row.hash));
    },
    async drift(row) {
      const text = row.kind === 'index' && (row.declaration as IndexEntry).indexKind === 'text';
      const table = text || sortsBy(row.declaration) ? await tableOf(row.physicalTable) : undefined;
      if (!table) return undefined;
      const column = (row.declaration as IndexEntry).column;
      // A text index's statistics are in the partition tables, which resourceDrift checks.
      if (text) return lostColumn(table, column) ?? undefined;
      const sorted = await tables.sortedBy(table.name);
      if (!sorted.includes(column)) return `${table.name} is not sorted by ${column} (publish again to repair)`;
      return isBucket(table, sorted[0])
        ? null
        : `${table.name} is sorted by ${column} across each file's whole time range, which a time range then reads whole (publish again to sort within buckets of ${table.timeColumn})`;
    },
  };
}
