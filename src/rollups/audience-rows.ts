import { quoteIdentifier, type DuckDBEngine } from '../engine/index.js';
import type { MetadataQueries } from '../metadata/index.js';
import { lakeMetadataSchema, type SeriesTable } from '../tables/index.js';
import { timestampNanos } from './calendar.js';
import { quoteLiteral } from './rollup-sql.js';
import { live, tableFilePath, type TablePaths } from './table-files.js';

// A reader's rows of a series table or a view set in a window, estimated from its own audiences' rows alone:
// what decides whether a reader's window off bucket boundaries reads whole rollup buckets plus raw edges
// (query-rewrite.ts, rawCheaper) over a view set, or a series table in a client's transaction that wrote it (other
// windows read them whatever the rows), so neither that choice nor the count its reason quotes tells anything of
// another audience's rows. Counted per file, and files never change, so each is counted once per process:
// a DuckLake data file whose audience column holds one value (its statistics say so) is that audience's alone,
// with the file's row count and time range; any other file (a view set's partition, a data file of several
// audiences) is read once, grouped by audience. Each audience's rows of a file count as spread evenly over
// their own time range, less, in a file of one audience, the file's deleted share (its delete file's and inlined
// deletes' count over its rows: deletes change with snapshots, the file's counts do not). A file of several
// audiences counts its rows whole: its deletes are of every audience's rows, so its share would tell a reader of
// another audience's deletes. Rows inlined in DuckLake's catalog (small inserts) are counted in Postgres by
// audience with their time range, at the snapshot.

/** One audience's rows in one file: how many, from their least time to just after their greatest (ns). */
interface AudienceSpan {
  readonly audience: string;
  readonly rows: number;
  readonly from: bigint;
  readonly to: bigint;
}

/**
 * A file of the rows: where it is, its time range when known, its spans when its statistics give them (or, for
 * rows inlined in the catalog, their count), and the share of its rows not deleted at the snapshot (1 for a file
 * of several audiences' rows).
 */
interface ListedFile {
  readonly location: string;
  readonly from: bigint | null;
  readonly to: bigint | null;
  readonly spans: readonly AudienceSpan[] | null;
  readonly live: number;
}

/** Files counted per process (their spans are a few numbers each). */
const countedFiles = 100_000;
const listingsKept = 64;

/** The time column's statistics or value as nanoseconds (TIMESTAMPTZ text is UTC with its offset). */
const nanos = (text: string | null): bigint | null =>
  text === null ? null : timestampNanos(text.replace(/(?:\+00(?::?00)?|Z)$/, ''));

export class AudienceRows {
  /** Each file's spans by location. */
  private readonly counted = new Map<string, Promise<readonly AudienceSpan[]>>();
  /** The files of a series table by `table@snapshot`, of a view set by `set@minute` (see rows). */
  private readonly listings = new Map<string, Promise<readonly ListedFile[] | null>>();

  constructor(
    private readonly engine: DuckDBEngine,
    private readonly metadata: MetadataQueries,
  ) {}

  /**
   * The rows of these audiences in a series table at a DuckLake snapshot with times in [from, to) (ns; to
   * null: on), estimated; null when not known (a time column other than a timestamp, a file not readable alone).
   */
  seriesRows(
    table: SeriesTable,
    snapshot: bigint,
    audiences: ReadonlySet<string>,
    from: bigint,
    to: bigint | null,
  ): Promise<number | null> {
    return this.rows(`${table.name}@${snapshot}`, () => this.seriesFiles(table, snapshot), table, audiences, from, to);
  }

  /**
   * The same of a view set, from its partitions (every instance's): they are not in DuckLake's snapshots, so
   * the list of them is kept for a minute.
   */
  viewSetRows(
    set: SeriesTable,
    location: (filePath: string) => string,
    audiences: ReadonlySet<string>,
    from: bigint,
    to: bigint | null,
  ): Promise<number | null> {
    const key = `${set.name}@minute ${Math.floor(Date.now() / 60_000)}`;
    return this.rows(key, () => this.partitionFiles(set.name, location), set, audiences, from, to);
  }

  private async rows(
    key: string,
    list: () => Promise<readonly ListedFile[] | null>,
    table: SeriesTable,
    audiences: ReadonlySet<string>,
    from: bigint,
    to: bigint | null,
  ): Promise<number | null> {
    const type = table.columns.find((c) => c.name === table.timeColumn)?.type ?? '';
    if (!/^TIMESTAMP/i.test(type)) return null;
    let listing = this.listings.get(key);
    if (!listing) {
      listing = list();
      keep(this.listings, key, listing, listingsKept);
      listing.catch(() => this.listings.delete(key));
    }
    const files = await listing;
    if (!files) return null;
    const overlaps = (f: { from: bigint | null; to: bigint | null }): boolean =>
      f.from === null || f.to === null || (f.to > from && (to === null || f.from < to));
    const inWindow = files.filter(overlaps);
    const spans = await this.spansOf(inWindow, table.timeColumn);
    if (!spans) return null;
    let rows = 0;
    for (const [i, file] of inWindow.entries())
      for (const span of spans[i]) {
        if (!audiences.has(span.audience)) continue;
        const end = to === null || to > span.to ? span.to : to;
        const start = from < span.from ? span.from : from;
        if (end > start) rows += (file.live * span.rows * Number(end - start)) / Number(span.to - span.from);
      }
    return rows;
  }

  /** The spans of files: their statistics', else read (those not read before, in one statement); null if unread. */
  private async spansOf(
    files: readonly ListedFile[],
    timeColumn: string,
  ): Promise<Array<readonly AudienceSpan[]> | null> {
    const unread = files.filter((f) => f.spans === null && !this.counted.has(f.location)).map((f) => f.location);
    if (unread.length > 0) {
      const time = `"${timeColumn.replace(/"/g, '""')}"`;
      const read = this.engine.values(
        `SELECT filename, audience, count(*)::VARCHAR, epoch_ns(min(${time}))::VARCHAR, epoch_ns(max(${time}))::VARCHAR
           FROM read_parquet([${unread.map(quoteLiteral).join(', ')}], filename = true)
          WHERE ${time} IS NOT NULL AND audience IS NOT NULL GROUP BY ALL`,
      );
      for (const location of unread) {
        const spans = read.then((rows) =>
          rows
            .filter(([file]) => file === location)
            .map(([, audience, count, least, greatest]) => ({
              audience: String(audience),
              rows: Number(count),
              from: BigInt(String(least)),
              to: BigInt(String(greatest)) + 1n,
            })),
        );
        keep(this.counted, location, spans, countedFiles);
        spans.catch(() => this.counted.delete(location));
      }
    }
    try {
      return await Promise.all(files.map(async (f) => f.spans ?? (await this.counted.get(f.location)!)));
    } catch {
      return null;
    }
  }

  /**
   * A series table's live data files at a snapshot, with their row counts, deleted rows, and audience and time
   * statistics; and its rows inlined in the catalog then, as one listed file of their spans.
   */
  private async seriesFiles(table: SeriesTable, snapshot: bigint): Promise<readonly ListedFile[] | null> {
    const s = lakeMetadataSchema;
    const {
      rows: [meta],
    } = await this.metadata.query<TablePaths & { table_id: string; inlined: string[]; inlined_deletes: string | null }>(
      `SELECT t.table_id::text AS table_id,
              (SELECT value FROM ${s}.ducklake_metadata WHERE key = 'data_path' AND scope IS NULL) AS data_path,
              n.path AS schema_path, n.path_is_relative AS schema_relative, t.path AS table_path, t.path_is_relative AS table_relative,
              ARRAY(SELECT i.table_name FROM ${s}.ducklake_inlined_data_tables i WHERE i.table_id = t.table_id) AS inlined,
              to_regclass(format('%I.%I', $3::text, 'ducklake_inlined_delete_' || t.table_id))::text AS inlined_deletes
         FROM ${s}.ducklake_table t
         JOIN ${s}.ducklake_schema n ON n.schema_id = t.schema_id AND n.schema_name = 'main' AND ${live('n')}
        WHERE t.table_name = $1 AND ${live('t')}`,
      [table.name, String(snapshot), s],
    );
    if (!meta || meta.data_path === null) return null;
    const stats = (alias: string, name: string): string =>
      `LEFT JOIN ${s}.ducklake_file_column_stats ${alias} ON ${alias}.data_file_id = f.data_file_id AND ${alias}.column_id = (
         SELECT c.column_id FROM ${s}.ducklake_column c WHERE c.table_id = f.table_id AND c.column_name = ${name} AND ${live('c')})`;
    // Deletes of a file's rows: its live delete file lists every one up to its snapshot; those inlined in the catalog.
    const inlinedDeletes =
      meta.inlined_deletes === null
        ? '0'
        : `(SELECT count(*) FROM ${meta.inlined_deletes} r WHERE r.file_id = f.data_file_id AND r.begin_snapshot <= $2)`;
    const { rows } = await this.metadata.query<{
      path: string;
      relative: boolean;
      rows: string;
      deleted: string;
      audience_least: string | null;
      audience_greatest: string | null;
      least: string | null;
      greatest: string | null;
    }>(
      `SELECT f.path, f.path_is_relative AS relative, f.record_count::text AS rows,
              (coalesce((SELECT sum(d.delete_count) FROM ${s}.ducklake_delete_file d WHERE d.data_file_id = f.data_file_id AND ${live('d')}), 0)
               + ${inlinedDeletes})::text AS deleted,
              a.min_value AS audience_least, a.max_value AS audience_greatest, k.min_value AS least, k.max_value AS greatest
         FROM ${s}.ducklake_data_file f
         ${stats('a', `'audience'`)}
         ${stats('k', '$3')}
        WHERE f.table_id = $1 AND ${live('f')}`,
      [meta.table_id, String(snapshot), table.timeColumn],
    );
    const files = rows.map((r) => {
      const location = tableFilePath(meta, r);
      const [from, greatest] = [nanos(r.least), nanos(r.greatest)];
      const to = greatest === null ? null : greatest + 1n;
      const alone = r.audience_least !== null && r.audience_least === r.audience_greatest;
      const spans =
        alone && from !== null && to !== null
          ? [{ audience: r.audience_least!, rows: Number(r.rows), from, to }]
          : null;
      // Only a file of one audience's rows has a deleted share that is the reader's own (see above).
      const live = !spans ? 1 : Number(r.rows) > 0 ? Math.max(0, 1 - Number(r.deleted) / Number(r.rows)) : 0;
      return { location, from, to, spans, live };
    });
    const inlined = await this.inlinedSpans(meta.inlined, table.timeColumn, snapshot);
    return inlined.length === 0
      ? files
      : [
          ...files,
          {
            location: `${meta.table_id}@${snapshot} inlined`,
            from: inlined.reduce((least, span) => (span.from < least ? span.from : least), inlined[0].from),
            to: inlined.reduce((most, span) => (span.to > most ? span.to : most), inlined[0].to),
            spans: inlined,
            live: 1,
          },
        ];
  }

  /** The rows inlined in DuckLake's catalog tables `names` live at a snapshot, by audience with their time range. */
  private async inlinedSpans(names: readonly string[], timeColumn: string, snapshot: bigint): Promise<AudienceSpan[]> {
    if (names.length === 0) return [];
    const time = `r."${timeColumn.replace(/"/g, '""')}"`;
    // A time is DuckDB's text of it, in one format per type: least and greatest compare as text. A VARCHAR (the
    // audience) is inlined as its UTF-8 bytes.
    const { rows } = await this.metadata.query<{ audience: string; rows: string; least: string; greatest: string }>(
      `SELECT audience, sum(n)::text AS rows, min(least) AS least, max(greatest) AS greatest FROM (${names
        .map(
          (name) =>
            `SELECT convert_from(r.audience, 'UTF8') AS audience, count(*) AS n, min(${time}::text) AS least, max(${time}::text) AS greatest
               FROM ${lakeMetadataSchema}.${quoteIdentifier(name)} r
              WHERE ${live('r', '$1::bigint')} AND ${time} IS NOT NULL AND r.audience IS NOT NULL GROUP BY 1`,
        )
        .join(' UNION ALL ')}) AS spans GROUP BY audience`,
      [String(snapshot)],
    );
    return rows.flatMap((r) => {
      const [from, greatest] = [nanos(r.least), nanos(r.greatest)];
      return from === null || greatest === null
        ? []
        : [{ audience: r.audience, rows: Number(r.rows), from, to: greatest + 1n }];
    });
  }

  /** A view set's partition files (every instance's), with their event-time ranges. */
  private async partitionFiles(
    name: string,
    location: (filePath: string) => string,
  ): Promise<readonly ListedFile[] | null> {
    const { rows } = await this.metadata.query<{ file_path: string; least: Date | null; greatest: Date | null }>(
      `SELECT file_path, min_event_time AS least, max_event_time AS greatest
         FROM lakehouse_partitions WHERE view_set_name = $1 AND file_path IS NOT NULL AND num_rows > 0`,
      [name],
    );
    // Read as JavaScript dates (milliseconds): a range runs to a millisecond after its greatest.
    const ns = (date: Date | null): bigint | null => (date === null ? null : BigInt(date.getTime()) * 1_000_000n);
    return rows.map((r) => {
      const greatest = ns(r.greatest);
      return {
        location: location(r.file_path),
        from: ns(r.least),
        to: greatest === null ? null : greatest + 1_000_000n,
        spans: null,
        live: 1,
      };
    });
  }
}

function keep<T>(kept: Map<string, T>, key: string, value: T, most: number): void {
  kept.set(key, value);
  if (kept.size > most) kept.delete(kept.keys().next().value!);
}
