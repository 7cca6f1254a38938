// The minmax, set, bloom_filter and text indexes: per partition file of a view set, the column's min and max
// (and, for set, its distinct values when there are at most 1000; for bloom_filter, a bloom filter of
// DuckDB's hash() of its distinct values; for text, the trigrams of its lowercased tokens: see text-index.ts), kept in Postgres beside the partitions, with
// what the index reads and its DuckDB type (resource_indexes) so queries can skip partitions by them.
// Computed by the server's DuckDB, which opens the lake wherever it is (a folder or S3). Backfilled
// newest partition first; a file already done is skipped, so an interrupted install resumes.
import { queueForDeletion, type ObjectStore, type Partition } from '../lakehouse/index.js';
import type { MetadataQueries } from '../metadata/index.js';
import { bitmapLiteral, quoteIdentifier, quoteLiteral, type ViewSet } from '../views/index.js';
import { backfillEach, partitionFiles, partitionsToDo, pastRetention, type FilePartition } from './backfill.js';
import { forgetAbsent, factsOf } from './file-facts.js';
import { forgetRecent, recently } from './recent.js';
import type { InstallContext, ResourceInstaller } from './installers.js';
import { bloomFalsePositiveRate, writeParquetBloomFilters } from './parquet-bloom.js';
import { projectPartition } from './projections.js';
import { mergedReadProblem, notViewSetProblem } from './stored-columns.js';
import { ensureLedger, entryHash, type LedgerRow } from './ledger.js';
import {
  asciiBitmapBytes,
  decodePostings,
  encodePostings,
  postedShare,
  postedTokens,
  postingsShare,
  postingsVersion,
  tokensOf,
  trigramBitmap,
} from './text-index.js';
import type { ValidEntry } from './validation.js';

/** A set index keeps the distinct values of a partition when there are at most this many. */
export const setIndexLimit = 1000;

/** The index kinds whose statistics are kept per partition. */
export type StatisticsKind = 'minmax' | 'set' | 'bloom_filter' | 'text';

/** The most bits a partition's bloom filter holds (1 MiB): past about 875,000 distinct values its rate rises. */
const bloomMaxBits = 1 << 23;

/**
 * A partition's bloom filter of the values' DuckDB hashes, sized by the standard formulas for
 * bloomFalsePositiveRate: m = -n ln p / (ln 2)^2 bits (at least 64), k = round(m/n ln 2) hashes (1 to 16),
 * value h setting bits (h1 + i h2) mod m for i < k, where h1 and h2 are h's low and high 32 bits.
 * Written as version 2: byte 0 is 2, byte 1 is k, the bits follow; the length is never a power of two, which
 * tells it from the first version (bits alone, a power of two of them, k = 2, about 3 % false positives).
 */
function bloomFilter(hashes: readonly bigint[]): Buffer {
  const n = Math.max(hashes.length, 1);
  const wanted = Math.ceil((-n * Math.log(bloomFalsePositiveRate)) / Math.LN2 ** 2);
  let bytes = Math.ceil(Math.min(Math.max(wanted, 64), bloomMaxBits) / 8);
  if (isPowerOfTwo(bytes + 2)) bytes += 1;
  const k = Math.min(16, Math.max(1, Math.round(((bytes * 8) / n) * Math.LN2)));
  const filter = Buffer.alloc(2 + bytes);
  filter[0] = 2;
  filter[1] = k;
  const set = (bit: number): boolean => {
    filter[2 + (bit >> 3)] |= 1 << (bit & 7);
    return true;
  };
  for (const h of hashes) everyBit(h, k, bytes * 8, set);
  return filter;
}

const isPowerOfTwo = (n: number): boolean => (n & (n - 1)) === 0;

/**
 * Whether `each` holds for every bit value h sets in a version 2 filter of m bits with k hashes (see
 * bloomFilter), stopping at the first it does not: (h1 + i h2) mod m, stepped without allocating (a filter of
 * a million values is made in 1.5 s so, against 4-8 s with an array of bits per value and 1.5-2.9 s for the
 * first version's, at load 25). h is a DuckDB hash (UBIGINT): both halves are below 2^32.
 */
function everyBit(h: bigint, k: number, m: number, each: (bit: number) => boolean): boolean {
  const step = Number(h >> 32n) % m;
  let bit = Number(h & 0xffffffffn) % m;
  for (let i = 0; i < k; i++) {
    if (!each(bit)) return false;
    bit += step;
    if (bit >= m) bit -= m;
  }
  return true;
}

/** Whether a value of DuckDB hash h may be among those a bloom filter was made of (false: it is not). */
export function mayHold(filter: Buffer, h: bigint): boolean {
  const has = (offset: number) => (bit: number) => (filter[offset + (bit >> 3)] & (1 << (bit & 7))) !== 0;
  if (isPowerOfTwo(filter.length)) {
    // The first version: bits h mod m and (h >> 32) mod m of m = 2^j bits.
    const bits = BigInt(filter.length * 8);
    return [h & (bits - 1n), (h >> 32n) & (bits - 1n)].every((bit) => has(0)(Number(bit)));
  }
  return everyBit(h, filter[1], (filter.length - 2) * 8, has(2));
}

/** The SQL expression an index reads: a column entry's expression, or the physical column. */
const indexedExpression = (entry: ValidEntry & { kind: 'index' }): string =>
  entry.indexedExpression === undefined ? `"${entry.column.replace(/"/g, '""')}"` : `(${entry.indexedExpression})`;

const dayOf = (nanos: bigint): string => new Date(Number(nanos / 1_000_000n)).toISOString().slice(0, 10);

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/** What else a file's statistics must be to count as done, by index kind (see install). */
const extraDone: Partial<Record<string, string>> = {
  text: ' AND copy_path IS NOT NULL',
  bloom_filter: ' AND (bloom IS NULL OR octet_length(bloom) & (octet_length(bloom) - 1) <> 0)',
};

/** The files an index's install reads (newest first), those not done, how many were done and how many are past retention. */
export interface FilesToIndex {
  readonly files: readonly FileToIndex[];
  readonly todo: readonly FileToIndex[];
  readonly done: number;
  readonly past: number;
}

/** A file an index's statistics are made of: its object key and the insert times its backfill progress records. */
export type FileToIndex = Pick<FilePartition, 'filePath' | 'beginInsertTime' | 'endInsertTime'>;

/**
 * The statistics rows of an index ($1) that count as done: a file indexed before its audiences' statistics were
 * kept, (text, with `copies`) before its copies were, or (bloom_filter) with a filter of the first version (a power
 * of two of bytes, about 3 % false positives), is indexed again (its own row is kept).
 */
export const doneStatisticsSql = (kind: string, copies: Copies): string =>
  `SELECT file_path FROM resource_partition_stats WHERE index_hash = $1 AND audiences IS NOT NULL${kind === 'text' && copies === 'none' ? '' : (extraDone[kind] ?? '')}`;

/**
 * Whether a text index writes copies of the rows its postings list ('posted'), which a search of a view set's
 * partition reads in place of the file's scattered rows (see writeTextCopy), or none: a series table's files are read
 * whole or skipped (sql/series-text-reads.ts), so copies of them would be read by nothing, and took half an install's
 * time.
 */
export type Copies = 'posted' | 'none';

const install = (entry: ValidEntry, ctx: InstallContext): AsyncGenerator<string> =>
  installStatistics(entry, ctx, (doneSql, hash) => partitionsToDo(ctx, entry.physical, doneSql, hash));

/**
 * Installs an index entry as per-file statistics of the files `toDo` lists (a view set's partitions, a series
 * table's data files: see series-text.ts), given the SQL of the files done (see doneStatisticsSql).
 */
export async function* installStatistics(
  entry: ValidEntry,
  ctx: InstallContext,
  list: (doneSql: string, hash: string) => Promise<FilesToIndex>,
  copies: Copies = 'posted',
): AsyncGenerator<string> {
  if (entry.kind !== 'index') return;
  await ensureLedger(ctx.db);
  const hash = entryHash(entry);
  const toDo = () => list(doneStatisticsSql(entry.indexKind, copies), hash);
  const expression = indexedExpression(entry);
  // What the index reads and its type, recorded first, also on a set with no partition yet: queries use
  // each partition's statistics as they land, the daemon indexes the partitions that land from now on,
  // and a bloom_filter index's set is written with Parquet bloom filters from now on.
  const [newest] = (await toDo()).files;
  const valueType = newest ? await valueTypeOf(ctx, expression, newest.filePath) : null;
  await ctx.db.query(
    `INSERT INTO resource_indexes (index_hash, view_set_name, entry_key, kind, expression, value_type)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (index_hash) DO UPDATE SET value_type = EXCLUDED.value_type WHERE resource_indexes.value_type IS NULL`,
    [hash, entry.physical, entry.key, entry.indexKind, expression, valueType],
  );
  forgetRecent();
  // Listed after the index is recorded: a partition landing before is in the list, one landing after is the daemon's.
  const { files, todo, done, past } = await toDo();
  yield `backfill ${entry.indexKind} index ${entry.key} on ${entry.physical}: ${todo.length} of ${files.length} partition(s) to read (${done} done before), newest first`;
  yield* pastRetention(ctx, entry.key, past);
  const index = { hash, viewSet: entry.physical, kind: entry.indexKind as StatisticsKind, expression };
  yield* backfillEach(
    ctx,
    todo,
    (partition) => writeStatistics(ctx, index, partition, copies),
    (i, partition, left) =>
      `  ${entry.key}: ${i}/${todo.length} partition(s), reached ${dayOf(partition.beginInsertTime)}, about ${left} s left`,
  );
  if (entry.indexKind === 'bloom_filter') yield* writeParquetBloomFilters(entry, ctx);
  if (entry.indexKind === 'text') yield* reindexOldTextFiles(entry, index, ctx);
}

/**
 * Indexes again the files a text index indexed before words of other letters than [0-9a-z] were (6060fa4):
 * their bitmaps hold ASCII trigrams alone and their postings (version 1) tokens of [0-9a-z] alone, so a
 * search for a word such as Größe read every row of them. Their bitmaps, postings and copies are made anew
 * (the copies under new keys, the old ones kept for the statements planned by the old postings: see
 * writeStatistics), so that search skips the files lacking it and reads only its rows of those holding it.
 * Files whose bitmaps alone were made again (641ca06) have version 1 postings still.
 */
async function* reindexOldTextFiles(entry: ValidEntry, index: IndexShape, ctx: InstallContext): AsyncGenerator<string> {
  const { rows } = await ctx.db.query<{ file_path: string }>(
    `SELECT file_path FROM resource_partition_stats
      WHERE index_hash = $1 AND (get_byte(postings, 0) = 1 OR octet_length(bloom) = $2)`,
    [index.hash, asciiBitmapBytes],
  );
  const old = new Set(rows.map((r) => r.file_path));
  if (old.size === 0) return;
  const { files } = await partitionFiles(ctx, entry.physical);
  const todo = files.filter((f) => old.has(f.filePath));
  yield `text index ${entry.key} on ${entry.physical}: ${todo.length} of ${files.length} partition(s) indexed before words of any letters were: their bitmaps, postings and copies are made again, newest first`;
  yield* backfillEach(
    ctx,
    todo,
    (partition) => writeStatistics(ctx, index, partition),
    (i, partition, left) =>
      `  ${entry.key}: ${i}/${todo.length} partition(s) indexed again, reached ${dayOf(partition.beginInsertTime)}, about ${left} s left`,
  );
}

/**
 * DuckDB's type of what an index reads, over one of the set's partition files: the type its statistics
 * are cast back to (the file's, which the set's declared columns need not spell alike).
 */
async function valueTypeOf(
  ctx: { lakeRows(sql: string): Promise<unknown[][]>; readonly store: ObjectStore },
  expression: string,
  filePath: string,
): Promise<string> {
  const file = quoteLiteral(ctx.store.location(filePath));
  const [[type]] = await ctx.lakeRows(
    `SELECT column_type FROM (DESCRIBE SELECT ${expression} AS v FROM read_parquet(${file}))`,
  );
  return String(type);
}

/** What statistics are computed for. */
type IndexShape = Pick<InstalledIndex, 'hash' | 'viewSet' | 'kind' | 'expression'>;

/**
 * Reads one partition file's statistics under one index and records them: of all its rows, for admins, and of
 * each audience's rows, for readers (a statement of a reader decides by its audiences' statistics alone, so
 * what it skips and reads tells nothing of another audience's rows). A file never changes, so its statistics
 * are made again only when an older form of them is replaced (before audiences', copies' or non-ASCII tokens'
 * were kept, a bloom filter of the first version): its rows are then replaced in one statement that also queues the copies they named for deletion
 * after copiesKeptSeconds (a statement planned by their postings may still read them) and bumps the index's
 * statistics generation, so every server reads the new rows (see partitionStatistics). The copies are written
 * under keys of their postings' version, never over one a row names.
 */
async function writeStatistics(
  ctx: { readonly db: MetadataQueries; readonly store: ObjectStore; lakeRows(sql: string): Promise<unknown[][]> },
  index: IndexShape,
  partition: { readonly filePath: string; readonly beginInsertTime: bigint },
  copies: Copies = 'posted',
): Promise<void> {
  const { whole, audiences, own } = await fileStatistics(ctx, index, partition.filePath);
  // A text index's copies of the posted rows: of the file's, and of each audience's own (the file's, for one alone).
  const copyOf = (audience: string | null, stats: StatisticsRow) =>
    index.kind === 'text' && copies === 'posted'
      ? writeTextCopy(ctx, index, partition.filePath, audience, stats)
      : null;
  const wholeCopy = await copyOf(null, whole);
  const ownRows: Array<{ audience: string; stats: StatisticsRow; copy: string | null }> = [];
  for (const [audience, stats] of own)
    ownRows.push({ audience, stats, copy: stats === whole ? wholeCopy : await copyOf(audience, stats) });
  const column = <T>(pick: (row: (typeof ownRows)[number]) => T): T[] => ownRows.map(pick);
  const bumped = await ctx.db.query(
    `WITH old AS (
       SELECT copy_path FROM resource_partition_stats WHERE index_hash = $1 AND file_path = $3
       UNION SELECT copy_path FROM resource_audience_stats WHERE index_hash = $1 AND file_path = $3),
     own AS (
       INSERT INTO resource_audience_stats (index_hash, file_path, audience, min_value, max_value, distinct_values, bloom, postings, copy_path)
       SELECT $1, $3, a.audience, a.min_value, a.max_value, a.distinct_values::jsonb, a.bloom, a.postings, a.copy_path
         FROM unnest($12::text[], $13::text[], $14::text[], $15::text[], $16::bytea[], $17::bytea[], $18::text[])
           AS a(audience, min_value, max_value, distinct_values, bloom, postings, copy_path)
       ON CONFLICT (index_hash, file_path, audience)
       DO UPDATE SET bloom = EXCLUDED.bloom, postings = EXCLUDED.postings, copy_path = EXCLUDED.copy_path
       WHERE resource_audience_stats.copy_path IS DISTINCT FROM EXCLUDED.copy_path
          OR resource_audience_stats.bloom IS DISTINCT FROM EXCLUDED.bloom),
     whole AS (
       INSERT INTO resource_partition_stats (index_hash, view_set_name, file_path, begin_insert_time, min_value, max_value, distinct_values, bloom, postings, audiences, copy_path)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (index_hash, file_path)
       DO UPDATE SET audiences = EXCLUDED.audiences, bloom = EXCLUDED.bloom, postings = EXCLUDED.postings, copy_path = EXCLUDED.copy_path
       WHERE resource_partition_stats.audiences IS NULL OR resource_partition_stats.copy_path IS DISTINCT FROM EXCLUDED.copy_path
          OR resource_partition_stats.bloom IS DISTINCT FROM EXCLUDED.bloom),
     -- As the lakehouse's queueForDeletion does, in this statement: a copy no row names is never left unqueued.
     queued AS (
       INSERT INTO temporary_files (file_path, file_size, expiration)
       SELECT copy_path, 0, now() + make_interval(secs => $19) FROM old
        WHERE copy_path IS NOT NULL AND copy_path <> ALL (array_remove(array_append($18::text[], $11::text), NULL)))
     UPDATE resource_indexes SET statistics_generation = statistics_generation + 1
      WHERE index_hash = $1 AND EXISTS (SELECT 1 FROM old)`,
    [
      index.hash,
      index.viewSet,
      partition.filePath,
      partition.beginInsertTime.toString(),
      whole.min,
      whole.max,
      whole.distinct,
      whole.bloom,
      whole.postings,
      audiences,
      wholeCopy,
      column((r) => r.audience),
      column((r) => r.stats.min),
      column((r) => r.stats.max),
      column((r) => r.stats.distinct),
      column((r) => r.stats.bloom),
      column((r) => r.stats.postings),
      column((r) => r.copy),
      copiesKeptSeconds,
    ],
  );
  forgetAbsent();
  if ((bumped.rowCount ?? 0) > 0) forgetRecent();
}

/** A file's statistics under one index: of all its rows, and of each audience's (see writeStatistics). */
async function fileStatistics(
  ctx: { readonly db: MetadataQueries; readonly store: ObjectStore; lakeRows(sql: string): Promise<unknown[][]> },
  index: IndexShape,
  filePath: string,
): Promise<{ whole: StatisticsRow; audiences: string[]; own: Map<string, StatisticsRow> }> {
  const file = quoteLiteral(ctx.store.location(filePath));
  const source = `read_parquet(${file}, file_row_number = true)`;
  const statisticsOf = (grouping: Grouping, fileRows?: number) =>
    index.kind === 'text'
      ? textStatistics(ctx, index.expression, grouping, fileRows)
      : valueStatistics(ctx, index, grouping);
  const [whole] = (await statisticsOf({ source, group: null })).values();
  const { audiences, alone } = await audiencesOf(ctx, file);
  // One more pass for every audience's statistics at once; a file of one audience's rows alone (a tenant's,
  // or public) has that audience's already.
  const own =
    audiences.length === 0 || alone
      ? new Map(audiences.map((a) => [a, whole]))
      : await statisticsOf(
          { source: `(SELECT * FROM ${source} WHERE audience IS NOT NULL)`, group: 'audience' },
          whole.rows,
        );
  return { whole, audiences, own };
}

/**
 * How long a text index's copies stay once no row names them (the index dropped, or its file indexed again): a
 * statement planned before may still read them (as a dropped projection's copies).
 */
const copiesKeptSeconds = 3600;

/** Rows per row group of a text index's copy: a rare word's rows are a row group or two of it. */
const copyRowGroup = 4096;

/**
 * Writes a text index's copy of the rows its postings list, of a file's rows or (`audience`) of one
 * audience's: the file's columns, each posted token's rows in turn in the postings' order (tokens sorted,
 * then rows), numbered in `__orr_position`, with their row in the file in `__orr_row`. A search then reads
 * its tokens' rows as a range of the copy (see copyRange), a row group or a few, where the file's rows are
 * scattered over every page; an audience's copy holds its rows alone, so what a reader's search reads of
 * it depends on no other audience's rows. Returns the copy's object key.
 */
async function writeTextCopy(
  ctx: { readonly store: ObjectStore; lakeRows(sql: string): Promise<unknown[][]> },
  index: IndexShape,
  filePath: string,
  audience: string | null,
  stats: StatisticsRow,
): Promise<string> {
  const postings = decodePostings(stats.postings!)!;
  const key = `text-index/${index.hash}/v${postingsVersion}/${audience === null ? 'all' : `audiences/${encodeURIComponent(audience)}`}/${filePath}`;
  const tokens = [...postings.tokens.keys()].map(quoteLiteral).join(', ');
  // Only the listed rows are tokenized again (a bitmap of them: the copy is the rows of their posted tokens).
  const listed = new Uint8Array(Math.ceil(postings.rows / 8));
  for (const list of postings.tokens.values()) for (const row of list) listed[row >> 3] |= 0x80 >> (row & 7);
  const rows = `read_parquet(${quoteLiteral(ctx.store.location(filePath))}, file_row_number = true)`;
  const kept = `get_bit(${bitmapLiteral(listed)}, file_row_number::INTEGER) = 1${audience === null ? '' : ` AND audience::VARCHAR = ${quoteLiteral(audience)}`}`;
  const [[written]] = await ctx.lakeRows(
    `COPY (
       WITH source AS (SELECT * FROM ${rows} WHERE ${kept}),
       chosen AS (SELECT unnest([${tokens}]::VARCHAR[]) AS t),
       posted AS (
         SELECT * FROM (SELECT DISTINCT file_row_number AS r, unnest(${tokensOf(index.expression)}) AS t FROM source)
          SEMI JOIN chosen USING (t))
       SELECT source.* EXCLUDE (file_row_number), posted.r AS __orr_row,
              row_number() OVER (ORDER BY posted.t, posted.r) - 1 AS __orr_position
         FROM posted JOIN source ON source.file_row_number = posted.r
        ORDER BY posted.t, posted.r)
     TO ${quoteLiteral(await ctx.store.writableLocation(key))} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE ${copyRowGroup})`,
  );
  const entries = [...postings.tokens.values()].reduce((n, list) => n + list.length, 0);
  if (Number(written) !== entries)
    throw new Error(`the text index's copy of ${filePath} holds ${String(written)} rows, its postings list ${entries}`);
  return key;
}

/**
 * The audiences whose rows a partition file holds (none for a file without an audience column: a set keyed
 * by process), and whether every row is of the one audience it holds.
 */
async function audiencesOf(
  ctx: { lakeRows(sql: string): Promise<unknown[][]> },
  file: string,
): Promise<{ audiences: string[]; alone: boolean }> {
  const [[hasAudience]] = await ctx.lakeRows(
    `SELECT count(*) FROM (DESCRIBE SELECT * FROM read_parquet(${file})) WHERE column_name = 'audience'`,
  );
  if (Number(hasAudience) === 0) return { audiences: [], alone: false };
  const [[list, owned, rows]] = await ctx.lakeRows(
    `SELECT list(DISTINCT audience::VARCHAR ORDER BY audience::VARCHAR), count(audience), count(*) FROM read_parquet(${file})`,
  );
  const audiences = listOf(list).map(String);
  return { audiences, alone: audiences.length === 1 && Number(owned) === Number(rows) };
}

/** What one partition file's statistics row holds (of all its rows, or of one audience's), and the rows it was read from. */
interface StatisticsRow {
  readonly rows: number;
  readonly min: string | null;
  readonly max: string | null;
  readonly distinct: string | null;
  readonly bloom: Buffer | null;
  readonly postings: Buffer | null;
}

/**
 * The rows statistics are computed of: `source` reads them with their file_row_number; `group`, the column
 * they are grouped by (statistics per value), or null for one group of them all ('').
 */
interface Grouping {
  readonly source: string;
  readonly group: string | null;
}

/**
 * A grouping's `g` column of the rows, and its key and GROUP BY clause over them: the group column as text,
 * or '' for one group of all the rows (even of none).
 */
const groupOf = ({ group }: Grouping) =>
  group === null
    ? { g: "'' AS g", key: "''", by: '' }
    : { g: `${quoteIdentifier(group)}::VARCHAR AS g`, key: 'g', by: 'GROUP BY g' };

/** A minmax, set or bloom_filter index's statistics of a file's rows, by group: min and max, distinct values (set), bloom filter. */
async function valueStatistics(
  ctx: { lakeRows(sql: string): Promise<unknown[][]> },
  index: IndexShape,
  grouping: Grouping,
): Promise<Map<string, StatisticsRow>> {
  const distinct =
    index.kind === 'set'
      ? `CASE WHEN count(DISTINCT v) <= ${setIndexLimit} THEN to_json(list(DISTINCT v::VARCHAR ORDER BY v::VARCHAR))::VARCHAR END`
      : 'NULL';
  const hashes = index.kind === 'bloom_filter' ? 'list(DISTINCT hash(v)) FILTER (WHERE v IS NOT NULL)' : 'NULL';
  const { g, key, by } = groupOf(grouping);
  const found = await ctx.lakeRows(
    `SELECT ${key}, count(*), min(v)::VARCHAR, max(v)::VARCHAR, ${distinct}, ${hashes}
       FROM (SELECT ${index.expression} AS v, ${g} FROM ${grouping.source}) ${by}`,
  );
  return new Map(
    found.map(([group, rows, min, max, distinctValues, valueHashes]) => {
      const bloom =
        index.kind === 'bloom_filter' ? bloomFilter(listOf(valueHashes).map((h) => BigInt(h as bigint))) : null;
      const stats = { rows: Number(rows), min: text(min), max: text(max), distinct: text(distinctValues), bloom };
      return [String(group), { ...stats, postings: null }];
    }),
  );
}

/**
 * A text index's statistics of a file's rows by group (no min and max: nothing compares them): the trigrams
 * of their distinct tokens, and postings (see text-index.ts): the most frequent tokens held by at most 1/8
 * of the group's rows each, at most 1024 of them, while their rows add up to at most half the group's, each
 * with its rows. `fileRows`: the file's rows, when a group is some of them.
 */
async function textStatistics(
  ctx: { lakeRows(sql: string): Promise<unknown[][]> },
  expression: string,
  grouping: Grouping,
  fileRows?: number,
): Promise<Map<string, StatisticsRow>> {
  const { g, key, by } = groupOf(grouping);
  const trigrams = `list(DISTINCT substring(t, i, 3))`;
  const found = await ctx.lakeRows(
    `WITH vals AS (SELECT ${expression} AS v, file_row_number AS r, ${g} FROM ${grouping.source}),
     tokens AS (SELECT DISTINCT g, r, unnest(${tokensOf('v')}) AS t FROM vals),
     total AS (SELECT ${key} AS g, count(*) AS n FROM vals ${by}),
     counted AS (SELECT g, t, count(*) AS c FROM tokens GROUP BY g, t),
     chosen AS (
       SELECT g, t FROM (
         SELECT g, t, n, sum(c) OVER (PARTITION BY g ORDER BY c DESC, t ROWS UNBOUNDED PRECEDING) AS running,
                row_number() OVER (PARTITION BY g ORDER BY c DESC, t) AS rank
           FROM counted JOIN total USING (g) WHERE c <= n // ${postedShare} AND length(t) <= 255)
        WHERE running <= n // ${postingsShare} AND rank <= ${postedTokens}),
     grams AS (
       SELECT c.g, c.t, unnest(range(1, length(c.t) - 1)) AS i, ch.t IS NOT NULL AS posted
         FROM counted c LEFT JOIN chosen ch ON ch.g = c.g AND ch.t = c.t),
     posted AS (
       SELECT g, list(t ORDER BY t) AS tokens, list(rs ORDER BY t) AS lists
         FROM (SELECT g, t, list(r ORDER BY r) AS rs FROM tokens SEMI JOIN chosen USING (g, t) GROUP BY g, t)
        GROUP BY g)
     SELECT total.g, n, a.grams, u.grams, posted.tokens, posted.lists FROM total
       LEFT JOIN (SELECT g, ${trigrams} AS grams FROM grams GROUP BY g) a ON a.g = total.g
       LEFT JOIN (SELECT g, ${trigrams} AS grams FROM grams WHERE NOT posted GROUP BY g) u ON u.g = total.g
       LEFT JOIN posted ON posted.g = total.g`,
  );
  return new Map(
    found.map(([group, rows, all, unposted, tokenList, rowLists]) => {
      const lists = listOf(rowLists);
      const tokens = new Map(listOf(tokenList).map((token, i) => [String(token), listOf(lists[i]).map(Number)]));
      const postings = encodePostings({
        rows: fileRows ?? Number(rows),
        unposted: trigramBitmap(listOf(unposted).map(String)),
        tokens,
      });
      const bloom = trigramBitmap(listOf(all).map(String));
      return [String(group), { rows: Number(rows), min: null, max: null, distinct: null, bloom, postings }];
    }),
  );
}

/** The items of a DuckDB LIST value (node-api's DuckDBListValue). */
const listOf = (value: unknown): unknown[] => (value as { items?: unknown[] } | null)?.items ?? [];

/**
 * Keeps the indexes and projections of a view set up to date as its partitions land: the statistics of a
 * partition just registered under every index installed on its set, and its copy under every projection
 * (the daemon calls this after each commit).
 */
export async function indexPartition(
  ctx: { readonly db: MetadataQueries; readonly store: ObjectStore; lakeRows(sql: string): Promise<unknown[][]> },
  partition: Pick<Partition, 'viewSetName' | 'filePath' | 'beginInsertTime'>,
): Promise<void> {
  const { filePath } = partition;
  if (filePath === null) return;
  for (const index of await installedIndexes(ctx.db, [partition.viewSetName])) {
    await learnValueType(ctx, index, filePath);
    await writeStatistics(ctx, index, { filePath, beginInsertTime: partition.beginInsertTime });
  }
  await projectPartition(ctx, partition);
}

/** An index installed on an empty set (or table) learns its type from the first file that lands. */
async function learnValueType(
  ctx: { readonly db: MetadataQueries; readonly store: ObjectStore; lakeRows(sql: string): Promise<unknown[][]> },
  index: InstalledIndex,
  filePath: string,
): Promise<void> {
  if (index.valueType !== null) return;
  await ctx.db.query('UPDATE resource_indexes SET value_type = $2 WHERE index_hash = $1 AND value_type IS NULL', [
    index.hash,
    await valueTypeOf(ctx, index.expression, filePath),
  ]);
  forgetRecent();
}

/**
 * Keeps the indexes installed on a table whose files no daemon commit announces (a series table's data files, which
 * clients' INSERTs write) up to date: the statistics of each file `listFiles` lists (object keys) that an index has none of yet
 * (see doneStatisticsSql), of the indexes `readable` keeps (those whose expression the table's files can be read by),
 * without text copies (see Copies). Returns how many files' statistics were written. A file without them is read whole.
 */
export async function indexNewFiles(
  ctx: { readonly db: MetadataQueries; readonly store: ObjectStore; lakeRows(sql: string): Promise<unknown[][]> },
  table: string,
  listFiles: () => Promise<readonly FileToIndex[]>,
  readable: (index: InstalledIndex) => boolean,
): Promise<number> {
  let written = 0;
  const indexes = await installedIndexes(ctx.db, [table]);
  const files = indexes.length > 0 ? await listFiles() : [];
  const live = new Set(files.map((f) => f.filePath));
  for (const index of indexes) {
    // The statistics of files the table no longer has (merged, rewritten, its table dropped) go: a file not listed
    // is read by no statement of the table now, and a statement at an older snapshot reads a file without
    // statistics whole (as one written after the listing whose statistics a publication wrote meanwhile, indexed
    // again at the next run). Kept, they would grow with every file the table ever had.
    await forgetStatistics(ctx.db, index.hash, (path) => !live.has(path));
    if (!readable(index)) continue;
    const { rows } = await ctx.db.query<{ file_path: string }>(doneStatisticsSql(index.kind, 'none'), [index.hash]);
    const done = new Set(rows.map((r) => r.file_path));
    for (const file of files.filter((f) => !done.has(f.filePath))) {
      await learnValueType(ctx, index, file.filePath);
      await writeStatistics(ctx, index, file, 'none');
      written++;
    }
  }
  return written;
}

async function drop(row: LedgerRow, ctx: { readonly db: MetadataQueries }): Promise<string> {
  await ensureLedger(ctx.db);
  await ctx.db.query('DELETE FROM resource_indexes WHERE index_hash = $1', [row.hash]);
  forgetRecent();
  const { files, copies } = await forgetStatistics(ctx.db, row.hash, () => true);
  return `${files} partition statistics row(s) deleted${copies > 0 ? `, ${copies} text index copies queued for deletion in ${copiesKeptSeconds} s` : ''}`;
}

/**
 * Deletes index `hash`'s statistics of the files `forget` picks, of all their rows and of each audience's, and queues
 * their text index copies for deletion; answers how many files' rows and copies went.
 */
async function forgetStatistics(
  db: MetadataQueries,
  hash: string,
  forget: (filePath: string) => boolean,
): Promise<{ files: number; copies: number }> {
  const { rows } = await db.query<{ file_path: string; copy_path: string | null }>(
    `SELECT file_path, copy_path FROM resource_audience_stats WHERE index_hash = $1
     UNION SELECT file_path, copy_path FROM resource_partition_stats WHERE index_hash = $1`,
    [hash],
  );
  const gone = rows.filter((r) => forget(r.file_path));
  if (gone.length === 0) return { files: 0, copies: 0 };
  const paths = [...new Set(gone.map((r) => r.file_path))];
  // The copies are queued before their rows go (as forgetGoneFiles does): a run killed in between queues them
  // again, never leaves a copy nothing names.
  const copies = textCopies(gone);
  await queueForDeletion(db, copies, copiesKeptSeconds);
  const of = 'index_hash = $1 AND file_path = ANY($2::text[])';
  await db.query(`DELETE FROM resource_audience_stats WHERE ${of}`, [hash, paths]);
  const files = await db.query(`DELETE FROM resource_partition_stats WHERE ${of}`, [hash, paths]);
  return { files: files.rowCount ?? 0, copies: copies.length };
}

/** The text index copies statistics rows name, once each (a file of one audience's rows shares its copy). */
export const textCopies = (rows: ReadonlyArray<{ copy_path: string | null }>): string[] => [
  ...new Set(rows.flatMap((r) => (r.copy_path === null ? [] : [r.copy_path]))),
];

/**
 * Installs every index kind (minmax, set, bloom_filter and text) as per-partition statistics. With the server's
 * view sets (`viewOf`), a minmax, set or text index on a set whose read merges its partitions is planned as
 * omitted: only pruning reads those statistics, and it reads no such set. A bloom filter stays: its Parquet
 * bloom filters are in the files, where DuckDB may use them for a filter it pushes below the merge. Any index on a
 * table that is not a view set (a series table) is omitted too.
 */
export function partitionStatsInstaller(viewOf?: (name: string) => ViewSet | undefined): ResourceInstaller {
  return {
    unsupported(entry) {
      if (entry.kind !== 'index') return null;
      const view = viewOf?.(entry.physical);
      if (!view) return notViewSetProblem(entry.physical, viewOf, 'indexes');
      return entry.indexKind === 'bloom_filter'
        ? null
        : mergedReadProblem(view, `a ${entry.indexKind} index's statistics`);
    },
    install,
    drop,
  };
}

/** An installed index of a view set. */
export interface InstalledIndex {
  readonly hash: string;
  readonly viewSet: string;
  readonly entryKey: string;
  readonly kind: StatisticsKind;
  /** The SQL it reads over the view set's columns. */
  readonly expression: string;
  /** DuckDB's type of that expression: the statistics are its values as text; null until the set has a partition file. */
  readonly valueType: string | null;
  /** How many times files' statistics were made again: what a server read of them before is read again. */
  readonly generation: number;
}

/** One partition file's statistics under one index; values as DuckDB's text of them. */
export interface PartitionStatistics {
  readonly hash: string;
  readonly filePath: string;
  readonly min: string | null;
  readonly max: string | null;
  /** The distinct values (set indexes), or null when there were more than the limit. */
  readonly distinct: readonly string[] | null;
  /** The bloom filter of the values' hashes (bloom_filter indexes), the trigram bitmap (text indexes). */
  readonly bloom: Buffer | null;
  /** A text index's postings (see text-index.ts); null for files indexed before they were kept. */
  readonly postings: Buffer | null;
  /** A text index's copy of the rows its postings list (object key, see writeTextCopy); null: none kept. */
  readonly copy: string | null;
}

/** The indexes installed on a set, as read at most two seconds ago (see recently). */
export const recentIndexes = (db: MetadataQueries, viewSet: string): Promise<InstalledIndex[]> =>
  recently(db, `indexes:${viewSet}`, () => installedIndexes(db, [viewSet]));

/** The indexes installed on these view sets, whichever publication declared them. */
async function installedIndexes(db: MetadataQueries, viewSets: readonly string[]): Promise<InstalledIndex[]> {
  await ensureLedger(db);
  const { rows } = await db.query<
    Record<string, string> & { value_type: string | null; statistics_generation: number }
  >(
    `SELECT index_hash, view_set_name, entry_key, kind, expression, value_type, statistics_generation FROM resource_indexes
      WHERE view_set_name = ANY($1::text[]) ORDER BY entry_key, index_hash`,
    [viewSets],
  );
  return rows.map((r) => ({
    hash: r.index_hash,
    viewSet: r.view_set_name,
    entryKey: r.entry_key,
    kind: r.kind as StatisticsKind,
    expression: r.expression,
    valueType: r.value_type,
    generation: r.statistics_generation,
  }));
}

/** The statistics an index holds for these partition files (object keys), kept in memory (see factsOf); files without any are absent. */
export async function partitionStatistics(
  db: MetadataQueries,
  { hash, generation }: Pick<InstalledIndex, 'hash' | 'generation'>,
  files: readonly string[],
): Promise<PartitionStatistics[]> {
  const found = await factsOf(
    db,
    `stats:${hash}:${generation}`,
    files,
    (missing) => statisticsRows(db, hash, missing),
    sizeOf,
  );
  return files.flatMap((f) => found.get(f) ?? []);
}

/**
 * The statistics an index holds of the rows of these audiences in these partition files (object keys), by
 * file: one per audience the file holds rows of (none: the file holds none of their rows), kept in memory
 * (see factsOf); files indexed before audiences' statistics were kept are absent.
 */
export async function audienceStatistics(
  db: MetadataQueries,
  { hash, generation }: Pick<InstalledIndex, 'hash' | 'generation'>,
  files: readonly string[],
  audiences: readonly string[],
): Promise<Map<string, PartitionStatistics[]>> {
  const sorted = [...new Set(audiences)].sort();
  const load = (missing: string[]) => audienceRows(db, hash, missing, sorted);
  const size = (stats: PartitionStatistics[]) => stats.reduce((n, s) => n + sizeOf(s), 200);
  return factsOf(db, `audience-stats:${hash}:${generation}\u0000${JSON.stringify(sorted)}`, files, load, size);
}

async function audienceRows(
  db: MetadataQueries,
  hash: string,
  files: readonly string[],
  audiences: readonly string[],
): Promise<Map<string, PartitionStatistics[]>> {
  const { rows } = await db.query<StatisticsColumns & { audience: string | null }>(
    `SELECT s.file_path, a.audience, a.min_value, a.max_value, a.distinct_values, a.bloom, a.postings, a.copy_path
       FROM resource_partition_stats s LEFT JOIN resource_audience_stats a
         ON a.index_hash = s.index_hash AND a.file_path = s.file_path AND a.audience = ANY($3::text[])
      WHERE s.index_hash = $1 AND s.file_path = ANY($2::text[]) AND s.audiences IS NOT NULL`,
    [hash, files, audiences],
  );
  const found = new Map<string, PartitionStatistics[]>();
  for (const r of rows) {
    const stats = found.get(r.file_path) ?? [];
    found.set(r.file_path, stats);
    if (r.audience !== null) stats.push(statisticsOf(hash, r));
  }
  return found;
}

/** A statistics row's columns as Postgres returns them. */
interface StatisticsColumns {
  file_path: string;
  min_value: string | null;
  max_value: string | null;
  distinct_values: string[] | null;
  bloom: Buffer | null;
  postings: Buffer | null;
  copy_path: string | null;
}

const statisticsOf = (hash: string, r: StatisticsColumns): PartitionStatistics => ({
  hash,
  filePath: r.file_path,
  min: r.min_value,
  max: r.max_value,
  distinct: r.distinct_values,
  bloom: r.bloom,
  postings: r.postings,
  copy: r.copy_path,
});

const sizeOf = (s: PartitionStatistics): number =>
  (s.bloom?.length ?? 0) +
  (s.postings?.length ?? 0) +
  (s.min?.length ?? 0) +
  (s.max?.length ?? 0) +
  (s.distinct?.join('').length ?? 0) +
  (s.copy?.length ?? 0) * 2 +
  200;

async function statisticsRows(
  db: MetadataQueries,
  hash: string,
  files: readonly string[],
): Promise<Map<string, PartitionStatistics>> {
  const { rows } = await db.query<StatisticsColumns>(
    `SELECT file_path, min_value, max_value, distinct_values, bloom, postings, copy_path FROM resource_partition_stats
      WHERE index_hash = $1 AND file_path = ANY($2::text[])`,
    [hash, files],
  );
  return new Map(rows.map((r) => [r.file_path, statisticsOf(hash, r)]));
}
