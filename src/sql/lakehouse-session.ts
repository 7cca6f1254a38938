import type { MetadataQueries } from '../metadata/index.js';
import type { Principal } from '../auth/index.js';
import { queryablePartitions, type ObjectStore, type Partition, type PartitionCache } from '../lakehouse/index.js';
import {
  globalInstance,
  partitionsMerged,
  schemaHash,
  sessionStatements,
  type EventRange,
  type ReadScope,
  type RowsToRead,
  type SessionView,
  type ViewLoader,
  type ViewRegistry,
  type ViewSet,
} from '../views/index.js';
import type { QueryShape } from '../engine/index.js';
import type { SeriesTables } from '../tables/index.js';
import type { Rollups } from '../rollups/index.js';

/** What the lakehouse needs to answer queries: partitions in Postgres, files in the store, loaded view sets. */
export interface Lakehouse {
  readonly db: MetadataQueries;
  readonly store: ObjectStore;
  readonly views: ViewRegistry;
  /** Keeps DDL-defined sets loaded; knows which stored definitions failed to load and why. */
  readonly loader?: ViewLoader;
  /** Series tables, when the DuckLake catalog is attached. */
  readonly tables?: SeriesTables;
  /** Rollups of the series tables, when the DuckLake catalog is attached. */
  readonly rollups?: Rollups;
  /** Partition lists kept between statements (without it, each statement asks Postgres). */
  readonly partitions?: PartitionCache;
}

/** The rows a key reads: admins every row, others their audiences (which always include public). */
export function scopeOf(principal: Principal): ReadScope {
  return principal.admin ? { kind: 'all' } : { kind: 'audiences', audiences: principal.audiences };
}

/** The view sets a query names (CTEs of the same name shadow them). */
export function referencedViews(shape: QueryShape, lakehouse: Lakehouse): ViewSet[] {
  const found = new Map<string, ViewSet>();
  for (const relation of shape.relations) {
    if (relation.cte) continue;
    const view = lakehouse.views.get(relation.name);
    if (view) found.set(view.name, view);
  }
  return [...found.values()];
}

/** Which of a set's partitions (object keys) a statement must read; the others cannot hold a row it keeps. */
export interface PartitionFilter {
  keep(view: ViewSet, partitions: readonly Partition[]): Promise<readonly string[]>;
  /** The stored columns the statement was rewritten to read from these files (see StoredColumnReads). */
  storedColumns?(view: ViewSet, files: readonly string[]): Promise<readonly string[]>;
  /**
   * The files to read in their place (a projection's sorted copies of them, which hold the same rows and the
   * columns the statement reads), and the set's columns they lack.
   */
  projected?(view: ViewSet, files: readonly string[]): Promise<{ files: readonly string[]; absent: readonly string[] }>;
  /**
   * These partitions (those kept), in the order the statement reads them best (newest first for a top-N by time),
   * or the newest alone and the time after which their rows are read (a latest-n top-N bounded: see TopNBound).
   */
  newest?(view: ViewSet, partitions: readonly Partition[]): { files: readonly string[]; after?: bigint };
  /** The rows to read of a partition kept (a text index's postings), copies named by object key, and how many; undefined: every row. */
  rows?(file: string): (RowsToRead & { readonly count: number }) | undefined;
  /** Told how many rows of a set's partitions the statement reads (those of the files read whole, the rows of the others). */
  read?(rows: number): void;
}

/** A set's session view: where DuckDB opens its current partitions, those meeting the event range (and the filter). */
async function sessionViewOf(
  lakehouse: Lakehouse,
  view: ViewSet,
  eventRange: EventRange = {},
  filter?: PartitionFilter,
): Promise<SessionView> {
  const hash = schemaHash(view.columns);
  const partitions = lakehouse.partitions
    ? await lakehouse.partitions.queryable(view.name, globalInstance, hash, eventRange)
    : await queryablePartitions(lakehouse.db, view.name, globalInstance, hash, eventRange);
  const all = partitions.map((p) => p.filePath!);
  const pruned = filter ? await filter.keep(view, partitions) : all;
  const { files: keys, after } =
    filter?.newest && pruned.length > 1 ? filter.newest(view, partitionsOf(partitions, pruned)) : { files: pruned };
  const stored = (await filter?.storedColumns?.(view, keys)) ?? [];
  const { files: read, absent } = (await filter?.projected?.(view, keys)) ?? { files: keys, absent: [] };
  // Rows are numbered in the partitions' own files, not in a projection's sorted copies.
  const rows = new Map<string, RowsToRead>();
  const rowsOf = new Map(partitions.map((p) => [p.filePath!, p.numRows]));
  let rowsRead = 0;
  for (const key of keys) {
    const some = read === keys ? filter?.rows?.(key) : undefined;
    if (some) {
      const copies = some.copies?.map((c) => ({ ...c, file: lakehouse.store.location(c.file) })) ?? null;
      rows.set(lakehouse.store.location(key), { bitmap: some.bitmap, copies });
    }
    rowsRead += some ? some.count : (rowsOf.get(key) ?? 0);
  }
  filter?.read?.(rowsRead);
  return {
    view,
    files: read.map((key) => lakehouse.store.location(key)),
    stored,
    absent,
    rows,
    merged: partitionsMerged(view, partitionsOf(partitions, keys)),
    after,
  };
}

/** The partitions of these object keys, in the keys' order. */
function partitionsOf(partitions: readonly Partition[], keys: readonly string[]): Partition[] {
  const byKey = new Map(partitions.map((p) => [p.filePath!, p]));
  return keys.map((key) => byKey.get(key)!);
}

/** The processes set's files, which tell the audience of each process, when an audience scope needs them. */
export async function processAudiencesFor(
  lakehouse: Lakehouse,
  views: readonly ViewSet[],
  scope: ReadScope,
): Promise<SessionView | undefined> {
  const needsOwners = scope.kind === 'audiences' && views.some((v) => v.audienceColumn === 'process_id');
  const processes = needsOwners ? lakehouse.views.get('processes') : undefined;
  return processes ? await sessionViewOf(lakehouse, processes) : undefined;
}

/**
 * The statements that make the named view sets queryable for this caller. The filter only narrows
 * the partitions of the named sets; the processes that tell audiences are always read whole.
 */
export async function viewSetup(
  lakehouse: Lakehouse,
  views: readonly ViewSet[],
  scope: ReadScope,
  eventRange: EventRange,
  filter?: PartitionFilter,
): Promise<string[]> {
  const sessionViews = await Promise.all(views.map((view) => sessionViewOf(lakehouse, view, eventRange, filter)));
  const processAudiences = await processAudiencesFor(lakehouse, views, scope);
  return sessionStatements(sessionViews, scope, { processAudiences, eventRange });
}
