// The Parquet side of a bloom_filter index: the partitions of its view set are written with a bloom filter in
// every column chunk, so DuckDB's reader skips the row groups whose filter excludes an equality's value
// (inside the partitions its statistics could not skip). DuckDB 1.5 writes a bloom filter for each
// dictionary-encoded chunk, and falls back to plain encoding, without one, when a chunk has more distinct
// values than DICTIONARY_SIZE_LIMIT: a log line or an id, the columns worth a bloom filter, did. The limit
// is per file, not per column, so every column of such a set is dictionary-encoded (files grow: 20.7 to
// 33 MB for a million rows of a unique line, a unique integer and a timestamp; BOOLEAN columns and chunks
// of NULLs get none). Installing the index rewrites the set's files that lack one on its column.
import type { MetadataQueries } from '../metadata/index.js';
import { quoteLiteral } from '../views/index.js';
import { partitionFiles } from './backfill.js';
import type { InstallContext } from './installers.js';
import { ensureLedger } from './ledger.js';
import type { ValidEntry } from './validation.js';

/** The false-positive rate of every bloom filter a bloom_filter index makes: the spec's `bloom_filter(0.01)`. */
export const bloomFalsePositiveRate = 0.01;

/**
 * The COPY options that give every column chunk but BOOLEAN ones a Parquet bloom filter at bloomFalsePositiveRate
 * (DuckDB's default too): a dictionary as large as a row group of `rowGroupSize` rows.
 */
export const bloomWriteOptions = (rowGroupSize: number): string =>
  `, DICTIONARY_SIZE_LIMIT ${rowGroupSize}, BLOOM_FILTER_FALSE_POSITIVE_RATIO ${bloomFalsePositiveRate}`;

/**
 * The COPY options a view set's partition files are written with (after FORMAT, COMPRESSION and
 * ROW_GROUP_SIZE `rowGroupSize`): bloomWriteOptions when a bloom_filter index is installed on the set; none
 * otherwise.
 */
export async function parquetWriteOptions(db: MetadataQueries, viewSet: string, rowGroupSize: number): Promise<string> {
  await ensureLedger(db);
  const { rows } = await db.query(
    "SELECT 1 FROM resource_indexes WHERE view_set_name = $1 AND kind = 'bloom_filter' LIMIT 1",
    [viewSet],
  );
  return rows.length > 0 ? bloomWriteOptions(rowGroupSize) : '';
}

/**
 * The column of the partition files a bloom_filter index reads: the physical one when the index reads it
 * (no column entry of that name, or a name of both, which validation reads as the column: no
 * indexedExpression), the existing column that satisfies the entry (nothing is stored for it), or the
 * entry's stored column.
 */
function fileColumn(entry: ValidEntry & { kind: 'index' }, entries: readonly ValidEntry[]): string {
  if (entry.indexedExpression === undefined) return entry.column;
  const column = entries.find((e) => e.kind === 'column' && e.file === entry.file && e.key === entry.column);
  if (column?.kind !== 'column') return entry.column;
  return column.satisfiedBy ?? column.storedName;
}

/**
 * Rewrites, newest first, each partition file of the index's set whose column chunks of the indexed
 * column lack a Parquet bloom filter though they hold values (files written before the index), with
 * the server's partition writer, which now writes them. Once per file listed at the start: a file
 * the daemon replaces meanwhile is written by it with bloom filters already. Yields a line per file.
 */
export async function* writeParquetBloomFilters(
  entry: ValidEntry & { kind: 'index' },
  ctx: InstallContext,
): AsyncGenerator<string> {
  const column = fileColumn(entry, ctx.entries);
  if (column === '') return;
  const lacking: Array<{ filePath: string }> = [];
  for (const partition of (await partitionFiles(ctx, entry.physical)).files) {
    const [[missing]] = await ctx.lakeRows(
      `SELECT count(*) FROM parquet_metadata(${quoteLiteral(ctx.store.location(partition.filePath))})
        WHERE path_in_schema = ${quoteLiteral(column)} AND bloom_filter_offset IS NULL AND type <> 'BOOLEAN'
          AND coalesce(stats_null_count, 0) < num_values`,
    );
    if (Number(missing) > 0) lacking.push(partition);
  }
  if (lacking.length === 0) return;
  if (!ctx.rewritePartition) {
    yield `  ${entry.key}: ${lacking.length} partition file(s) without Parquet bloom filters on ${column} (this server cannot rewrite files; new ones have them)`;
    return;
  }
  yield `  ${entry.key}: ${lacking.length} partition file(s) to rewrite with Parquet bloom filters on ${column}, newest first`;
  let rewritten = 0;
  for (const [i, partition] of lacking.entries()) {
    if (await ctx.rewritePartition(entry.physical, partition.filePath)) rewritten++;
    yield `  ${entry.key}: ${rewritten} file(s) rewritten with bloom filters (${i + 1}/${lacking.length})`;
  }
}
