// Stored columns (database-resources.md, column): a column entry's expression computed once per row and
// kept in the view set's Parquet partitions as `__orr_<hash>` (ZSTD, as every column of a partition).
// resource_columns lists the columns installed on each set: the materializer writes each of them into
// every partition it writes from then on. resource_column_files lists, per column, the partition files
// that hold it (one row per file, written in the transaction that registers the file): a query reads
// the column in place of its expression only when every file it reads is listed, so answers never
// depend on how far a backfill got. Backfill rewrites the set's files within the lake's retention newest
// first; a file done is listed, so an interrupted install resumes with the files not yet listed.
import type { MetadataQueries } from '../metadata/index.js';
import { passesRowsThrough, quoteIdentifier, type ViewSet } from '../views/index.js';
import { partitionFiles, pastRetention, type FilePartition } from './backfill.js';
import type { InstallContext, ResourceInstaller } from './installers.js';
import { ensureLedger, type LedgerRow } from './ledger.js';
import { forgetRecent, recently } from './recent.js';
import type { ValidEntry } from './validation.js';

/** A stored column installed on a view set. */
export interface InstalledColumn {
  /** `__orr_<hash>`. */
  readonly name: string;
  readonly viewSet: string;
  readonly entryKey: string;
  /** The row expression over the set's columns, as declared. */
  readonly expression: string;
  /** The type it is stored as. */
  readonly storedType: string;
  /** DuckDB's type of the expression itself: queries read the column in its place only when the two are one. */
  readonly expressionType: string | null;
}

/** The stored columns installed on these view sets (retired ones too, until prune drops them). */
export async function installedColumns(db: MetadataQueries, viewSets: readonly string[]): Promise<InstalledColumn[]> {
  await ensureLedger(db);
  const { rows } = await db.query<Record<string, string | null>>(
    `SELECT column_name, view_set_name, entry_key, expression, stored_type, expression_type FROM resource_columns
      WHERE view_set_name = ANY($1::text[]) ORDER BY view_set_name, column_name`,
    [viewSets],
  );
  return rows.map((r) => ({
    name: r.column_name!,
    viewSet: r.view_set_name!,
    entryKey: r.entry_key!,
    expression: r.expression!,
    storedType: r.stored_type!,
    expressionType: r.expression_type,
  }));
}

/** The stored columns installed on a set, as read at most two seconds ago (see recently). */
export const recentColumns = (db: MetadataQueries, viewSet: string): Promise<InstalledColumn[]> =>
  recently(db, `columns:${viewSet}`, () => installedColumns(db, [viewSet]));

/** Of a set's stored columns, those every one of these partition files (object keys) holds. */
export async function columnsHeldByAll(
  db: MetadataQueries,
  viewSet: string,
  files: readonly string[],
): Promise<Set<string>> {
  const { rows } = await db.query<{ column_name: string; n: string }>(
    `SELECT column_name, count(*) AS n FROM resource_column_files
      WHERE view_set_name = $1 AND file_path = ANY($2::text[]) GROUP BY column_name`,
    [viewSet, files],
  );
  return new Set(rows.filter((r) => Number(r.n) === files.length).map((r) => r.column_name));
}

/** A query's rows with the stored columns appended, each its expression cast to its stored type. */
export function withStoredColumns(sql: string, columns: readonly InstalledColumn[]): string {
  if (columns.length === 0) return sql;
  const computed = columns.map((c) => `CAST((${c.expression}) AS ${c.storedType}) AS ${quoteIdentifier(c.name)}`);
  return `SELECT *, ${computed.join(', ')} FROM (${sql})`;
}

/**
 * Records, in the transaction that registers partition files, which stored columns each new file holds,
 * and forgets the files it retired (no statement reads them from now on).
 */
export async function recordColumnFiles(
  tx: MetadataQueries,
  viewSet: string,
  written: ReadonlyMap<string, readonly string[]>,
  retired: readonly string[],
): Promise<void> {
  if (retired.length > 0)
    await tx.query('DELETE FROM resource_column_files WHERE view_set_name = $1 AND file_path = ANY($2::text[])', [
      viewSet,
      retired,
    ]);
  const pairs = [...written].flatMap(([file, names]) => names.map((name) => [name, file]));
  if (pairs.length === 0) return;
  await tx.query(
    `INSERT INTO resource_column_files (view_set_name, column_name, file_path)
     SELECT $1, c, f FROM unnest($2::text[], $3::text[]) AS t(c, f) ON CONFLICT DO NOTHING`,
    [viewSet, pairs.map((p) => p[0]), pairs.map((p) => p[1])],
  );
}

const dayOf = (nanos: bigint): string => new Date(Number(nanos / 1_000_000n)).toISOString().slice(0, 10);

/** The set's partition files within retention not holding the column, newest first, and how many past retention were left out. */
async function filesWithout(
  ctx: InstallContext,
  viewSet: string,
  column: string,
): Promise<{ todo: FilePartition[]; past: number }> {
  const { rows } = await ctx.db.query<{ file_path: string }>(
    'SELECT file_path FROM resource_column_files WHERE view_set_name = $1 AND column_name = $2',
    [viewSet, column],
  );
  const done = new Set(rows.map((r) => r.file_path));
  const { files, past } = await partitionFiles(ctx, viewSet);
  return { todo: files.filter((p) => !done.has(p.filePath)), past };
}

/** Records a column entry's stored column as installed on its table (resource_columns), which queries then read. */
export async function recordColumn(
  db: MetadataQueries,
  entry: ValidEntry & { readonly kind: 'column' },
): Promise<void> {
  await ensureLedger(db);
  await db.query(
    `INSERT INTO resource_columns (column_name, view_set_name, entry_key, expression, stored_type, expression_type)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (view_set_name, column_name) DO NOTHING`,
    [entry.storedName, entry.physical, entry.key, entry.expression, entry.storedType, entry.expressionType],
  );
  forgetRecent();
}

async function* install(entry: ValidEntry, ctx: InstallContext): AsyncGenerator<string> {
  if (entry.kind !== 'column' || entry.storedType === null) return;
  if (!ctx.rewritePartition) throw new Error('this server cannot rewrite partition files');
  // Recorded first: every partition written from now on holds the column, so the backfill below
  // has an end (files written while it runs are taken up by its next round).
  await recordColumn(ctx.db, entry);
  const what = `stored column ${entry.key} (${entry.storedName} ${entry.storedType}) on ${entry.physical}`;
  const started = Date.now();
  const seen = new Set<string>();
  let rewritten = 0;
  // Rounds until no file is left: a file the daemon wrote before the column was recorded is taken by the next.
  for (let round = 0; ; round++) {
    const listed = await filesWithout(ctx, entry.physical, entry.storedName);
    const todo = listed.todo.filter((p) => !seen.has(p.filePath));
    if (round === 0) {
      yield `backfill ${what}: ${todo.length} partition file(s) to rewrite, newest first`;
      yield* pastRetention(ctx, entry.key, listed.past);
    }
    if (todo.length === 0) return;
    for (const [i, partition] of todo.entries()) {
      seen.add(partition.filePath);
      // False for a file no longer current (merged or rebuilt meanwhile: its replacement holds the column).
      if (await ctx.rewritePartition(entry.physical, partition.filePath)) rewritten++;
      await ctx.progress({
        backfilledBegin: new Date(Number(partition.beginInsertTime / 1_000_000n)),
        backfilledEnd: new Date(Number(todo[0].endInsertTime / 1_000_000n)),
      });
      const left = ((Date.now() - started) / seen.size) * (todo.length - i - 1);
      yield `  ${entry.key}: ${rewritten} file(s) rewritten, reached ${dayOf(partition.beginInsertTime)}, about ${Math.ceil(left / 1000)} s left`;
    }
  }
}

/** Takes a stored column off the columns installed on its table: no query reads it from then on. */
export async function forgetColumn(db: MetadataQueries, table: string, column: string): Promise<void> {
  await db.query('DELETE FROM resource_columns WHERE view_set_name = $1 AND column_name = $2', [table, column]);
  forgetRecent();
}

async function drop(row: LedgerRow, ctx: { readonly db: MetadataQueries }): Promise<string> {
  await ensureLedger(ctx.db);
  const entry = row.declaration;
  if (entry.kind !== 'column') return 'nothing installed';
  await forgetColumn(ctx.db, entry.physical, entry.storedName);
  const { rowCount } = await ctx.db.query(
    'DELETE FROM resource_column_files WHERE view_set_name = $1 AND column_name = $2',
    [entry.physical, entry.storedName],
  );
  forgetRecent();
  return `${entry.storedName} no longer written or read; ${rowCount ?? 0} file(s) keep its bytes until they are next merged or rebuilt`;
}

/**
 * Why queries could never read `what` (a stored column, a projection's copies) of a set whose read merges its
 * partitions' rows: pruning and column substitution only read sets that pass rows through (readingSelects in
 * src/sql/partition-pruning.ts), so installing would write bytes no statement reads. Null when the set passes them.
 */
export const mergedReadProblem = (view: ViewSet, what: string): string | null =>
  passesRowsThrough(view)
    ? null
    : `${view.name} merges its partitions' rows (its merge query is not SELECT * FROM {source}): queries could not read ${what}`;

/**
 * Why `what` cannot be kept for a table the server's view sets (`viewOf`) do not hold, such as a series table (whose
 * files are DuckLake's, with no partition of a view set to keep it in): planned as omitted, never "ready" over no file.
 */
export const notViewSetProblem = (
  physical: string,
  viewOf: ((name: string) => ViewSet | undefined) | undefined,
  what: string,
): string | null =>
  viewOf && !viewOf(physical)
    ? `${physical} is not a view set, and ${what} are kept in view sets' partition files only`
    : null;

/**
 * Installs column entries as stored columns of view sets' partitions. With the server's view sets
 * (`viewOf`), an entry whose table queries could not read a stored column of is planned as omitted.
 */
export function storedColumnInstaller(viewOf?: (name: string) => ViewSet | undefined): ResourceInstaller {
  return {
    unsupported(entry) {
      if (entry.kind !== 'column' || !viewOf) return null;
      const view = viewOf(entry.physical);
      return view
        ? mergedReadProblem(view, 'a stored column')
        : notViewSetProblem(entry.physical, viewOf, 'stored columns');
    },
    install,
    drop,
  };
}
