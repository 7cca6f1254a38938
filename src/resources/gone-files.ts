// What the resources record of partition files that are gone (issue 13): a merge, a rebuild or retention
// retires a partition's file, and housekeeping deletes it once no statement may read it. The rows about
// such a file (the stored columns it holds, its indexes' statistics, its text indexes' and projections'
// copies) are then deleted, and the copies queued for deletion. A file is gone when no partition names it and it is
// not waiting for deletion either: decided by state, not by the paths one run deleted, so a run killed in
// between is finished by the next, and a row written for a partition retired meanwhile goes too.
import { queueForDeletion } from '../lakehouse/index.js';
import type { MetadataQueries } from '../metadata/index.js';
import { ensureLedger } from './ledger.js';
import { textCopies } from './partition-stats.js';

/**
 * Whether the rows of `alias` are of a partition file that is gone. A series table's data files (keys under
 * `tables/`, DuckLake's) are not partitions: what their text indexes keep goes with the index (see series-text.ts).
 */
const isGone = (alias: string): string =>
  `${alias}.file_path NOT LIKE 'tables/%'
   AND NOT EXISTS (SELECT 1 FROM lakehouse_partitions p WHERE p.file_path = ${alias}.file_path)
   AND NOT EXISTS (SELECT 1 FROM temporary_files t WHERE t.file_path = ${alias}.file_path)`;

/**
 * Deletes the resources' rows of partition files that are gone and queues their projections' copies
 * for deletion (no statement reads a copy of a file no statement reads); returns how many rows went.
 */
export async function forgetGoneFiles(db: MetadataQueries): Promise<number> {
  await ensureLedger(db);
  const columns = await db.query(`DELETE FROM resource_column_files f WHERE ${isGone('f')}`);
  // Copies (a text index's, a projection's) are queued (by the lakehouse, which owns temporary_files) before
  // their rows go: a run killed in between queues them again, never leaves a copy nothing names.
  const texts = textCopies(
    (
      await db.query<{ copy_path: string | null }>(
        `SELECT copy_path FROM resource_partition_stats s WHERE ${isGone('s')}
         UNION SELECT copy_path FROM resource_audience_stats s WHERE ${isGone('s')}`,
      )
    ).rows,
  );
  const copies = (
    await db.query<{ copy_path: string }>(`SELECT copy_path FROM resource_projection_files c WHERE ${isGone('c')}`)
  ).rows.map((r) => r.copy_path);
  if (copies.length + texts.length > 0) await queueForDeletion(db, [...texts, ...copies], 0);
  const stats = await db.query(`DELETE FROM resource_partition_stats s WHERE ${isGone('s')}`);
  const audiences = await db.query(`DELETE FROM resource_audience_stats s WHERE ${isGone('s')}`);
  const copied = await db.query('DELETE FROM resource_projection_files WHERE copy_path = ANY($1::text[])', [copies]);
  return (columns.rowCount ?? 0) + (stats.rowCount ?? 0) + (audiences.rowCount ?? 0) + (copied.rowCount ?? 0);
}
