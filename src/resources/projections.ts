// Projections: per partition file of a view set, a copy of its rows sorted by the projection's order_by,
// in small row groups, so a query filtering on the leading sort column reads only the row groups whose
// min/max hold the value (DuckDB's Parquet reader skips the others), each column chunk with a Parquet
// bloom filter, so an equality's value skips the row groups (and copies) that do not hold it. A copy holds
// every column of the file, or with `columns` those, the order_by columns, the columns the set's audience
// filter and event range read, and the file's stored columns: queries reading other columns read the
// partition files (see neededColumns). Copies live
// under projections/<hash>/<the file's key>, listed in resource_projection_files; backfilled newest
// partition first (a file already copied is skipped, so an interrupted install resumes), written by the
// daemon for each partition it commits, queued for deletion an hour after prune drops the projection.
import { queueForDeletion, type ObjectStore, type Partition } from '../lakehouse/index.js';
import type { MetadataQueries } from '../metadata/index.js';
import { quoteLiteral, type ViewSet } from '../views/index.js';
import { bloomWriteOptions } from './parquet-bloom.js';
import { backfillEach, partitionsToDo, pastRetention } from './backfill.js';
import { forgetAbsent, factsOf } from './file-facts.js';
import { forgetRecent, recently } from './recent.js';
import type { InstallContext, ResourceInstaller } from './installers.js';
import { ensureLedger, entryHash, type LedgerRow } from './ledger.js';
import { mergedReadProblem, notViewSetProblem } from './stored-columns.js';
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
  /** The columns it stores besides the file's stored columns (see storedBy); null: every column. */
  readonly columns: readonly string[] | null;
}

/** The view set's columns the copies of a projection hold (besides the files' stored columns), null: all. */
export function storedBy(
  projection: { readonly orderBy: readonly string[]; readonly columns: readonly string[] | null },
  view: Pick<ViewSet, 'audienceColumn' | 'minTimeColumn' | 'maxTimeColumn'>,
): Set<string> | null {
  if (projection.columns === null) return null;
  const needed = [view.audienceColumn, view.minTimeColumn, view.maxTimeColumn];
  return new Set([...projection.orderBy, ...projection.columns, ...needed].map((c) => c.toLowerCase()));
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
  const kept = projection.columns && new Set(projection.columns.map((c) => c.toLowerCase()));
  let list = '*';
  if (kept) {
    const names = (await ctx.lakeRows(`SELECT column_name FROM (DESCRIBE SELECT * FROM ${source})`)).map(([n]) =>
      String(n),
    );
    list = names
      .filter((n) => kept.has(n.toLowerCase()) || n.startsWith('__orr_'))
      .map(quoteName)
      .join(', ');
  }
  // Every column chunk gets a Parquet bloom filter (see bloomWriteOptions).
  await ctx.lakeRows(
    `COPY (SELECT ${list} FROM ${source} ORDER BY ${projection.orderBy.map(quoteName).join(', ')})
       TO ${quoteLiteral(await ctx.store.writableLocation(key))} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE ${rowGroupSize}${bloomWriteOptions(rowGroupSize)})`,
  );
  await ctx.db.query(
    `INSERT INTO resource_projection_files (projection_hash, view_set_name, file_path, copy_path)
     VALUES ($1, $2, $3, $4) ON CONFLICT (projection_hash, file_path) DO NOTHING`,
    [projection.hash, projection.viewSet, filePath, key],
  );
  forgetAbsent();
}

async function* install(
  entry: ValidEntry,
  ctx: InstallContext,
  viewOf?: (name: string) => ViewSet | undefined,
): AsyncGenerator<string> {
  if (entry.kind !== 'projection') return;
  await ensureLedger(ctx.db);
  const hash = entryHash(entry);
  // Recorded whole: every column a copy holds (see storedBy), which the daemon's copies read too.
  const view = viewOf?.(entry.physical);
  // By a column entry: sorted by its stored column, which every file holds by now (its entry installs first).
  const orderBy = entry.sortedBy ?? entry.orderBy;
  const held = view ? storedBy({ orderBy, columns: entry.columns }, view) : null;
  if (entry.columns !== null && !held) throw new Error(`${entry.physical} is not a view set this server serves`);
  const columns = held && [...held].sort();
  // Recorded before listing the partitions: the daemon copies those that land from now on.
  await ctx.db.query(
    `INSERT INTO resource_projections (projection_hash, view_set_name, entry_key, order_by, columns)
     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (projection_hash) DO NOTHING`,
    [hash, entry.physical, entry.key, JSON.stringify(orderBy), columns && JSON.stringify(columns)],
  );
  forgetRecent();
  const { files, todo, past } = await partitionsToDo(
    ctx,
    entry.physical,
    'SELECT file_path FROM resource_projection_files WHERE projection_hash = $1',
    hash,
  );
  yield `backfill projection ${entry.key} on ${entry.physical} (by ${entry.orderBy.join(', ')}): ${todo.length} of ${files.length} partition(s) to copy, newest first`;
  yield* pastRetention(ctx, entry.key, past);
  const projection = { hash, viewSet: entry.physical, orderBy, columns };
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

/**
 * Installs projections sorted by physical columns or column entries (by their stored columns, see sortedBy)
 * and storing physical columns; others are planned as omitted. With the
 * server's view sets (`viewOf`), one storing some columns too (a copy holds what the set's audience filter
 * and event range read besides), and none on a set whose read merges its partitions (mergedReadProblem).
 */
export function projectionInstaller(viewOf?: (name: string) => ViewSet | undefined): ResourceInstaller {
  return {
    unsupported(entry, entries) {
      if (entry.kind !== 'projection') return null;
      // Its copies are sorted by the stored column, which an async entry's backfill writes only after serving.
      const later = entry.async
        ? undefined
        : entry.orderBy.find((name) => entries.some((e) => e.file === entry.file && e.key === name && e.async));
      if (later !== undefined)
        return `it is sorted by column entry '${later}', which is async (finished after serving): declare it async too`;
      const named = (entry.columns ?? []).filter((name) =>
        entries.some((e) => e.kind === 'column' && e.file === entry.file && e.key === name),
      );
      if (named.length > 0)
        return `this server's projections store physical columns only, not column entries (${named.join(', ')})`;
      const view = viewOf?.(entry.physical);
      if (view) return mergedReadProblem(view, "a projection's copies");
      return (
        notViewSetProblem(entry.physical, viewOf, 'projections') ??
        (entry.columns !== null
          ? `${entry.physical} is not a view set: this server stores some columns of view sets' partitions only`
          : null)
      );
    },
    install: (entry, ctx) => install(entry, ctx, viewOf),
    drop,
  };
}

/** The projections installed on these view sets, whichever publication declared them. */
async function installedProjections(db: MetadataQueries, viewSets: readonly string[]): Promise<InstalledProjection[]> {
  await ensureLedger(db);
  const { rows } = await db.query<{
    projection_hash: string;
    view_set_name: string;
    entry_key: string;
    order_by: string[];
    columns: string[] | null;
  }>(
    `SELECT projection_hash, view_set_name, entry_key, order_by, columns FROM resource_projections
      WHERE view_set_name = ANY($1::text[]) ORDER BY entry_key, projection_hash`,
    [viewSets],
  );
  return rows.map((r) => ({
    hash: r.projection_hash,
    viewSet: r.view_set_name,
    entryKey: r.entry_key,
    orderBy: r.order_by,
    columns: r.columns,
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
