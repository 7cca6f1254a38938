import {
  isAudienceRowsError,
  isDataError,
  isFileReadFailure,
  quoteIdentifier,
  withMacros,
  type DuckDBEngine,
  type EngineSession,
} from '../engine/index.js';
import { rollupInvalidationsChannel, type MetadataQueries, type MetadataStore } from '../metadata/index.js';
import type { PartitionChange } from '../lakehouse/index.js';
import {
  flushTable,
  inlinedTables,
  lakeCatalog,
  lakeMetadataSchema,
  lakeTable,
  lakeVersionSql,
  tableColumnsSelect,
  tableRows,
  type FlushOutcome,
  type SeriesTable,
  type SeriesTables,
  type TableScope,
} from '../tables/index.js';
import { sessionRelation, type ViewSet } from '../views/index.js';
import { rollupErrors } from './errors.js';
import {
  aggregateOver,
  aggregateOverEach,
  bucketBound,
  at,
  audienceFilter,
  baseRows,
  bucketLiteral,
  bucketSql,
  epochMs,
  inBuckets,
  position,
  keptName,
  keptTable,
  heldName,
  heldTable,
  lostTable,
  materializedName,
  materializedTable,
  sortedByBucket,
  pendingScans,
  type RowScan,
  quoteLiteral,
  rollupSchema,
  stateTable,
  stateTableName,
  type RollupDefinition,
} from './rollup-sql.js';
import { rollupQuery } from './select-list.js';
import { jobsUpdateQuery, nextRunSql, recordRefresh } from './job-updates.js';
import { createHash } from 'node:crypto';
import { intervalParts, timestampNanos } from './calendar.js';
import {
  clockFree,
  clockInstant,
  clockMoved,
  literalInstantText,
  movesWithClock,
  nanosText,
  shifted,
  stabilityOffsetsMs,
  stableUntil,
  withClock,
  type EvaluatedConstants,
} from './constant-trends.js';
import { rewriteOntoRollups, type Provenance, type RollupTarget } from './query-rewrite.js';
import { storedColumns, type StoredColumns } from './stored-columns.js';
import { mismatchesSql, type RollupValidation } from './validation.js';
import { baseTables, copy, type Node } from './tree.js';
import { fileRows, fileRowsSince, filesSql, inlinedRows, live, type FileRows, type ListedFile } from './table-files.js';
import { AudienceRows } from './audience-rows.js';
import type { BucketConditions } from './bucket-windows.js';
import { LakeChanges } from './lake-changes.js';
import { clockBoundText, followsClock } from './clock-bounds.js';
import {
  databaseOf,
  dropTailRowSql,
  dropTailSql,
  keepTailRowSql,
  keepTailSql,
  keptTailDropMs,
  keptTailRowId,
  keptTailTable,
  maxKeptBytes,
  maxKeptRows,
  mergedTail,
  rebaseFiles,
  ringRows,
  rowPartials,
  tailMerge,
  tailReadsByRing,
  tailReadsSql,
  tailRingSql,
  tailRows,
  type TailMerge,
  type TailRow,
} from './tail-values.js';
import { KeptBudget } from './kept-budget.js';
import { keptColumnsSql, keptRowBytes, keptSizeSql } from './kept-size.js';
import {
  filesBeforeExpiry,
  forgetInvalidations,
  invalidationsAfter,
  invalidationsSchemaSql,
  readViewSet,
  recordInvalidations,
  type ViewSetRead,
  type ViewSetSources,
} from './view-set-sources.js';

// Rollups: an aggregate of a series table (or of another rollup) per time bucket, kept in a
// DuckLake table and read through a view that is never stale.
//
// Invalidations come from DuckLake's own change feed rather than from triggers: every write to
// a DuckLake table (INSERT, UPDATE, DELETE, TRUNCATE, retention; from any process) is a snapshot,
// and `ducklake_table_changes(table, from, to)` gives the rows it inserted, deleted and updated
// (old and new values). A rollup's state (watermark, and the source snapshot it was refreshed
// at) is a DuckLake table committed with its materialized rows, so one snapshot id pins all of
// it: the pending buckets of a rollup at snapshot S are exactly the buckets of the rows that
// changed between its refresh snapshot and S, bucket by bucket, and a read at S combines the
// materialized rows, the state and the source as of that same S. Rollups of view sets follow their
// partitions instead (view-set-sources.ts).

export interface RollupArguments {
  readonly name: string;
  readonly source: string;
  readonly bucket: string | null;
  readonly selectList: string | null;
  readonly groupBy: string | null;
  readonly bucketWidth: string | null;
}

interface RollupState {
  /** The start of the bucket still filling at the last refresh (DuckDB's text of it); null before the first. */
  readonly watermark: string | null;
  /** The base's DuckLake snapshot it was refreshed at; for a view set, the last invalidation it consumed. */
  readonly sourceSnapshot: bigint | null;
  readonly refreshedAt: string | null;
}

/** What list_rollups() answers per rollup. */
export interface RollupListing {
  readonly name: string;
  readonly source: string;
  readonly grain: string;
  readonly watermark: string | null;
  readonly pendingBuckets: number;
  readonly lastRefresh: string | null;
  readonly retention: string | null;
  readonly materializedRows: number;
  readonly integer: boolean;
}

/** A refresh job as the jobs table shows it. */
export interface RollupJob {
  readonly kind: string;
  readonly target: string;
  readonly schedule: string;
  readonly lastRun: Date | null;
  readonly nextRun: Date | null;
  readonly lastStatus: string | null;
  readonly lastError: string | null;
  /**
   * The last refresh's error of each audience whose rows failed it, each on its own rows: their buckets held, the
   * others' stored (last_status 'partial', every audience's failing alike); or, beside a 'failed' refresh (the
   * system's fault), those found before it failed.
   */
  readonly audienceErrors: readonly AudienceError[] | null;
  /**
   * What the base table's retention kept without an audience's rows (see lostTable) or postponed (see heldTable), by
   * audience, in bucket order.
   */
  readonly lostBuckets: readonly LostBuckets[];
}

/**
 * The error of an audience's rows, or (null) of the rows of no audience, which admins alone read: apart from an
 * audience '' (a row may have one, which no key has either), so that neither record hides nor passes for the other.
 */
export interface AudienceError {
  readonly audience: string | null;
  readonly error: string;
}

/**
 * A job's audience_errors as stored: a list of AudienceError; before, an object by audience, the rows of no audience
 * and an audience '' both under '' (read as the rows of no audience, the more common).
 */
function audienceErrorsOf(stored: AudienceError[] | Record<string, string> | null): AudienceError[] | null {
  if (stored === null || Array.isArray(stored)) return stored;
  return Object.entries(stored).map(([audience, error]) => ({ audience: audience === '' ? null : audience, error }));
}

/** The buckets of a rollup a series table's retention kept without an audience's rows. */
export interface LostBuckets {
  /** The series table whose retention kept them. */
  readonly table: string;
  /** Null: the rows of no audience. */
  readonly audience: string | null;
  readonly buckets: readonly string[];
  /** The error of the first bucket's. */
  readonly error: string;
  /** Postponed: the audience's rows are kept for a later run to store (see heldTable), not lost. */
  readonly postponed: boolean;
}

/** A stable name of a rollup (a resources file's rollup entry's view), read as `SELECT <select list> FROM <target>`. */
export interface RollupAlias {
  readonly name: string;
  readonly target: string;
  readonly selectList: string;
}

/** Every rollup and every stable name, as read at once. */
export interface RollupCatalog {
  readonly definitions: ReadonlyMap<string, RollupDefinition>;
  readonly aliases: ReadonlyMap<string, RollupAlias>;
}

/** Where a statement read the rollups (catalog, DuckLake snapshot, series tables), for its read setup to use again. */
export interface RollupReadPoint {
  readonly snapshot: bigint;
  readonly catalog: RollupCatalog;
  readonly tables: ReadonlyMap<string, SeriesTable>;
  /**
   * In a client's transaction (`snapshot` is then its DuckLake snapshot): the series tables it has written, whose
   * rows as it sees them are in no stored row, change feed or file listing of the catalog.
   */
  readonly written?: ReadonlySet<string>;
  /**
   * In a client's transaction: the rollups made or dropped since its snapshot, which it cannot read (the one has
   * no tables there, the other no definition now): see changedInTransaction.
   */
  readonly changed?: ReadonlyMap<string, 'created' | 'dropped'>;
  /** The buckets each rewritten level reads of each rollup: [from, to), to null when open. */
  readonly windows?: ReadonlyMap<string, ReadonlyArray<{ readonly from: string; readonly to: string | null }>>;
  /** The tables whose raw edges rewritten levels read, each with the time they are at or after (see edgesOf). */
  readonly edges?: ReadonlyMap<string, string | null>;
}

/** The temporary view of a series table's rows its rollups' raw edges read (see Rollups.edgeRows); internal (`__`). */
const edgesRelation = (table: string): string => `__orrery_edges_${table}`;

/** The buckets each level of a provenance reads of the rollup it reads. */
function windowsOf(provenance: Provenance): Map<string, Array<{ from: string; to: string | null }>> {
  const windows = new Map<string, Array<{ from: string; to: string | null }>>();
  for (const level of provenance.resources) {
    if (!level.rollup) continue;
    const list = windows.get(level.rollup.name) ?? [];
    list.push(level.rollup.buckets ?? level.rollup.window);
    windows.set(level.rollup.name, list);
  }
  return windows;
}

/**
 * The tables (series tables, view sets) whose raw edges the levels of a provenance read, each with the start of the
 * UTC hour of its earliest window's start (DuckDB's text; null: unknown, every row), which no row of the edges is
 * before. The hour, not the instant: the listing of the edges' files (Rollups.edgeRows) is kept per start, and then
 * serves every statement of a window that moves with the clock (`now() - INTERVAL 24 HOUR`) within the hour.
 */
function edgesOf(provenance: Provenance): Map<string, string | null> {
  const edges = new Map<string, string | null>();
  for (const level of provenance.resources) {
    if (!level.rollup?.buckets) continue;
    const hour = /^(\d{4}-\d\d-\d\d)T(\d\d):/.exec(level.rollup.window.from);
    const from = hour ? `${hour[1]} ${hour[2]}:00:00` : null;
    const before = edges.get(level.table);
    edges.set(
      level.table,
      before === undefined ? from : before === null || from === null ? null : before < from ? before : from,
    );
  }
  return edges;
}

/** The UTC hour of an instant (ns since the epoch) as DuckDB's text, as edgesOf gives a raw edge's start; null off years 0000-9999. */
function hourOf(nanos: bigint): string | null {
  const date = new Date(Number(nanos / 1_000_000n));
  const iso = Number.isNaN(date.getTime()) ? '' : date.toISOString();
  return /^\d{4}-/.test(iso) ? `${iso.slice(0, 10)} ${iso.slice(11, 13)}:00:00` : null;
}

/** A timestamp (DuckDB's text or RFC 3339) in ms since the epoch. */
/** A timestamp as DuckDB casts one to text, years 0000-9999: its text sorts as its time. */
const plainTimestamp = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?$/;
/**
 * Whether a bucket is before a watermark, worked out here when every text given compares as its value (integers; DuckDB's
 * text of a timestamp, zero-padded as both come, sorts as its time): one DuckDB query less per read. Null: DuckDB must.
 */
function beforeHere(
  definition: Pick<RollupDefinition, 'integer'>,
  watermark: string,
  buckets: readonly string[],
): ((bucket: string) => boolean) | null {
  if (definition.integer) return (bucket) => BigInt(bucket) < BigInt(watermark);
  return [watermark, ...buckets].every((b) => plainTimestamp.test(b)) ? (bucket) => bucket < watermark : null;
}

/** One day of a backfill: its buckets [from, to), and how many days are left; null days when nothing was left. */
export interface BackfillStep {
  readonly from: string | null;
  readonly to: string | null;
  readonly daysLeft: number;
}

/** What a refresh did. */
export interface RefreshOutcome {
  readonly ranges: number;
  readonly pendingBuckets: number;
  readonly watermark: string | null;
  /** Audiences whose rows failed the aggregate: their buckets are held pending (see heldTable), the others stored. */
  readonly failedAudiences: ReadonlyArray<{ readonly audience: string | null; readonly error: string }>;
}

/**
 * What a rollup is read at (its view, its pending buckets): the lake's snapshot, the rollups and the series
 * tables as of it, and the statement's read context (what it has built and read already).
 */
interface ReadAt {
  readonly snapshot: bigint;
  readonly definitions: ReadonlyMap<string, RollupDefinition>;
  readonly tables: ReadonlyMap<string, SeriesTable>;
  readonly context: ReadContext;
}

/** Buckets (DuckDB's text) in their order: integers by value, timestamps (zero-padded) as text. */
function inBucketOrder(definition: Pick<RollupDefinition, 'integer'>, buckets: readonly string[]): string[] {
  return definition.integer
    ? buckets
        .map(BigInt)
        .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
        .map(String)
    : [...buckets].sort();
}

/**
 * How long retention postpones an audience's expired rows that run out of memory in a rollup's aggregate (see
 * Rollups.keepBuckets): a week, to outlast a squeeze and let an admin, told in snouttime.jobs, give the memory; the
 * first run after it records the buckets lost and deletes the rows.
 */
const postponedDays = 7;

/** Every row of a series-table rollup's base table. */
const baseRowsOf = (definition: RollupDefinition): string => `SELECT * FROM ${lakeTable(definition.base)}`;

/** An audience as an SQL value: null, the rows of no audience, is NULL. */
const audienceValue = (audience: string | null): string => (audience === null ? 'NULL' : quoteLiteral(audience));

/** The condition that a row is of an audience (of none, for null). */
const ofAudience = (audience: string | null): string => `audience IS NOT DISTINCT FROM ${audienceValue(audience)}`;

/** A read's pending buckets: see Rollups.pendingParts. */
interface PendingParts {
  readonly changed: readonly string[];
  readonly held: ReadonlyMap<string, ReadonlyArray<string | null>>;
}

/**
 * How a read of a rollup reads its pending buckets: `stored`, the conditions its stored rows meet (of no bucket the
 * source's changes touched; of no audience a bucket is held for); `scans`, its scans of the source's rows (every row
 * of each changed bucket, the held audiences' rows of each held bucket), of the buckets `read` keeps (a statement's
 * conditions leave the others out) from `from` on (the range backfilled; those before it are scanned with it).
 */
function pendingReads(
  definition: RollupDefinition,
  { changed, held }: PendingParts,
  read: (bucket: string) => boolean,
  from: string | null,
  /** The buckets before `from` read stored (retention kept them), not in its scan: a held audience's rows scanned here. */
  storedBefore: readonly string[] = [],
): { readonly stored: string[]; readonly scans: RowScan[] } {
  const literal = (bucket: string): string => bucketLiteral(definition, bucket);
  // Buckets held for the same audiences share their condition and their scans.
  const byAudiences = new Map<string, { readonly rows: string; buckets: string[] }>();
  for (const [bucket, audiences] of held) {
    const rows = [...new Set(audiences)].sort().map(ofAudience).join(' OR ');
    const group = byAudiences.get(rows) ?? { rows, buckets: [] };
    group.buckets.push(bucket);
    byAudiences.set(rows, group);
  }
  const groups = [...byAudiences.values()].map((g) => ({ ...g, buckets: inBucketOrder(definition, g.buckets) }));
  const heldRows = groups.map((g) => `(bucket IN (${g.buckets.map(literal).join(', ')}) AND (${g.rows}))`);
  return {
    stored: [
      ...(changed.length > 0 ? [`bucket NOT IN (${changed.map(literal).join(', ')})`] : []),
      ...(heldRows.length > 0 ? [`NOT (${heldRows.join(' OR ')})`] : []),
    ],
    scans: [
      ...pendingScans(definition, changed.filter(read), from),
      ...groups.flatMap((g) =>
        [
          ...pendingScans(definition, g.buckets.filter(read), from),
          ...pendingScans(
            definition,
            g.buckets.filter((b) => read(b) && storedBefore.includes(b)),
          ),
        ].map((scan) => ({
          ...scan,
          rows: `(${scan.rows} AND (${g.rows}))`,
        })),
      ),
    ],
  };
}

/**
 * A range of a rollup's buckets to store again (`deleted`, its stored rows; `rows`, the source's rows aggregated in
 * their place) less the buckets retention kept as of `snapshot`: those hold values their raw rows no longer have, so
 * they stay as stored.
 */
function leavingKept(
  definition: RollupDefinition,
  snapshot: bigint,
  range: { readonly deleted: string; readonly rows: string },
): { readonly deleted: string; readonly rows: string } {
  const notKept = (bucket: string): string =>
    `CAST(${bucket} AS VARCHAR) NOT IN (SELECT bucket FROM ${at(keptTable, snapshot)} WHERE rollup = ${quoteLiteral(definition.name)})`;
  return {
    deleted: `(${range.deleted} AND ${notKept('bucket')})`,
    rows: `(${range.rows} AND ${notKept(bucketSql(definition, definition.timeColumn))})`,
  };
}

/** A range of a rollup's buckets to store again (see leavingKept) less these buckets (literals, in bucket order). */
function leavingBuckets(
  definition: RollupDefinition,
  literals: readonly string[],
  range: { readonly deleted: string; readonly rows: string },
): { readonly deleted: string; readonly rows: string } {
  const rows = inBuckets(definition, literals);
  if (rows === null) return range;
  return {
    deleted: `(${range.deleted} AND bucket NOT IN (${literals.join(', ')}))`,
    rows: `(${range.rows} AND NOT ${rows})`,
  };
}

/** The rows of `source` but those of the failed audiences. */
function withoutAudiences(source: string, failed: readonly FailedAudience[]): string {
  const named = failed.map((f) => ofAudience(f.audience));
  return named.length > 0 ? `SELECT * FROM (${source}) WHERE NOT (${named.join(' OR ')})` : source;
}

/**
 * The INSERT recording the failed audiences' buckets of a rollup, with their errors, in heldTable or lostTable;
 * `postponed`: in heldTable, as retention's postponement of their rows (see heldTable), from now.
 */
function recordFailed(
  table: string,
  definition: RollupDefinition,
  failed: ReadonlyArray<Pick<FailedAudience, 'audience' | 'error' | 'buckets'>>,
  postponed = false,
): string | null {
  const rows = failed.flatMap((f) =>
    f.buckets.map((b) =>
      [
        quoteLiteral(definition.name),
        quoteLiteral(b),
        audienceValue(f.audience),
        quoteLiteral(f.error),
        ...(postponed ? ['now()::TIMESTAMP'] : []),
      ].join(', '),
    ),
  );
  const columns = `rollup, bucket, audience, error${postponed ? ', postponed_since' : ''}`;
  return rows.length > 0 ? `INSERT INTO ${table} (${columns}) VALUES (${rows.join('), (')})` : null;
}

/**
 * An audience whose rows failed a rollup's aggregate, and the buckets of them. Null: the rows of no audience (a view
 * set's extract may leave a row's audience NULL), which admins alone read, in the view set as in the rollup.
 */
interface FailedAudience {
  readonly audience: string | null;
  readonly error: string;
  readonly buckets: readonly string[];
  /** Its rows ran out of memory (QUERY_OUT_OF_MEMORY): a later run may aggregate them, as it never will a data error's. */
  readonly retryable: boolean;
}

const integerTypes = /^(TINYINT|SMALLINT|INTEGER|BIGINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|HUGEINT)$/i;
const namePattern = /^[a-z_][a-z0-9_]{0,62}$/;
/** Aggregates of Orrery's sketch functions, counted as aggregates whatever DuckDB reports them as. */
const sketchAggregates = ['percentile_sketch', 'distinct_sketch', 'merge'];

const schemaSql = `
CREATE TABLE IF NOT EXISTS rollup_definitions (
  name             TEXT PRIMARY KEY,
  source           TEXT NOT NULL,
  source_is_rollup BOOLEAN NOT NULL,
  base             TEXT NOT NULL,
  base_time_column TEXT NOT NULL,
  time_column      TEXT NOT NULL,
  integer_time     BOOLEAN NOT NULL,
  grain            TEXT NOT NULL,
  select_list      TEXT NOT NULL,
  group_by         TEXT,
  query            TEXT NOT NULL,
  columns          JSONB NOT NULL,
  retention        TEXT,
  created_at       TIMESTAMPTZ NOT NULL DEFAULT now()
);
ALTER TABLE rollup_definitions ADD COLUMN IF NOT EXISTS source_hash TEXT;
ALTER TABLE rollup_definitions ADD COLUMN IF NOT EXISTS covered_from TEXT;
CREATE TABLE IF NOT EXISTS rollup_aliases (
  name        TEXT PRIMARY KEY,
  target      TEXT NOT NULL REFERENCES rollup_definitions (name) ON DELETE CASCADE,
  select_list TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS rollup_jobs (
  kind        TEXT NOT NULL,
  target      TEXT NOT NULL REFERENCES rollup_definitions (name) ON DELETE CASCADE,
  schedule    INTERVAL NOT NULL DEFAULT INTERVAL '1 minute',
  last_run    TIMESTAMPTZ,
  next_run    TIMESTAMPTZ NOT NULL DEFAULT now(),
  last_status TEXT,
  last_error  TEXT,
  PRIMARY KEY (kind, target)
);
-- The last refresh's errors by audience whose rows failed its aggregate (their buckets held pending, see heldTable).
ALTER TABLE rollup_jobs ADD COLUMN IF NOT EXISTS audience_errors JSONB;
-- Counts the changes of the catalog (definitions and stable names, by any process), so a process keeps
-- the catalog it read while the count it read with it stays (see Rollups.readPoint).
CREATE TABLE IF NOT EXISTS rollup_catalog_version (
  one     BOOLEAN PRIMARY KEY DEFAULT true CHECK (one),
  version BIGINT NOT NULL DEFAULT 0
);
INSERT INTO rollup_catalog_version (one) VALUES (true) ON CONFLICT DO NOTHING;
CREATE OR REPLACE FUNCTION rollup_catalog_changed() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN UPDATE rollup_catalog_version SET version = version + 1; RETURN NULL; END $$;
DROP TRIGGER IF EXISTS rollup_definitions_changed ON rollup_definitions;
CREATE TRIGGER rollup_definitions_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON rollup_definitions
  FOR EACH STATEMENT EXECUTE FUNCTION rollup_catalog_changed();
DROP TRIGGER IF EXISTS rollup_aliases_changed ON rollup_aliases;
CREATE TRIGGER rollup_aliases_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON rollup_aliases
  FOR EACH STATEMENT EXECUTE FUNCTION rollup_catalog_changed();`;

/** The SQL that makes the rollups' catalog in Postgres: its tables are what making, refreshing and pointing a rollup writes. */
export const catalogSchemaSql = `${schemaSql}\n${invalidationsSchemaSql}`;

interface DefinitionRow {
  name: string;
  source: string;
  source_is_rollup: boolean;
  base: string;
  base_time_column: string;
  time_column: string;
  integer_time: boolean;
  grain: string;
  select_list: string;
  group_by: string | null;
  query: string;
  columns: string[];
  retention: string | null;
  source_hash: string | null;
  covered_from: string | null;
  base_is_view_set: boolean;
  created_at: string;
}

const definitionOf = (row: DefinitionRow): RollupDefinition => ({
  name: row.name,
  source: row.source,
  sourceIsRollup: row.source_is_rollup,
  base: row.base,
  baseTimeColumn: row.base_time_column,
  timeColumn: row.time_column,
  integer: row.integer_time,
  grain: row.grain,
  selectList: row.select_list,
  groupBy: row.group_by,
  query: row.query,
  columns: row.columns,
  retention: row.retention,
  sourceHash: row.source_hash,
  coveredFrom: row.covered_from,
  viewSetBase: row.base_is_view_set,
  createdAt: row.created_at,
});

/** DuckDB's value as text: the rollup queries cast what they read to VARCHAR, so values are strings, numbers or bigints. */
/** What one read or refresh builds once: each rollup's view, and each view set as it read it. */
interface ReadContext {
  readonly views: Map<string, string>;
  readonly sets: Map<string, ViewSetRead>;
  /**
   * Whether the statements may read kept tails' tables (see tail-values.ts): not in a client's
   * transaction, whose DuckDB transaction may have begun before the table was made.
   */
  readonly keptTails: boolean;
  /** The series tables the client's transaction has written (RollupReadPoint.written): their rollups read them raw. */
  readonly written: ReadonlySet<string>;
  /** Whether a view left out a bucket by a condition that holds only with the statement's clock fixed (see bucket-windows.ts). */
  fixesClock: boolean;
  /**
   * The audiences whose rows the read reads (its key's and public ones), or null for every audience's: a bucket
   * held for an audience is pending only to a read of that audience's rows (see heldBuckets).
   */
  readonly audiences: ReadonlySet<string> | null;
  /** Built by Rollups.prime: each tail is made and kept before the views are (primeTail). */
  readonly prime?: boolean;
  /**
   * The kept tails' rows the views read, by ring (see tail-values.ts), for a statement's setup (readSetup): its
   * views name the rings alone and its fill the rows. Without it, views name the rows.
   */
  readonly tailReads?: Map<string, number>;
}

/** What a statement's read of rollups is set up with (see Rollups.readSetup). */
export interface RollupReadSetup {
  readonly statements: string[];
  /** The statement run before the statement is prepared or run, on its connection (RunOptions.fill). */
  readonly fill?: string;
  /** Or, on an engine with __orrery_tail_row, the kept tails' rows its views read (RunOptions.tailReads). */
  readonly tailReads?: ReadonlyMap<string, number>;
  readonly snapshot: bigint | null;
  readonly lake: boolean;
  readonly fixesClock: boolean;
}

/** The key of a rollup's latest state read (see Rollups.sinceChange). */
const stateKey = (definition: RollupDefinition): string => `${definition.name}\u0000state`;

const readContext = (
  keptTails = true,
  written: ReadonlySet<string> = new Set(),
  scope: TableScope = { kind: 'all' },
): ReadContext => ({
  views: new Map(),
  sets: new Map(),
  keptTails,
  written,
  fixesClock: false,
  audiences: scope.kind === 'all' ? null : new Set([...scope.audiences, 'public']),
});

/** A rollup's tail aggregate kept in a table, or being made (see Rollups.keptTail). */
interface KeptTail {
  /** What it aggregates but its files: the aggregate's statement over no rows in particular, and the columns read. */
  readonly shape: string;
  /** Its files by id, each with its delete file (null: none). */
  readonly files: ReadonlyMap<string, string | null>;
  /** The making of its row: the row, or null when too large or failed. */
  readonly made: Promise<TailRow | null>;
}

/** A rollup's stored rows kept in a table (see Rollups.keptStored): the files' rows it holds, its making and table once made. */
interface KeptStored {
  readonly rows: string;
  /** The latest snapshot they were read at. */
  snapshot: bigint;
  readonly made: Promise<string | null>;
  table: string | null;
  /** The rollup and watermark they were stored at (storedAt), once found too large to keep (or failed). */
  tooLarge?: string;
}

/** The rollup and watermark a rollup's stored rows were stored at (KeptStored.tooLarge). */
const storedAt = (definition: RollupDefinition, watermark: string | null): string =>
  `${definition.createdAt}\u0000${definition.query}\u0000${watermark}`;

/** What `work` answers for a rollup's statement, kept in `kept` by the statement (null when it failed). */
function oncePerStatement<T>(
  kept: Map<string, Promise<T | null>>,
  definition: RollupDefinition,
  work: () => Promise<T | null>,
): Promise<T | null> {
  let value = kept.get(definition.query);
  if (!value) {
    value = work().catch(() => null);
    remember(kept, definition.query, value);
  }
  return value;
}

/** What is kept of a rollup's tail (see Rollups.keptTail). */
interface TailEntry {
  /** The rollup's RollupDefinition.createdAt: a rollup of its name created again keeps nothing of it. */
  readonly createdAt: string | null;
  /** The kept aggregate a read may merge with (its row made). */
  kept: { readonly tail: KeptTail; readonly row: TailRow } | null;
  /**
   * The table of its kept aggregates' rows (tail-values.ts), for the shape they are of; made once per shape, and
   * again once it held ringRows rows. `rows`: the rows put in it (deleted ones too: DuckDB still scans them).
   */
  ring: {
    readonly shape: string;
    readonly name: string;
    readonly table: Promise<string | null>;
    rows: number;
    /**
     * The expression of its rows' bytes (keptRowBytes), from its columns read at its first row; read again by the next
     * row after a failed read.
     */
    bytes?: Promise<string>;
  } | null;
  /** An aggregate being made, to replace it. */
  making: KeptTail | null;
  /** The last listing read (shape and files), and a shape found too large to keep. */
  seen: string;
  tooLarge: string | null;
  /**
   * The latest watermark (its place, rollup-sql's position) a tail was read at. A read at an earlier one (its
   * snapshot taken before a refresh that committed since) keeps, makes and retires nothing: the kept tail and the
   * ring of the latest watermark serve the reads that follow, instead of going back and forth with each reader.
   */
  latest: number | null;
}

/** Whether a read at watermark place `at` is at a rollup's latest (TailEntry.latest), which it moves on. */
function latestWatermark(entry: TailEntry, at: number): boolean {
  if (entry.latest !== null && at < entry.latest) return false;
  entry.latest = at;
  return true;
}

/** What a kept tail aggregates but its files (KeptTail.shape). */
const tailShape = (aggregate: (rows: string) => string, files: FileRows): string =>
  `${aggregate('SELECT NULL')}\u0000${files.columns}`;

/** The aggregate of a tail: the kept one's table merged with the aggregate of the files `added` since. */
const keptWithAdded = (
  merge: TailMerge,
  row: TailRow,
  aggregate: (rows: string) => string,
  files: FileRows,
  added: readonly ListedFile[],
): string =>
  mergedTail(
    merge,
    `${tailRows(row, { kind: 'all' })}\nUNION ALL SELECT * FROM (${aggregate(filesSql(files.columns, added)!)})`,
  );

/** A listing's files as kept (see KeptTail.files). */
const listedFiles = (files: readonly ListedFile[]): Map<string, string | null> =>
  new Map(files.map((f) => [f.id, f.deletes]));

/** The files of a listing added to a kept one's; null when a kept file is gone or has another delete file. */
function addedFiles(kept: ReadonlyMap<string, string | null>, files: readonly ListedFile[]): ListedFile[] | null {
  let found = 0;
  const added: ListedFile[] = [];
  for (const f of files) {
    if (!kept.has(f.id)) added.push(f);
    else if (kept.get(f.id) !== f.deletes) return null;
    else found++;
  }
  return found === kept.size ? added : null;
}

const text = (value: unknown): string | null =>
  value === null || value === undefined
    ? null
    : typeof value === 'object'
      ? JSON.stringify(value)
      : String(value as string);

/** The advisory lock one refresh of a rollup at a time holds (across processes). */
const refreshLock = (definition: Pick<RollupDefinition, 'name'>): string => `orrery_rollup_refresh:${definition.name}`;

/** How long refresh_rollup waits for a refresh of the same rollup running elsewhere. */
const refreshWaitMs = 10 * 60_000;

/**
 * The rollups of one Orrery process. Definitions and jobs live in Postgres, materialized rows and
 * state in DuckLake; what is kept is kept by a version read with it (the catalog's count of changes,
 * a DuckLake snapshot), so every process sees the same rollups.
 */
export class Rollups {
  /** DuckDB's aggregate functions and the sketches', worked out once. */
  private aggregates: Promise<ReadonlySet<string>> | undefined;

  constructor(
    private readonly engine: DuckDBEngine,
    private readonly metadata: MetadataStore,
    private readonly tables: SeriesTables,
    /** Names taken by view sets and static tables. */
    private readonly reservedNames: () => ReadonlySet<string>,
    /** The view sets rollups may be built on; without them, only series tables and rollups. */
    private readonly viewSets?: ViewSetSources,
    private readonly options: {
      /** The raw rows (estimated) a window off bucket boundaries must save to be read with raw edges (see rowsWithin). */
      readonly rawEdgesMinRows?: number;
      /** What the kept tables (stored rows' copies, rings of kept tails) may take together; unbounded without. */
      readonly keptBudget?: KeptBudget;
    } = {},
  ) {
    this.keptBudget = options.keptBudget ?? new KeptBudget(Infinity);
    this.audienceRows = new AudienceRows(engine, metadata);
    this.lakeChanges = new LakeChanges(metadata);
  }

  /** Rollup states by `name@snapshot`, and change-feed buckets by base, bucket and snapshot range (see state, changedBuckets). */
  private readonly states = new Map<string, RollupState>();
  private readonly changes = new Map<string, string[]>();
  /** The buckets retention kept, by snapshot and rollup (see keptBuckets). */
  private readonly kept = new Map<string, Promise<ReadonlyMap<string, ReadonlySet<string>>>>();
  /** The buckets refreshes held for an audience whose rows failed, by snapshot and rollup (see heldBuckets). */
  private readonly held = new Map<string, Promise<ReadonlyMap<string, ReadonlySet<string>>>>();
  /** What DuckLake's catalog says changed in tables between snapshots (see sinceChange, changedBuckets). */
  private readonly lakeChanges: LakeChanges;
  /** The latest read of each rollup's state and of the buckets retention kept, with the snapshot it holds at (see sinceChange). */
  private readonly latestReads = new Map<string, { readonly snapshot: bigint; readonly value: Promise<unknown> }>();
  /** Changed buckets by base, bucket, first snapshot and watermark, with the last snapshot they cover (see changedBuckets). */
  private readonly latestChanges = new Map<string, { readonly to: bigint; readonly buckets: Promise<string[]> }>();
  /** Invalidations of view-set rollups by rollup, as read at a change-feed version of their set (see keptInvalidations). */
  private readonly invalidations = new Map<
    string,
    { readonly version: string; readonly after: bigint; readonly read: Promise<ViewSetRead['invalidations']> }
  >();
  /** Tables' rows from their files by schema, table, time column, snapshot and lower bound (see filesOf). */
  private readonly files = new Map<string, Promise<FileRows | null>>();
  /** The latest listing of a table's rows by schema, table, time column and lower bound, with its snapshot (see filesOf). */
  private readonly latestListings = new Map<
    string,
    { readonly snapshot: bigint; readonly listed: Promise<FileRows | null> }
  >();
  /** The aggregate of each rollup's tail, kept for the files it was computed from (see keptTail). */
  private readonly tails = new Map<string, TailEntry>();
  /** Rollups' stored rows kept in tables, by rollup (see keptStored). */
  private readonly storedTables = new Map<string, KeptStored>();
  /** What the kept tables take together (kept-budget.ts). */
  private readonly keptBudget: KeptBudget;
  /** How each rollup's aggregate merges over parts of its rows, by its statement (see tailMerge). */
  private readonly tailMerges = new Map<string, Promise<TailMerge | null>>();
  /** Each rollup's statement over single rows, by its statement (see rowPartials). */
  private readonly rowPartials = new Map<string, Promise<string | null>>();
  /** The row count and time range of series tables by `table@snapshot` (see rowsWithin). */
  private readonly extents = new Map<string, Promise<TableExtent | null>>();
  /** Readers' own rows of tables and view sets (see rowsWithin). */
  private readonly audienceRows: AudienceRows;
  /** What the rewrite reads back of rollups' statements, by the catalog's definitions (see readBack). */
  private readonly readBacks = new WeakMap<
    ReadonlyMap<string, RollupDefinition>,
    Map<string, Promise<{ columnsRead: Set<string>; stored: StoredColumns | null }>>
  >();
  /** The answers of the rewrite's probes of types and names, by statement (see probed). */
  private readonly probes = new Map<string, Promise<unknown[][]>>();
  /** Rewrites by statement, snapshot and rollups (see rewrite). */
  private readonly rewrites = new Map<string, KeptRewrite>();
  /** The catalog as last read, with the version of it read in the same statement (see readPoint). */
  private keptCatalog: { readonly version: string; readonly catalog: RollupCatalog } | undefined;
  /** The view sets some rollup is built on, as last read (see readsViewSetBase). */
  private viewSetBases: { readonly at: number; readonly names: Promise<ReadonlySet<string>> } | undefined;

  /** Creates this component's Postgres tables and DuckLake schema; idempotent, safe for processes starting together. */
  async prepare(): Promise<void> {
    const locked = `SELECT pg_advisory_xact_lock(hashtextextended('orrery_rollups_schema', 0))`;
    await this.metadata.transaction(async (tx) => {
      await tx.query(locked);
      await tx.query(schemaSql);
      await tx.query(invalidationsSchemaSql);
    });
    // The lake's part under the same lock: processes starting together that each found a table or column missing
    // would each add it, and DuckLake refuses the second (a conflict, or a column that exists): that process failed to
    // start. Each sees the lake as the one before it left it.
    await this.metadata.transaction(async (tx) => {
      await tx.query(locked);
      await this.prepareLake();
    });
  }

  /** prepare's DuckLake schema and tables, with what an older lake lacks. */
  private async prepareLake(): Promise<void> {
    await this.engine.execute(`CREATE SCHEMA IF NOT EXISTS ${lakeCatalog}.${rollupSchema}`);
    await this.engine.execute(`CREATE TABLE IF NOT EXISTS ${keptTable} (rollup VARCHAR, bucket VARCHAR)`);
    for (const [table, more] of [
      [heldTable, ', postponed_since TIMESTAMP'],
      [lostTable, ''],
    ])
      await this.engine.execute(
        `CREATE TABLE IF NOT EXISTS ${table} (rollup VARCHAR, bucket VARCHAR, audience VARCHAR, error VARCHAR${more})`,
      );
    // Retention's postponements (see heldTable), which a lake made before them lacks: added once, so that servers
    // starting together on a newer lake change nothing of its catalog.
    const [[postponements]] = await this.engine.values(
      `SELECT count(*) FROM duckdb_columns() WHERE database_name = '${lakeCatalog}' AND schema_name = '${rollupSchema}'
         AND table_name = '${heldName}' AND column_name = 'postponed_since'`,
    );
    if (Number(postponements) === 0)
      await this.engine.execute(`ALTER TABLE ${heldTable} ADD COLUMN postponed_since TIMESTAMP`);
  }

  /**
   * Whether a statement naming these relations may read a view set with rollups, so the rewrite must
   * look at it. The list is at most viewSetBasesKeptMs old (creates and drops in this process are
   * seen at once): a statement over view sets alone pays no Postgres query, and a stale list only
   * leaves a new rollup unread for that long (a dropped one is then not found by the rewrite).
   */
  async readsViewSetBase(names: readonly string[]): Promise<boolean> {
    if (!this.viewSets || names.length === 0) return false;
    if (!this.viewSetBases || Date.now() - this.viewSetBases.at > viewSetBasesKeptMs) {
      const listed = this.metadata
        .query<{ base: string }>('SELECT DISTINCT base FROM rollup_definitions WHERE base_is_view_set')
        .then(({ rows }) => new Set(rows.map((r) => r.base)));
      this.viewSetBases = { at: Date.now(), names: listed };
      listed.catch(() => (this.viewSetBases = undefined));
    }
    const bases = await this.viewSetBases.names;
    return names.some((n) => bases.has(n.toLowerCase()));
  }

  /** Every rollup, by name. */
  async definitions(): Promise<ReadonlyMap<string, RollupDefinition>> {
    return (await this.catalog()).definitions;
  }

  /** Every rollup and every stable name (pointAlias), with the catalog's version, in one Postgres statement. */
  private async catalog(): Promise<RollupCatalog> {
    const { rows } = await this.metadata.query<{
      version: string;
      definitions: Array<DefinitionRow & { aliases: Array<[string, string]> }>;
    }>(
      `SELECT version::text AS version, COALESCE((SELECT json_agg(row_to_json(x) ORDER BY x.name) FROM (
           SELECT d.*, COALESCE((SELECT json_agg(json_build_array(a.name, a.select_list)) FROM rollup_aliases a
                                   WHERE a.target = d.name), '[]'::json) AS aliases
             FROM rollup_definitions d) x), '[]'::json) AS definitions
         FROM rollup_catalog_version`,
    );
    const [{ version, definitions }] = rows;
    const aliases = new Map<string, RollupAlias>();
    for (const row of definitions)
      for (const [name, selectList] of row.aliases) aliases.set(name, { name, target: row.name, selectList });
    const catalog = { definitions: new Map(definitions.map((row) => [row.name, definitionOf(row)])), aliases };
    this.keptCatalog = { version, catalog };
    return catalog;
  }

  /**
   * The lake's latest snapshot, the catalog and the series tables as of that snapshot: one Postgres
   * statement (the snapshot id and the catalog's version) while neither changes, which every
   * statement that may read a series table or a rollup pays once, for all its reads of them.
   * In a client's transaction, its own snapshot and tables instead: the statement sees the lake as the
   * transaction does (DuckLake finds no later snapshot in it), its own writes included (`written`).
   */
  async readPoint(session?: EngineSession): Promise<RollupReadPoint> {
    const { rows } = await this.metadata.query<{ snapshot: string; schema: string; version: string }>(
      `SELECT lake.snapshot, lake.schema, version::text AS version FROM rollup_catalog_version, (${lakeVersionSql}) AS lake`,
    );
    const [snapshot, schemaVersion] = [BigInt(rows[0].snapshot), BigInt(rows[0].schema)];
    const kept = this.keptCatalog;
    const catalog = kept?.version === rows[0].version ? kept.catalog : await this.catalog();
    if (session) {
      // The transaction's snapshot: fixed by its first read of the lake (this one, when none came before).
      const [[own]] = await this.engine.values(`SELECT id FROM ${lakeCatalog}.current_snapshot()`, session);
      const at = BigInt(own as bigint);
      return {
        snapshot: at,
        ...(await this.catalogAt(catalog, at)),
        tables: await this.tables.list(session),
        written: session.written,
      };
    }
    return { snapshot, catalog, tables: (await this.tables.listAt({ snapshot, schemaVersion })).tables };
  }

  /**
   * The rollups of a catalog whose tables exist at a snapshot (a transaction's, which sees no rollup made since),
   * and the rollups made or dropped since that snapshot: one Postgres query; the same catalog when all exist.
   */
  private async catalogAt(
    catalog: RollupCatalog,
    snapshot: bigint,
  ): Promise<{ catalog: RollupCatalog; changed: ReadonlyMap<string, 'created' | 'dropped'> }> {
    const s = lakeMetadataSchema;
    const suffix = stateTableName('');
    const { rows } = await this.metadata.query<{ name: string }>(
      `SELECT t.table_name AS name FROM ${s}.ducklake_table t
         JOIN ${s}.ducklake_schema n ON n.schema_id = t.schema_id AND n.schema_name = $2 AND ${live('n', '$1::bigint')}
        WHERE right(t.table_name, $3) = $4 AND ${live('t', '$1::bigint')}`,
      [String(snapshot), rollupSchema, suffix.length, suffix],
    );
    const made = new Set(rows.map((r) => r.name.slice(0, -suffix.length)));
    const changed = new Map<string, 'created' | 'dropped'>();
    for (const name of made) if (!catalog.definitions.has(name)) changed.set(name, 'dropped');
    for (const name of catalog.definitions.keys()) if (!made.has(name)) changed.set(name, 'created');
    if (![...changed.values()].includes('created')) return { catalog, changed };
    const definitions = new Map([...catalog.definitions].filter(([name]) => made.has(name)));
    return {
      catalog: { definitions, aliases: new Map([...catalog.aliases].filter(([, a]) => definitions.has(a.target))) },
      changed,
    };
  }

  /** The stable names pointing at rollups, by name. */
  async aliases(): Promise<ReadonlyMap<string, RollupAlias>> {
    return (await this.catalog()).aliases;
  }

  /**
   * Points a stable name at a rollup (creating or moving it; readers see one or the other), read as
   * `SELECT <select list> FROM <rollup>`: the list is checked by binding it over the rollup's columns.
   */
  async pointAlias(name: string, target: string, selectList: string): Promise<void> {
    const alias = name.toLowerCase();
    if (!namePattern.test(alias))
      throw rollupErrors.error('ROLLUP_ARGUMENT_INVALID', `the stable name '${name}' is not a valid rollup name`);
    const { definitions, aliases } = await this.catalog();
    const tables = await this.tables.list();
    if (
      tables.has(alias) ||
      this.reservedNames().has(alias) ||
      definitions.has(alias) ||
      [...definitions.keys()].some((d) => materializedName(d) === alias)
    )
      throw rollupErrors.error('ROLLUP_NAME_IN_USE', `the stable name '${alias}' is already in use`);
    const definition = definitions.get(target.toLowerCase());
    if (!definition) throw rollupErrors.error('ROLLUP_NOT_FOUND', `rollup '${target}' does not exist`);
    if (aliases.get(alias)?.target === definition.name && aliases.get(alias)?.selectList === selectList) return;
    await this.engine.execute(`SELECT ${selectList} FROM ${materializedTable(definition.name)} LIMIT 0`);
    await this.metadata.query(
      `INSERT INTO rollup_aliases (name, target, select_list) VALUES ($1, $2, $3)
       ON CONFLICT (name) DO UPDATE SET target = EXCLUDED.target, select_list = EXCLUDED.select_list`,
      [alias, definition.name, selectList],
    );
  }

  /**
   * Backfills one day of a rollup made with `backfilled`: the day before the oldest bucket it holds
   * (not older than its retention or the source's oldest row), aggregated in one DuckLake
   * transaction, then the covered range moved down to it. Runs under the rollup's refresh lock, so
   * a refresh and a backfill never overlap; a step killed midway leaves the range where it was (its
   * rows are replaced by the next try). Returns the day done, or null days when every bucket is held.
   */
  async backfillStep(name: string): Promise<BackfillStep> {
    const definition = await this.definition(name, 'backfill');
    return this.holdingRefreshLock(definition, 'backfill', () => this.backfillHoldingLock(definition.name));
  }

  private async backfillHoldingLock(name: string): Promise<BackfillStep> {
    const definitions = await this.definitions();
    const definition = definitions.get(name);
    if (!definition) throw rollupErrors.error('ROLLUP_NOT_FOUND', `backfill: rollup '${name}' does not exist`);
    const to = definition.coveredFrom;
    if (to === null) return { from: null, to: null, daysLeft: 0 };
    const snapshot = await this.snapshot();
    const grain = `INTERVAL ${quoteLiteral(definition.grain)}`;
    const horizon =
      definition.retention === null
        ? null
        : `time_bucket(${grain}, now()::TIMESTAMP - INTERVAL ${quoteLiteral(definition.retention)})`;
    const oldest = `(SELECT time_bucket(${grain}, CAST(min(${quoteIdentifier(definition.baseTimeColumn)}) AS TIMESTAMP)) FROM ${at(lakeTable(definition.base), snapshot)})`;
    const covered = bucketLiteral(definition, to);
    const [[lowest, start, daysLeft]] = await this.engine.values(
      `SELECT CAST(l AS VARCHAR), CAST(s AS VARCHAR), CAST(ceil(epoch(s - l) / 86400) AS BIGINT) FROM (
         SELECT l, greatest(time_bucket(INTERVAL 1 DAY, ${covered} - INTERVAL 1 MICROSECOND), l) AS s FROM (
           SELECT ${horizon === null ? 'o' : `greatest(o, ${horizon})`} AS l FROM (SELECT ${oldest} AS o)))`,
    );
    const uncover = async (from: string | null): Promise<void> => {
      await this.metadata.query(
        'UPDATE rollup_definitions SET covered_from = $2 WHERE name = $1 AND covered_from = $3',
        [definition.name, from, to],
      );
    };
    if (lowest === null || String(lowest as string) >= to) {
      await uncover(null);
      return { from: null, to: null, daysLeft: 0 };
    }
    const from = String(start as string);
    const tables = await this.tables.list();
    const context = readContext();
    const all: TableScope = { kind: 'all' };
    if (definition.sourceIsRollup) {
      await this.viewSql(sourceRollup(definition, definitions), all, { snapshot, definitions, tables, context });
    }
    const time = quoteIdentifier(definition.timeColumn);
    const begin = bucketLiteral(definition, from);
    const day = {
      deleted: `bucket >= ${begin} AND bucket < ${covered}`,
      rows: `${time} >= ${begin} AND ${time} < ${covered}`,
    };
    // The buckets of the day a series table's retention kept (its horizon inside the day, or a late row before it)
    // hold what the rows gone answered: left as stored, as a refresh leaves them (a postponed audience's rows of one
    // are read as held, and stored by a later retention).
    const unkept =
      (await this.keptBuckets(definition, snapshot)).size > 0 ? leavingKept(definition, snapshot, day) : day;
    // So are those a refresh held for an audience whose rows failed its aggregate (see heldTable): the other
    // audiences' rows stored by that refresh, the held audience's read raw, all pending to the next refresh, which
    // aggregates each audience alone; aggregated here, every audience at once, one audience's rows failing again
    // would fail the step, and the publication with it, at that day.
    const held = inBucketOrder(definition, [...(await this.heldBuckets(definition, snapshot, null)).keys()]);
    const range = leavingBuckets(
      definition,
      held.map((b) => bucketLiteral(definition, b)),
      unkept,
    );
    await this.lakeTransaction(async (run) => {
      const mat = materializedTable(definition.name);
      // A refresh may have stored a bucket of the day already (a write to it was pending): replaced whole, but those
      // it held (above).
      await run(`DELETE FROM ${mat} WHERE ${range.deleted}`);
      await run(
        `INSERT INTO ${mat} ${aggregateOver(definition, this.sourceRows(definition, snapshot, all, context), range.rows)}`,
      );
    });
    // After the rows' commit: a read in between takes the day from the source, as before.
    await uncover(Number(daysLeft) <= 0 ? null : from);
    return { from, to, daysLeft: Number(daysLeft) };
  }

  private async definition(name: string, fn: string): Promise<RollupDefinition> {
    const found = (await this.definitions()).get(name.toLowerCase());
    if (!found) throw rollupErrors.error('ROLLUP_NOT_FOUND', `${fn}: rollup '${name}' does not exist`);
    return found;
  }

  /** The rollups built directly on a series table or rollup. */
  async dependentsOf(source: string): Promise<string[]> {
    const { rows } = await this.metadata.query<{ name: string }>(
      'SELECT name FROM rollup_definitions WHERE source = $1 ORDER BY name',
      [source],
    );
    return rows.map((r) => r.name);
  }

  /**
   * create_rollup: checks everything, then creates the materialized table, the state, the
   * definition and the refresh job. `backfilled`: the rollup starts with its watermark at now's
   * bucket and nothing materialized before it (older buckets read from the source until
   * backfillStep has covered them), so its refresh job never aggregates the whole history at once.
   */
  async create(args: RollupArguments, options: { readonly backfilled?: boolean } = {}): Promise<string> {
    const name = args.name.toLowerCase();
    if (!namePattern.test(name))
      throw rollupErrors.error(
        'ROLLUP_ARGUMENT_INVALID',
        `create_rollup: '${args.name}' is not a valid rollup name (letters, digits and _, starting with a letter or _)`,
      );
    const { definitions, aliases } = await this.catalog();
    const tables = await this.tables.list();
    const taken = (candidate: string): boolean =>
      tables.has(candidate) ||
      aliases.has(candidate) ||
      this.reservedNames().has(candidate) ||
      definitions.has(candidate) ||
      [...definitions.keys()].some((d) => materializedName(d) === candidate);
    for (const candidate of [name, materializedName(name)]) {
      if (taken(candidate))
        throw rollupErrors.error('ROLLUP_NAME_IN_USE', `create_rollup: the name '${candidate}' is already in use`);
    }
    const sourceName = args.source.toLowerCase();
    const sourceTable = tables.get(sourceName);
    const sourceRollup = definitions.get(sourceName);
    const sourceSet = sourceTable || sourceRollup ? undefined : this.viewSets?.get(sourceName);
    if (!sourceTable && !sourceRollup && !sourceSet) {
      throw rollupErrors.error(
        'ROLLUP_SOURCE_NOT_FOUND',
        `create_rollup: source '${args.source}' is neither a series table, a view set nor a rollup`,
      );
    }
    if (sourceSet) checkViewSetSource(sourceSet);
    const integer = sourceRollup ? sourceRollup.integer : sourceSet ? false : isIntegerTime(sourceTable!);
    const timeColumn = sourceRollup ? 'bucket' : sourceSet ? sourceSet.minTimeColumn : sourceTable!.timeColumn;
    if ((args.bucket === null) === (args.bucketWidth === null))
      throw rollupErrors.error(
        'ROLLUP_ARGUMENT_INVALID',
        'create_rollup: give either bucket (an interval, for a time column) or bucket_width (for an integer time column), not both or neither',
      );
    if (integer && args.bucket !== null)
      throw rollupErrors.error(
        'ROLLUP_ARGUMENT_INVALID',
        `create_rollup: '${args.source}' keeps integer time (${timeColumn}): give bucket_width, not bucket`,
      );
    if (!integer && args.bucketWidth !== null)
      throw rollupErrors.error(
        'ROLLUP_ARGUMENT_INVALID',
        `create_rollup: ${sourceSet ? 'view set ' : ''}'${args.source}' keeps time in a timestamp column (${timeColumn}): give bucket (an interval), not bucket_width`,
      );
    const grain = integer ? positiveInteger(args.bucketWidth!) : await this.interval(args.bucket!);
    if (sourceRollup) await this.checkMultiple(grain, sourceRollup);
    if (args.selectList === null)
      throw rollupErrors.error(
        'ROLLUP_SELECT_LIST_INVALID',
        'create_rollup: select_list is required (the group columns and the aggregates, each named with as)',
      );
    const functions = await this.engine.functions();
    const aggregates = new Set([
      ...functions.filter((f) => f.type === 'aggregate').map((f) => f.name.toLowerCase()),
      ...sketchAggregates,
    ]);
    const query = await rollupQuery(this.engine, {
      selectList: args.selectList,
      groupBy: args.groupBy,
      bucketSql: bucketSql({ integer, grain }, timeColumn),
      aggregates,
      ofRollup: sourceRollup !== undefined,
      varying: withMacros(functions),
    });
    const base = sourceRollup ? sourceRollup.base : sourceName;
    const viewSetBase = sourceRollup ? sourceRollup.viewSetBase : sourceSet !== undefined;
    const baseColumns = this.baseOf({ base, viewSetBase }, tables);
    if (!baseColumns)
      throw rollupErrors.error('ROLLUP_SOURCE_NOT_FOUND', `create_rollup: the source of '${args.source}' is gone`);
    let definition: RollupDefinition = {
      name,
      source: sourceName,
      sourceIsRollup: sourceRollup !== undefined,
      base,
      baseTimeColumn: sourceRollup ? sourceRollup.baseTimeColumn : timeColumn,
      timeColumn,
      integer,
      grain,
      selectList: args.selectList,
      groupBy: args.groupBy,
      query: query.sql,
      columns: query.columns,
      retention: null,
      sourceHash: null,
      coveredFrom: null,
      viewSetBase,
      createdAt: null,
    };
    // Only the columns it reads: a column added to the table later leaves the rollup answering.
    definition = {
      ...definition,
      sourceHash: sourceHash(baseColumns, await this.columnsRead(definition, definitions)),
    };
    if (options.backfilled) {
      if (integer)
        throw rollupErrors.error(
          'ROLLUP_ARGUMENT_INVALID',
          `create_rollup: '${args.source}' keeps integer time; only time rollups are backfilled by day`,
        );
      if (viewSetBase)
        throw rollupErrors.error(
          'ROLLUP_ARGUMENT_INVALID',
          `create_rollup: '${args.source}' is a view set; only rollups of series tables are backfilled by day`,
        );
      // The name is free, so tables under it are what a creation killed midway left.
      await this.dropStorage(name);
    }
    // The column types are the aggregate's over an empty source: of the source table's own, the view set's, or of the source rollup's stored rows.
    const emptySource = sourceRollup
      ? `SELECT * FROM ${materializedTable(sourceRollup.name)} LIMIT 0`
      : sourceSet
        ? sessionRelation({ view: sourceSet, files: [] }, { kind: 'all' })
        : `SELECT * FROM ${lakeCatalog}.main.${quoteIdentifier(sourceName)} LIMIT 0`;
    const aggregate = aggregateOver(definition, emptySource, 'TRUE');
    let refusal: string | undefined;
    try {
      const columns = await this.engine.values(`SELECT column_name FROM (DESCRIBE ${aggregate})`);
      refusal = await this.tables.catalogRefusal(
        name,
        columns.map(([column]) => String(column)),
      );
      if (refusal === undefined) await this.engine.execute(`CREATE TABLE ${materializedTable(name)} AS ${aggregate}`);
    } catch (error) {
      throw rollupErrors.error(
        'ROLLUP_SELECT_LIST_INVALID',
        `create_rollup: select_list does not bind on '${args.source}': ${(error as Error).message}`,
      );
    }
    if (refusal !== undefined) throw rollupErrors.error('ROLLUP_SELECT_LIST_INVALID', `create_rollup: ${refusal}`);
    try {
      await this.engine.execute(sortedByBucket(materializedTable(name)));
      await this.engine.execute(
        `CREATE TABLE ${stateTable(name)} (watermark ${integer ? 'BIGINT' : 'TIMESTAMP'}, source_snapshot BIGINT, refreshed_at TIMESTAMP)`,
      );
      let coveredFrom: string | null = null;
      if (options.backfilled) {
        // Materialized from now's bucket on, as of this snapshot: a later write to an older bucket is pending.
        const snapshot = await this.snapshot();
        const [[watermark]] = await this.engine.values(
          `SELECT CAST(time_bucket(INTERVAL ${quoteLiteral(grain)}, now()::TIMESTAMP) AS VARCHAR)`,
        );
        coveredFrom = String(watermark as string);
        await this.engine.execute(
          `INSERT INTO ${stateTable(name)} VALUES (${bucketLiteral(definition, coveredFrom)}, ${snapshot}, now()::TIMESTAMP)`,
        );
      }
      await this.metadata.transaction(async (tx) => {
        await tx.query(
          `INSERT INTO rollup_definitions (name, source, source_is_rollup, base, base_time_column, time_column, integer_time,
             grain, select_list, group_by, query, columns, source_hash, covered_from, base_is_view_set)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
          [
            name,
            definition.source,
            definition.sourceIsRollup,
            definition.base,
            definition.baseTimeColumn,
            timeColumn,
            integer,
            grain,
            args.selectList,
            args.groupBy,
            query.sql,
            JSON.stringify(query.columns),
            definition.sourceHash,
            coveredFrom,
            viewSetBase,
          ],
        );
        await tx.query(`INSERT INTO rollup_jobs (kind, target) VALUES ('refresh', $1)`, [name]);
      });
      this.viewSetBases = undefined;
    } catch (error) {
      await this.dropStorage(name);
      throw error;
    }
    return name;
  }

  /** drop_rollup: refused while another rollup reads this one. */
  async drop(name: string): Promise<string> {
    const definition = await this.definition(name, 'drop_rollup');
    const dependents = await this.dependentsOf(definition.name);
    if (dependents.length > 0)
      throw rollupErrors.error(
        'ROLLUP_IN_USE',
        `drop_rollup: rollup ${dependents.map((d) => `'${d}'`).join(', ')} is built on '${definition.name}'; drop ${dependents.length > 1 ? 'them' : 'it'} first`,
      );
    // The statement's commit point (checkLive): its tables go after it whatever its client does.
    await this.metadata.transaction((tx) =>
      tx.query('DELETE FROM rollup_definitions WHERE name = $1', [definition.name]),
    );
    this.viewSetBases = undefined;
    await this.dropStorage(definition.name);
    // Its kept tail's table goes too, as a replaced one does (another process keeps its own until a rollup of this
    // name is read there, or the process ends: at most maxKeptRows rows).
    this.forgetTail(definition.name);
    const stored = this.storedTables.get(definition.name);
    this.storedTables.delete(definition.name);
    if (stored) this.retireTable(stored.made);
    return definition.name;
  }

  private async dropStorage(name: string): Promise<void> {
    await this.engine.execute(`DROP TABLE IF EXISTS ${materializedTable(name)}`);
    await this.engine.execute(`DROP TABLE IF EXISTS ${stateTable(name)}`);
    await this.engine.execute(`DELETE FROM ${keptTable} WHERE rollup = ${quoteLiteral(name)}`);
    await this.engine.execute(`DELETE FROM ${heldTable} WHERE rollup = ${quoteLiteral(name)}`);
    await this.engine.execute(`DELETE FROM ${lostTable} WHERE rollup = ${quoteLiteral(name)}`);
  }

  /** set_rollup_retention: buckets older than `keep` are deleted at each refresh; null keeps every bucket. */
  async setRetention(name: string, keep: unknown): Promise<string> {
    const definition = await this.definition(name, 'set_rollup_retention');
    let retention: string | null = null;
    if (keep !== null) {
      if (definition.integer) {
        if (
          (typeof keep !== 'number' && typeof keep !== 'bigint' && typeof keep !== 'string') ||
          !/^[1-9]\d*$/.test(String(keep))
        )
          throw rollupErrors.error(
            'ROLLUP_ARGUMENT_INVALID',
            `set_rollup_retention: '${definition.name}' keeps integer time: give a positive count of its units`,
          );
        retention = String(keep);
      } else {
        if (typeof keep !== 'string')
          throw rollupErrors.error(
            'ROLLUP_ARGUMENT_INVALID',
            `set_rollup_retention: '${definition.name}' keeps timestamps: give an interval such as interval '1 year'`,
          );
        retention = await this.interval(keep, 'set_rollup_retention');
      }
    }
    await this.metadata.transaction((tx) =>
      tx.query('UPDATE rollup_definitions SET retention = $2 WHERE name = $1', [definition.name, retention]),
    );
    return retention === null ? `${definition.name} keeps every bucket` : `${definition.name} keeps ${retention}`;
  }

  /** Changes how often a rollup's refresh job runs. */
  async setSchedule(name: string, schedule: unknown): Promise<string> {
    const [change] = await this.scheduleChanges([[name, schedule]]);
    await this.metadata.transaction((tx) => change.apply(tx));
    return change.message;
  }

  /**
   * The spec's `UPDATE snouttime.jobs SET schedule = … WHERE …` (its text after SET): changes the
   * schedule of every job the condition matches, as set_job_schedule does, in one transaction; answers how many.
   */
  async updateSchedules(assignments: string): Promise<number> {
    const sql = await jobsUpdateQuery(this.engine, assignments, await this.jobs());
    const changes = await this.scheduleChanges(await this.engine.values(sql));
    await this.metadata.transaction(async (tx) => {
      for (const change of changes) await change.apply(tx);
    });
    return changes.length;
  }

  /** Each (rollup, schedule)'s change of its refresh job's schedule, checked: its statement and what it answers. */
  private async scheduleChanges(
    assignments: readonly unknown[][],
  ): Promise<Array<{ apply: (tx: MetadataQueries) => Promise<unknown>; message: string }>> {
    const changes = [];
    for (const [name, schedule] of assignments) {
      const definition = await this.definition(String(name), 'set_job_schedule');
      if (typeof schedule !== 'string')
        throw rollupErrors.error('ROLLUP_ARGUMENT_INVALID', 'set_job_schedule: give the schedule as an interval');
      const interval = await this.interval(schedule, 'set_job_schedule');
      changes.push({
        // The next run is where the last run would have put it under the new schedule (TimescaleDB's alter_job
        // does the same: last finish + new interval), a failed one's retry kept: keeping the sooner of the old and
        // new next runs made a job whose first run preceded set_job_schedule(1 day) run again a minute later. A
        // job that has not run yet keeps its next run: it starts at once whatever its schedule.
        apply: (tx: MetadataQueries) =>
          tx.query(
            `UPDATE rollup_jobs SET schedule = $2::INTERVAL,
               next_run = COALESCE(${nextRunSql('last_run', '$2::INTERVAL', "last_status = 'failed'")}, next_run)
             WHERE kind = 'refresh' AND target = $1`,
            [definition.name, interval],
          ),
        message: `${definition.name} refreshes every ${interval}`,
      });
    }
    return changes;
  }

  /** Every refresh job. */
  async jobs(): Promise<RollupJob[]> {
    const { rows } = await this.metadata.query<{
      kind: string;
      target: string;
      schedule: string;
      last_run: Date | null;
      next_run: Date | null;
      last_status: string | null;
      last_error: string | null;
      audience_errors: AudienceError[] | Record<string, string> | null;
    }>(
      `SELECT kind, target, schedule::TEXT AS schedule, last_run, next_run, last_status, last_error, audience_errors
         FROM rollup_jobs ORDER BY target, kind`,
    );
    const lost = await this.lostBuckets();
    return rows.map((r) => ({
      kind: r.kind,
      target: r.target,
      schedule: r.schedule,
      lastRun: r.last_run,
      nextRun: r.next_run,
      lastStatus: r.last_status,
      lastError: r.last_error,
      audienceErrors: audienceErrorsOf(r.audience_errors),
      lostBuckets: lost.get(r.target) ?? [],
    }));
  }

  /** Every rollup's buckets kept without an audience's rows (lostTable) or postponed (heldTable), by rollup. */
  private async lostBuckets(): Promise<ReadonlyMap<string, LostBuckets[]>> {
    const rows = await this.engine.values(
      `SELECT rollup, audience, bucket, error, false FROM ${lostTable}
       UNION ALL SELECT rollup, audience, bucket, error, true FROM ${heldTable} WHERE postponed_since IS NOT NULL`,
    );
    if (rows.length === 0) return new Map();
    const definitions = await this.definitions();
    type Of = Map<
      string,
      { audience: string | null; postponed: boolean; lost: Array<{ bucket: string; error: string }> }
    >;
    const byAudience = new Map<string, Of>();
    for (const [rollup, audience, bucket, error, postponed] of rows) {
      const of: Of = byAudience.get(String(rollup)) ?? new Map();
      // The rows of no audience (NULL) apart from any audience's, "null" and '' among them.
      const who = typeof audience === 'string' ? audience : null;
      const key = JSON.stringify([who, postponed]);
      const entry = of.get(key) ?? { audience: who, postponed: postponed === true, lost: [] };
      entry.lost.push({ bucket: String(bucket), error: String(error) });
      of.set(key, entry);
      byAudience.set(String(rollup), of);
    }
    return new Map(
      [...byAudience].map(([rollup, of]) => [
        rollup,
        [...of.values()].map(({ audience, postponed, lost }) => {
          const buckets = inBucketOrder(
            { integer: definitions.get(rollup)?.integer ?? false },
            lost.map((l) => l.bucket),
          );
          return {
            table: definitions.get(rollup)?.base ?? rollup,
            audience,
            buckets,
            error: lost.find((l) => l.bucket === buckets[0])!.error,
            postponed,
          };
        }),
      ]),
    );
  }

  /**
   * refresh_rollup: recomputes the pending buckets and those closed since the last refresh,
   * moves the watermark and returns the number of ranges of buckets recomputed. Waits for a
   * refresh of the same rollup running in any process (one at a time, by an advisory lock).
   */
  async refresh(name: string): Promise<RefreshOutcome> {
    const definition = await this.definition(name, 'refresh_rollup');
    return this.holdingRefreshLock(definition, 'refresh_rollup', () => this.refreshHoldingLock(definition, false));
  }

  /**
   * Runs a refresh job holding the rollup's lock, unless a refresh of it runs already (anywhere):
   * then undefined. The job checks it is still due under the lock, and its refresh records the run
   * (see refreshHoldingLock), so two runners that both found it due never refresh it twice.
   */
  tryRefresh<T>(
    definition: RollupDefinition,
    job: (refresh: () => Promise<RefreshOutcome>) => Promise<T>,
  ): Promise<T | undefined> {
    return this.metadata.locks.tryWhileHolding(refreshLock(definition), () =>
      job(() => this.refreshHoldingLock(definition, true)),
    );
  }

  /**
   * A refresh, recorded on the rollup's job however it ended (recordRefresh), by refresh_rollup and the
   * refresh jobs alike; `scheduled`: a run of the job. A failed one records its audiences' errors: every
   * audience's when each failed on its own rows, else none, so that no earlier refresh's stay.
   */
  private async refreshHoldingLock(definition: RollupDefinition, scheduled: boolean): Promise<RefreshOutcome> {
    const failures: FailedAudience[] = [];
    let outcome: RefreshOutcome;
    try {
      outcome = await this.refreshed(definition, failures);
    } catch (error) {
      const failedAudiences = failures.map(({ audience, error: e }) => ({ audience, error: e }));
      await recordRefresh(this.metadata, definition.name, { error, failedAudiences }, scheduled).catch(() => {});
      throw error;
    }
    await recordRefresh(this.metadata, definition.name, { outcome }, scheduled);
    return outcome;
  }

  /** refreshHoldingLock's refresh: `failures` gets the audiences whose rows failed it (see failingAudiences). */
  private async refreshed(definition: RollupDefinition, failures: FailedAudience[]): Promise<RefreshOutcome> {
    const snapshot = await this.snapshot();
    const definitions = await this.definitions();
    const state = await this.state(definition, snapshot);
    const watermark = await this.newWatermark(definition, snapshot, state.watermark);
    const tables = await this.tables.list();
    const context = readContext();
    // A view set is read first, holding its lock: the partitions and the last invalidation it consumes agree.
    const set = definition.viewSetBase
      ? await this.setRead(definition.base, snapshot, definitions, context, true)
      : undefined;
    const readAt: ReadAt = { snapshot, definitions, tables, context };
    // A kept bucket held for an audience is retention's postponement of its rows (see heldTable): read, never
    // recomputed, the other audiences' raw rows being gone.
    const kept = await this.keptBuckets(definition, snapshot);
    const pending = (await this.pending(definition, state, readAt)).filter((b) => !kept.has(b));
    const all: TableScope = { kind: 'all' };
    if (definition.sourceIsRollup) await this.viewSql(sourceRollup(definition, definitions), all, readAt);
    const time = quoteIdentifier(definition.timeColumn);
    const literal = (value: string): string => bucketLiteral(definition, value);
    const closed =
      watermark === null
        ? null
        : state.watermark === null
          ? { deleted: `bucket < ${literal(watermark)}`, rows: `${time} < ${literal(watermark)}` }
          : state.watermark === watermark
            ? null
            : {
                deleted: `(bucket >= ${literal(state.watermark)} AND bucket < ${literal(watermark)})`,
                rows: `(${time} >= ${literal(state.watermark)} AND ${time} < ${literal(watermark)})`,
              };
    // Buckets retention kept hold values their raw rows no longer have: a closed range leaves them as stored.
    const closedRange = closed && kept.size > 0 ? leavingKept(definition, snapshot, closed) : closed;
    const wasHeld = [...(await this.heldBuckets(definition, snapshot, null)).keys()].some((b) => !kept.has(b));
    // Nothing to recompute, hold again or delete: nothing is written, so no DuckLake snapshot is made and what
    // readers keep at the lake's snapshot (rewrites, states, file listings) stays theirs. The state keeps its older
    // source snapshot, and every later read finds the same pending buckets as from this one: the changes since
    // that snapshot made none pending here (a bucket kept from retention stays kept, the watermark is the same).
    const idle =
      state.watermark !== null &&
      closed === null &&
      pending.length === 0 &&
      !wasHeld &&
      !(await this.retentionDue(definition, snapshot));
    if (idle) return { ranges: 0, pendingBuckets: 0, watermark, failedAudiences: [] };
    const pendingLiterals = pending.map(literal);
    // The closed range and the pending buckets (all before the old watermark), each range a scan of its own.
    const rowFilters = [
      ...(closedRange ? [{ rows: closedRange.rows, buckets: [] }] : []),
      ...pendingScans(definition, pending),
    ];
    const deleteFilters = [
      closedRange?.deleted,
      pendingLiterals.length > 0 ? `bucket IN (${pendingLiterals.join(', ')})` : null,
    ].filter((f): f is string => !!f);
    const ranges =
      state.watermark === null
        ? watermark === null
          ? 0
          : 1
        : await this.rangeCount(definition, [...pending, ...(closed ? [state.watermark] : [])]);
    const source = this.sourceRows(definition, snapshot, all, context);
    const store = (failed: readonly FailedAudience[]): Promise<void> =>
      this.lakeTransaction(async (run, session) => {
        if (deleteFilters.length > 0) {
          const mat = materializedTable(definition.name);
          await run(`DELETE FROM ${mat} WHERE ${deleteFilters.join(' OR ')}`);
          await run(
            `INSERT INTO ${mat} ${aggregateOverEach(definition, withoutAudiences(source, failed), rowFilters)}`,
          );
        }
        if (wasHeld || failed.length > 0) {
          await run(
            `DELETE FROM ${heldTable} WHERE rollup = ${quoteLiteral(definition.name)} AND postponed_since IS NULL`,
          );
          const held = recordFailed(heldTable, definition, failed);
          if (held) await run(held);
        }
        await this.applyRetention(definition, snapshot, session);
        await run(`DELETE FROM ${stateTable(definition.name)}`);
        await run(
          `INSERT INTO ${stateTable(definition.name)} VALUES (${watermark === null ? 'NULL' : literal(watermark)}, ${set ? set.sequence : snapshot}, now()::TIMESTAMP)`,
        );
      });
    try {
      await store([]);
    } catch (error) {
      const split =
        deleteFilters.length > 0 && isAudienceRowsError(error)
          ? await this.failingAudiences(definition, source, rowFilters)
          : null;
      if (!split || split.failed.length === 0) throw error;
      failures.push(...split.failed);
      // Every audience's rows failing, each on its own, is the data's fault as one's is, and is held alike: a refresh
      // that failed whole would keep the watermark, and a key of an audience without rows there would learn from it
      // (and from the job's retry) that another audience's rows fail.
      await store(split.failed);
    }
    if (set && state.sourceSnapshot !== null)
      await forgetInvalidations(this.metadata, definition.name, state.sourceSnapshot);
    return {
      ranges,
      pendingBuckets: pending.length,
      watermark,
      failedAudiences: failures.map(({ audience, error }) => ({ audience, error })),
    };
  }

  /**
   * The audiences whose rows fail a rollup's aggregate on their own (each aggregated alone, its buckets
   * read whole), with their error and the buckets of their rows the scans cover, out of how many audiences
   * the scans read: one tenant's row the aggregate fails on (a cast of a value it sent), or its rows' sketches past
   * their memory budget (isAudienceRowsError), then keeps no other tenant's buckets from being stored. The rows of no audience (a view set's row whose extract left its audience
   * NULL), which a read of the view set shows admins alone, are a group of their own as in the rollup's rows.
   */
  private async failingAudiences(
    definition: RollupDefinition,
    source: string,
    scans: readonly RowScan[],
  ): Promise<{ readonly audiences: number; readonly failed: FailedAudience[] }> {
    const covered = scans.map((scan) => `(${scan.rows})`).join(' OR ');
    const found = await this.engine.values(
      `SELECT DISTINCT audience FROM (${source}) WHERE (${covered}) ORDER BY audience NULLS FIRST`,
    );
    const audiences = found.map(([a]) => (typeof a === 'string' ? a : null));
    const failed: FailedAudience[] = [];
    for (const audience of audiences) {
      const rows = `SELECT * FROM (${source}) WHERE ${ofAudience(audience)}`;
      try {
        // hash of each whole row: every aggregate is computed (a count alone could leave them out).
        await this.engine.values(
          `SELECT count(*) FROM (${aggregateOverEach(definition, rows, scans)}) AS t WHERE hash(t) IS NULL`,
        );
      } catch (audienceError) {
        if (!isAudienceRowsError(audienceError)) throw audienceError;
        const buckets = await this.engine.values(
          `SELECT DISTINCT CAST(${bucketSql(definition, definition.timeColumn)} AS VARCHAR) FROM (${rows}) WHERE ${covered}`,
        );
        failed.push({
          audience,
          error: (audienceError as Error).message,
          buckets: buckets.map(([b]) => String(b)),
          retryable: !isDataError(audienceError),
        });
      }
    }
    return { audiences: audiences.length, failed };
  }

  /**
   * set_rollup_retention's work at a refresh: the buckets older than it are deleted, and with them the records of
   * what the source's retention kept of them without an audience's rows (lostTable) or postponed (heldTable), which
   * tell of those buckets alone (docs/rollups.md: a lost bucket's record lives as long as the bucket; a postponed
   * one's rows, no longer kept for it, then go at the source's next retention).
   */
  private async applyRetention(definition: RollupDefinition, snapshot: bigint, session: EngineSession): Promise<void> {
    for (const { table, rows } of retentionDeletes(definition, snapshot))
      await this.engine.execute(`DELETE FROM ${table} WHERE ${rows}`, { session });
  }

  /** Whether applyRetention at `snapshot` would delete a row: a bucket past the rollup's retention, or a record of one. */
  private async retentionDue(definition: RollupDefinition, snapshot: bigint): Promise<boolean> {
    const deletes = retentionDeletes(definition, snapshot);
    if (deletes.length === 0) return false;
    const [[due]] = await this.engine.values(
      `SELECT ${deletes.map(({ table, rows }) => `EXISTS (SELECT 1 FROM ${at(table, snapshot)} WHERE ${rows})`).join(' OR ')}`,
    );
    return due === true;
  }

  /**
   * A series table's retention DELETE (`deleting` the rows `rowsGone` selects), in one DuckLake
   * transaction with what the table's rollups keep of those rows: for every bucket of them not kept
   * already, each rollup stores its aggregate of the raw rows as they are just before the delete (a
   * pending bucket's correction included: what a read answered before retention it answers after)
   * and records the bucket as kept, never pending again and never recomputed from what is left.
   * An audience whose rows run out of memory in a rollup's aggregate keeps its rows of those buckets
   * for a later run (keepBuckets). Holds the rollups' refresh locks so that no refresh recomputes a
   * bucket meanwhile (waiting for a running one as refresh_rollup does).
   */
  async retain(table: string, rowsGone: string, deleting: (rows: string) => string): Promise<number> {
    const onTable = [...(await this.definitions()).values()].filter(
      (d) => d.base === table && !d.sourceIsRollup && !d.viewSetBase,
    );
    if (onTable.length === 0) return this.engine.execute(deleting(rowsGone));
    const keeping = (failed: ReadonlyMap<string, readonly FailedAudience[]>): Promise<number> =>
      this.lakeTransaction(async (run, session) => {
        const spared: string[] = [];
        for (const definition of onTable)
          spared.push(...(await this.keepBuckets(definition, rowsGone, session, failed.get(definition.name) ?? [])));
        return run(deleting(spared.length > 0 ? `(${rowsGone}) AND NOT (${spared.join(' OR ')})` : rowsGone));
      });
    // One audience's row a rollup's aggregate fails on stops neither the retention nor the other audiences' keep.
    const keepingWhatAggregates = async (): Promise<number> => {
      try {
        return await keeping(new Map());
      } catch (error) {
        if (!isAudienceRowsError(error)) throw error;
        const failed = new Map<string, FailedAudience[]>();
        for (const definition of onTable) {
          const postponed = (await this.postponedBuckets(definition)).map((p) => p.bucket);
          const buckets = inBucketOrder(definition, [
            ...new Set([...(await this.bucketsGone(definition, rowsGone)), ...postponed]),
          ]);
          if (buckets.length === 0) continue;
          const literals = buckets.map((b) => bucketLiteral(definition, b));
          const scans = [{ rows: inBuckets(definition, literals)!, buckets: [] }];
          failed.set(definition.name, (await this.failingAudiences(definition, baseRowsOf(definition), scans)).failed);
        }
        return keeping(failed);
      }
    };
    const holding = (rest: readonly RollupDefinition[]): Promise<number> =>
      rest.length > 0
        ? this.holdingRefreshLock(rest[0], `retention of '${table}'`, () => holding(rest.slice(1)))
        : keepingWhatAggregates();
    return holding(onTable);
  }

  /**
   * Writes each rollup's stored rows and deletes DuckLake keeps inlined in its catalog to files (inlined-flush.ts): a
   * refresh recomputing a few buckets writes a few rows, which DuckLake inlines, and until they are in files the
   * never-stale read reads the stored rows through DuckLake's scan instead of the files (fileRows). Under the rollup's
   * refresh lock, as its other writers (a refresh's delete and insert, retention's kept buckets) run; a rollup whose
   * refresh holds it now is left to the next call. Its state table stays inlined: its one row is read in Postgres
   * (inlinedRows).
   */
  async flushStored(): Promise<FlushOutcome[]> {
    const stores = new Map([...(await this.definitions()).values()].map((d) => [materializedName(d.name), d]));
    const out: FlushOutcome[] = [];
    for (const store of await inlinedTables(this.metadata, rollupSchema, [...stores.keys()])) {
      const flushed = await this.metadata.locks.tryWhileHolding(refreshLock(stores.get(store)!), () =>
        flushTable(this.engine, rollupSchema, store),
      );
      if (flushed) out.push(flushed);
    }
    return out;
  }

  /** Runs `work` holding a rollup's refresh lock, waiting for a refresh running anywhere as refresh_rollup does. */
  private async holdingRefreshLock<T>(definition: RollupDefinition, who: string, work: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + refreshWaitMs;
    for (;;) {
      const done = await this.metadata.locks.tryWhileHolding(refreshLock(definition), async () => ({
        value: await work(),
      }));
      if (done) return done.value;
      if (Date.now() > deadline)
        throw rollupErrors.error('ROLLUP_REFRESH_BUSY', `${who}: a refresh of '${definition.name}' is still running`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  /** `work` in one DuckLake transaction on a session of its own: committed whole, or rolled back. */
  private async lakeTransaction<T>(
    work: (run: (sql: string) => Promise<number>, session: EngineSession) => Promise<T>,
  ): Promise<T> {
    const session = await this.engine.openSession();
    const run = (sql: string): Promise<number> => this.engine.execute(sql, { session });
    try {
      await run('BEGIN TRANSACTION');
      const value = await work(run, session);
      await run('COMMIT');
      return value;
    } catch (error) {
      await run('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      session.close();
    }
  }

  /** The buckets of a rollup's base rows `rowsGone` selects, not kept already (DuckDB's text of each, in order). */
  private async bucketsGone(
    definition: RollupDefinition,
    rowsGone: string,
    session?: EngineSession,
  ): Promise<string[]> {
    const rows = await this.engine.values(
      `SELECT CAST(b AS VARCHAR) FROM (SELECT DISTINCT ${bucketSql(definition, definition.baseTimeColumn)} AS b
         FROM ${lakeTable(definition.base)} WHERE ${rowsGone})
        WHERE b IS NOT NULL AND CAST(b AS VARCHAR) NOT IN (SELECT bucket FROM ${keptTable} WHERE rollup = ${quoteLiteral(definition.name)})
        ORDER BY b`,
      session,
    );
    return rows.map(([b]) => String(b));
  }

  /**
   * retain's work for one rollup, in its transaction: the `failed` audiences' rows left out of what it keeps. Those of
   * a data error are recorded lost (lostTable). Those that ran out of memory (retryable) are postponed: the kept
   * bucket is held for that audience (heldTable, postponed_since), read from its raw rows (which the delete leaves:
   * the conditions answered select them) and stored by a later run that aggregates them, or recorded lost at the
   * first run past postponedDays. A bucket held for an audience by a refresh is kept too: no raw row is left to read
   * it from.
   */
  private async keepBuckets(
    definition: RollupDefinition,
    rowsGone: string,
    session: EngineSession,
    failed: readonly FailedAudience[],
  ): Promise<string[]> {
    const buckets = await this.bucketsGone(definition, rowsGone, session);
    const postponed = await this.postponedBuckets(definition, session);
    if (buckets.length === 0 && postponed.length === 0) return [];
    const name = quoteLiteral(definition.name);
    const stored = materializedTable(definition.name);
    const run = (sql: string): Promise<number> => this.engine.execute(sql, { session });
    const rowsIn = (of: readonly string[]): string =>
      inBuckets(
        definition,
        inBucketOrder(definition, of).map((b) => bucketLiteral(definition, b)),
      )!;
    const heldOf = (audience: string | null, of: readonly string[]): string =>
      `DELETE FROM ${heldTable} WHERE rollup = ${name} AND postponed_since IS NOT NULL AND ${ofAudience(audience)}
         AND bucket IN (${of.map(quoteLiteral).join(', ')})`;
    if (buckets.length > 0) {
      const literals = buckets.map((b) => bucketLiteral(definition, b));
      await run(`DELETE FROM ${stored} WHERE bucket IN (${literals.join(', ')})`);
      await run(
        `INSERT INTO ${stored} ${aggregateOver(definition, withoutAudiences(baseRowsOf(definition), failed), rowsIn(buckets))}`,
      );
      const texts = buckets.map(quoteLiteral).join(', ');
      await run(`INSERT INTO ${keptTable} SELECT ${name}, unnest([${texts}])`);
      await run(`DELETE FROM ${heldTable} WHERE rollup = ${name} AND bucket IN (${texts})`);
    }
    // A postponed audience whose rows aggregate now has them stored: its bucket's other rows are already.
    const storing = new Map<string | null, string[]>();
    for (const p of postponed)
      if (!failed.some((f) => f.audience === p.audience))
        storing.set(p.audience, [...(storing.get(p.audience) ?? []), p.bucket]);
    for (const [audience, of] of storing) {
      const rows = `SELECT * FROM ${lakeTable(definition.base)} WHERE ${ofAudience(audience)}`;
      await run(`INSERT INTO ${stored} ${aggregateOver(definition, rows, rowsIn(of))}`);
      await run(heldOf(audience, of));
    }
    const kept = new Set(buckets);
    const lost: FailedAudience[] = [];
    const postponing: FailedAudience[] = [];
    const spared: string[] = [];
    for (const f of failed) {
      const fresh = f.buckets.filter((b) => kept.has(b));
      const mine = postponed.filter((p) => p.audience === f.audience);
      const due = mine.filter((p) => !f.retryable || p.overdue).map((p) => p.bucket);
      const waiting = mine.filter((p) => f.retryable && !p.overdue).map((p) => p.bucket);
      lost.push({ ...f, buckets: [...(f.retryable ? [] : fresh), ...due] });
      if (due.length > 0) await run(heldOf(f.audience, due));
      if (!f.retryable) continue;
      postponing.push({ ...f, buckets: fresh });
      if (fresh.length + waiting.length > 0)
        spared.push(`(${ofAudience(f.audience)} AND ${rowsIn([...fresh, ...waiting])})`);
    }
    const lostRecords = recordFailed(lostTable, definition, lost);
    if (lostRecords) await run(lostRecords);
    const postponedRecords = recordFailed(heldTable, definition, postponing, true);
    if (postponedRecords) await run(postponedRecords);
    return spared;
  }

  /**
   * A rollup's kept buckets whose audience's rows retention postponed (see keepBuckets), each with the audience and
   * whether it is overdue (postponed postponedDays ago or more).
   */
  private async postponedBuckets(
    definition: RollupDefinition,
    session?: EngineSession,
  ): Promise<Array<{ readonly bucket: string; readonly audience: string | null; readonly overdue: boolean }>> {
    const rows = await this.engine.values(
      `SELECT bucket, audience, postponed_since <= now()::TIMESTAMP - INTERVAL ${postponedDays} DAY FROM ${heldTable}
        WHERE rollup = ${quoteLiteral(definition.name)} AND postponed_since IS NOT NULL`,
      session,
    );
    return rows.map(([bucket, audience, overdue]) => ({
      bucket: String(bucket),
      audience: typeof audience === 'string' ? audience : null,
      overdue: overdue === true,
    }));
  }

  /** The buckets retention kept of a rollup as of a snapshot (fixed once the snapshot exists, so kept for every rollup). */
  private async keptBuckets(definition: RollupDefinition, snapshot: bigint): Promise<ReadonlySet<string>> {
    return (await this.bucketsOf(keptTable, keptName, this.kept, snapshot, 'rollup')).get(definition.name) ?? new Set();
  }

  /**
   * The buckets refreshes held of a rollup as of a snapshot, for an audience whose rows failed (see heldTable), of
   * these audiences (null: every audience's), each with the held audiences of these. The other audiences' rows of
   * such a bucket are stored whole by the refresh that held it, and kept as exact as any stored bucket's (a write to
   * one makes the bucket pending), so a read reads them stored; it reads the held audiences' rows of the bucket raw.
   */
  private async heldBuckets(
    definition: RollupDefinition,
    snapshot: bigint,
    audiences: ReadonlySet<string> | null,
  ): Promise<ReadonlyMap<string, ReadonlyArray<string | null>>> {
    // An audience is held as '=' and its name, the rows of no audience (null) as '': those are no key's audience,
    // pending to admins alone, who read them.
    const byAudience = await this.bucketsOf(
      heldTable,
      heldName,
      this.held,
      snapshot,
      `rollup || chr(0) || coalesce('=' || audience, '')`,
    );
    const held = new Map<string, Array<string | null>>();
    const prefix = `${definition.name}\u0000`;
    for (const [key, buckets] of byAudience) {
      if (!key.startsWith(prefix)) continue;
      const audience = key.length === prefix.length ? null : key.slice(prefix.length + 1);
      if (audiences !== null && (audience === null || !audiences.has(audience))) continue;
      for (const bucket of buckets) held.set(bucket, [...(held.get(bucket) ?? []), audience]);
    }
    return held;
  }

  /**
   * The buckets in one of the lake tables of buckets by rollup, as of a snapshot, by `group` (an expression over its
   * columns): read once for every rollup.
   */
  private async bucketsOf(
    table: string,
    name: string,
    cache: Map<string, Promise<ReadonlyMap<string, ReadonlySet<string>>>>,
    snapshot: bigint,
    group: string,
  ): Promise<ReadonlyMap<string, ReadonlySet<string>>> {
    const key = String(snapshot);
    let all = cache.get(key);
    if (!all) {
      const reading = this.sinceChange(table, rollupSchema, name, snapshot, async () => {
        const byGroup = new Map<string, Set<string>>();
        for (const [of, bucket] of await this.engine.values(`SELECT ${group}, bucket FROM ${at(table, snapshot)}`)) {
          const set = byGroup.get(String(of)) ?? new Set<string>();
          set.add(String(bucket));
          byGroup.set(String(of), set);
        }
        return byGroup as ReadonlyMap<string, ReadonlySet<string>>;
      });
      all = reading;
      remember(cache, key, reading);
      reading.catch(() => cache.get(key) === reading && cache.delete(key));
    }
    return all;
  }

  /** How many runs of consecutive buckets a set of buckets makes. */
  private async rangeCount(definition: RollupDefinition, buckets: readonly string[]): Promise<number> {
    if (buckets.length === 0) return 0;
    const type = definition.integer ? 'BIGINT' : 'TIMESTAMP';
    const step = definition.integer ? String(BigInt(definition.grain)) : `INTERVAL ${quoteLiteral(definition.grain)}`;
    const [[count]] = await this.engine.values(
      `SELECT count(*) FROM (
         SELECT b, lag(b) OVER (ORDER BY b) AS previous
           FROM (SELECT DISTINCT unnest([${buckets.map((b) => quoteLiteral(b)).join(', ')}]::${type}[]) AS b))
       WHERE previous IS NULL OR previous + ${step} <> b`,
    );
    return Number(count);
  }

  /** DuckLake's latest snapshot id. */
  private snapshot(): Promise<bigint> {
    return this.tables.currentSnapshot();
  }

  /** A rollup's state as of a snapshot. */
  private async state(definition: RollupDefinition, snapshot: bigint): Promise<RollupState> {
    return (await this.statesAt([definition], snapshot)).get(definition.name)!;
  }

  /**
   * What `read` reads of DuckLake table `schema.table` at `snapshot`, or the latest read (under `key`)
   * at an earlier snapshot when DuckLake recorded no change of that table since (lake-changes.ts): a
   * rollup's state and the buckets retention kept change at refreshes, not with every write of a source.
   */
  private async sinceChange<T>(
    key: string,
    schema: string,
    table: string,
    snapshot: bigint,
    read: () => Promise<T>,
  ): Promise<T> {
    const unchanged = await this.readBefore<T>(key, schema, table, snapshot);
    if (unchanged !== undefined) return unchanged;
    const value = read();
    this.noteRead(key, snapshot, value);
    return value;
  }

  /** The latest read under `key` (see sinceChange) when DuckLake recorded no change of `schema.table` from it to `snapshot`. */
  private async readBefore<T>(key: string, schema: string, table: string, snapshot: bigint): Promise<T | undefined> {
    const last = this.latestReads.get(key) as { snapshot: bigint; value: Promise<T> } | undefined;
    if (!last || last.snapshot > snapshot) return undefined;
    // A flush counts: a rollup's stored rows listed while some were inlined (no files to read) are listed again.
    const change = await this.lakeChanges.between(schema, table, last.snapshot, snapshot, 'other').catch(() => 'other');
    if (change !== 'none') return undefined;
    if (snapshot > last.snapshot && this.latestReads.get(key) === last)
      this.latestReads.set(key, { snapshot, value: last.value });
    return last.value;
  }

  /** Keeps `value`, read at `snapshot`, as the latest read under `key` unless a later one is kept (see sinceChange). */
  private noteRead(key: string, snapshot: bigint, value: Promise<unknown>): void {
    const latest = this.latestReads.get(key);
    if (!latest || latest.snapshot < snapshot) this.latestReads.set(key, { snapshot, value });
    value.catch(() => this.latestReads.get(key)?.value === value && this.latestReads.delete(key));
  }

  /** The start of the bucket still filling: now's, or for integer time the largest value's; never moving back. */
  private async newWatermark(
    definition: RollupDefinition,
    snapshot: bigint,
    previous: string | null,
  ): Promise<string | null> {
    const current = definition.integer
      ? `(SELECT ${bucketSql(definition, definition.baseTimeColumn)} FROM (SELECT max(${quoteIdentifier(definition.baseTimeColumn)}) AS ${quoteIdentifier(definition.baseTimeColumn)} FROM ${at(`${lakeCatalog}.main.${quoteIdentifier(definition.base)}`, snapshot)}))`
      : `time_bucket(INTERVAL ${quoteLiteral(definition.grain)}, now()::TIMESTAMP)`;
    const previousSql = previous === null ? 'NULL' : bucketLiteral(definition, previous);
    const [[value]] = await this.engine.values(`SELECT CAST(greatest(${current}, ${previousSql}) AS VARCHAR)`);
    return text(value);
  }

  /**
   * The pending buckets of a rollup at a snapshot: the buckets (of its grain) of every source row
   * inserted, updated (old and new) or deleted since its refresh snapshot, below its watermark.
   * Buckets some of whose raw rows the base table's retention deleted keep their stored values. The buckets a
   * refresh held for an audience the read reads are pending too, whichever way the changes are found.
   */
  private async pending(definition: RollupDefinition, state: RollupState, readAt: ReadAt): Promise<string[]> {
    const { changed, held } = await this.pendingParts(definition, state, readAt);
    return held.size === 0 ? [...changed] : inBucketOrder(definition, [...changed, ...held.keys()]);
  }

  /**
   * A read's pending buckets (see pending) in two parts: those the source's changes make pending, whose every row it
   * aggregates raw, and the other buckets held for an audience it reads, with those audiences, whose rows alone it
   * aggregates raw (the others' are stored whole: see heldBuckets).
   */
  private async pendingParts(
    definition: RollupDefinition,
    state: RollupState,
    readAt: ReadAt,
    /** The buckets the source's changes make pending, when the caller finds them its own way (see storedRows). */
    changes: Promise<string[]> = this.changedPending(definition, state, readAt),
  ): Promise<PendingParts> {
    const [changed, held] = await Promise.all([
      changes,
      this.heldBuckets(definition, readAt.snapshot, readAt.context.audiences),
    ]);
    // A refresh held buckets from what it aggregated, all before its watermark; retention postponed kept buckets, which
    // may lie at or after it (keptFrom: the tail leaves them out).
    const changedSet = new Set(changed);
    return { changed, held: new Map([...held].filter(([b]) => !changedSet.has(b))) };
  }

  /** The pending buckets of a rollup from the changes to its source (see pending), without the buckets held. */
  private async changedPending(
    definition: RollupDefinition,
    state: RollupState,
    { snapshot, definitions, tables, context }: ReadAt,
  ): Promise<string[]> {
    if (definition.viewSetBase) return this.pendingOfViewSet(definition, snapshot, state, definitions, context);
    if (state.watermark === null || state.sourceSnapshot === null || state.sourceSnapshot >= snapshot) return [];
    const base = tables.get(definition.base);
    const all = await this.changedBuckets(definition, state.sourceSnapshot + 1n, snapshot, state.watermark);
    // A rollup of the table keeps the buckets its retention took rows of (retain). A rollup of a
    // rollup reads its source's view, which keeps those (so the table's retention changes nothing
    // here); it leaves out only the buckets its source's own retention (set_rollup_retention)
    // deleted buckets of: recomputed, they would be the fragment left.
    const kept = definition.sourceIsRollup ? new Set<string>() : await this.keptBuckets(definition, snapshot);
    const changed = all.filter((b) => !kept.has(b));
    if (changed.length === 0) return [];
    const horizonOf = definition.sourceIsRollup ? sourceRollup(definition, definitions).retention : null;
    // Without a horizon, the buckets below the watermark are picked here when they can be (beforeHere).
    const watermark = state.watermark;
    const before = horizonOf ? null : beforeHere(definition, watermark, changed);
    if (before) return inBucketOrder(definition, changed.filter(before));
    const filters = [`b IS NOT NULL`, `b < ${bucketLiteral(definition, watermark)}`];
    // The source deletes its buckets that start before its horizon (applyRetention): a bucket
    // starting before it may hold one of them.
    if (base && horizonOf) filters.push(`b >= ${horizonSql(definition, base, horizonOf, snapshot)}`);
    return this.bucketsWhere(definition, changed, filters);
  }

  /** Of a rollup's buckets (DuckDB's texts), those meeting conditions on `b` in DuckDB, in order. */
  private async bucketsWhere(
    definition: RollupDefinition,
    buckets: readonly string[],
    filters: readonly string[],
  ): Promise<string[]> {
    const type = definition.integer ? 'BIGINT' : 'TIMESTAMP';
    const rows = await this.engine.values(
      `SELECT CAST(b AS VARCHAR) FROM (SELECT unnest([${buckets.map(quoteLiteral).join(', ')}]::${type}[]) AS b)
       WHERE ${filters.join(' AND ')} ORDER BY b`,
    );
    return rows.map(([b]) => String(b));
  }

  /**
   * The buckets retention kept of a rollup of a series table, in order, split at `bound`: those before it and those at
   * or after it. At or after its watermark: their rows expired before a refresh passed them (its last one older than
   * the table's retention), so the raw rows from the watermark on lack them (but a postponed audience's, read as held:
   * see keepBuckets) and a read takes them stored, as the next refresh leaves them. Before its covered range (a
   * rollup still being backfilled): the raw rows read there lack them the same way. None but after such a retention.
   */
  private async keptAround(
    definition: RollupDefinition,
    snapshot: bigint,
    bound: string,
  ): Promise<{ readonly before: string[]; readonly from: string[] }> {
    if (definition.sourceIsRollup || definition.viewSetBase) return { before: [], from: [] };
    const kept = inBucketOrder(definition, [...(await this.keptBuckets(definition, snapshot))]);
    if (kept.length === 0) return { before: [], from: [] };
    const isBefore = beforeHere(definition, bound, kept);
    const before = isBefore
      ? kept.filter(isBefore)
      : await this.bucketsWhere(definition, kept, [`b < ${bucketLiteral(definition, bound)}`]);
    const earlier = new Set(before);
    return { before, from: kept.filter((b) => !earlier.has(b)) };
  }

  /**
   * The pending buckets of a rollup of a view set: those invalidated after the last one its refresh
   * consumed, below its watermark. Buckets some of whose rows the lake's retention took are never
   * pending (readViewSet leaves them out): a late block must not replace them with a fragment.
   * `kept`: from the invalidations kept between statements, without reading the set.
   */
  private async pendingOfViewSet(
    definition: RollupDefinition,
    snapshot: bigint,
    state: RollupState,
    definitions: ReadonlyMap<string, RollupDefinition>,
    context: ReadContext,
    kept = false,
  ): Promise<string[]> {
    if (state.watermark === null) return [];
    const consumed = state.sourceSnapshot ?? 0n;
    const invalidations = kept
      ? await this.keptInvalidations(definition, consumed)
      : (await this.setRead(definition.base, snapshot, definitions, context)).invalidations;
    const changed = [
      ...new Set(
        invalidations.filter((i) => i.rollup === definition.name && i.sequence > consumed).map((i) => i.bucket),
      ),
    ];
    if (changed.length === 0) return [];
    const rows = await this.engine.values(
      `SELECT CAST(b AS VARCHAR) FROM (SELECT unnest([${changed.map(quoteLiteral).join(', ')}]::TIMESTAMP[]) AS b)
       WHERE b < ${bucketLiteral(definition, state.watermark)} ORDER BY b`,
    );
    return rows.map(([b]) => String(b));
  }

  /**
   * The invalidations of a view-set rollup numbered after `after`, kept between statements until
   * any process records more of them (or buckets retention keeps as stored): that transaction (a
   * change to the set's partitions) notifies
   * the rollup's name on the change feed, delivered at its commit together with the partitions' own
   * notifications, which move the partition cache the set's raw rows are read through, so both
   * agree on what was seen. A read that a new invalidation overtook is used once, not kept; while
   * the feed is not listening, every read asks Postgres.
   */
  private async keptInvalidations(definition: RollupDefinition, after: bigint): Promise<ViewSetRead['invalidations']> {
    const versionOf = (): string | undefined =>
      this.metadata.changes.version(rollupInvalidationsChannel, definition.name);
    const version = versionOf();
    const read = (): Promise<ViewSetRead['invalidations']> =>
      invalidationsAfter(this.metadata, [definition.name], after);
    if (version === undefined) return read();
    let entry = this.invalidations.get(definition.name);
    if (!entry || entry.version !== version || entry.after > after) {
      const fresh = { version, after, read: read() };
      entry = fresh;
      remember(this.invalidations, definition.name, fresh);
      const forget = (): void => {
        if (this.invalidations.get(definition.name) === fresh) this.invalidations.delete(definition.name);
      };
      fresh.read.then(() => versionOf() !== version && forget(), forget);
    }
    return entry.read;
  }

  /**
   * A view set as the rollups on it read it for this read (see readViewSet): read once, after the
   * states of every rollup on it, for the invalidations after the oldest state's.
   */
  private async setRead(
    base: string,
    snapshot: bigint,
    definitions: ReadonlyMap<string, RollupDefinition>,
    context: ReadContext,
    exclusive = false,
  ): Promise<ViewSetRead> {
    const kept = context.sets.get(base);
    if (kept) return kept;
    const view = this.viewSets?.get(base);
    if (!view || !this.viewSets)
      throw rollupErrors.error('ROLLUP_SOURCE_NOT_FOUND', `view set '${base}', which rollups read, is not loaded`);
    const onBase = [...definitions.values()].filter((d) => d.viewSetBase && d.base === base);
    let after: bigint | null = null;
    for (const d of onBase) {
      const consumed = (await this.state(d, snapshot)).sourceSnapshot ?? 0n;
      if (after === null || consumed < after) after = consumed;
    }
    const read = await readViewSet(
      this.metadata,
      this.viewSets,
      view,
      onBase.map((d) => d.name),
      after ?? 0n,
      exclusive,
    );
    context.sets.set(base, read);
    return read;
  }

  /**
   * Records, in the transaction of a change to a view set's partitions, the buckets it changed for
   * the rollups on the set (the materializer calls it for every change).
   */
  async partitionsChanged(tx: MetadataQueries, change: PartitionChange): Promise<void> {
    if (!this.viewSets) return;
    if (change.expired) await this.storeBeforeExpiry(tx, change, this.viewSets);
    await recordInvalidations(tx, this.engine, this.viewSets, change);
  }

  /**
   * Before the lake's retention keeps the buckets of the rows it takes (recordInvalidations), every
   * pending bucket of a rollup on the set is stored as the set's rows give it just before, the
   * retiring files still read: kept, a bucket is never pending again, and would otherwise keep its
   * value from before the change that made it pending. Holds the rollup's refresh lock meanwhile; a
   * refresh after it waits for the retention's commit (recordInvalidations' lock) and then finds the
   * bucket kept. A bucket still pending after the retention is read from its rows as before. With a
   * refresh running it fails at once rather than wait inside the retention's transaction (whose
   * partitions a change the refresh waits for may be waiting for): the next housekeeping retries.
   */
  private async storeBeforeExpiry(
    tx: MetadataQueries,
    change: PartitionChange,
    sources: ViewSetSources,
  ): Promise<void> {
    const view = sources.get(change.viewSetName);
    const onSet = [...(await this.definitions()).values()].filter(
      (d) => d.viewSetBase && !d.sourceIsRollup && d.base === change.viewSetName,
    );
    if (!view || onSet.length === 0) return;
    let files: Promise<string[]> | undefined;
    for (const definition of onSet) {
      const done = await this.metadata.locks.tryWhileHolding(refreshLock(definition), async () => {
        const state = await this.state(definition, await this.snapshot());
        if (state.watermark === null) return true;
        const invalidated = await invalidationsAfter(tx, [definition.name], state.sourceSnapshot ?? 0n);
        if (invalidated.length === 0) return true;
        const buckets = await this.engine.values(
          `SELECT DISTINCT CAST(b AS VARCHAR) FROM (SELECT unnest([${invalidated.map((i) => quoteLiteral(i.bucket)).join(', ')}]::TIMESTAMP[]) AS b)
            WHERE b < ${bucketLiteral(definition, state.watermark)} ORDER BY 1`,
        );
        if (buckets.length === 0) return true;
        files ??= filesBeforeExpiry(tx, sources, view, change);
        const literals = buckets.map(([b]) => bucketLiteral(definition, String(b)));
        const rows = sessionRelation({ view, files: await files }, { kind: 'all' });
        await this.lakeTransaction(async (run) => {
          await run(`DELETE FROM ${materializedTable(definition.name)} WHERE bucket IN (${literals.join(', ')})`);
          await run(
            `INSERT INTO ${materializedTable(definition.name)} ${aggregateOver(definition, rows, inBuckets(definition, literals)!)}`,
          );
        }).catch((error: unknown) => {
          // A file deleted or damaged outside Orrery: as recordInvalidations does, retention goes on,
          // and those buckets stay pending, read from what is left.
          if (!isFileReadFailure(error)) throw error;
        });
        return true;
      });
      if (!done)
        throw rollupErrors.error(
          'ROLLUP_REFRESH_BUSY',
          `retention of '${change.viewSetName}': a refresh of '${definition.name}' is running; the next housekeeping retries`,
        );
    }
  }

  /** A rollup's view set base as the rewrite reads it: its columns, timed by the rollup's time column; undefined when it is gone. */
  private viewSetTable(definition: RollupDefinition): SeriesTable | undefined {
    const view = this.viewSets?.get(definition.base);
    return view && { name: view.name, columns: view.columns, timeColumn: definition.baseTimeColumn };
  }

  /** The columns of a rollup's base: its series table's or its view set's; undefined when it is gone. */
  private baseOf(
    definition: Pick<RollupDefinition, 'base' | 'viewSetBase'>,
    tables: ReadonlyMap<string, SeriesTable>,
  ): ViewSet | SeriesTable | undefined {
    return definition.viewSetBase ? this.viewSets?.get(definition.base) : tables.get(definition.base);
  }

  /**
   * The buckets (of the rollup's grain) of the base rows that changed from snapshot `from` to `to`,
   * all those below `watermark` among them: DuckLake's change feed between two snapshots never
   * changes, so what was read up to an earlier snapshot is kept per base, bucket, `from` and
   * watermark, and only the snapshots since are read. Snapshots that did not change the base, or only
   * inserted rows at or after the watermark (steady ingestion: lake-changes.ts), add no bucket below it
   * and are not read through DuckLake, the first time too: an idle refresh leaves the rollup's source
   * snapshot where it was, so under steady ingestion a process's first read (a server just started,
   * another of the cluster, the key dropped from latestChanges) spans up to a bucket of inserts. Read in
   * parts, an insert and a delete of one row may both be seen where the whole range would show neither:
   * a bucket more is read raw, never one less.
   */
  private async changedBuckets(
    definition: RollupDefinition,
    from: bigint,
    to: bigint,
    watermark: string,
  ): Promise<string[]> {
    const bucket = bucketSql(definition, definition.baseTimeColumn);
    const key = JSON.stringify([definition.base, bucket, String(from), watermark]);
    const last = this.latestChanges.get(key);
    if (last?.to === to) return last.buckets;
    let buckets: Promise<string[]>;
    if (last && last.to < to) {
      const before = last.buckets;
      const since = this.bucketsChangedAfter(definition, last.to, to, watermark);
      buckets = Promise.all([before, since]).then(([a, b]) => (b.length === 0 ? a : [...new Set([...a, ...b])]));
    } else buckets = this.bucketsChangedAfter(definition, from - 1n, to, watermark);
    if (!last || last.to < to) {
      this.latestChanges.delete(key);
      remember(this.latestChanges, key, { to, buckets });
      buckets.catch(() => this.latestChanges.get(key)?.buckets === buckets && this.latestChanges.delete(key));
    }
    return buckets;
  }

  /**
   * The buckets of the base rows changed after snapshot `after` up to `to` (see changedBuckets): none when the base
   * did not change (snapshots that only refreshed rollups) or only got rows at or after `watermark`, by DuckLake's
   * catalog; else its change feed's.
   */
  private async bucketsChangedAfter(
    definition: RollupDefinition,
    after: bigint,
    to: bigint,
    watermark: string,
  ): Promise<string[]> {
    // Unknown (the catalog's answer failed): read the feed.
    const how = await this.lakeChanges.between('main', definition.base, after, to).catch(() => 'other');
    if (how === 'none') return [];
    if (
      how === 'inserts' &&
      (await this.lakeChanges
        .insertsAtOrAfter('main', definition.base, definition.baseTimeColumn, after, to, watermark)
        .catch(() => false))
    )
      return [];
    return this.readChangedBuckets(definition, after + 1n, to);
  }

  /** The buckets of the base rows DuckLake's change feed shows changed from snapshot `from` to `to`. */
  private async readChangedBuckets(definition: RollupDefinition, from: bigint, to: bigint): Promise<string[]> {
    const bucket = bucketSql(definition, definition.baseTimeColumn);
    const key = `${definition.base}\u0000${bucket}\u0000${from}\u0000${to}`;
    const kept = this.changes.get(key);
    if (kept) return kept;
    const rows = await this.engine.values(
      `SELECT DISTINCT CAST(${bucket} AS VARCHAR)
         FROM ducklake_table_changes(${quoteLiteral(lakeCatalog)}, 'main', ${quoteLiteral(definition.base)}, ${from}, ${to})`,
    );
    const buckets = rows
      .map(([b]) => b)
      .filter((b): b is NonNullable<typeof b> => b !== null)
      .map(String);
    remember(this.changes, key, buckets);
    return buckets;
  }

  /** The rows a rollup reads from its source at a snapshot: the base table's, or the source rollup's view. */
  private sourceRows(definition: RollupDefinition, snapshot: bigint, scope: TableScope, context: ReadContext): string {
    if (!definition.sourceIsRollup && definition.viewSetBase) {
      const set = context.sets.get(definition.base);
      const view = this.viewSets?.get(definition.base);
      if (!set || !view) throw new Error(`the view set '${definition.base}' was not read first`);
      return sessionRelation({ view, files: set.files }, scope);
    }
    if (!definition.sourceIsRollup) return baseRows(definition.base, snapshot, scope);
    const view = context.views.get(definition.source);
    if (view === undefined) throw new Error(`the view of rollup '${definition.source}' was not built first`);
    return view;
  }

  /**
   * The rows of a lake table at a snapshot with `timeColumn` from `from` on (all when null) from the
   * files that hold them (fileRows), listed once per snapshot: a snapshot's files never change, and
   * every process numbers snapshots alike. Null when DuckLake's scan must read them (a listing that
   * fails included). From the latest listing of the same rows at an earlier snapshot when DuckLake's
   * catalog shows the table unchanged since, or changed only by data files added (fileRowsSince: under
   * steady ingestion, each read lists the new file alone).
   */
  private filesOf(
    schema: string,
    table: string,
    timeColumn: string,
    snapshot: bigint,
    from: string | null,
  ): Promise<FileRows | null> {
    const key = JSON.stringify([schema, table, timeColumn, String(snapshot), from]);
    let listed = this.files.get(key);
    if (!listed) {
      const rows = JSON.stringify([schema, table, timeColumn, from]);
      const latest = this.latestListings.get(rows);
      const whole = (): Promise<FileRows | null> => fileRows(this.metadata, schema, table, timeColumn, snapshot, from);
      listed = (
        latest && latest.snapshot < snapshot
          ? latest.listed.then(async (before) => {
              if (!before) return whole();
              const change = await this.lakeChanges.between(schema, table, latest.snapshot, snapshot);
              if (change === 'none') return before;
              if (
                change === 'other' ||
                (await this.lakeChanges.inlinedInserts(schema, table, latest.snapshot, snapshot))
              )
                return whole();
              return (
                (await fileRowsSince(this.metadata, before, timeColumn, latest.snapshot, snapshot, from)) ?? whole()
              );
            })
          : whole()
      ).catch(() => null);
      remember(this.files, key, listed);
      if (!latest || latest.snapshot < snapshot) remember(this.latestListings, rows, { snapshot, listed });
    }
    return listed;
  }

  /**
   * The rows of a series table that a statement's raw edges read (RollupTarget.rawEdges), for a scope, with its time
   * column at or after `from` (null: every row) among them: read, as the never-stale tail's are (tailPart), from the
   * files that hold them at the snapshot the statement reads its rollups at, less their delete files, when those hold
   * them exactly, with no DuckLake transaction, catalog read or prepare of DuckLake's scan at each statement (a
   * statement reading raw edges through it cost ~45 ms more server CPU than one reading the rollup alone: see
   * bench/rollup-rewrite/README.md); DuckDB prunes the files' row groups outside each edge by their statistics. Else
   * through DuckLake's scan, as the table's own view reads it; in a client's transaction that wrote the table, as
   * the transaction sees it (its writes are in no file the catalog lists).
   */
  private async edgeRows(
    table: SeriesTable,
    from: string | null,
    scope: TableScope,
    snapshot: bigint,
    written: boolean,
  ): Promise<string> {
    const files = written ? null : await this.filesOf('main', table.name, table.timeColumn, snapshot, from);
    if (!files) return tableRows(table.name, scope, written ? undefined : snapshot);
    const none = `SELECT ${table.columns.map((c) => `CAST(NULL AS ${c.type}) AS ${quoteIdentifier(c.name)}`).join(', ')} WHERE false`;
    const filter = audienceFilter(scope);
    // The files' rows may be a UNION (files with deletes): the filter applies to all of them.
    return `SELECT ${tableColumnsSelect} FROM (${files.sql ?? none})${filter ? ` WHERE ${filter}` : ''}`;
  }

  /**
   * The part of a rollup's view after its watermark, for a scope: the aggregate of its base series
   * table's rows from the watermark on, read from the files that hold them (filesOf), or once made for
   * those files (keptTail) from its kept table; else from `source` (DuckLake's scan, or for a
   * rollup of a rollup or of a view set its source's view or partitions). Null when no row is there.
   */
  private async tailPart(
    definition: RollupDefinition,
    snapshot: bigint,
    watermark: string,
    scope: TableScope,
    source: string,
    /** Whether the statement may read a kept tail's table (ReadContext.keptTails). */
    keptTails: boolean,
    /** ReadContext.prime. */
    prime = false,
    /** ReadContext.tailReads. */
    tailReads?: Map<string, number>,
  ): Promise<string | null> {
    const from = bucketLiteral(definition, watermark);
    const aggregate = (rows: string, query = definition.query): string =>
      aggregateOver(
        { ...definition, query },
        rows,
        `${quoteIdentifier(definition.timeColumn)} >= ${from}`,
        bucketBound(definition, '>=', from),
      );
    const files =
      definition.sourceIsRollup || definition.viewSetBase
        ? null
        : await this.filesOf('main', definition.base, definition.baseTimeColumn, snapshot, watermark);
    if (!files) return aggregate(source);
    if (files.sql === null) return null;
    const filter = audienceFilter(scope);
    // The files' rows may be a UNION (files with deletes): the filter applies to all of them.
    const own = (rows: string): string => (filter ? `SELECT * FROM (${rows}) WHERE ${filter}` : rows);
    const at = position(definition, watermark);
    if (prime) await this.primeTail(definition, aggregate, files, at);
    const kept = await this.keptTail(definition, aggregate, files, keptTails, at);
    if (!kept) return aggregate(own(files.sql));
    tailReads?.set(kept.row.table, kept.row.id);
    const rows = tailRows(kept.row, scope, tailReads && (this.engine.tailRows ? 'native' : 'fill'));
    if (kept.added.length === 0) return rows;
    // The files written since merged with it row by row when the aggregate allows (rowPartials), else aggregated first.
    const partials = await this.rowPartialsOf(definition);
    const added = own(filesSql(files.columns, kept.added)!);
    return mergedTail(
      kept.merge,
      `${rows}\nUNION ALL SELECT * FROM (${aggregate(added, partials ?? definition.query)})`,
    );
  }

  /**
   * The table of a rollup's aggregate of its tail's files (every audience's rows), kept while the
   * statements' tail is those files or those plus files written since (see tail-values.ts), and the
   * files added since with how the parts merge (none: the table is the tail). The latest per rollup,
   * made in the background: when a rollup whose aggregate merges meets a tail none kept holds, when
   * rebaseFiles files were added to the kept one's or a second statement reads the same files (its
   * aggregate merged with theirs), and for a rollup whose aggregate does not merge when a second
   * statement reads the same files. Null until then, when too large or failed to be made (the
   * statement reads the files), or when the statement may not read it (`usable` false: it reads the
   * files, and nothing is made for it).
   */
  private async keptTail(
    definition: RollupDefinition,
    aggregate: (rows: string) => string,
    files: FileRows,
    usable: boolean,
    /** The watermark's place (TailEntry.latest). */
    at: number,
  ): Promise<{ row: TailRow; added: ListedFile[]; merge: TailMerge } | null> {
    const merge = await this.tailMergeOf(definition);
    const shape = tailShape(aggregate, files);
    const listing = `${shape}\u0000${files.files.map((f) => `${f.id}:${f.deletes ?? ''}`).join(',')}`;
    const entry = this.tailEntry(definition);
    if (!latestWatermark(entry, at)) return null;
    const again = entry.seen === listing;
    entry.seen = listing;
    if (!usable) return null;
    // A kept aggregate of another watermark (or statement) serves no read of this one.
    if (entry.kept && entry.kept.tail.shape !== shape) {
      this.retireTail(entry.kept.tail);
      entry.kept = null;
    }
    const kept = entry.kept;
    const added = kept && addedFiles(kept.tail.files, files.files);
    // One making at a time; a tail too large to keep is tried again only for a second read of its files.
    if (!entry.making && (again || entry.tooLarge !== shape)) {
      if (added === null || (added.length > 0 && !merge)) {
        if (again || merge) void this.keepTail(definition, entry, shape, files.files, aggregate(files.sql!));
      } else if (added.length > 0 && (again || added.length >= rebaseFiles))
        void this.keepTail(
          definition,
          entry,
          shape,
          files.files,
          keptWithAdded(merge!, kept!.row, aggregate, files, added),
        );
    }
    if (!kept || added === null || (added.length > 0 && !merge)) return null;
    this.keptBudget.read(kept.row.table);
    return { row: kept.row, added, merge: merge! };
  }

  /**
   * What is kept of a rollup's tail (made empty on its first read). A rollup of its name dropped and created again
   * by another process meanwhile keeps nothing of the one before: its tails, nor its latest watermark (the new one's
   * may be earlier: a coarser grain), which would keep no tail of it until its watermark passed the old one.
   */
  private tailEntry(definition: RollupDefinition): TailEntry {
    let entry = this.tails.get(definition.name);
    if (entry && entry.createdAt !== definition.createdAt) {
      this.forgetTail(definition.name);
      entry = undefined;
    }
    if (!entry)
      this.tails.set(
        definition.name,
        (entry = {
          createdAt: definition.createdAt,
          kept: null,
          ring: null,
          making: null,
          seen: '',
          tooLarge: null,
          latest: null,
        }),
      );
    return entry;
  }

  /** Retires what is kept of a rollup's tail (see retireTail, retireTable). */
  private forgetTail(name: string): void {
    const tail = this.tails.get(name);
    this.tails.delete(name);
    // Released now, not once retireTable's promises settle: an eviction forgetting the tail for one of its rings
    // counts the other gone too, instead of evicting other tables for it.
    for (const table of [tail?.ring?.name, tail?.kept?.row.table]) if (table) this.keptBudget.release(table);
    if (tail?.kept) this.retireKept(tail.kept);
    if (tail?.making) this.retireTail(tail.making);
    if (tail?.ring) this.retireTable(tail.ring.table);
  }

  /**
   * Makes and keeps, now, the table of a rollup's tail aggregate over `files` (see keptTail), when its aggregate
   * merges: the kept one merged with the files written since, or else all its files aggregated. For Rollups.prime,
   * so a read of the same listing (a snapshot's files never change) scans the kept table alone.
   */
  private async primeTail(
    definition: RollupDefinition,
    aggregate: (rows: string) => string,
    files: FileRows,
    /** The watermark's place (TailEntry.latest). */
    at: number,
  ): Promise<void> {
    const merge = await this.tailMergeOf(definition);
    const shape = tailShape(aggregate, files);
    const entry = this.tailEntry(definition);
    if (!merge || files.sql === null || entry.tooLarge === shape || !latestWatermark(entry, at)) return;
    // One making at a time: another (a read's, another write's) may start while this one waits for the last.
    while (entry.making) await entry.making.made;
    const kept = entry.kept?.tail.shape === shape ? entry.kept : null;
    const added = kept && addedFiles(kept.tail.files, files.files);
    if (added?.length === 0) return;
    const sql = added ? keptWithAdded(merge, kept!.row, aggregate, files, added) : aggregate(files.sql);
    await this.keepTail(definition, entry, shape, files.files, sql);
  }

  /**
   * Makes the tails of the rollups of series table `table` at the lake's latest snapshot and keeps them (primeTail),
   * with what their reads ask DuckLake's catalog (their states, pending buckets, file listings), after a write to it
   * through this server commits: the reads that follow at that snapshot then ask Postgres nothing more than their read
   * point and scan each tail's table instead of aggregating the rows written since it was made. A read at another
   * snapshot (a write by another process since) lists and merges as before; exact either way, each kept tail being
   * chosen by its files (keptTail). Nothing to do for a table without rollups as this process last read them.
   */
  async prime(table: string): Promise<void> {
    const tailed = (d: RollupDefinition): boolean => d.base === table && !d.sourceIsRollup && !d.viewSetBase;
    if (![...(this.keptCatalog?.catalog.definitions.values() ?? [])].some(tailed)) return;
    const point = await this.readPoint();
    const { definitions } = point.catalog;
    const readAt: ReadAt = {
      snapshot: point.snapshot,
      definitions,
      tables: point.tables,
      context: { ...readContext(), prime: true },
    };
    for (const definition of [...definitions.values()].filter(tailed))
      await this.viewSql(definition, { kind: 'all' }, readAt);
  }

  /**
   * Makes the row of a rollup's tail aggregate `sql` over `files` (every audience's rows) in the background, to
   * replace the kept one; settles once it is kept (or found too large, or failed). Callers start it only while no
   * other making runs (entry.making): two at once could keep the older last, on a ring the younger retired.
   */
  private keepTail(
    definition: RollupDefinition,
    entry: TailEntry,
    shape: string,
    files: readonly ListedFile[],
    sql: string,
  ): Promise<void> {
    const making = this.keptRow(definition, entry, shape, sql);
    const made = making.then((row) => (row === 'too large' ? null : row));
    const tail: KeptTail = { shape, files: listedFiles(files), made };
    entry.making = tail;
    return making.then((row) => {
      if (entry.making === tail) entry.making = null;
      // A rollup dropped meanwhile keeps nothing.
      if (this.tails.get(definition.name) !== entry) return this.retireTail(tail);
      if (row === null || row === 'too large') {
        // Not tried again for this shape but at a second read of its files; a failure (a ring not made, say) is
        // tried again by the next making.
        if (row === 'too large') entry.tooLarge = shape;
        // A kept row of a full ring (keptRow started another) is read no more once a row failed to replace it.
        if (entry.kept && entry.kept.row.table !== entry.ring?.name) this.retireKept(entry.kept);
        if (entry.kept?.row.table !== entry.ring?.name) entry.kept = null;
        return;
      }
      if (entry.kept) this.retireKept(entry.kept, row);
      entry.kept = { tail, row };
    });
  }

  /**
   * Retires a kept tail's row replaced by `by`, and its ring with it when `by` is in another (keptRow started a new
   * one, the old one full): as a row, once no statement set up to read it can still run.
   */
  private retireKept(kept: NonNullable<TailEntry['kept']>, by?: TailRow): void {
    this.retireTail(kept.tail);
    if (kept.row.table !== by?.table) this.retireTable(Promise.resolve(kept.row.table));
  }

  /**
   * A new row of the rows of `sql` in the ring of a rollup's tails of this shape (made first, the one of another
   * shape retired, one that failed made again: see tail-values.ts); 'too large' when its rows are more than the most
   * kept, null when it failed.
   */
  private async keptRow(
    definition: RollupDefinition,
    entry: TailEntry,
    shape: string,
    sql: string,
  ): Promise<TailRow | 'too large' | null> {
    if (entry.ring?.shape !== shape || entry.ring.rows >= ringRows || (await entry.ring.table) === null) {
      // A full ring of this shape still holds the kept row: retired with it (retireKept), once replaced.
      if (entry.ring && entry.ring.shape !== shape) this.retireTable(entry.ring.table);
      const table = keptTailTable();
      const { attach, create } = tailRingSql(table, sql);
      const made = this.engine.execute(create, { setup: [attach], ownTable: true }).then(
        () => {
          this.engine.tailRingMade(databaseOf(table));
          return table;
        },
        // Its database, if attached, goes with it.
        () =>
          this.engine
            .execute(dropTailSql(table), { ownTable: true })
            .catch(() => {})
            .then(() => null),
      );
      entry.ring = { shape, name: table, table: made, rows: 0 };
    }
    const ring = entry.ring;
    const table = await ring.table;
    if (table === null) return null;
    // A failed read of the columns fails this row alone: the next row reads them again.
    ring.bytes ??= this.keptColumns(table).then(keptRowBytes, (error: unknown) => {
      ring.bytes = undefined;
      throw error;
    });
    const bytes = await ring.bytes.catch(() => null);
    if (bytes === null) return null;
    ring.rows++;
    const id = keptTailRowId();
    // The row answers its bytes as it is put in: charged now, by the one statement (a second measuring it, run in the
    // background, slowed the statements arriving meanwhile: bench/rollups/kept-measure.mjs).
    const kept = await this.engine
      .returned(keepTailRowSql(table, id, sql, bytes), { ownTable: true })
      .catch(() => null);
    if (kept === null) return null;
    if (kept.length === 0) return 'too large';
    const row = { table, id };
    return this.chargeRow(definition, entry, ring, row, Number(kept[0][0])) ? row : null;
  }

  /**
   * Charges a rollup's ring of kept tails with its new row `row` of `bytes` (its other rows, replaced ones too, were
   * charged before: see kept-budget.ts), unless the ring was retired meanwhile (forgotten, or replaced by another of a
   * new shape): its release came first. A ring that alone would take more than the budget goes, with the rest of the
   * rollup's tail, and a tail of its shape is made again only for a second read of the same files (keptTail): false
   * then.
   */
  private chargeRow(
    definition: RollupDefinition,
    entry: TailEntry,
    ring: NonNullable<TailEntry['ring']>,
    row: TailRow,
    bytes: number,
  ): boolean {
    const { name } = definition;
    const live = (): boolean =>
      this.tails.get(name) === entry && (entry.ring === ring || entry.kept?.row.table === row.table);
    const evict = (): void => {
      if (this.tails.get(name) === entry) this.forgetTail(name);
    };
    if (!live() || this.keptBudget.charge(row.table, { rollup: name, kind: 'tail', evict }, bytes)) return true;
    this.forgetTail(name);
    this.tailEntry(definition).tooLarge = ring.shape;
    return false;
  }

  /** How a rollup's aggregate merges over parts of its rows (tailMerge), worked out once per statement. */
  private tailMergeOf(definition: RollupDefinition): Promise<TailMerge | null> {
    return oncePerStatement(this.tailMerges, definition, () => tailMerge(this.engine, definition));
  }

  /** A rollup's statement over single rows (rowPartials), worked out once per statement. */
  private rowPartialsOf(definition: RollupDefinition): Promise<string | null> {
    return oncePerStatement(this.rowPartials, definition, () => rowPartials(this.engine, definition));
  }

  /** The columns (name, type) of kept table `table`. */
  private async keptColumns(table: string): Promise<ReadonlyArray<readonly [string, string]>> {
    return (await this.engine.values(keptColumnsSql(table))).map(([n, t]) => [String(n), String(t)] as const);
  }

  /** The rows of kept table `table` and their bytes, measured by its name (kept-size.ts). */
  private async keptSize(
    table: string,
    columns: ReadonlyArray<readonly [string, string]>,
  ): Promise<{ rows: number; bytes: number }> {
    const [[rows, bytes]] = await this.engine.values(keptSizeSql(table, columns));
    return { rows: Number(rows), bytes: Number(bytes) };
  }

  /**
   * A new kept table of a rollup's stored rows `sql` (see keptStored): its name, or null when too large (in rows or
   * in bytes, measured in it: what DuckDB wrote out to disk counts), not kept by `keep` (told its bytes) or failed.
   */
  private keptTable(sql: string, keep: (table: string, bytes: number) => boolean): Promise<string | null> {
    const table = keptTailTable(true);
    const { attach, create } = keepTailSql(table, sql);
    const drop = async (): Promise<null> => {
      await this.engine.execute(dropTailSql(table), { ownTable: true }).catch(() => {});
      return null;
    };
    const make = async (): Promise<string | null> => {
      // DuckDB reports no rows changed by a CREATE TABLE AS (its count is a row of its result): counted in the table.
      await this.engine.execute(create, { setup: [attach], ownTable: true });
      const { rows, bytes } = await this.keptSize(table, await this.keptColumns(table));
      return rows <= maxKeptRows && bytes <= maxKeptBytes && keep(table, bytes) ? table : drop();
    };
    return make().catch(drop);
  }

  /**
   * Drops a replaced kept table (a ring of tails, stored rows) once no statement set up to read it can still
   * run (see keptTailDropMs), or `afterMs` (an evicted table).
   */
  private retireTable(made: Promise<string | null>, afterMs = keptTailDropMs): void {
    // No longer read: no longer charged (a table charged after this was found retired first, see keptRow, keptStored).
    void made.then((table) => table && this.keptBudget.release(table));
    setTimeout(() => {
      void made
        .then(async (table) => {
          if (!table) return;
          await this.engine.execute(dropTailSql(table), { ownTable: true });
          this.engine.forgetTailRing(databaseOf(table));
        })
        .catch(() => {});
    }, afterMs).unref();
  }

  /** Deletes a replaced kept tail's row, as retireTable drops a table. */
  private retireTail(kept: KeptTail): void {
    setTimeout(() => {
      void kept.made
        .then((row) => {
          if (!row) return 0;
          // Told before the DELETE is sent: a run that could find the row deleted fails instead (tail-rows.cc).
          this.engine.tailRowGone(databaseOf(row.table), row.id);
          return this.engine.execute(dropTailRowSql(row), { ownTable: true });
        })
        .catch(() => {});
    }, keptTailDropMs).unref();
  }

  /**
   * A rollup's stored rows at a snapshot, as a relation: read from the files of its `_materialized`
   * table when they alone hold them (filesOf: a statement reading no other lake table then pays no
   * DuckLake scan set-up), else that table at the snapshot. The files listed at an earlier snapshot
   * serve while DuckLake records no change of that table since (sinceChange: it changes at refreshes,
   * not with the source's writes), without listing them again. `kept`: the files' rows may be read from
   * the table they are kept in (keptStored); false in a client's transaction, whose statements read no kept
   * table (ReadContext.keptTails).
   */
  private async storedSource(
    definition: RollupDefinition,
    snapshot: bigint,
    kept: boolean,
    /** The rollup's watermark at `snapshot` (asked only to make a kept table). */
    watermark = async (): Promise<string | null> => (await this.state(definition, snapshot)).watermark,
  ): Promise<string> {
    const name = materializedName(definition.name);
    const rows = await this.sinceChange(`${definition.name}\u0000stored`, rollupSchema, name, snapshot, () =>
      this.filesOf(rollupSchema, name, 'bucket', snapshot, null),
    );
    if (!rows?.sql) return at(materializedTable(definition.name), snapshot);
    return (kept && (await this.keptStored(definition, rows.sql, snapshot, watermark))) || `(${rows.sql})`;
  }

  /**
   * The table a rollup's stored rows (every audience's) are kept in while they are the rows of the same
   * files, made in the background when a statement first reads those files (null until then, when too
   * large or failed): they change at refreshes alone, and each dashboard's first read after a refresh
   * would otherwise pay a second read of the files (a kept tail waits for a second read of its files,
   * which each write changes). The same files are the
   * same rows, as for a kept tail (tail-values.ts), and a table costs DuckDB no file to open: a Parquet
   * read is bound again at every run, so a statement reading one never keeps its plan (a panel read
   * at a rollup costs ~1-2 ms of server CPU more, bench/rollup-rewrite/cpu-ab.mjs), and a file with a
   * delete file is read through an anti-join of both at every run (the 100 M-row dashboard, per host per
   * hour over 7 days through the rollup's view: DuckDB's run to the first batch 9.6-13.6 ms from the files
   * against 3.9 from the table, bench/rollups/dashboard-ab.sh).
   */
  private async keptStored(
    definition: RollupDefinition,
    rows: string,
    snapshot: bigint,
    watermark: () => Promise<string | null>,
  ): Promise<string | null> {
    let kept = this.storedTables.get(definition.name);
    if (kept?.rows !== rows) {
      const stored = storedAt(definition, await watermark());
      kept = this.storedTables.get(definition.name);
      if (kept?.rows !== rows) {
        // Other rows at an earlier snapshot (a read that began before a refresh committed) replace nothing: the rows
        // of the latest serve the reads that follow (as TailEntry.latest keeps their tail).
        if (kept && snapshot < kept.snapshot) return null;
        // Rows too large to keep at this watermark are not copied again at each refresh of pending buckets (a late
        // row's): the next watermark's are (retention may have deleted some).
        if (kept?.tooLarge === stored) {
          this.storedTables.set(definition.name, { ...kept, rows, snapshot });
          return null;
        }
        if (kept) this.retireTable(kept.made);
        const { name } = definition;
        // Dropped at once, not keptTailDropMs later: the budget counts it gone, and a server evicting one copy after
        // another (a budget below what its reads keep) would otherwise hold those of the last 10 s past it. A
        // statement running reads it to its end; one set up to read it still does (a GetFlightInfo's held plan did, in
        // test/rollups/kept-memory) or fails and is planned again (namesDroppedTail).
        const evict = (): void => {
          if (this.storedTables.get(name) !== making) return;
          this.storedTables.delete(name);
          this.retireTable(making.made, 0);
        };
        // Charged unless replaced or dropped meanwhile (its release came first).
        const keep = (table: string, bytes: number): boolean =>
          this.storedTables.get(name) === making &&
          this.keptBudget.charge(table, { rollup: name, kind: 'stored', evict }, bytes);
        const making: KeptStored = { rows, snapshot, made: this.keptTable(rows, keep), table: null };
        this.storedTables.set(definition.name, making);
        void making.made.then((done) => {
          if (this.storedTables.get(definition.name) !== making) return;
          making.table = done;
          if (done === null) making.tooLarge = stored;
        });
        return null;
      }
    }
    if (snapshot > kept.snapshot) kept.snapshot = snapshot;
    if (kept.table) this.keptBudget.read(kept.table);
    return kept.table;
  }

  /**
   * The SELECT a rollup's view is at a snapshot, for a scope: its materialized buckets before the
   * watermark less the pending ones, plus the aggregate of the source's rows from the watermark
   * on and of the pending buckets.
   */
  private async viewSql(
    definition: RollupDefinition,
    scope: TableScope,
    readAt: ReadAt,
    /** The statement's conditions on the view's buckets (see bucket-windows.ts): the view of them alone, not kept. */
    window?: readonly BucketConditions[],
  ): Promise<string> {
    const { snapshot, definitions, context } = readAt;
    const built = window ? undefined : context.views.get(definition.name);
    if (built !== undefined) return built;
    if (definition.sourceIsRollup) {
      await this.viewSql(sourceRollup(definition, definitions), scope, readAt);
    } else if (definition.viewSetBase) await this.setRead(definition.base, snapshot, definitions, context);
    const state = await this.state(definition, snapshot);
    const source = this.sourceRows(definition, snapshot, scope, context);
    let sql: string;
    if (definition.viewSetBase && state.watermark === null) {
      sql = aggregateOver(definition, source, 'TRUE');
    } else if (state.watermark === null || (context.written.has(definition.base) && !definition.viewSetBase)) {
      sql = await this.writtenViewSql(definition, state.watermark, scope, readAt, source);
    } else {
      // The pending buckets, the tail and the stored rows each ask Postgres (DuckLake's catalog) on their own:
      // asked at once, a read at a new snapshot waits for one round trip instead of three.
      const [pendingParts, tail, storedRows, keptFrom, keptBefore] = await Promise.all([
        this.pendingParts(definition, state, readAt),
        // The rows after the watermark: the tail's files alone when they hold it exactly (tailPart), and none
        // when no file holds any.
        this.tailPart(
          definition,
          snapshot,
          state.watermark,
          scope,
          source,
          context.keptTails,
          context.prime,
          context.tailReads,
        ),
        this.storedSource(definition, snapshot, context.keptTails, async () => state.watermark),
        this.keptAround(definition, snapshot, state.watermark).then(({ from }) => from),
        definition.coveredFrom === null
          ? []
          : this.keptAround(definition, snapshot, definition.coveredFrom).then(({ before }) => before),
      ]);
      const buckets = [...pendingParts.changed, ...pendingParts.held.keys()];
      const read = window && buckets.length > 0 ? await this.bucketsKept(definition, buckets, window) : buckets;
      if (read.length < buckets.length && window!.some((w) => w.fixesClock)) context.fixesClock = true;
      const kept = new Set(read);
      const pending = pendingReads(definition, pendingParts, (b) => kept.has(b), definition.coveredFrom, keptBefore);
      const watermark = bucketLiteral(definition, state.watermark);
      const filter = audienceFilter(scope);
      const covered = definition.coveredFrom === null ? null : bucketLiteral(definition, definition.coveredFrom);
      const time = quoteIdentifier(definition.timeColumn);
      // Kept buckets at or after the watermark are read stored, as before it, and left out of the tail.
      const keptAfter = keptFrom.map((b) => bucketLiteral(definition, b)).join(', ');
      // Kept buckets before the range backfilled are read stored too, and left out of its scan.
      const keptEarlier = keptBefore.map((b) => bucketLiteral(definition, b));
      const stored = [
        keptAfter ? `(bucket < ${watermark} OR bucket IN (${keptAfter}))` : `bucket < ${watermark}`,
        ...(covered
          ? [
              keptEarlier.length > 0
                ? `(bucket >= ${covered} OR bucket IN (${keptEarlier.join(', ')}))`
                : `bucket >= ${covered}`,
            ]
          : []),
        ...pending.stored,
        ...(filter ? [filter] : []),
      ];
      // The rows before the range backfilled and of the pending buckets (those in that range: the others
      // are in its scan), each range a scan of its own.
      // Each raw part also bounds its buckets (aggregateOver), so a window leaving it out drops its scan.
      const raw = [
        ...(covered
          ? [
              {
                rows: `${time} < ${covered}${keptEarlier.length > 0 ? ` AND NOT ${inBuckets(definition, keptEarlier)!}` : ''}`,
                buckets: bucketBound(definition, '<', covered),
              },
            ]
          : []),
        ...pending.scans,
      ];
      const parts = [
        `SELECT * FROM ${storedRows} WHERE ${stored.join(' AND ')}`,
        ...(tail === null ? [] : [keptAfter ? `SELECT * FROM (${tail}) WHERE bucket NOT IN (${keptAfter})` : tail]),
        ...(raw.length > 0 ? [aggregateOverEach(definition, source, raw)] : []),
      ];
      sql = parts.join('\nUNION ALL ');
    }
    if (!window) context.views.set(definition.name, sql);
    return sql;
  }

  /**
   * A rollup's view in a client's transaction that has written its base table: the rows it wrote are in no change
   * feed or file of the catalog, so which buckets they touched is unknown and every bucket is aggregated from the
   * source as the transaction sees it, but those whose stored values stand for raw rows gone, which no write
   * makes pending (see pending): for a rollup of the table, the buckets its retention kept (with the raw rows of an
   * audience it reads whose rows retention postponed: see keepBuckets); for a rollup of a rollup, those before its
   * source's retention horizon. So is a rollup's view before its first refresh (no watermark): raw, but for the
   * buckets retention kept meanwhile.
   */
  private async writtenViewSql(
    definition: RollupDefinition,
    watermark: string | null,
    scope: TableScope,
    { snapshot, tables, definitions, context }: ReadAt,
    source: string,
  ): Promise<string> {
    const stands: string[] = [];
    const base = tables.get(definition.base);
    const horizonOf = definition.sourceIsRollup ? sourceRollup(definition, definitions).retention : null;
    const kept = definition.sourceIsRollup ? [] : [...(await this.keptBuckets(definition, snapshot))];
    if (base && horizonOf && watermark !== null)
      stands.push(
        // A rollup still being backfilled holds no bucket before its covered range.
        ...(definition.coveredFrom === null ? [] : [`bucket >= ${bucketLiteral(definition, definition.coveredFrom)}`]),
        `bucket < ${bucketLiteral(definition, watermark)}`,
        `bucket < ${horizonSql(definition, base, horizonOf, snapshot)}`,
      );
    // At or after the watermark too (see keptAround), and before a covered range: retention stored them whole.
    else if (kept.length > 0) stands.push(`bucket IN (${kept.map((b) => bucketLiteral(definition, b)).join(', ')})`);
    else return aggregateOver(definition, source, 'TRUE');
    const filter = audienceFilter(scope);
    const stored = `SELECT * FROM ${await this.storedSource(definition, snapshot, false)} WHERE ${[...stands, ...(filter ? [filter] : [])].join(' AND ')}`;
    const keptSet = new Set(kept);
    const held = await this.heldBuckets(definition, snapshot, context.audiences);
    const postponed = new Map([...held].filter(([b]) => keptSet.has(b)));
    const { scans } = pendingReads(definition, { changed: [], held: postponed }, () => true, null);
    return [
      stored,
      aggregateOver(definition, source, 'TRUE', [`(${stands.join(' AND ')}) IS NOT TRUE`]),
      ...(scans.length > 0 ? [aggregateOverEach(definition, source, scans)] : []),
    ].join('\nUNION ALL ');
  }

  /**
   * Of a rollup's pending buckets, those a statement's conditions on `bucket` (see bucket-windows.ts) may keep: those
   * the conditions of one of its references (in one of its runs) keep.
   */
  private async bucketsKept(
    definition: RollupDefinition,
    buckets: readonly string[],
    window: readonly BucketConditions[],
  ): Promise<string[]> {
    const kept = new Set<string>();
    const rows = buckets.map((b) => `(${bucketLiteral(definition, b)}, ${quoteLiteral(b)})`).join(', ');
    for (const { qualifier, conditions } of window) {
      if (kept.size === buckets.length) break;
      const tree = (await this.engine.parseSelect(
        `SELECT __pending FROM (VALUES ${rows}) AS ${quoteIdentifier(qualifier)}(bucket, __pending) WHERE TRUE`,
      ))!;
      const node = tree.statements[0].node as Node;
      node.where_clause = { class: 'CONJUNCTION', type: 'CONJUNCTION_AND', alias: '', children: copy(conditions) };
      // Conditions that do not evaluate here (a parameter bound with a type `bucket` does not compare with) keep
      // every bucket: the statement's own run then answers its error, as it would without them.
      const answered = await this.engine.values(await this.engine.deparse(tree)).catch(() => null);
      if (answered === null) return [...buckets];
      for (const [b] of answered) kept.add(String(b));
    }
    return buckets.filter((b) => kept.has(b));
  }

  /**
   * The statements that make the rollups (and materialized tables) a statement names readable
   * for a scope, all as of one DuckLake snapshot: temporary views under their own names; and that
   * snapshot (null when the statement names none), for the statement to read its series tables at;
   * `lake`: whether they read any DuckLake table (false when they read files alone: the stored rows,
   * the tail and the view sets' partitions), which then needs no DuckLake transaction; `fixesClock`: whether the
   * statement must run with its clock fixed to the value its conditions were read with (bucket-windows.ts).
   */
  async readSetup(
    names: readonly string[],
    scope: TableScope,
    /** Where the statement's rewrite read the rollups, to read them there again. */
    point?: RollupReadPoint,
    /** Rollups the statement reads only through the rewrite of its levels (it does not name them itself). */
    rewrittenOnly: ReadonlySet<string> = new Set(),
    /** False for a statement in a client's transaction (see ReadContext.keptTails). */
    keptTails = true,
    /** The statement's conditions on the buckets of rollups it names (bucketConditions). */
    conditions: ReadonlyMap<string, readonly BucketConditions[]> = new Map(),
  ): Promise<RollupReadSetup> {
    const { definitions, aliases } = point?.catalog ?? (await this.catalog());
    const wanted = new Set(names.map((n) => n.toLowerCase()));
    const stableNames = [...aliases.values()].filter((a) => wanted.has(a.name));
    for (const alias of stableNames) wanted.add(alias.target);
    const rollups = [...definitions.values()].filter((d) => wanted.has(d.name));
    const stored = [...definitions.values()].filter((d) => wanted.has(materializedName(d.name)));
    if (rollups.length === 0 && stored.length === 0)
      return { statements: [], snapshot: null, lake: false, fixesClock: false };
    // The snapshot and the tables listed at it in one Postgres query (a statement pays it once).
    const listing = point ? undefined : await this.tables.listAt();
    const snapshot = point?.snapshot ?? listing!.snapshot;
    const tables = point?.tables ?? listing!.tables;
    const context = { ...readContext(keptTails, point?.written, scope), tailReads: new Map<string, number>() };
    const readAt: ReadAt = { snapshot, definitions, tables, context };
    const statements: string[] = [];
    for (const definition of rollups) {
      const windows = rewrittenOnly.has(definition.name) ? point?.windows?.get(definition.name) : undefined;
      const sql =
        (windows && (await this.storedRows(definition, scope, readAt, windows))) ??
        (await this.viewSql(definition, scope, readAt, conditions.get(definition.name)));
      statements.push(`CREATE OR REPLACE TEMP VIEW ${quoteIdentifier(definition.name)} AS ${sql}`);
    }
    const filter = audienceFilter(scope);
    for (const definition of stored) {
      statements.push(
        `CREATE OR REPLACE TEMP VIEW ${quoteIdentifier(materializedName(definition.name))} AS SELECT * FROM ${await this.storedSource(definition, snapshot, context.keptTails)}${filter ? ` WHERE ${filter}` : ''}`,
      );
    }
    for (const alias of stableNames) {
      statements.push(
        `CREATE OR REPLACE TEMP VIEW ${quoteIdentifier(alias.name)} AS SELECT ${alias.selectList} FROM ${quoteIdentifier(alias.target)}`,
      );
    }
    // The series tables' rows the rewritten levels' raw edges read (view sets' edges read the sets' own views).
    for (const [name, from] of point?.edges ?? []) {
      const table = tables.get(name);
      if (!table) continue;
      statements.push(
        `CREATE OR REPLACE TEMP VIEW ${quoteIdentifier(edgesRelation(name))} AS ${await this.edgeRows(table, from, scope, snapshot, context.written.has(name))}`,
      );
    }
    // The kept tails' rows the views read are told to them natively, or by the fill, before the views (see
    // tail-values.ts).
    const reads = context.tailReads.size > 0 ? context.tailReads : undefined;
    const filled = reads && !this.engine.tailRows ? tailReadsSql(reads) : undefined;
    if (filled) statements.unshift(filled.setup);
    // Every DuckLake table is named in its catalog (a file path never holds that name: it is Orrery's own).
    return {
      statements,
      ...(filled ? { fill: filled.fill } : {}),
      ...(reads && !filled ? { tailReads: tailReadsByRing(reads) } : {}),
      snapshot,
      lake: statements.some((s) => s.includes(lakeCatalog)),
      fixesClock: context.fixesClock,
    };
  }

  /**
   * A rollup's stored rows, and the pending buckets inside the windows some levels read aggregated
   * from its base table, when those are all its view holds of the buckets the levels read: each
   * window closed, before the watermark and inside the range backfilled (the view's other rows,
   * aggregated from the source, are of none of those buckets). Reading them alone leaves out the
   * view's rows after the watermark, its other pending buckets and, for a rollup of a rollup, its
   * source's view. The pending buckets inside a window are aggregated from the source's rows of those
   * buckets alone: the base table's, the view set's (read once for the statement, with the pending
   * buckets as that read gives them, as the view does), or, for a rollup of a rollup, its source's
   * stored rows and pending buckets inside those buckets (this again, one level down; its view when
   * that cannot answer them). For a rollup of a view set with no pending bucket in a window, the
   * pending buckets come from invalidations kept between statements (keptInvalidations), so such a
   * read asks Postgres nothing and opens none of the set's files. Null when the view must be read.
   */
  private async storedRows(
    definition: RollupDefinition,
    scope: TableScope,
    readAt: ReadAt,
    windows: ReadonlyArray<{ readonly from: string; readonly to: string | null }>,
  ): Promise<string | null> {
    const { snapshot, definitions, context } = readAt;
    // A base the client's transaction wrote is read raw (see writtenViewSql).
    if (definition.integer || context.written.has(definition.base)) return null;
    const state = await this.state(definition, snapshot);
    if (state.watermark === null) return null;
    const watermark = epochMs(state.watermark);
    const covered = definition.coveredFrom === null ? null : epochMs(definition.coveredFrom);
    for (const window of windows) {
      if (window.to === null) return null;
      const [from, to] = [epochMs(window.from), epochMs(window.to)];
      if (!(to <= watermark) || (covered !== null && !(from >= covered))) return null;
    }
    const inside = (buckets: string[]): string[] =>
      buckets.filter((b) => windows.some((w) => epochMs(b) >= epochMs(w.from) && epochMs(b) < epochMs(w.to!)));
    // A view set read for this statement (by a rollup above) gives the pending buckets its files hold.
    const ofViewSet = (kept: boolean): Promise<PendingParts> =>
      this.pendingParts(
        definition,
        state,
        readAt,
        this.pendingOfViewSet(definition, snapshot, state, definitions, context, kept),
      );
    let parts = definition.viewSetBase
      ? await ofViewSet(!context.sets.has(definition.base))
      : await this.pendingParts(definition, state, readAt);
    const pendingOf = ({ changed, held }: PendingParts): string[] => [...changed, ...held.keys()];
    if (definition.viewSetBase && !context.sets.has(definition.base) && inside(pendingOf(parts)).length > 0) {
      await this.setRead(definition.base, snapshot, definitions, context);
      parts = await ofViewSet(false);
    }
    const inWindows = inBucketOrder(definition, inside(pendingOf(parts)));
    // Pending buckets inside a window are aggregated from the source's rows of them, each run of them
    // a scan of its own (pendingScans); the view would also scan the rows after the watermark and every
    // other pending bucket.
    let source: string | null = null;
    if (inWindows.length > 0 && definition.sourceIsRollup) {
      const bucketWindows = inWindows.map((b) => ({ from: b, to: bucketEnd(definition, b) }));
      source = await this.storedRows(sourceRollup(definition, definitions), scope, readAt, bucketWindows);
      if (source === null) return null;
    } else if (inWindows.length > 0) source = this.sourceRows(definition, snapshot, scope, context);
    const read = new Set(inWindows);
    const pending = pendingReads(definition, parts, (b) => read.has(b), null);
    const filter = audienceFilter(scope);
    const where = [
      `bucket < ${bucketLiteral(definition, state.watermark)}`,
      ...(definition.coveredFrom === null ? [] : [`bucket >= ${bucketLiteral(definition, definition.coveredFrom)}`]),
      ...pending.stored,
      ...(filter ? [filter] : []),
    ];
    const storedSql = `SELECT * FROM ${await this.storedSource(definition, snapshot, context.keptTails)} WHERE ${where.join(' AND ')}`;
    if (source === null) return storedSql;
    return `${storedSql}\nUNION ALL ${aggregateOverEach(definition, source, pending.scans)}`;
  }

  /**
   * Rewrites, in place, each level of a parsed SELECT that a ready rollup answers onto the coarsest
   * such rollup; answers the provenance, the rollups read (to set up with readSetup) and the tables
   * whose stored columns a level no longer reads (it reads a rollup), or null when the statement
   * reads no series table with rollups.
   */
  async rewrite(
    tree: { statements: Node[] },
    /** Where the statement reads the lake and the catalog, when the caller has read it (readPoint). */
    point?: RollupReadPoint,
    /** The expression the statement wrote where a stored column stands (StoredColumnReads.original). */
    original?: (node: Node) => Node | undefined,
    /**
     * The constant the statement's now() is fixed to (index pruning compared it), in ms too: bounds are
     * evaluated with it, and the statement's clock calls, kept in the tree, key the rewrite kept.
     */
    clock?: { readonly node: Node; readonly ms: number } | null,
    /**
     * The rows the statement's key reads: every audience's (an admin's), or its audiences' and public ones. A
     * reader's rewrite weighs its audiences' rows alone (see RewriteInput.rawEdges).
     */
    scope: TableScope = { kind: 'audiences', audiences: [] },
  ): Promise<RollupRewrite | null> {
    const named = baseTables(tree.statements);
    if (named.size === 0) return null;
    const catalog = point?.catalog ?? (await this.catalog());
    const { definitions } = catalog;
    const relevant = [...definitions.values()].filter((d) => named.has(d.base));
    if (relevant.length === 0) return null;
    const at: RollupReadPoint = point ?? (await this.readPoint());
    const { snapshot, tables } = at;
    const audiences = scope.kind === 'all' ? null : [...new Set([...scope.audiences, 'public'])].sort();
    // The same statement at the same snapshot over the same rollups is rewritten the same way
    // while its window's bounds evaluate the same (they may hang on now()), and the tables it reads written in the
    // client's transaction or not (their raw edges are weighed then: see rawEdges.unweighed).
    const key = JSON.stringify([
      String(snapshot),
      audiences,
      [...named].filter((table) => at.written?.has(table)).sort(),
      relevant.map((d) => [d.name, d.retention, d.coveredFrom, d.sourceHash, d.query]),
      tree.statements,
    ]);
    const kept = this.rewrites.get(key);
    // A kept rewrite whose bounds move with the clock (now() - INTERVAL 7 DAY) is made again from its
    // statement with their values now, worked out without DuckDB: only what hangs on them is checked
    // again (bucket alignment and rounding, covered range, raw edges), and its provenance is exact.
    let answers: Array<Array<string | null>> | null = null;
    const nowNs = BigInt(Date.now()) * 1_000_000n;
    // The statement's now(): its fixed value, else now (it runs no earlier).
    const clockNs = clock ? BigInt(clock.ms) * 1_000_000n : nowNs;
    if (kept && Date.now() - kept.at < rewriteKeptMs) {
      const reused = (statements: string): RollupRewrite => {
        tree.statements.splice(0, tree.statements.length, ...(JSON.parse(statements) as Node[]));
        const provenance = JSON.parse(kept.provenance) as Provenance;
        return {
          provenance,
          rollups: [...kept.rollups],
          storedColumnsUnread: [...kept.storedColumnsUnread],
          at: { ...at, windows: windowsOf(provenance), edges: edgesOf(provenance) },
          outcome: 'kept',
        };
      };
      const all = kept.constants.flatMap((c) => c.expressions);
      // Bounds written with the clock are worked out without DuckDB where they can be (clock-bounds.ts): the
      // same values reuse the rewrite as it is, others remake it from them.
      answers = clockFree(all) ? null : workedOut(kept.constants, clockNs);
      const same = answers && JSON.stringify(answers) === JSON.stringify(kept.constants.map((c) => c.texts));
      if (same && kept.statements) return reused(kept.statements);
      answers ??= clock || clockFree(all) ? null : clockMoved(kept.constants, nowNs);
      if (!answers && kept.statements && (await this.constantsHold(kept, clock ?? null)))
        return reused(kept.statements);
    }
    const readBack = this.readBack(definitions);
    const targets = new Map<string, RollupTarget[]>();
    // The relations a level may read through a rollup: series tables, and view sets with rollups
    // (read as a table of the set's columns, timed by the column its rollups bucket).
    const bases = new Map(tables);
    const states = await this.statesAt(relevant, snapshot);
    for (const definition of relevant) {
      const base = definition.viewSetBase ? this.viewSetTable(definition) : tables.get(definition.base);
      if (!base) continue;
      bases.set(definition.base, base);
      const list = targets.get(definition.base) ?? [];
      const { watermark } = states.get(definition.name)!;
      const { columnsRead, stored } = await readBack(definition);
      list.push({
        name: definition.name,
        grain: definition.grain,
        ready: watermark !== null,
        sameHash: sameSource(definition, base, columnsRead),
        integer: definition.integer,
        coveredFrom: definition.integer ? null : retainedFrom(definition.retention),
        retention: definition.retention,
        backfilledFrom: definition.coveredFrom === null ? null : timestampNanos(definition.coveredFrom),
        stored,
        rawEdges: definition.sourceIsRollup
          ? null
          : { query: definition.query, rows: definition.viewSetBase ? base.name : edgesRelation(base.name) },
      });
      targets.set(definition.base, list);
    }
    // The constants the rewrite evaluated, to check a kept rewrite with.
    const constants: KeptRewrite['constants'] = [];
    let keepable = true;
    const engine = this.engine;
    const recording = new Proxy(engine, {
      get(target, property) {
        if (property === 'constantTexts')
          return async (expressions: readonly Node[]): Promise<Array<string | null>> => {
            const asked = copy([...expressions]);
            // The same statement asks for the same constants in the same order as when it was kept.
            const made = kept?.constants[constants.length];
            if (answers && made && JSON.stringify(made.expressions) === JSON.stringify(asked)) {
              const texts = answers[constants.length];
              constants.push({ expressions: asked, texts, clock: made.clock === null ? null : nanosText(clockNs) });
              return texts;
            }
            // Literal instants, and bounds written with the clock in the forms clock-bounds.ts works out, need
            // no DuckDB (the bounds of most dashboards' windows).
            const worked = asked.map((e) => literalInstantText(e) ?? clockBoundText(e, clockNs));
            if (worked.every((t) => t !== null)) {
              constants.push({
                expressions: asked,
                texts: worked,
                clock: clockFree(asked) ? null : nanosText(clockNs),
              });
              return worked;
            }
            // now() too, for a later statement to work out the constants that move with it.
            const withNow = !clock && asked.some((e) => movesWithClock(e));
            try {
              const texts = await target.constantTexts(
                clock ? withClock(expressions, clock.node) : withNow ? [...expressions, clockInstant()] : expressions,
              );
              const now = withNow ? texts.pop()! : null;
              constants.push({ expressions: asked, texts, clock: now });
              return texts;
            } catch (error) {
              keepable = false;
              throw error;
            }
          };
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const rewritten = await rewriteOntoRollups(tree, {
      engine: recording,
      tables: bases,
      targets,
      aggregates: await this.aggregateNames(),
      original,
      probe: (sql) => this.probed(sql),
      clockNs,
      rawEdges: {
        minRows: this.options.rawEdgesMinRows ?? defaultRawEdgesMinRows,
        rowsWithin: (table, from, to) => this.rowsWithin(table, snapshot, audiences, from, to),
        // An admin's window when its edges are read from the table's files. A reader's whenever they may be: whether
        // they are hangs on every audience's rows (one inlined in the catalog at or after the start), which a
        // reader's choice, shown in its provenance, must tell nothing of; so it is made on no rows at all, and its
        // edges cost a DuckLake scan more than a raw read while a row is inlined (see defaultRawEdgesMinRows).
        unweighed: async (table, from) =>
          !this.viewSets?.get(table.name) &&
          !at.written?.has(table.name) &&
          hourOf(from) !== null &&
          (audiences !== null ||
            (await this.filesOf('main', table.name, table.timeColumn, snapshot, hourOf(from))) !== null),
      },
    });
    // A rewrite whose bounds change with every statement (now() - INTERVAL 7 DAY, not date_trunc('day', now())),
    // and that is made again without DuckDB, is never reused as it is: its tree is not kept.
    const evaluated = constants.flatMap((c) => c.expressions);
    const moves =
      !clock &&
      evaluated.some((e) => !clockFree([e]) && followsClock(e)) &&
      (workedOut(constants, clockNs) !== null || clockMoved(constants, nowNs) !== null);
    if (keepable)
      remember(this.rewrites, key, {
        at: Date.now(),
        constants,
        statements: moves ? null : JSON.stringify(tree.statements),
        provenance: JSON.stringify(rewritten.provenance),
        rollups: [...rewritten.rollups],
        storedColumnsUnread: [...rewritten.storedColumnsUnread],
        // Constants that read no clock hold for as long as the rewrite is kept.
        stableUntil: clockFree(constants.flatMap((c) => c.expressions)) ? Infinity : 0,
      });
    return {
      ...rewritten,
      at: { ...at, windows: windowsOf(rewritten.provenance), edges: edgesOf(rewritten.provenance) },
      outcome: answers ? 'remade' : 'made',
    };
  }

  /** The rows of a statement whose answer hangs on its text alone (see RewriteInput.probe), kept by text. */
  private probed(sql: string): Promise<unknown[][]> {
    let rows = this.probes.get(sql);
    if (!rows) {
      rows = this.engine.values(sql);
      remember(this.probes, sql, rows);
      rows.catch(() => this.probes.delete(sql));
    }
    return rows;
  }

  /**
   * Whether a kept rewrite's constants (window bounds, bucket widths) have the values it was made
   * with. Checked by evaluating them, unless they are known to hold until now (constant-trends.ts);
   * the check evaluates them ahead too, when it can, to learn until when they hold.
   */
  private async constantsHold(
    kept: KeptRewrite,
    clock: { readonly node: Node; readonly ms: number } | null,
  ): Promise<boolean> {
    // The statement's clock: the value its now() is fixed to, else now (it runs no earlier).
    const start = clock ? clock.ms : Date.now();
    if (start < kept.stableUntil) return true;
    const expressions = kept.constants.flatMap((c) => c.expressions);
    const ahead = stabilityOffsetsMs.map((offset) => shifted(expressions, offset));
    const later = ahead.every((a) => a !== null) ? (ahead as Node[][]) : [];
    const all = copy([...expressions, ...later.flat()]);
    const texts = await this.engine.constantTexts(clock ? withClock(all, clock.node) : all).catch(() => null);
    if (!texts) return false;
    const now = texts.slice(0, expressions.length);
    if (JSON.stringify(now) !== JSON.stringify(kept.constants.flatMap((c) => c.texts))) return false;
    const values = later.map((_, i) => texts.slice((i + 1) * expressions.length, (i + 2) * expressions.length));
    kept.stableUntil = stableUntil(start, now, values);
    return true;
  }

  /**
   * The rows of a series table with times in [from, to) (ns; to null: on) of these audiences (null: every
   * audience's), estimated; null when there are none. Every audience's, from DuckLake's statistics of the table
   * (its row count and the least and greatest time, kept per snapshot) as if its rows were spread evenly over
   * that range; some audiences', from theirs alone (see audience-rows.ts).
   */
  private async rowsWithin(
    table: SeriesTable,
    snapshot: bigint,
    audiences: readonly string[] | null,
    from: bigint,
    to: bigint | null,
  ): Promise<number | null> {
    if (audiences) {
      const own = new Set(audiences);
      const viewSets = this.viewSets;
      return viewSets?.get(table.name)
        ? this.audienceRows.viewSetRows(table, (path) => viewSets.store.location(path), own, from, to)
        : this.audienceRows.seriesRows(table, snapshot, own, from, to);
    }
    // A view set's partitions are not in DuckLake's snapshots: its estimate is kept for a minute.
    const set = this.viewSets?.get(table.name);
    const key = set ? `${table.name}@minute ${Math.floor(Date.now() / 60_000)}` : `${table.name}@${snapshot}`;
    let extent = this.extents.get(key);
    if (!extent) {
      extent = set ? this.viewSetExtentOf(set) : this.extentOf(table);
      remember(this.extents, key, extent);
      extent.catch(() => this.extents.delete(key));
    }
    const known = await extent;
    if (!known) return null;
    const end = to === null || to > known.to ? known.to : to;
    const start = from < known.from ? known.from : from;
    if (end <= start) return 0;
    return (known.rows * Number(end - start)) / Number(known.to - known.from);
  }

  /** A view set's row count and event-time range, from its partitions' (every instance's: an estimate). */
  private async viewSetExtentOf(view: ViewSet): Promise<TableExtent | null> {
    const { rows } = await this.metadata.query<{ rows: string; least: Date | null; greatest: Date | null }>(
      `SELECT coalesce(sum(num_rows), 0)::TEXT AS rows, min(min_event_time) AS least, max(max_event_time) AS greatest
         FROM lakehouse_partitions WHERE view_set_name = $1 AND file_path IS NOT NULL`,
      [view.name],
    );
    const [row] = rows;
    if (!row || row.least === null || row.greatest === null) return null;
    const nanos = (date: Date): bigint => BigInt(date.getTime()) * 1_000_000n;
    // Read as JavaScript dates (milliseconds): the range runs to a millisecond after the greatest.
    return { rows: Number(row.rows), from: nanos(row.least), to: nanos(row.greatest) + 1_000_000n };
  }

  private async extentOf(table: SeriesTable): Promise<TableExtent | null> {
    const { rows } = await this.metadata.query<{ rows: string; least: string | null; greatest: string | null }>(
      `SELECT s.record_count::TEXT AS rows, c.min_value AS least, c.max_value AS greatest
         FROM ${lakeMetadataSchema}.ducklake_table t
         JOIN ${lakeMetadataSchema}.ducklake_schema n ON n.schema_id = t.schema_id AND n.end_snapshot IS NULL AND n.schema_name = 'main'
         JOIN ${lakeMetadataSchema}.ducklake_table_stats s ON s.table_id = t.table_id
         JOIN ${lakeMetadataSchema}.ducklake_column k ON k.table_id = t.table_id AND k.end_snapshot IS NULL AND k.column_name = $2
         JOIN ${lakeMetadataSchema}.ducklake_table_column_stats c ON c.table_id = t.table_id AND c.column_id = k.column_id
        WHERE t.table_name = $1 AND t.end_snapshot IS NULL`,
      [table.name, table.timeColumn],
    );
    const [row] = rows;
    if (!row || row.least === null || row.greatest === null) return null;
    // TIMESTAMPTZ statistics are written in UTC with their offset.
    const nanos = (text: string): bigint | null => timestampNanos(text.replace(/(?:\+00(?::?00)?|Z)$/, ''));
    const [from, greatest] = [nanos(row.least), nanos(row.greatest)];
    // The greatest time is a row's: the range runs to just after it.
    return from === null || greatest === null ? null : { rows: Number(row.rows), from, to: greatest + 1n };
  }

  /**
   * The states of rollups at a snapshot (fixed once the snapshot exists): those not kept from an earlier
   * read at it read from DuckLake's catalog in Postgres where their rows are inlined there (as DuckLake
   * writes a refresh's one row: a statement after each refresh pays no DuckLake scan for them), the others
   * in one DuckLake statement; all kept.
   */
  private async statesAt(
    definitions: readonly RollupDefinition[],
    snapshot: bigint,
  ): Promise<Map<string, RollupState>> {
    const out = new Map<string, RollupState>();
    const unknown: RollupDefinition[] = [];
    for (const d of definitions) {
      const kept =
        this.states.get(`${d.name}@${snapshot}`) ??
        (await this.readBefore<RollupState>(stateKey(d), rollupSchema, stateTableName(d.name), snapshot));
      if (kept) out.set(d.name, kept);
      else unknown.push(d);
    }
    if (unknown.length === 0) return out;
    const inlined = await inlinedRows(
      this.metadata,
      rollupSchema,
      unknown.map((d) => stateTableName(d.name)),
      ['watermark', 'source_snapshot', 'refreshed_at'],
      snapshot,
    ).catch(() => new Map<string, Array<Array<string | null>>>());
    const rows = new Map<string, unknown[] | undefined>(
      unknown.flatMap((d) => {
        const read = inlined.get(stateTableName(d.name));
        return read ? [[d.name, read[0]]] : [];
      }),
    );
    const scanned = unknown.filter((d) => !rows.has(d.name));
    if (scanned.length > 0)
      for (const [name, ...row] of await this.engine.values(
        scanned
          .map(
            (d) =>
              `SELECT ${quoteLiteral(d.name)} AS name, CAST(watermark AS VARCHAR), source_snapshot, CAST(refreshed_at AS VARCHAR) FROM ${at(stateTable(d.name), snapshot)}`,
          )
          .join(' UNION ALL '),
      ))
        rows.set(name as string, row);
    for (const definition of unknown) {
      const row = rows.get(definition.name);
      const state: RollupState = row
        ? {
            watermark: text(row[0]),
            sourceSnapshot: row[1] === null ? null : BigInt(row[1] as bigint | string),
            refreshedAt: text(row[2]),
          }
        : { watermark: null, sourceSnapshot: null, refreshedAt: null };
      remember(this.states, `${definition.name}@${snapshot}`, state);
      this.noteRead(stateKey(definition), snapshot, Promise.resolve(state));
      out.set(definition.name, state);
    }
    return out;
  }

  /**
   * What the rewrite reads back of each rollup's statement (the columns of its base it reads, its stored
   * columns): worked out once per catalog read (a new version of the catalog is a new map of definitions).
   */
  private readBack(
    definitions: ReadonlyMap<string, RollupDefinition>,
  ): (definition: RollupDefinition) => Promise<{ columnsRead: Set<string>; stored: StoredColumns | null }> {
    let read = this.readBacks.get(definitions);
    if (!read) {
      read = new Map();
      this.readBacks.set(definitions, read);
    }
    const byName = read;
    const cache = new Map();
    return (definition) => {
      let parts = byName.get(definition.name);
      if (!parts) {
        parts = (async () => ({
          columnsRead: await this.columnsRead(definition, definitions),
          stored: await storedColumns(this.engine, definition, definitions, cache),
        }))();
        byName.set(definition.name, parts);
        parts.catch(() => byName.delete(definition.name));
      }
      return parts;
    };
  }

  /**
   * The columns of its base a rollup reads (lower case): every name its statement (or its source
   * rollup's, down the chain) refers to, its time column and the audience.
   */
  private async columnsRead(
    definition: RollupDefinition,
    definitions: ReadonlyMap<string, RollupDefinition>,
  ): Promise<Set<string>> {
    if (definition.sourceIsRollup) {
      const source = definitions.get(definition.source);
      return source ? this.columnsRead(source, definitions) : new Set();
    }
    const names = new Set([definition.baseTimeColumn.toLowerCase(), 'audience']);
    const tree = await this.engine.parseSelect(definition.query);
    const visit = (value: unknown): void => {
      if (Array.isArray(value)) return value.forEach(visit);
      if (value === null || typeof value !== 'object') return;
      const node = value as Node;
      // Every part of a name: `properties.key` may be a struct column's field.
      if (node.class === 'COLUMN_REF') for (const part of node.column_names as string[]) names.add(part.toLowerCase());
      Object.values(node).forEach(visit);
    };
    visit(tree?.statements);
    return names;
  }

  /** DuckDB's aggregate functions and the sketches', worked out once. */
  aggregateNames(): Promise<ReadonlySet<string>> {
    this.aggregates ??= this.engine
      .functions()
      .then(
        (functions) =>
          new Set([
            ...functions.filter((f) => f.type === 'aggregate').map((f) => f.name.toLowerCase()),
            ...sketchAggregates,
          ]),
      );
    return this.aggregates;
  }

  /** How a series table keeps time: a timestamp column, an integer one, or null when it is no series table. */
  async timeKind(name: string): Promise<'timestamp' | 'integer' | null> {
    const table = (await this.tables.list()).get(name.toLowerCase());
    return table ? (isIntegerTime(table) ? 'integer' : 'timestamp') : null;
  }

  /**
   * Of a loaded view set (not a series table, which create_rollup reads as one): why no rollup may be
   * built on it, or null when one may, with the start of the lake's retention (what a first refresh
   * materializes from); undefined when it is no such view set.
   */
  async viewSetBase(
    name: string,
  ): Promise<{ readonly problem: string | null; readonly retainedFrom: Date } | undefined> {
    if ((await this.tables.list()).has(name.toLowerCase())) return undefined;
    const view = this.viewSets?.get(name.toLowerCase());
    if (!view || !this.viewSets) return undefined;
    const retainedFrom = new Date(Date.now() - Math.floor(this.viewSets.retentionDays) * 86_400_000);
    try {
      checkViewSetSource(view);
      return { problem: null, retainedFrom };
    } catch (error) {
      return { problem: (error as Error).message.replace(/^create_rollup: /, ''), retainedFrom };
    }
  }

  /**
   * validate --online: each rollup's stored rows against the aggregate of the raw rows, per
   * bucket, over its most recent complete buckets (ending at least 5 minutes before now, at most
   * `window` long but one bucket at least, within its retention), as of one DuckLake snapshot. Rollups not ready, of
   * integer time, no longer matching their table, expired or pending over the window are skipped. `end`: a time
   * whose bucket ends the window instead of the clock's (still not after the watermark), so that a check of rows
   * written relative to a fixed time compares the same buckets whenever it runs (tests: the clock's end moves by a
   * bucket at 5 minutes past).
   */
  async validate(window: string, end?: string): Promise<RollupValidation[]> {
    const cap = await this.interval(window, 'validate_rollups');
    const ending = end === undefined ? 'now()::TIMESTAMP - INTERVAL 5 MINUTE' : await this.timestamp(end);
    const definitions = await this.definitions();
    const tables = await this.tables.list();
    const snapshot = await this.snapshot();
    const all: TableScope = { kind: 'all' };
    const context = readContext();
    const readAt: ReadAt = { snapshot, definitions, tables, context };
    const cache = new Map();
    const out: RollupValidation[] = [];
    for (const definition of definitions.values()) {
      const skipped = (detail: string): void => {
        out.push({ rollup: definition.name, status: 'skipped', from: null, to: null, buckets: 0, detail });
      };
      const base = this.baseOf(definition, tables);
      const state = await this.state(definition, snapshot);
      if (definition.integer) skipped('integer time: buckets are not complete by the clock');
      else if (state.watermark === null) skipped('not ready: the rollup has not been refreshed yet');
      else if (!base || !sameSource(definition, base, await this.columnsRead(definition, definitions)))
        skipped(
          `hash changed: the ${definition.viewSetBase ? 'view set' : 'table'} is not the one the rollup was created over`,
        );
      else {
        const grain = `INTERVAL ${quoteLiteral(definition.grain)}`;
        const end = `least(time_bucket(${grain}, ${ending}), ${bucketLiteral(definition, state.watermark)})`;
        const retained =
          definition.retention === null
            ? 'CAST(NULL AS TIMESTAMP)'
            : `now()::TIMESTAMP - INTERVAL ${quoteLiteral(definition.retention)}`;
        // A retention shorter than the window leaves its older buckets out: the window starts at the first bucket
        // the retention keeps whole (k), and a rollup whose retention keeps none of it is expired.
        const [[from, to, expired]] = await this.engine.values(
          `SELECT CAST(greatest(b, coalesce(k, b)) AS VARCHAR), CAST(e AS VARCHAR), coalesce(k >= e, false) FROM (
             SELECT least(time_bucket(${grain}, e - INTERVAL ${quoteLiteral(cap)}), e - ${grain}) AS b, e,
                    time_bucket(${grain}, r) + CASE WHEN time_bucket(${grain}, r) < r THEN ${grain} ELSE INTERVAL 0 SECOND END AS k
               FROM (SELECT ${end} AS e, ${retained} AS r))`,
        );
        const pending = new Set(await this.pending(definition, state, readAt));
        const [begin, finish] = [bucketLiteral(definition, String(from)), bucketLiteral(definition, String(to))];
        const inWindow = await this.engine.values(
          `SELECT CAST(b AS VARCHAR) FROM range(${begin}, ${finish}, ${grain}) AS t(b)`,
        );
        // A rollup still being backfilled is compared over the buckets it holds (the text of timestamps sorts as they do).
        const held = inWindow
          .map(([b]) => String(b))
          .filter((b) => definition.coveredFrom === null || b >= definition.coveredFrom);
        const fresh = held.filter((b) => !pending.has(b));
        if (expired === true)
          skipped(`expired: the rollup's retention (${definition.retention}) keeps no complete bucket of the window`);
        else if (held.length === 0)
          skipped(`backfilling: the rollup holds buckets from ${definition.coveredFrom} on, after the window`);
        else if (fresh.length === 0) skipped('stale: every bucket of the window has changed since the last refresh');
        else {
          if (definition.sourceIsRollup) {
            const source = definitions.get(definition.source);
            if (source) await this.viewSql(source, all, readAt);
          }
          const literals = fresh.map((b) => bucketLiteral(definition, b));
          const storedRows = `SELECT * FROM ${at(materializedTable(definition.name), snapshot)} WHERE bucket IN (${literals.join(', ')})`;
          const rawRows = aggregateOver(
            definition,
            this.sourceRows(definition, snapshot, all, context),
            inBuckets(definition, literals)!,
          );
          const types = new Map(
            (await this.engine.values(`SELECT column_name, column_type FROM (DESCRIBE ${storedRows})`)).map(
              ([n, t]) => [String(n), String(t)],
            ),
          );
          const stored = await storedColumns(this.engine, definition, definitions, cache);
          const mismatches = await this.engine.values(
            `SELECT CAST(to_json(m) AS VARCHAR) FROM (${mismatchesSql(definition, types, stored, storedRows, rawRows)}) AS m LIMIT 5`,
          );
          out.push({
            rollup: definition.name,
            status: mismatches.length > 0 ? 'mismatch' : 'ok',
            from: String(from),
            to: String(to),
            buckets: fresh.length,
            detail: mismatches.length > 0 ? `[${mismatches.map(([m]) => String(m)).join(', ')}]` : null,
          });
        }
      }
    }
    return out;
  }

  /** What catalogs list: each rollup (a view) and its materialized table. */
  async relations(): Promise<Array<{ name: string; type: 'VIEW' | 'TABLE' }>> {
    return [...(await this.definitions()).keys()].flatMap((name) => [
      { name, type: 'VIEW' as const },
      { name: materializedName(name), type: 'TABLE' as const },
    ]);
  }

  /** The names statements may read: every rollup and its materialized table. */
  async readableNames(point?: RollupReadPoint): Promise<Set<string>> {
    const { definitions, aliases } = point?.catalog ?? (await this.catalog());
    const names = [...definitions.keys()];
    return new Set([...names, ...names.map(materializedName), ...aliases.keys()]);
  }

  /**
   * What reading a relation reads of the lake, for deny rules, by its name (lower case): for a rollup, its
   * materialized table or a stable name of one, every rollup it is made from and the view set or series table at
   * the bottom of the chain, lower case; nothing for other names. One catalog read for every name asked.
   */
  async sources(): Promise<(name: string) => string[]> {
    const { definitions, aliases } = await this.catalog();
    const byName = new Map<string, RollupDefinition>();
    for (const definition of definitions.values()) {
      byName.set(definition.name.toLowerCase(), definition);
      byName.set(materializedName(definition.name).toLowerCase(), definition);
    }
    for (const alias of aliases.values()) {
      const target = definitions.get(alias.target);
      if (target) byName.set(alias.name.toLowerCase(), target);
    }
    return (name) => {
      const definition = byName.get(name);
      if (!definition) return [];
      const sources = [definition.base.toLowerCase()];
      for (let d: RollupDefinition | undefined = definition; d?.sourceIsRollup; d = definitions.get(d.source))
        sources.push(d.source.toLowerCase());
      return sources;
    };
  }

  /**
   * list_rollups(): every rollup with its watermark, pending buckets and size, as of one snapshot: the latest, or
   * a point's (a client's transaction's: its own uncommitted writes make no bucket pending here).
   */
  async list(point?: RollupReadPoint): Promise<RollupListing[]> {
    const definitions = point?.catalog.definitions ?? (await this.definitions());
    if (definitions.size === 0) return [];
    const snapshot = point?.snapshot ?? (await this.snapshot());
    const tables = point?.tables ?? (await this.tables.list());
    const { rows } = await this.metadata.query<{ target: string; last_run: Date | null }>(
      `SELECT target, last_run FROM rollup_jobs WHERE kind = 'refresh'`,
    );
    const readAt: ReadAt = { snapshot, definitions, tables, context: readContext() };
    const out: RollupListing[] = [];
    for (const definition of definitions.values()) {
      const state = await this.state(definition, snapshot);
      const [[size]] = await this.engine.values(
        `SELECT count(*) FROM ${at(materializedTable(definition.name), snapshot)}`,
      );
      out.push({
        name: definition.name,
        source: definition.source,
        grain: definition.grain,
        watermark: state.watermark,
        pendingBuckets: (await this.pending(definition, state, readAt)).length,
        // A run of the job that found nothing to do wrote no state (see refreshed): it is a refresh all the same.
        lastRefresh: later(state.refreshedAt, rows.find((r) => r.target === definition.name)?.last_run ?? null),
        retention: definition.retention,
        materializedRows: Number(size),
        integer: definition.integer,
      });
    }
    return out;
  }

  /** An interval as DuckDB writes it; refused unless positive. */
  private async interval(value: string, fn = 'create_rollup'): Promise<string> {
    const [[canonical, positive]] = await this.engine.values(
      `SELECT CAST(TRY_CAST(${quoteLiteral(value)} AS INTERVAL) AS VARCHAR), TRY_CAST(${quoteLiteral(value)} AS INTERVAL) > INTERVAL 0 SECOND`,
    );
    if (canonical === null || positive !== true)
      throw rollupErrors.error('ROLLUP_ARGUMENT_INVALID', `${fn}: '${value}' is not a positive interval`);
    return String(canonical as string);
  }

  /** A time (UTC) as a TIMESTAMP literal of DuckDB's; refused unless one. */
  private async timestamp(value: string): Promise<string> {
    const [[canonical]] = await this.engine.values(
      `SELECT CAST(TRY_CAST(${quoteLiteral(value)} AS TIMESTAMP) AS VARCHAR)`,
    );
    if (canonical === null)
      throw rollupErrors.error('ROLLUP_ARGUMENT_INVALID', `validate_rollups: '${value}' is not a time`);
    return `TIMESTAMP ${quoteLiteral(String(canonical as string))}`;
  }

  /** A rollup of a rollup: its bucket must be a whole number of its source's buckets. */
  private async checkMultiple(grain: string, source: RollupDefinition): Promise<void> {
    let ok: boolean;
    if (source.integer) ok = BigInt(grain) % BigInt(source.grain) === 0n;
    else {
      const [[fits]] = await this.engine.values(
        `WITH g AS (SELECT CAST(${quoteLiteral(grain)} AS INTERVAL) AS outer_i, CAST(${quoteLiteral(source.grain)} AS INTERVAL) AS inner_i),
              parts AS (SELECT datepart('year', outer_i) * 12 + datepart('month', outer_i) AS outer_m,
                               epoch_us(outer_i - to_months(datepart('year', outer_i) * 12 + datepart('month', outer_i))) AS outer_us,
                               datepart('year', inner_i) * 12 + datepart('month', inner_i) AS inner_m,
                               epoch_us(inner_i - to_months(datepart('year', inner_i) * 12 + datepart('month', inner_i))) AS inner_us FROM g)
         SELECT CASE
           WHEN inner_m = 0 AND outer_m = 0 THEN outer_us % inner_us = 0
           WHEN inner_m = 0 THEN outer_us = 0 AND 86400000000 % inner_us = 0
           ELSE inner_us = 0 AND outer_us = 0 AND outer_m % inner_m = 0 END
         FROM parts`,
      );
      ok = fits === true;
    }
    if (!ok)
      throw rollupErrors.error(
        'ROLLUP_NOT_MERGEABLE',
        `create_rollup: the bucket (${grain}) must be a whole number of '${source.name}''s buckets (${source.grain})`,
      );
  }
}

/** The rollup a rollup-of-a-rollup reads: its definition, or ROLLUP_NOT_FOUND when it was dropped. */
function sourceRollup(
  definition: RollupDefinition,
  definitions: ReadonlyMap<string, RollupDefinition>,
): RollupDefinition {
  const source = definitions.get(definition.source);
  if (!source)
    throw rollupErrors.error(
      'ROLLUP_NOT_FOUND',
      `rollup '${definition.name}' reads '${definition.source}', which is gone`,
    );
  return source;
}

/** What a rollup's rewrite reads of its base table (or view set): every column with its type, hashed. */
function sourceHash(
  base: { readonly columns: ReadonlyArray<{ readonly name: string; readonly type: string }> },
  /** The columns the rollup reads (lower case); every column when not given (rollups made before it was kept narrow). */
  read?: ReadonlySet<string>,
): string {
  return createHash('sha256')
    .update(
      JSON.stringify(base.columns.filter((c) => !read || read.has(c.name.toLowerCase())).map((c) => [c.name, c.type])),
    )
    .digest('hex')
    .slice(0, 16);
}

/** Whether the base is still what the rollup was made over: the columns it reads, or (made earlier) every column. */
function sameSource(
  definition: RollupDefinition,
  base: { readonly columns: ReadonlyArray<{ readonly name: string; readonly type: string }> },
  read: ReadonlySet<string>,
): boolean {
  return definition.sourceHash === sourceHash(base, read) || definition.sourceHash === sourceHash(base);
}

/**
 * What set_rollup_retention deletes at a refresh at `snapshot` (applyRetention): each table and its rows to delete, the
 * rollup's buckets older than its retention and the records of them; none without a retention.
 */
function retentionDeletes(
  definition: RollupDefinition,
  snapshot: bigint,
): Array<{ readonly table: string; readonly rows: string }> {
  if (definition.retention === null) return [];
  const horizon = definition.integer
    ? `(SELECT max(${quoteIdentifier(definition.baseTimeColumn)}) FROM ${at(`${lakeCatalog}.main.${quoteIdentifier(definition.base)}`, snapshot)}) - ${BigInt(definition.retention)}`
    : `now()::TIMESTAMP - INTERVAL ${quoteLiteral(definition.retention)}`;
  const records = (which: string): string =>
    `rollup = ${quoteLiteral(definition.name)} AND ${which}
       AND CAST(bucket AS ${definition.integer ? 'HUGEINT' : 'TIMESTAMP'}) < ${horizon}`;
  return [
    { table: materializedTable(definition.name), rows: `bucket < ${horizon}` },
    { table: lostTable, rows: records('TRUE') },
    { table: heldTable, rows: records('postponed_since IS NOT NULL') },
  ];
}

/** The later of a state's refreshed_at (DuckDB's text, UTC) and a job's last run, as text; null when neither is known. */
function later(refreshedAt: string | null, lastRun: Date | null): string | null {
  if (refreshedAt === null || lastRun === null) return refreshedAt ?? lastRun?.toISOString() ?? null;
  return Date.parse(`${refreshedAt.replace(' ', 'T')}Z`) >= lastRun.getTime() ? refreshedAt : lastRun.toISOString();
}

/** The oldest instant a retention keeps (buckets before now less it are deleted at refresh), in ns since the epoch. */
function retainedFrom(retention: string | null): bigint | null {
  if (retention === null) return null;
  const parts = intervalParts(retention);
  const now = new Date();
  // A retention not understood covers nothing rather than everything.
  if (!parts) return BigInt(now.getTime()) * 1_000_000n;
  now.setUTCMonth(now.getUTCMonth() - parts.months);
  return BigInt(now.getTime()) * 1_000_000n - parts.nanos;
}

/** The end of a timestamp bucket (DuckDB's text of its start) as an ISO instant: its start plus the grain. */
function bucketEnd(definition: Pick<RollupDefinition, 'grain'>, bucket: string): string {
  const parts = intervalParts(definition.grain);
  if (!parts) throw new Error(`rollup grain '${definition.grain}' is not an interval`);
  const start = new Date(epochMs(bucket));
  // Months from a bucket start (a month start, as time_bucket's month ladders begin), then the rest.
  start.setUTCMonth(start.getUTCMonth() + parts.months);
  return new Date(start.getTime() + Number(parts.nanos / 1_000_000n)).toISOString();
}

/** A view set a rollup may read: bucketed by its (first) event-time column, grouped by its audience column. */
function checkViewSetSource(view: ViewSet): void {
  const time = view.columns.find((c) => c.name === view.minTimeColumn);
  if (!time || !/^(TIMESTAMP(_S|_MS|_NS)?|TIMESTAMP WITH TIME ZONE|TIMESTAMPTZ|DATE)$/i.test(time.type))
    throw rollupErrors.error(
      'ROLLUP_ARGUMENT_INVALID',
      `create_rollup: view set '${view.name}' has no timestamp time column to bucket by (its time column is '${view.minTimeColumn}')`,
    );
  if (view.audienceColumn !== 'audience' || !view.columns.some((c) => c.name === 'audience'))
    throw rollupErrors.error(
      'ROLLUP_ARGUMENT_INVALID',
      `create_rollup: view set '${view.name}' has no audience column; a rollup keeps its source's audience`,
    );
}

/**
 * Where a source rollup's retention (`keep`) starts, for a rollup of it: its buckets before it are deleted at its
 * refreshes (applyRetention), the latest time of the base at `snapshot` less `keep` for integer time.
 */
function horizonSql(definition: RollupDefinition, base: SeriesTable, keep: string, snapshot: bigint): string {
  return isIntegerTime(base)
    ? `(SELECT max(${quoteIdentifier(definition.baseTimeColumn)}) FROM ${at(lakeTable(definition.base), snapshot)}) - ${BigInt(keep)}`
    : `now()::TIMESTAMP - INTERVAL ${quoteLiteral(keep)}`;
}

function isIntegerTime(table: SeriesTable): boolean {
  const column = table.columns.find((c) => c.name === table.timeColumn);
  return column !== undefined && integerTypes.test(column.type);
}

function positiveInteger(value: string): string {
  if (!/^[1-9]\d*$/.test(value))
    throw rollupErrors.error(
      'ROLLUP_ARGUMENT_INVALID',
      `create_rollup: bucket_width must be a positive integer, not '${value}'`,
    );
  return value;
}

/** A rewrite kept for the next time the same statement comes at the same snapshot. */
/** What Rollups.rewrite did to a statement. */
export interface RollupRewrite {
  readonly provenance: Provenance;
  /** The rollups its levels read. */
  readonly rollups: string[];
  /** The tables whose stored columns a level read until it was rewritten onto a rollup (their uses are moot). */
  readonly storedColumnsUnread: string[];
  readonly at: RollupReadPoint;
  /**
   * `kept`: the rewrite of an earlier statement of the same text (no rollup was considered again);
   * `remade`: made again from one whose window moved with the clock, its bounds worked out without DuckDB;
   * `made`: made.
   */
  readonly outcome: 'made' | 'kept' | 'remade';
}

interface KeptRewrite {
  readonly at: number;
  /** The constant expressions it evaluated (window bounds, bucket widths) and their values then. */
  readonly constants: EvaluatedConstants[];
  /**
   * The rewritten statements, as JSON; null for one whose bounds move with the clock (remade, never reused as it
   * is). Kept as text, as the provenance, because each reuse needs a copy of its own (the statement's later
   * rewrites change it): JSON.parse makes one in about a tenth of structuredClone's time (a dashboard panel's tree
   * of 5.7 kB: 0.14 against 1.4 ms, looped at load 25).
   */
  readonly statements: string | null;
  readonly provenance: string;
  readonly rollups: string[];
  readonly storedColumnsUnread: string[];
  /** Until when (ms since the epoch) its constants are known to keep their values (constantsHold). */
  stableUntil: number;
}

/** How long a rewrite is kept: a rollup's retention moves with the clock, not with snapshots. */
const rewriteKeptMs = 60_000;
/**
 * ORRERY_ROLLUP_RAW_EDGES_MIN_ROWS's default. A window off bucket boundaries whose raw edges are read through
 * DuckLake's scan (rows inlined in the catalog at or after its start, ...) reads the lake twice, where raw reads it
 * once: bench/rollup-rewrite/edges-threshold.mjs --inlined at 10 M rows, 0.57-0.77x raw's server CPU up to 322 k
 * rows replaced, 1.19x at 989 k. Edges read from the table's files need no threshold (rawCheaper).
 */
const defaultRawEdgesMinRows = 1_000_000;
/** A series table's row count and its rows' time range [from, to) in ns, from DuckLake's statistics. */
interface TableExtent {
  readonly rows: number;
  readonly from: bigint;
  readonly to: bigint;
}
/** How long the list of view sets with rollups is kept (readsViewSetBase). */
const viewSetBasesKeptMs = 2_000;

/** How many states and change-feed results are kept: the reads of a dashboard's refresh, many times over. */
const keptEntries = 256;

/** Keeps an entry, dropping the oldest beyond `keptEntries`. */
/**
 * Constants' values with the statement's now() at `clockNs`, worked out without DuckDB (those that read no clock as
 * they were evaluated); null when some bound is not one clock-bounds.ts works out.
 */
function workedOut(evaluated: readonly EvaluatedConstants[], clockNs: bigint): Array<Array<string | null>> | null {
  const out: Array<Array<string | null>> = [];
  for (const { expressions, texts } of evaluated) {
    const values = expressions.map((e, i) => (clockFree([e]) ? texts[i] : clockBoundText(e, clockNs)));
    if (values.some((v, i) => v === null && !clockFree([expressions[i]]))) return null;
    out.push(values);
  }
  return out;
}

function remember<T>(kept: Map<string, T>, key: string, value: T): void {
  kept.set(key, value);
  if (kept.size > keptEntries) kept.delete(kept.keys().next().value!);
}
