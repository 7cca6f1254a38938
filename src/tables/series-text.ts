// Text index entries on series tables (issue 13): the statistics a text index keeps of a view set's partition files
// (resources/partition-stats.ts: per file the trigrams of its tokens and postings, of all its rows and of each
// audience's), kept of the table's DuckLake data files instead, keyed by their object keys under the lake's data path
// (`tables/<schema>/<table>/<file>`). A publication indexes the files the table has; the daemon's housekeeping each
// file written since (see indexSeriesTables); a statement searching the column reads the table from its files less
// their delete files, but those whose statistics show no row it may read holds the searched words (sql/
// series-text-reads.ts). A file has no statistics until indexed, and is then read: answers never wait on upkeep.
import { quoteIdentifier } from '../engine/index.js';
import { messageOf } from '../errors/index.js';
import type { MetadataQueries } from '../metadata/index.js';
import type { ObjectStore } from '../lakehouse/index.js';
import { indexNewFiles, type FileToIndex } from '../resources/index.js';
import { lakeMetadataSchema } from './lake-catalog.js';
import type { SeriesTable, SeriesTables } from './series-tables.js';

/** The object key under which DuckLake keeps the lake's files: its DATA_PATH is the store's location of it (app.ts). */
export const lakeFilesKey = 'tables';

/** A data file's object key from its location (DuckLake's path of it); null when it is not under the lake's data path. */
export function lakeFileKey(store: ObjectStore, location: string): string | null {
  const root = `${store.location(lakeFilesKey)}/`;
  return location.startsWith(root) ? `${lakeFilesKey}/${location.slice(root.length)}` : null;
}

/**
 * The data files of series table `table` live now, newest first, as object keys, each with its snapshot's time (as
 * its insert range, which a backfill's progress records). A file of a path DuckLake keeps absolute is left out:
 * it has no key, no statistics, and is read whole. So is one written before a column of the table was (added back
 * after the table was made again without it): it may lack the indexed column, and a search reads the table through
 * DuckLake while it is live (rollups' fileRows).
 */
export async function seriesDataFiles(db: MetadataQueries, table: string): Promise<FileToIndex[]> {
  const s = lakeMetadataSchema;
  const { rows } = await db.query<{ key: string; at: string }>(
    `SELECT n.path || t.path || f.path AS key, (extract(epoch FROM p.snapshot_time) * 1e6)::bigint::text AS at
       FROM ${s}.ducklake_data_file f
       JOIN ${s}.ducklake_table t ON t.table_id = f.table_id AND t.end_snapshot IS NULL
       JOIN ${s}.ducklake_schema n ON n.schema_id = t.schema_id AND n.end_snapshot IS NULL AND n.schema_name = 'main'
       JOIN ${s}.ducklake_snapshot p ON p.snapshot_id = f.begin_snapshot
      WHERE t.table_name = $1 AND f.end_snapshot IS NULL
        AND f.begin_snapshot >= (
          SELECT max(c.begin_snapshot) FROM ${s}.ducklake_column c WHERE c.table_id = t.table_id AND c.end_snapshot IS NULL)
        AND f.path_is_relative AND t.path_is_relative AND n.path_is_relative
      ORDER BY f.begin_snapshot DESC, f.data_file_id DESC`,
    [table],
  );
  return rows.map((r) => {
    const at = BigInt(r.at) * 1000n;
    return { filePath: `${lakeFilesKey}/${r.key}`, beginInsertTime: at, endInsertTime: at };
  });
}

/**
 * The daemon's upkeep of series tables' text indexes (each housekeeping run): the statistics of every data file
 * written since a table's indexes were installed or last kept. An index on a column the table no longer has (dropped
 * and made again without it) is left alone: no file can give it statistics, and resource_drift tells it (see
 * lostColumn). Answers a line for each table whose files it indexed, or could not (a file unreadable), which must not
 * stop the rest of housekeeping (its files are read whole meanwhile).
 */
export async function indexSeriesTables(
  tables: SeriesTables,
  ctx: { readonly db: MetadataQueries; readonly store: ObjectStore; lakeRows(sql: string): Promise<unknown[][]> },
): Promise<string[]> {
  const done: string[] = [];
  for (const [name, table] of await tables.list()) {
    const columns = new Set(table.columns.map((c) => quoteIdentifier(c.name)));
    try {
      const written = await indexNewFiles(
        ctx,
        name,
        () => seriesDataFiles(ctx.db, name),
        (index) => columns.has(index.expression),
      );
      if (written > 0) done.push(`${name}: the text index statistics of ${written} data file(s) written`);
    } catch (error) {
      done.push(
        `${name}: its text index statistics could not be written, its new files are read whole: ${messageOf(error)}`,
      );
    }
  }
  return done;
}

/**
 * What is wrong with a text index on column `column` of series table `table` that the table no longer has (dropped
 * and made again without it): it reads nothing and no new file is indexed; null when the table has the column.
 */
export const lostColumn = (table: SeriesTable, column: string): string | null =>
  table.columns.some((c) => c.name === column)
    ? null
    : `${table.name} has no column ${column} (made again without it?): its text index reads nothing and indexes no new file (add the column back, or publish without the entry to retire it)`;
