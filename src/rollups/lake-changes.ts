import type { MetadataQueries } from '../metadata/index.js';
import { quoteIdentifier } from '../engine/index.js';
import { lakeMetadataSchema } from '../tables/index.js';
import { atOrAfter, live } from './table-files.js';

// What changed in a DuckLake table between two snapshots, from DuckLake's catalog in Postgres rather
// than through DuckDB: a never-stale read at a new snapshot looks up its rollup's state, the buckets
// retention kept and the base table's changed buckets, each a DuckDB query through DuckLake (its
// transaction and catalog reads: ~17 Postgres statements each) when made again at every snapshot,
// which under steady ingestion is every read (bench/latency/lake-phases.mjs --rollups --ingest). A
// snapshot that did not change a table leaves what was read of it as it was, and an insert whose rows
// all fall after a rollup's watermark adds no pending bucket. DuckLake lists every table each
// snapshot changes in ducklake_snapshot_changes (it is what its conflict checks read): one Postgres
// query answers it for every table at once.

/** How a table changed between two snapshots: not at all, by added rows alone, or otherwise (or unknown). */
export type TableChange = 'none' | 'inserts' | 'other';

/** What DuckLake records for a snapshot that only adds rows to a table (a data file, rows inlined in its catalog). */
const insertKinds = new Set(['inserted_into_table', 'inlined_insert']);

/** What DuckLake records for a flush of a table's inlined rows to files (ducklake_flush_inlined_data): the catalog's word, ducklake_snapshots()' word. */
const flushKinds = new Set(['inline_flush', 'flushed_inlined']);

interface Range {
  /**
   * Each change of the snapshots in the range: `inserted_into_table:12` is [inserted_into_table, 12]; less those of a
   * table a snapshot flushed (its rows unchanged).
   */
  readonly changes: ReadonlyArray<readonly [kind: string, subject: string]>;
  /** Each change, a flush's included. */
  readonly withFlushes: ReadonlyArray<readonly [kind: string, subject: string]>;
  /** The catalog's schema version at the range's end (DuckLake moves it at every table created, altered or dropped). */
  readonly schemaVersion: string;
}

interface TableInfo {
  readonly id: string;
  readonly columns: ReadonlyMap<string, { readonly id: string; readonly type: string }>;
}

const s = lakeMetadataSchema;

/** Ranges and table ids kept per process (a few short strings each). */
const keptEntries = 256;

function remember<T>(kept: Map<string, T>, key: string, value: T): void {
  kept.set(key, value);
  if (kept.size > keptEntries) kept.delete(kept.keys().next().value!);
}

export class LakeChanges {
  /** The changes of each range of snapshots read, by `after:upTo` (a range's changes never change). */
  private readonly ranges = new Map<string, Promise<Range>>();
  /** Tables' ids and columns by schema version and name (a version's tables never change). */
  private readonly tables = new Map<string, Promise<TableInfo | null>>();

  constructor(private readonly catalog: MetadataQueries) {}

  /**
   * How `schema.table` changed from snapshot `after` to `upTo` (later); 'other' for a table created or dropped between.
   * A flush of its inlined rows to files (`flushes`) is no change of its rows, but one of its files: 'other' for what
   * was read of its files (a listing that found inlined rows, null, lists them again).
   */
  async between(
    schema: string,
    table: string,
    after: bigint,
    upTo: bigint,
    flushes: 'none' | 'other' = 'none',
  ): Promise<TableChange> {
    if (after === upTo) return 'none';
    const read = await this.range(after, upTo);
    const range = flushes === 'none' ? read : { ...read, changes: read.withFlushes };
    // A schema created or dropped, or a table created by a name like this one's (names are quoted there, ids elsewhere).
    if (
      range.changes.some(
        ([kind, subject]) =>
          kind === 'created_schema' ||
          kind === 'dropped_schema' ||
          (kind === 'created_table' && subject.includes(table)),
      )
    )
      return 'other';
    const info = await this.table(schema, table, upTo, range.schemaVersion);
    if (!info) return 'other';
    let inserts = false;
    for (const [kind, subject] of range.changes) {
      if (subject !== info.id) continue;
      if (!insertKinds.has(kind)) return 'other';
      inserts = true;
    }
    return inserts ? 'inserts' : 'none';
  }

  /** Whether the snapshots after `after` up to `upTo` inlined rows into `schema.table` (a range between() answers 'inserts' for). */
  async inlinedInserts(schema: string, table: string, after: bigint, upTo: bigint): Promise<boolean> {
    const range = await this.range(after, upTo);
    const info = await this.table(schema, table, upTo, range.schemaVersion);
    return !info || range.changes.some(([kind, subject]) => kind === 'inlined_insert' && subject === info.id);
  }

  /**
   * True when every row the snapshots after `after` up to `upTo` inserted into `schema.table` has
   * `timeColumn` at or after `from` (DuckDB's text of it), by the data files' statistics and the rows
   * inlined in the catalog; false when one may not (a file without statistics included). For a range
   * between() answers 'inserts' for.
   */
  async insertsAtOrAfter(
    schema: string,
    table: string,
    timeColumn: string,
    after: bigint,
    upTo: bigint,
    from: string,
  ): Promise<boolean> {
    const range = await this.range(after, upTo);
    const info = await this.table(schema, table, upTo, range.schemaVersion);
    const time = info?.columns.get(timeColumn);
    if (!info || !time || !atOrAfter(time.type, '')) return false;
    const notAfter = (value: string): string => `NOT (${atOrAfter(time.type, value, '$4')!})`;
    const added = `begin_snapshot > $2 AND begin_snapshot <= $1`;
    // A file a flush wrote of inlined rows (SeriesTables.flushInlined) begins at its first row's snapshot and holds
    // rows up to its partial_max: one whose rows may include some of the range's, though it began before, is checked
    // too (its least value is no greater than theirs). So are the rows such a flush took out of the catalog since.
    const checks = [
      `SELECT 1 FROM ${s}.ducklake_data_file f
         LEFT JOIN ${s}.ducklake_file_column_stats k ON k.data_file_id = f.data_file_id AND k.column_id = $5
        WHERE f.table_id = $3 AND (f.${added} OR (f.begin_snapshot <= $1 AND f.partial_max > $2))
          AND (k.min_value IS NULL OR ${notAfter('k.min_value')})`,
    ];
    // Rows inlined in the catalog: in a table of their own per schema version of the table, made with its first such rows.
    if (range.changes.some(([kind, subject]) => kind === 'inlined_insert' && subject === info.id)) {
      const { rows } = await this.catalog.query<{ name: string }>(
        `SELECT table_name AS name FROM ${s}.ducklake_inlined_data_tables WHERE table_id = $1`,
        [info.id],
      );
      const column = quoteIdentifier(timeColumn);
      for (const { name } of rows)
        checks.push(
          `SELECT 1 FROM ${s}.${quoteIdentifier(name)} r WHERE r.${added} AND r.${column} IS NOT NULL AND ${notAfter(`r.${column}`)}`,
        );
    }
    const { rows } = await this.catalog.query<{ after: boolean }>(
      `SELECT NOT EXISTS (${checks.join(' UNION ALL ')}) AS after
         FROM (SELECT $1::bigint, $2::bigint, $3::bigint, $4::text, $5::bigint) AS p`,
      [String(upTo), String(after), info.id, from, time.id],
    );
    return rows[0]?.after === true;
  }

  /** The changes of the snapshots after `after` up to `upTo`, and the schema version at `upTo`: one Postgres query. */
  private range(after: bigint, upTo: bigint): Promise<Range> {
    const key = `${after}:${upTo}`;
    let range = this.ranges.get(key);
    if (!range) {
      range = this.catalog
        .query<{ changes: string[] | null; version: string | null }>(
          `SELECT ARRAY(SELECT changes_made FROM ${s}.ducklake_snapshot_changes
                         WHERE snapshot_id > $1 AND snapshot_id <= $2) AS changes,
                  (SELECT schema_version::text FROM ${s}.ducklake_snapshot WHERE snapshot_id = $2) AS version`,
          [String(after), String(upTo)],
        )
        .then(({ rows: [row] }) => {
          if (row.version === null) throw new Error(`DuckLake snapshot ${upTo} is not in the catalog`);
          const snapshots = (row.changes ?? []).map((made) =>
            made.split(',').map((change): [string, string] => {
              const colon = change.indexOf(':');
              return colon < 0 ? [change, ''] : [change.slice(0, colon), change.slice(colon + 1)];
            }),
          );
          // A flush of a table's inlined rows and deletes to files (tables' inlined-flush.ts, its own commit) changes
          // none of its rows: its change feed shows nothing there, and a row keeps its first snapshot.
          const changes = snapshots.flatMap((snapshot) => {
            const flushed = new Set(snapshot.filter(([kind]) => flushKinds.has(kind)).map(([, id]) => id));
            return snapshot.filter(([, subject]) => !flushed.has(subject));
          });
          return { changes, withFlushes: snapshots.flat(), schemaVersion: row.version };
        });
      remember(this.ranges, key, range);
      range.catch(() => this.ranges.get(key) === range && this.ranges.delete(key));
    }
    return range;
  }

  /** A table's id and columns at a snapshot of a schema version; null when there is no such table. */
  private table(schema: string, table: string, at: bigint, schemaVersion: string): Promise<TableInfo | null> {
    const key = JSON.stringify([schemaVersion, schema, table]);
    let info = this.tables.get(key);
    if (!info) {
      info = this.catalog
        .query<{ id: string; columns: Array<{ id: string; name: string; type: string }> | null }>(
          `SELECT t.table_id::text AS id,
                  (SELECT json_agg(json_build_object('id', c.column_id::text, 'name', c.column_name, 'type', c.column_type))
                     FROM ${s}.ducklake_column c WHERE c.table_id = t.table_id AND c.parent_column IS NULL AND ${live('c', '$1')}) AS columns
             FROM ${s}.ducklake_table t
             JOIN ${s}.ducklake_schema n ON n.schema_id = t.schema_id AND n.schema_name = $2 AND ${live('n', '$1')}
            WHERE t.table_name = $3 AND ${live('t', '$1')}`,
          [String(at), schema, table],
        )
        .then(({ rows: [row] }) =>
          row ? { id: row.id, columns: new Map((row.columns ?? []).map((c) => [c.name, c])) } : null,
        );
      remember(this.tables, key, info);
      info.catch(() => this.tables.get(key) === info && this.tables.delete(key));
    }
    return info;
  }
}
