import { isFileReadFailure, type DuckDBEngine } from '../engine/index.js';
import { queryablePartitions, type ObjectStore, type PartitionChange } from '../lakehouse/index.js';
import { rollupInvalidationsChannel, type MetadataQueries, type MetadataStore } from '../metadata/index.js';
import {
  filesRelation,
  globalInstance,
  quoteIdentifier,
  schemaHash,
  typedColumns,
  withSource,
  type ViewSet,
} from '../views/index.js';
import { rollupErrors } from './errors.js';
import { bucketSql } from './rollup-sql.js';

// Rollups of view sets (log_entries, measures, spans, sets defined by DDL). A view set's rows are
// its partitions' Parquet files, listed in Postgres; they change only when partitions are
// registered or retired, in a Postgres transaction. That transaction records, per rollup on the
// set, the buckets whose rows it changed (rollup_view_invalidations, this component's table): the
// rows of the files it retired and of the files it registered are compared bucket by bucket (row
// count and the sum of row hashes, after the set's merge query), so a fresh partition invalidates
// the buckets of its rows, late blocks included, a regenerated one the buckets that differ, and a
// merge nothing. A refresh records the last invalidation it consumed with its state in DuckLake;
// a read takes the state, then the partitions and the invalidations after it in one Postgres
// snapshot, so the three always agree.
//
// The lake's retention deletes partitions by insert time, so it can take some of a bucket's rows
// (those inserted long ago) and leave others, and a late block can bring rows for any event time.
// Its transaction records, per rollup, the buckets of the rows it took (rollup_view_kept): those
// keep their materialized values for ever, and a later change to them is not pending (recomputing
// one would store a fragment). Every other bucket follows its raw rows, however old its event time.

/** What the rollups of view sets need of them: the loaded sets, the store their files are in, their retention. */
export interface ViewSetSources {
  readonly get: (name: string) => ViewSet | undefined;
  readonly store: ObjectStore;
  /** MICROMEGAS_RETENTION_DAYS: how far back, by insert time, the lake keeps partitions. */
  readonly retentionDays: number;
}

export const invalidationsSchemaSql = `
ALTER TABLE rollup_definitions ADD COLUMN IF NOT EXISTS base_is_view_set BOOLEAN NOT NULL DEFAULT false;
CREATE TABLE IF NOT EXISTS rollup_view_invalidations (
  seq         BIGSERIAL PRIMARY KEY,
  rollup      TEXT NOT NULL REFERENCES rollup_definitions (name) ON DELETE CASCADE,
  bucket      TEXT NOT NULL,
  recorded_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS rollup_view_invalidations_rollup ON rollup_view_invalidations (rollup, seq);
CREATE TABLE IF NOT EXISTS rollup_view_kept (
  rollup TEXT NOT NULL REFERENCES rollup_definitions (name) ON DELETE CASCADE,
  bucket TEXT NOT NULL,
  PRIMARY KEY (rollup, bucket)
);`;

/**
 * Every change to a set's partitions holds this lock shared while it records its invalidations; a
 * refresh takes it exclusively while it reads the partitions and the last invalidation, so no change
 * is half in what it read (its partitions seen, its invalidations numbered below the last one read).
 */
const lockKey = (view: string): string => `orrery_rollup_view_invalidations:${view}`;

/** A view set as rollups read it at one moment: its files, and the buckets invalidated since. */
export interface ViewSetRead {
  /** The files of its current partitions, where DuckDB opens them. */
  readonly files: readonly string[];
  /** The number of the last invalidation recorded (for any set) as of this read. */
  readonly sequence: bigint;
  /** Those of buckets the lake's retention took rows of are left out: they keep their stored values. */
  readonly invalidations: ReadonlyArray<{
    readonly rollup: string;
    readonly bucket: string;
    readonly sequence: bigint;
  }>;
}

/**
 * The files of a set and the invalidations of `rollups` numbered after `after`, in one Postgres
 * snapshot; `exclusive` (a refresh) holds the set's lock while it reads, so no change is under way.
 */
export async function readViewSet(
  metadata: MetadataStore,
  sources: ViewSetSources,
  view: ViewSet,
  rollups: readonly string[],
  after: bigint,
  exclusive: boolean,
): Promise<ViewSetRead> {
  return metadata.transaction(async (tx) => {
    // Under the exclusive lock nothing changes, so each statement's own snapshot agrees; without it,
    // one snapshot for the whole transaction, taken by its first statement.
    if (exclusive) await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [lockKey(view.name)]);
    else await tx.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ');
    const partitions = await queryablePartitions(tx, view.name, globalInstance, schemaHash(view.columns));
    const invalidations = await invalidationsAfter(tx, rollups, after);
    const { rows: last } = await tx.query<{ seq: string }>(
      'SELECT coalesce(max(seq), 0)::TEXT AS seq FROM rollup_view_invalidations',
    );
    const sequence = BigInt(last[0].seq);
    return {
      files: partitions.map((p) => sources.store.location(p.filePath!)),
      sequence: sequence > after ? sequence : after,
      invalidations,
    };
  });
}

/** In the transaction of the lake's retention, the files of a set as they were before it: those left and those it takes. */
export async function filesBeforeExpiry(
  tx: MetadataQueries,
  sources: ViewSetSources,
  view: ViewSet,
  change: PartitionChange,
): Promise<string[]> {
  const left = await queryablePartitions(tx, view.name, globalInstance, schemaHash(view.columns));
  return [...left.map((p) => p.filePath!), ...change.retired].map((key) => sources.store.location(key));
}

/** The invalidations of `rollups` numbered after `after`, oldest first, less those of buckets kept as stored. */
export async function invalidationsAfter(
  db: MetadataQueries,
  rollups: readonly string[],
  after: bigint,
): Promise<ViewSetRead['invalidations']> {
  const { rows } = await db.query<{ rollup: string; bucket: string; seq: string }>(
    `SELECT rollup, bucket, seq::TEXT AS seq FROM rollup_view_invalidations i
      WHERE rollup = ANY($1) AND seq > $2
        AND NOT EXISTS (SELECT 1 FROM rollup_view_kept k WHERE k.rollup = i.rollup AND k.bucket = i.bucket)
      ORDER BY seq`,
    [rollups, after.toString()],
  );
  return rows.map((r) => ({ rollup: r.rollup, bucket: r.bucket, sequence: BigInt(r.seq) }));
}

/** Forgets the invalidations a refresh before the last one consumed, once no read can still be using them. */
export async function forgetInvalidations(db: MetadataQueries, rollup: string, consumed: bigint): Promise<void> {
  await db.query(
    `DELETE FROM rollup_view_invalidations WHERE rollup = $1 AND seq <= $2 AND recorded_at < now() - INTERVAL '10 minutes'`,
    [rollup, consumed.toString()],
  );
}

/**
 * Records, in the transaction of a change to a set's partitions, the buckets it changed for each
 * rollup on the set, or for retention the buckets whose rows it took (kept as stored). A set
 * without rollups pays one shared lock and one lookup.
 */
export async function recordInvalidations(
  tx: MetadataQueries,
  engine: DuckDBEngine,
  sources: ViewSetSources,
  change: PartitionChange,
): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock_shared(hashtext($1))', [lockKey(change.viewSetName)]);
  const { rows } = await tx.query<{ name: string; grain: string; base_time_column: string }>(
    'SELECT name, grain, base_time_column FROM rollup_definitions WHERE base = $1 AND base_is_view_set',
    [change.viewSetName],
  );
  if (rows.length === 0) return;
  if (change.mergedFrom && sameFiles(change.mergedFrom, change.retired)) return;
  const view = sources.get(change.viewSetName);
  if (!view)
    throw rollupErrors.error(
      'ROLLUP_SOURCE_NOT_FOUND',
      `view set '${change.viewSetName}' is not loaded: the buckets its partitions changed cannot be recorded for its rollups`,
    );
  const relation = (keys: readonly string[]): string =>
    typedColumns(
      view.columns,
      withSource(
        view.mergeQuery,
        `(${filesRelation(
          view.columns,
          keys.map((key) => sources.store.location(key)),
        )})`,
      ),
    );
  const byGrain = new Map<string, { grain: string; column: string; rollups: string[] }>();
  for (const row of rows) {
    const key = `${row.grain}\u0000${row.base_time_column}`;
    const entry = byGrain.get(key) ?? { grain: row.grain, column: row.base_time_column, rollups: [] };
    entry.rollups.push(row.name);
    byGrain.set(key, entry);
  }
  for (const { grain, column, rollups } of byGrain.values()) {
    const bucket = bucketSql({ integer: false, grain }, column);
    const hashed = (sql: string): string =>
      `SELECT b, count(*) AS n, sum(h) AS s FROM (SELECT ${bucket} AS b, hash(${view.columns.map((c) => quoteIdentifier(c.name)).join(', ')})::HUGEINT AS h FROM (${sql})) GROUP BY b`;
    if (change.expired) {
      const bucketsOf = async (files: readonly string[]): Promise<string[]> =>
        (
          await engine.values(
            `SELECT DISTINCT CAST(b AS VARCHAR) FROM (SELECT ${bucket} AS b FROM (${relation(files)})) WHERE b IS NOT NULL`,
          )
        ).map(([b]) => String(b));
      // A file that cannot be read (deleted or damaged outside Orrery) must not stop retention: its
      // buckets are not known, so they are not kept; the other files' are.
      const readable = (files: readonly string[]): Promise<string[]> =>
        bucketsOf(files).catch((error: unknown) => {
          if (!isFileReadFailure(error)) throw error;
          return files.length === 1 ? [] : Promise.all(files.map((f) => readable([f]))).then((b) => b.flat());
        });
      await tx.query(
        `INSERT INTO rollup_view_kept (rollup, bucket)
         SELECT r, b FROM unnest($1::TEXT[]) AS r, unnest($2::TEXT[]) AS b ON CONFLICT DO NOTHING`,
        [rollups, [...new Set(await readable(change.retired))]],
      );
      await notifyReaders(tx, rollups);
      continue;
    }
    const changed = await engine.values(
      `WITH o AS (${hashed(relation(change.retired))}), n AS (${hashed(relation(change.added))})
       SELECT DISTINCT CAST(coalesce(o.b, n.b) AS VARCHAR) FROM o FULL OUTER JOIN n ON o.b = n.b
        WHERE coalesce(o.b, n.b) IS NOT NULL AND (o.n IS DISTINCT FROM n.n OR o.s IS DISTINCT FROM n.s)`,
    );
    if (changed.length === 0) continue;
    await tx.query(
      `INSERT INTO rollup_view_invalidations (rollup, bucket)
       SELECT r, b FROM unnest($1::TEXT[]) AS r, unnest($2::TEXT[]) AS b`,
      [rollups, changed.map(([b]) => String(b))],
    );
    await notifyReaders(tx, rollups);
  }
}

/**
 * Tells the servers that keep the rollups' invalidations between statements to read them again:
 * delivered at commit, with the partitions' own notifications (in the order sent, together).
 */
async function notifyReaders(tx: MetadataQueries, rollups: readonly string[]): Promise<void> {
  await tx.query('SELECT pg_notify($1, r) FROM unnest($2::TEXT[]) AS r', [rollupInvalidationsChannel, rollups]);
}

function sameFiles(a: readonly string[], b: readonly string[]): boolean {
  const set = new Set(a);
  return set.size === new Set(b).size && b.every((f) => set.has(f));
}
