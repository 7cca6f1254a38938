// Projections: per partition file of a view set, a copy of its rows sorted by the projection's order_by,
// in small row groups, so a query filtering on the leading sort column reads only the row groups whose
// min/max hold the value (DuckDB's Parquet reader skips the others). A copy holds every column of the
// file (stored columns included): this server installs projections without `columns` only. Copies live
// under projections/<hash>/<the file's key>, listed in resource_projection_files; backfilled newest
// partition first (a file already copied is skipped, so an interrupted install resumes), written by the
// daemon for each partition it commits, queued for deletion an hour after prune drops the projection.
import { queueForDeletion, type ObjectStore, type Partition } from '../lakehouse/index.js';
import type { MetadataQueries } from '../metadata/index.js';
import { quoteLiteral } from '../views/index.js';
import { backfillEach, partitionsToDo } from './backfill.js';
import { forgetAbsent, factsOf } from './file-facts.js';
import { forgetRecent, recently } from './recent.js';
import type { InstallContext, ResourceInstaller } from './installers.js';
import { ensureLedger, entryHash, type LedgerRow } from './ledger.js';
import { parquetWriteOptions } from './parquet-bloom.js';
import type { ValidEntry } from './validation.js';

/** Rows per row group of a copy: small, so a filter on the sort column skips most of them. */
const rowGroupSize = 16384;

/** An installed projection of a view set. */
export interface InstalledProjection {
  readonly hash: string;
  readonly viewSet: string;
  readonly entryKey: string;
  /** The physical columns it sorts by, in order. */
  readonly orderBy: readonly string[];
}

const quoteName = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/** Where the copy of a partition file under a projection is kept. */
const copyKey = (hash: string, filePath: string): string => `projections/${hash}/${filePath}`;

/** Writes one partition file's sorted copy and records it (once: a file never changes). */
async function writeCopy(
  ctx: { readonly db: MetadataQueries; readonly store: ObjectStore; lakeRows(sql: string): Promise<unknown[][]> },
  projection: Omit<InstalledProjection, 'entryKey'>,
  filePath: string,
): Promise<void> {
  const key = copyKey(projection.hash, filePath);
  const source = `read_parquet(${quoteLiteral(ctx.store.location(filePath))})`;
  // Read in place of the partition files: with their Parquet bloom filters (see parquetWriteOptions).
  const options = await parquetWriteOptions(ctx.db, projection.viewSet, rowGroupSize);
  await ctx.lakeRows(
    `COPY (SELECT * FROM ${source} ORDER BY ${projection.orderBy.map(quoteName).join(', ')})
       TO ${quoteLiteral(await ctx.store.writableLocation(key))} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE ${rowGroupSize}${options})`,
  );
  await ctx.db.query(
    `INSERT INTO resource_projection_files (projection_hash, view_set_name, file_path, copy_path)
     VALUES ($1, $2, $3, $4) ON CONFLICT (projection_hash, file_path) DO NOTHING`,
    [projection.hash, projection.viewSet, filePath, key],
  );
  forgetAbsent();
}

async function* install(entry: ValidEntry, ctx: InstallContext): AsyncGenerator<string> {
  if (entry.kind !== 'projection') return;
  await ensureLedger(ctx.db);
  const hash = entryHash(entry);
  // Recorded before listing the partitions: the daemon copies those that land from now on.
  await ctx.db.query(
    `INSERT INTO resource_projections (projection_hash, view_set_name, entry_key, order_by)
     VALUES ($1, $2, $3, $4) ON CONFLICT (projection_hash) DO NOTHING`,
    [hash, entry.physical, entry.key, JSON.stringify(entry.orderBy)],
  );
  forgetRecent();
  const { files, todo } = await partitionsToDo(
    ctx.db,
    entry.physical,
    'SELECT file_path FROM resource_projection_files WHERE projection_hash = $1',
    hash,
  );
  yield `backfill projection ${entry.key} on ${entry.physical} (by ${entry.orderBy.join(', ')}): ${todo.length} of ${files.length} partition(s) to copy, newest first`;
  const projection = { hash, viewSet: entry.physical, orderBy: entry.orderBy };
  yield* backfillEach(
    ctx,
    todo,
    (partition) => writeCopy(ctx, projection, partition.filePath),
    (i, _partition, left) => `  ${entry.key}: ${i}/${todo.length} partition(s), about ${left} s left`,
  );
}

/**
 * How long the copies of a dropped projection stay: a statement planned before the drop may still read them
 * (plans are kept a minute; this is the default retire delay of partition files).
 */
const copiesKeptSeconds = 3600;

async function drop(
  row: LedgerRow,
  ctx: { readonly db: MetadataQueries; readonly store: ObjectStore },
): Promise<string> {
  await ensureLedger(ctx.db);
  await ctx.db.query('DELETE FROM resource_projections WHERE projection_hash = $1', [row.hash]);
  forgetRecent();
  const { rows } = await ctx.db.query<{ copy_path: string }>(
    'DELETE FROM resource_projection_files WHERE projection_hash = $1 RETURNING copy_path',
    [row.hash],
  );
  await queueForDeletion(
    ctx.db,
    rows.map((r) => r.copy_path),
    copiesKeptSeconds,
  );
  return `${rows.length} projection file(s) queued for deletion in ${copiesKeptSeconds} s`;
}

/** Installs projections of every column sorted by physical columns; others are planned as omitted. */
export const projectionInstaller: ResourceInstaller = {
  unsupported(entry, entries) {
    if (entry.kind !== 'projection') return null;
    if (entry.columns !== null) return 'this server installs projections of every column only (without columns)';
    const named = entry.orderBy.filter((name) =>
      entries.some((e) => e.kind === 'column' && e.file === entry.file && e.key === name),
    );
    return named.length > 0
      ? `this server sorts projections by physical columns only, not by column entries (${named.join(', ')})`
      : null;
  },
  install,
  drop,
};

/** The projections installed on these view sets, whichever publication declared them. */
async function installedProjections(db: MetadataQueries, viewSets: readonly string[]): Promise<InstalledProjection[]> {
  await ensureLedger(db);
  const { rows } = await db.query<{
    projection_hash: string;
    view_set_name: string;
    entry_key: string;
    order_by: string[];
  }>(
    `SELECT projection_hash, view_set_name, entry_key, order_by FROM resource_projections
      WHERE view_set_name = ANY($1::text[]) ORDER BY entry_key, projection_hash`,
    [viewSets],
  );
  return rows.map((r) => ({
    hash: r.projection_hash,
    viewSet: r.view_set_name,
    entryKey: r.entry_key,
    orderBy: r.order_by,
  }));
}

/** The projections installed on a set, as read at most two seconds ago (see recently). */
export const recentProjections = (db: MetadataQueries, viewSet: string): Promise<InstalledProjection[]> =>
  recently(db, `projections:${viewSet}`, () => installedProjections(db, [viewSet]));

/** The copies (object keys) one projection holds of these partition files, by file, kept in memory (see factsOf); files without one are absent. */
export async function projectionCopies(
  db: MetadataQueries,
  hash: string,
  files: readonly string[],
): Promise<Map<string, string>> {
  return factsOf(
    db,
    `copies:${hash}`,
    files,
    async (missing) => {
      const { rows } = await db.query<{ file_path: string; copy_path: string }>(
        `SELECT file_path, copy_path FROM resource_projection_files WHERE projection_hash = $1 AND file_path = ANY($2::text[])`,
        [hash, missing],
      );
      return new Map(rows.map((r) => [r.file_path, r.copy_path]));
    },
    (copy) => copy.length * 2,
  );
}

/** Copies a partition just registered under every projection installed on its set (the daemon, after each commit). */
export async function projectPartition(
  ctx: { readonly db: MetadataQueries; readonly store: ObjectStore; lakeRows(sql: string): Promise<unknown[][]> },
  partition: Pick<Partition, 'viewSetName' | 'filePath'>,
): Promise<void> {
  if (partition.filePath === null) return;
  for (const projection of await installedProjections(ctx.db, [partition.viewSetName]))
    await writeCopy(ctx, projection, partition.filePath);
}
