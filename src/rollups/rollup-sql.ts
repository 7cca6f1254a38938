import { quoteIdentifier } from '../engine/index.js';
import { integerBucketSql } from '../views/index.js';
import { lakeCatalog, lakeTable, type TableScope } from '../tables/index.js';
import { intervalParts } from './calendar.js';
import { sourceAlias } from './select-list.js';

// The SQL Orrery runs for a rollup, built from its definition: identifiers quoted, values as
// typed literals, the aggregate statement as DuckDB deparsed it at create_rollup.

/** A rollup as create_rollup recorded it. */
export interface RollupDefinition {
  readonly name: string;
  /** The series table or rollup it aggregates. */
  readonly source: string;
  readonly sourceIsRollup: boolean;
  /** The series table at the bottom of the chain (the source itself for a rollup of a table). */
  readonly base: string;
  readonly baseTimeColumn: string;
  /** The source's time column: its own, or `bucket` for a rollup. */
  readonly timeColumn: string;
  /** Integer time (bucket_width) rather than timestamps (bucket). */
  readonly integer: boolean;
  /** The bucket: an interval as DuckDB writes it, or an integer width. */
  readonly grain: string;
  readonly selectList: string;
  readonly groupBy: string | null;
  /** The aggregate statement over `__rollup_source` (see select-list.ts). */
  readonly query: string;
  readonly columns: readonly string[];
  /** set_rollup_retention: an interval, or a count for integer time; null keeps every bucket. */
  readonly retention: string | null;
  /** The base table's columns when the rollup was created (sourceHash); null for rollups older than the hash. */
  readonly sourceHash: string | null;
  /**
   * A rollup backfilled after its creation (a resources file's rollup entry): the oldest bucket
   * materialized so far, older buckets being read from the source; null when every bucket is.
   */
  readonly coveredFrom: string | null;
  /** The base is a view set (log_entries, measures, spans, a set defined by DDL) rather than a series table. */
  readonly viewSetBase: boolean;
  /**
   * When it was created (Postgres's created_at), telling it from a rollup of its name dropped before and created
   * again (by another process: see Rollups.tailEntry); null while create_rollup makes it.
   */
  readonly createdAt: string | null;
}

/** The DuckLake schema holding every rollup's materialized table and state. */
export const rollupSchema = 'rollups';

export const quoteLiteral = (text: string): string => `'${text.replaceAll("'", "''")}'`;

export const materializedName = (name: string): string => `${name}_materialized`;
export const materializedTable = (name: string): string =>
  `${lakeCatalog}.${rollupSchema}.${quoteIdentifier(materializedName(name))}`;
/**
 * The spec's "indexed on bucket", as a DuckLake table can be: every file written to it (each refresh's insert, a
 * merge, a flush of inlined rows) is sorted by bucket, so its row groups hold neighbouring buckets and their
 * min-max of bucket, with the file's own, skip what a read's range of buckets misses.
 */
export const sortedByBucket = (table: string): string => `ALTER TABLE ${table} SET SORTED BY (bucket ASC)`;
export const stateTableName = (name: string): string => `${name}__state`;
/** One row per rollup: its watermark and the DuckLake snapshot of its source it was refreshed at. */
export const stateTable = (name: string): string =>
  `${lakeCatalog}.${rollupSchema}.${quoteIdentifier(stateTableName(name))}`;

/**
 * The buckets of each rollup of a series table whose raw rows the table's retention deleted, some
 * or all: those keep their stored values (Rollups.retain). Bucket as DuckDB's text of it.
 */
export const keptName = 'kept_buckets';
export const keptTable = `${lakeCatalog}.${rollupSchema}.${keptName}`;
/**
 * The buckets a refresh left pending for an audience whose rows failed its aggregate (a cast of a value that
 * tenant sent), with that audience and its error: the other audiences' rows are stored, and these buckets stay
 * pending (read from the source's rows, exactly) until a refresh aggregates them for every audience.
 */
export const heldName = 'held_buckets';
export const heldTable = `${lakeCatalog}.${rollupSchema}.${heldName}`;

/**
 * The buckets a series table's retention kept (keptTable) without an audience's rows, which failed the rollup's
 * aggregate: the raw rows went by the table's retention all the same, so the bucket holds no row of that audience.
 * With the audience (NULL: rows of none) and its error, told to admins and that audience's keys (snouttime.jobs).
 */
export const lostName = 'lost_buckets';
export const lostTable = `${lakeCatalog}.${rollupSchema}.${lostName}`;

/** A table as of one DuckLake snapshot. */
export const at = (table: string, snapshot: bigint): string => `${table} AT (VERSION => ${snapshot})`;

/**
 * The bucket of a time value: `time_bucket` in UTC with DuckDB's default origin (weeks start on Mondays); for integer
 * time, the multiple of bucket_width at or below it. The spec's `bucket(width, ts)` answers the same (views' macro).
 */
export function bucketSql(definition: Pick<RollupDefinition, 'integer' | 'grain'>, column: string): string {
  const c = quoteIdentifier(column);
  if (definition.integer) return integerBucketSql(String(BigInt(definition.grain)), c);
  return `time_bucket(INTERVAL ${quoteLiteral(definition.grain)}, CAST(${c} AS TIMESTAMP))`;
}

/** A bucket value (as DuckDB's text of it) as a typed literal. */
export function bucketLiteral(definition: Pick<RollupDefinition, 'integer'>, value: string): string {
  if (definition.integer) return String(BigInt(value));
  return `TIMESTAMP ${quoteLiteral(value)}`;
}

/** The next bucket after a bucket expression. */
export function nextBucket(definition: Pick<RollupDefinition, 'integer' | 'grain'>, sql: string): string {
  return definition.integer
    ? `(${sql} + ${BigInt(definition.grain)})`
    : `(${sql} + INTERVAL ${quoteLiteral(definition.grain)})`;
}

export function audienceFilter(scope: TableScope): string | null {
  if (scope.kind === 'all') return null;
  return `audience IN (${[...new Set([...scope.audiences, 'public'])].map(quoteLiteral).join(', ')})`;
}

/** The base series table's rows as of a snapshot, for a scope. */
export function baseRows(base: string, snapshot: bigint, scope: TableScope): string {
  const filter = audienceFilter(scope);
  return `SELECT * FROM ${at(lakeTable(base), snapshot)}${filter ? ` WHERE ${filter}` : ''}`;
}

/**
 * The rollup's aggregate over the rows of `source` (a SELECT) that pass `filter`; `buckets`: conditions
 * on its `bucket` that every row of it meets (the range of buckets `filter` reads), said again over the
 * aggregate so that a statement's window on the buckets meets them: DuckDB then drops a scan whose
 * buckets all lie outside the window (it relates a window on `bucket` to conditions on `bucket`, not to
 * `filter`'s on the rows' time), as for a pending bucket outside the days a dashboard reads.
 */
export function aggregateOver(
  definition: RollupDefinition,
  source: string,
  filter: string,
  buckets: readonly string[] = [],
): string {
  const aggregate = `SELECT * FROM (WITH ${sourceAlias} AS (SELECT * FROM (${source}) AS __rows WHERE ${filter}) ${definition.query}) AS __aggregate`;
  return buckets.length === 0 ? aggregate : `SELECT * FROM (${aggregate}) AS __bounded WHERE ${buckets.join(' AND ')}`;
}

/**
 * `bucket <op> <literal>` as a RowScan's condition on its buckets, said also as a statement compares
 * them: Orrery's timestamps are TIMESTAMP_NS (nanosecondTimestamps), so a window on a timestamp
 * bucket reaches the view as `CAST(bucket AS TIMESTAMP_NS) <op> ...`, which DuckDB relates only to
 * conditions on that same expression.
 */
export function bucketBound(definition: Pick<RollupDefinition, 'integer'>, op: string, literal: string): string[] {
  const plain = `bucket ${op} ${literal}`;
  return definition.integer ? [plain] : [plain, `CAST(bucket AS TIMESTAMP_NS) ${op} CAST(${literal} AS TIMESTAMP_NS)`];
}

/** The source's rows one scan reads (a filter) and the conditions on `bucket` its aggregate meets (see aggregateOver). */
export interface RowScan {
  readonly rows: string;
  readonly buckets: readonly string[];
}

/** Rows of the source in the given buckets (a list of bucket literals), with a range bound the scan can prune by. */
export function inBuckets(definition: RollupDefinition, literals: readonly string[]): string | null {
  if (literals.length === 0) return null;
  const column = quoteIdentifier(definition.timeColumn);
  const [first, last] = [literals[0], literals[literals.length - 1]];
  return `(${column} >= ${first} AND ${column} < ${nextBucket(definition, last)} AND ${bucketSql(definition, definition.timeColumn)} IN (${literals.join(', ')}))`;
}

/** A timestamp bucket's text (DuckDB's, UTC) in ms since the epoch. */
export const epochMs = (text: string): number => Date.parse(/[zZ]$/.test(text) ? text : `${text.replace(' ', 'T')}Z`);

/** Where a bucket (as DuckDB's text of it) lies on its rollup's time axis, to order and space buckets. */
export function position(definition: Pick<RollupDefinition, 'integer'>, bucket: string): number {
  return definition.integer ? Number(BigInt(bucket)) : epochMs(bucket);
}

/**
 * The most scans of its source a read or a refresh makes for the pending buckets (see pendingScans):
 * each scan of a DuckLake table costs its own catalog reads (5 Postgres statements: files, delete files,
 * inlined rows, schema version, statistics), so scattered buckets share a few wider ones.
 */
const maxPendingScans = 4;

/** A bucket's width on the axis of `position` (a month as 31 days: neighbouring months are never further apart). */
function width(definition: Pick<RollupDefinition, 'integer' | 'grain'>): number {
  if (definition.integer) return Number(BigInt(definition.grain));
  const parts = intervalParts(definition.grain);
  return parts ? parts.months * 31 * 86_400_000 + Number(parts.nanos / 1_000_000n) : 0;
}

/**
 * Scans of the source's rows of the pending buckets (DuckDB's texts, sorted), one each (see
 * aggregateOverEach): runs of neighbouring buckets, cut at the widest gaps into at most
 * maxPendingScans, each bounded by its own range. Buckets before `from` are left out.
 */
export function pendingScans(
  definition: RollupDefinition,
  buckets: readonly string[],
  from: string | null = null,
): RowScan[] {
  const at = (bucket: string): number => position(definition, bucket);
  const kept = from === null ? buckets : buckets.filter((b) => at(b) >= at(from));
  const step = width(definition);
  const cuts = kept
    .slice(1)
    .map((b, i) => ({ at: i + 1, gap: at(b) - at(kept[i]) }))
    .filter((g) => g.gap > step)
    .sort((a, b) => b.gap - a.gap)
    .slice(0, maxPendingScans - 1)
    .map((g) => g.at)
    .sort((a, b) => a - b);
  const runs: string[][] = [];
  let start = 0;
  for (const cut of [...cuts, kept.length]) {
    if (cut > start) runs.push(kept.slice(start, cut));
    start = cut;
  }
  return runs.map((run) => {
    const literals = run.map((b) => bucketLiteral(definition, b));
    return {
      rows: inBuckets(definition, literals)!,
      buckets: [
        ...bucketBound(definition, '>=', literals[0]),
        ...bucketBound(definition, '<=', literals[literals.length - 1]),
      ],
    };
  });
}

/**
 * The rollup's aggregate over the source's rows of each scan, one scan each, UNION ALL.
 * DuckDB pushes a range into a DuckLake scan (files and row groups outside it are skipped) but not an
 * OR of ranges: the tail after the watermark OR one pending bucket scanned every row of the source.
 * The scans must not share a bucket (each bucket is aggregated in one scan).
 */
export function aggregateOverEach(definition: RollupDefinition, source: string, scans: readonly RowScan[]): string {
  return scans.map((scan) => aggregateOver(definition, source, scan.rows, scan.buckets)).join('\nUNION ALL ');
}
