import { passesRowsThrough, type ColumnSpec, type ViewSet } from './view-set.js';

// A query session sees each view set as a temporary view: the set's merge query over the
// Parquet files of its current partitions, filtered to the caller's audiences. Callers
// run these statements on a connection before their own statement.

/** Which rows a caller may read: every row, or rows of these audiences. */
export type ReadScope = { kind: 'all' } | { kind: 'audiences'; audiences: readonly string[] };

/**
 * The rows a build of a view set reads of its sources: a caller's scope, or the rows of no known audience (a NULL
 * audience, a process the processes set gives none), which no key reads: the materializer's run of them when it
 * builds a range once per audience (materializer.ts, extractedByAudience).
 */
export type BuildScope = ReadScope | { kind: 'no audience' };

/** The partitions a session reads for one view set: local Parquet file paths. */
export interface SessionView {
  readonly view: ViewSet;
  readonly files: readonly string[];
  /**
   * Stored columns (`__orr_<hash>`) every one of the files holds, read beside the set's columns: only
   * for a statement rewritten to read them, over a set whose merge query passes rows through.
   */
  readonly stored?: readonly string[];
  /** The set's columns the files lack (a projection's copies storing some columns): read as NULLs, by no statement. */
  readonly absent?: readonly string[];
  /** The rows to read of some of the files, by file (a text index's postings: the other rows cannot pass the statement's WHERE). */
  readonly rows?: ReadonlyMap<string, RowsToRead>;
  /** The files' rows are the set's merge already (partitionsMerged): read as they are, not merged again. */
  readonly merged?: boolean;
  /** Only the rows whose latest time is after this (ns): a latest-n top-N bounded (the statement checks its count). */
  readonly after?: bigint;
}

/**
 * Rows of a partition file to read: a bitmap of the file's rows, the first row in the first byte's highest
 * bit, and where they are also kept together, when they are: ranges of a text index's copies of the file's
 * posted rows (each row in one), read in their place.
 */
export interface RowsToRead {
  readonly bitmap: Uint8Array;
  readonly copies: readonly CopyRead[] | null;
}

/**
 * Rows of a text index's copy (a Parquet file of a partition file's rows, numbered in `__orr_position`, with
 * their row in the file in `__orr_row`): the positions from `from` to `to`, all of them or those `bits` holds
 * (from `from`, in the first byte's highest bit).
 */
export interface CopyRead {
  readonly file: string;
  readonly from: number;
  readonly to: number;
  readonly bits: Uint8Array | null;
  /** Whether the rows at those positions are in their file's order. */
  readonly ordered: boolean;
}

/** A bitmap as DuckDB's BIT, for get_bit (the first bit is the first byte's highest). */
export const bitmapLiteral = (bitmap: Uint8Array): string =>
  `from_base64('${Buffer.from(bitmap).toString('base64')}')::BIT`;

/** SQL reading rows of text index copies, in their rows' order in the partition file (as the file reads them). */
function copiesRelation(select: string, copies: readonly CopyRead[]): string {
  const ranges = copies.map(({ file, from, to, bits }) => {
    const kept = bits ? ` AND get_bit(${bitmapLiteral(bits)}, (__orr_position - ${from})::INTEGER) = 1` : '';
    return `SELECT * FROM read_parquet(${quoteLiteral(file)}) WHERE __orr_position BETWEEN ${from} AND ${to}${kept}`;
  });
  if (copies.length === 1 && copies[0].ordered) return `${select}(${ranges[0]})`;
  return `SELECT * FROM (${select}(${ranges.join(' UNION ALL ')}) ORDER BY __orr_row)`;
}

/** A partition's event-time bounds, from the catalog. */
interface EventBounds {
  readonly minEventTime: bigint | null;
  readonly maxEventTime: bigint | null;
}

/**
 * Whether these partitions' rows are their set's merge already: each holds a key of the merge once (the
 * set's mergeKeys), and no two of them share a key, because the set's one event-time column is a key and
 * no two partitions' event-time ranges meet (a time_bin in two partitions makes them meet). The catalog
 * keeps the ranges widened to whole microseconds, which can only make them meet more often.
 */
export function partitionsMerged(view: ViewSet, partitions: readonly EventBounds[]): boolean {
  if (!view.mergeKeys) return false;
  if (partitions.length <= 1) return true;
  const time = view.minTimeColumn.toLowerCase();
  if (time !== view.maxTimeColumn.toLowerCase() || !view.mergeKeys.some((key) => key.toLowerCase() === time))
    return false;
  const ranges: { min: bigint; max: bigint }[] = [];
  for (const { minEventTime: min, maxEventTime: max } of partitions) {
    if (min === null || max === null) return false;
    ranges.push({ min, max });
  }
  ranges.sort((a, b) => (a.min < b.min ? -1 : a.min > b.min ? 1 : 0));
  return ranges.every((range, i) => i === 0 || ranges[i - 1].max < range.min);
}

export const quoteIdentifier = (name: string): string => `"${name.replaceAll('"', '""')}"`;
export const quoteLiteral = (text: string): string => `'${text.replaceAll("'", "''")}'`;

/** SQL producing zero rows with the given columns. */
export function emptyRelation(columns: readonly ColumnSpec[]): string {
  return `SELECT ${columns.map((col) => `NULL::${col.type} AS ${quoteIdentifier(col.name)}`).join(', ')} LIMIT 0`;
}

/**
 * SQL reading a list of Parquet files with a set's columns, in their order; a file given rows is read alone,
 * only those rows: from the copies that keep them together when there are (only their row groups are
 * decoded), else from the file, DuckDB evaluating the bit of each row's number first, the statement's
 * filters on the rows it keeps.
 */
export function filesRelation(
  columns: readonly ColumnSpec[],
  files: readonly string[],
  stored: readonly string[] = [],
  absent: readonly string[] = [],
  rows: ReadonlyMap<string, RowsToRead> = new Map(),
): string {
  if (files.length === 0) return emptyRelation(columns);
  const missing = new Set(absent);
  const names = [
    ...columns.map((col) =>
      missing.has(col.name) ? `NULL::${col.type} AS ${quoteIdentifier(col.name)}` : quoteIdentifier(col.name),
    ),
    ...stored.map(quoteIdentifier),
  ];
  const select = `SELECT ${names.join(', ')} FROM `;
  const parts: string[] = [];
  for (let i = 0; i < files.length;) {
    const read = rows.get(files[i]);
    if (read?.copies) {
      parts.push(copiesRelation(select, read.copies));
      i++;
      continue;
    }
    if (read) {
      parts.push(
        `${select}read_parquet(${quoteLiteral(files[i++])}, file_row_number = true) WHERE get_bit(${bitmapLiteral(read.bitmap)}, file_row_number::INTEGER) = 1`,
      );
      continue;
    }
    const whole: string[] = [];
    while (i < files.length && !rows.has(files[i])) whole.push(files[i++]);
    parts.push(`${select}read_parquet([${whole.map(quoteLiteral).join(', ')}])`);
  }
  return parts.join(' UNION ALL ');
}

/** A query's columns cast to a set's types (a merge may widen sum(BIGINT) to HUGEINT; users see the extract's type). */
export function typedColumns(
  columns: readonly ColumnSpec[],
  query: string,
  stored: readonly string[] = [],
  uncast: ReadonlySet<string> = new Set(),
): string {
  const list = [
    ...columns.map((c) =>
      uncast.has(c.name)
        ? quoteIdentifier(c.name)
        : `CAST(${quoteIdentifier(c.name)} AS ${c.type}) AS ${quoteIdentifier(c.name)}`,
    ),
    ...stored.map(quoteIdentifier),
  ].join(', ');
  return `SELECT ${list} FROM (${query})`;
}

/**
 * Types that a Parquet file written by DuckDB reads back as, so a partition's column of one needs no cast to be
 * its set's type. HUGEINT, for one, reads back as DOUBLE. test/views/read-back-types.test.ts checks each.
 */
export const readBackTypes: ReadonlySet<string> = new Set([
  'VARCHAR',
  'BOOLEAN',
  'TINYINT',
  'SMALLINT',
  'INTEGER',
  'BIGINT',
  'UTINYINT',
  'USMALLINT',
  'UINTEGER',
  'UBIGINT',
  'FLOAT',
  'DOUBLE',
  'DATE',
  'TIMESTAMP',
  'TIMESTAMP_NS',
  'BLOB',
  'JSON',
  'VARCHAR[]',
]);

/**
 * Partition rows (`filesRelation`'s columns, filtered) as the set's columns: only a column of a type that does not
 * read back as written is cast. Binding a cast costs every statement over the set (a JSON cast the most), and a
 * cast to the column's own type changes nothing.
 */
function storedRows(columns: readonly ColumnSpec[], rows: string, stored: readonly string[]): string {
  if (columns.every((c) => readBackTypes.has(c.type))) return rows;
  const list = columns.map((c) =>
    readBackTypes.has(c.type)
      ? quoteIdentifier(c.name)
      : `CAST(${quoteIdentifier(c.name)} AS ${c.type}) AS ${quoteIdentifier(c.name)}`,
  );
  return `SELECT ${[...list, ...stored.map(quoteIdentifier)].join(', ')} FROM (${rows})`;
}

/** Replaces `{source}` in a merge query. */
export function withSource(mergeQuery: string, relation: string): string {
  return mergeQuery.replaceAll('{source}', relation);
}

/**
 * The statements that make each set queryable on a connection: one temporary view per set,
 * its merge query over its partitions. With an audience scope the partitions' rows are
 * filtered before the merge, by the set's audience column or, for sets keyed by process,
 * by the audience of the process; a process whose audience is unknown is never served.
 * No unfiltered relation is left on the connection.
 */
export function sessionStatements(
  views: readonly SessionView[],
  scope: BuildScope,
  options: { processAudiences?: SessionView; eventRange?: EventRange } = {},
): string[] {
  return views.map(
    (sessionView) =>
      `CREATE OR REPLACE TEMP VIEW ${quoteIdentifier(sessionView.view.name)} AS ${sessionRelation(sessionView, scope, options)}`,
  );
}

/** The SELECT a set is for a scope: its merge query over the scope's rows of its partitions (see sessionStatements). */
export function sessionRelation(
  { view, files, stored = [], absent = [], rows: bitmaps, merged = false, after }: SessionView,
  scope: BuildScope,
  options: { processAudiences?: SessionView; eventRange?: EventRange } = {},
): string {
  const inRange = inEventRange(filesRelation(view.columns, files, stored, absent, bitmaps), view, options.eventRange);
  const rows =
    after === undefined
      ? inRange
      : `SELECT * FROM (${inRange}) WHERE ${quoteIdentifier(view.maxTimeColumn)} > make_timestamp_ns(${after})`;
  const scoped = scopedRows(rows, view, scope, options.processAudiences);
  // Rows the scope and range filters keep of merged partitions are merged rows too. Columns read as NULLs
  // (a projection's) are merged as before: a key of NULLs is not the partitions' key.
  const read = files.length === 0 ? [] : stored;
  if (passesRowsThrough(view) || (merged && absent.length === 0)) return storedRows(view.columns, scoped, read);
  return typedColumns(view.columns, withSource(view.mergeQuery, `(${scoped})`), read);
}

/**
 * Per partition file of a set, the rows of the scope it holds and their event-time span
 * (columns file, num_rows, min_event_time, max_event_time): what list_partitions shows a key
 * that is not an admin, since a file holds the rows of every audience of its time range.
 */
export function scopedFileSummary(
  view: ViewSet,
  files: readonly string[],
  scope: ReadScope,
  processAudiences?: SessionView,
): string {
  const [min, max, owner] = [view.minTimeColumn, view.maxTimeColumn, view.audienceColumn].map(quoteIdentifier);
  const rows = `SELECT ${min} AS __min, ${max} AS __max, ${owner}, filename FROM read_parquet([${files.map(quoteLiteral).join(', ')}], filename = true)`;
  return (
    'SELECT filename AS file, count(*) AS num_rows, min(__min)::TIMESTAMP_NS AS min_event_time, max(__max)::TIMESTAMP_NS AS max_event_time ' +
    `FROM (${scopedRows(rows, view, scope, processAudiences)}) GROUP BY filename`
  );
}

/** An event-time range from the query_range_* headers, nanoseconds; either end may be open. */
export interface EventRange {
  readonly begin?: bigint;
  readonly end?: bigint;
}

/** Keeps rows whose event-time span meets the range, as micromegas's time filter does. */
function inEventRange(rows: string, view: ViewSet, range: EventRange | undefined): string {
  const conditions: string[] = [];
  if (range?.end !== undefined)
    conditions.push(`${quoteIdentifier(view.minTimeColumn)} <= make_timestamp_ns(${range.end})`);
  if (range?.begin !== undefined)
    conditions.push(`${quoteIdentifier(view.maxTimeColumn)} >= make_timestamp_ns(${range.begin})`);
  return conditions.length === 0 ? rows : `SELECT * FROM (${rows}) WHERE ${conditions.join(' AND ')}`;
}

function scopedRows(rows: string, view: ViewSet, scope: BuildScope, processAudiences?: SessionView): string {
  if (scope.kind === 'all') return rows;
  const owned =
    scope.kind === 'audiences'
      ? `audience IN (${scope.audiences.map(quoteLiteral).join(', ')})`
      : 'audience IS NOT NULL';
  if (view.audienceColumn === 'audience')
    return `SELECT * FROM (${rows}) WHERE ${scope.kind === 'audiences' ? owned : 'audience IS NULL'}`;
  const owners = processAudiences
    ? `SELECT process_id FROM (${filesRelation(processAudiences.view.columns, processAudiences.files)}) WHERE ${owned}`
    : 'SELECT NULL::VARCHAR AS process_id LIMIT 0';
  // A row of no known audience: its process (NULL too) owned by no audience's processes row.
  return scope.kind === 'audiences'
    ? `SELECT * FROM (${rows}) WHERE process_id IN (${owners})`
    : `SELECT * FROM (${rows}) WHERE NOT coalesce(process_id IN (${owners}), false)`;
}
