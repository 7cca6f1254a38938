import { createHash } from 'node:crypto';

/** A column of a view set: its name and DuckDB type. */
export interface ColumnSpec {
  readonly name: string;
  readonly type: string;
}

/** The insert-time range a partition covers, half-open, in nanoseconds since the epoch. */
export interface InsertRange {
  readonly begin: bigint;
  readonly end: bigint;
}

/** How rows of a view are matched to a caller's audiences. */
export type AudienceColumn = 'audience' | 'process_id';

/**
 * A view set: a table users query, materialized by the daemon into Parquet partitions.
 * Built-in sets read the ingested blocks; SQL-defined sets (log_stats, CREATE MATERIALIZED
 * VIEW) read other view sets through their queries.
 */
export interface ViewSet {
  readonly name: string;
  /** Materialization order: a set is materialized after every set of a lower group. */
  readonly updateGroup: number;
  readonly columns: readonly ColumnSpec[];
  /** Event-time bounds of a partition, read from these columns. */
  readonly minTimeColumn: string;
  readonly maxTimeColumn: string;
  readonly audienceColumn: AudienceColumn;
  /** Widest fresh partition and widest merged partition, in seconds. */
  readonly sourceDeltaSeconds: number;
  readonly mergeDeltaSeconds: number;
  /** The query users see, over `{source}` (the set's partitions). */
  readonly mergeQuery: string;
  readonly mergeSortOrder?: readonly string[];
  /**
   * Set when each partition holds a key of these columns once and the merge query only groups by them (see
   * mergeKeysOf): partitions that share no key are the merge's rows as they are.
   */
  readonly mergeKeys?: readonly string[];
  readonly source: ViewSource;
  /**
   * Columns whose values mean something only within one series (`values`), and the columns naming the series
   * (`key`): a rollup measure reading one mixes series unless each key column is a dimension or its FILTER pins it
   * (database-resources.md, rollup: "a per-series measure needs dimensions the rollup lacks").
   */
  readonly series?: { readonly key: readonly string[]; readonly values: readonly string[] };
}

/** Whether a set's rows are its partitions' rows (its merge query is `SELECT * FROM {source}`), not merged ones. */
export const passesRowsThrough = (view: Pick<ViewSet, 'mergeQuery'>): boolean =>
  /^select \* from \{source\}$/i.test(view.mergeQuery.trim());

/** Where a view set's rows come from. */
export type ViewSource =
  | { kind: 'metadata'; table: 'blocks' | 'processes' | 'streams' }
  /** `extract` reads `{payloads}`: the rows of the range's payload files, each with its `filename` (payloadRows). */
  | {
      kind: 'payload';
      tag: 'log' | 'metrics' | 'traces';
      extract: string;
      /**
       * The extract over `{payloads}` = orderedProtobufLogs(...) (logs only): rows already in time order with
       * their block columns, so neither the join nor the sort of `extract` runs.
       */
      ordered?: string;
    }
  | {
      kind: 'sql';
      extractQuery: string;
      countQuery: string;
      /** The view sets either query reads. */
      reads: readonly string[];
      /** The view sets the extract query reads: the partitions its rows come from. */
      extractReads: readonly string[];
    };

/** Schema hashes of column lists already hashed (a view set's columns are hashed by every statement over it). */
const schemaHashes = new WeakMap<readonly ColumnSpec[], Buffer>();

/** Schema hash: derived from the column names and types only, 8 bytes. */
export function schemaHash(columns: readonly ColumnSpec[]): Buffer {
  let hash = schemaHashes.get(columns);
  if (!hash) {
    const canonical = columns.map((c) => `${c.name}\u0000${c.type.toUpperCase()}`).join('\u0001');
    hash = createHash('sha256').update(canonical).digest().subarray(0, 8);
    schemaHashes.set(columns, hash);
  }
  return hash;
}

/** DuckDB's integer types, and decimals of no fractional digits. */
export const integerTypes =
  /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|DECIMAL\(\d+,0\))$/;

/** The one instance of a global view set. */
export const globalInstance = 'global';

/** `<n> <unit>` (second(s), minute(s), hour(s), day(s)) in seconds; null when malformed. */
export function parseDelta(text: string): number | null {
  const match = /^\s*(\d+)\s+(second|minute|hour|day)s?\s*$/i.exec(text);
  if (!match) return null;
  const n = Number(match[1]);
  if (n <= 0) return null;
  const unit = { second: 1, minute: 60, hour: 3600, day: 86400 }[match[2].toLowerCase() as 'second'];
  return n * unit;
}
